"""The lsp family's own hook: contribute language servers."""

from __future__ import annotations

import tether
from tether_lsp.servers import ServerSpec


@tether.hookspec
def tether_lsp_servers() -> list[ServerSpec]:
    """Return :class:`tether_lsp.ServerSpec` objects for the language servers you provide."""
    raise NotImplementedError

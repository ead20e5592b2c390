"""Hook specifications the astgrep family adds (through `tether_addhooks`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import tether

if TYPE_CHECKING:
    from tether_astgrep.grammars import Grammar


@tether.hookspec
def tether_astgrep_grammars() -> list[Grammar] | None:
    """Grammars this plugin contributes: id, file extensions, language object, scaffold ladder."""

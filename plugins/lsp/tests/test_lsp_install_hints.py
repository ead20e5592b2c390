"""An install hint names an extra of this distribution that really brings the server."""

from __future__ import annotations

import re
from importlib.metadata import distribution

from tether_lsp.servers import BUILTIN_SERVERS


def test_the_basedpyright_hint_names_the_extra_that_installs_it() -> None:
    spec = next(s for s in BUILTIN_SERVERS if s.id == "basedpyright")
    assert spec.install == "pip install 'tether-lsp[python]'"
    requires = distribution("tether-lsp").requires or []
    assert any(re.match(r"basedpyright\b.*extra == .python.", r) for r in requires), requires

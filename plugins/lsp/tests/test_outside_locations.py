"""A location outside the workdir (a definition in the standard library's stubs) is shown as
such (issue 22, section 5): its lines are not the checkout's code. A real jedi-language-server."""

from __future__ import annotations

from pathlib import Path

from lsp_testkit import Caller, need, open_lsp_run

from tether.workdir.paths import OUTSIDE

JEDI = {"servers": {"python": ["jedi-language-server"]}}


def test_a_definition_outside_the_workdir_says_so(tmp_path: Path) -> None:
    need("jedi-language-server")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "o"\nversion = "0"\n')
    (tmp_path / "use.py").write_text(
        "import json\n\njson.dumps({})\n\n\ndef mine():\n    return mine()\n"
    )
    with open_lsp_run(tmp_path, JEDI) as run:
        caller = Caller(run)
        outside = caller.ok(action="definition", file="use.py", line=3, symbol="dumps")
        inside = caller.ok(action="definition", file="use.py", line=7, symbol="mine")
    assert "json" in outside and OUTSIDE in outside, outside
    assert "use.py:6:" in inside and OUTSIDE not in inside, inside

"""One rename policy for every server (issue 31 §5): uses of the old name in files of the
project that the server's own project leaves out make a rename refuse unless
``force: true``, naming them. basedpyright refused already (``include`` of
[tool.pyright]); typescript-language-server applied its edits and left an importer outside
tsconfig.json's ``include`` broken. Generated over each server whose project configuration
tether reads.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from lsp_testkit import Caller, copy_project, need, open_lsp_run


@attrs.frozen
class Scoped:
    server: str
    binary: str
    project: str
    #: a file outside the server's project that uses the symbol: (path, text)
    outside_file: tuple[str, str]
    #: the rename: (file, line, symbol, new name)
    rename: tuple[str, int, str, str]
    #: why the file is outside, as the answer says it
    why: str


CASES = [
    Scoped(
        "basedpyright",
        "basedpyright-langserver",
        "pyscope",
        ("tests/check_compat.py", ""),  # the fixture's own
        ("src/termlib/text.py", 1, "term_len", "width"),
        "outside basedpyright's project (`include` in pyproject.toml)",
    ),
    Scoped(
        "typescript-language-server",
        "typescript-language-server",
        "tsproj",
        (
            "test/greet.test.ts",
            'import { makeGreeter } from "../src/greet";\nmakeGreeter().greet("x");\n',
        ),
        ("src/greet.ts", 11, "makeGreeter", "buildGreeter"),
        "outside typescript-language-server's project (`include` of tsconfig.json)",
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.server) for c in CASES])
def test_a_rename_that_misses_uses_the_server_cannot_see_is_refused(
    case: Scoped, tmp_path: Path
) -> None:
    need(case.binary)
    workdir = copy_project(case.project, tmp_path)
    rel, text = case.outside_file
    if text:
        (workdir / rel).parent.mkdir(parents=True, exist_ok=True)
        (workdir / rel).write_text(text)
    before = (workdir / rel).read_text()
    file, line, symbol, new_name = case.rename
    with open_lsp_run(workdir) as run:
        caller = Caller(run)
        args = {"file": file, "line": line, "symbol": symbol, "new_name": new_name}
        refused = caller.err("lsp_rename", **args)
        assert refused.startswith(f"nothing was written: {case.server}'s rename"), refused
        assert rel in refused and case.why in refused, refused
        assert "`force: true`" in refused, refused
        assert (workdir / rel).read_text() == before
        done = caller.ok("lsp_rename", force=True, **args)
        assert done.startswith(f"renamed `{symbol}` to `{new_name}`"), done
        assert f"{case.why}; not renamed" in done, done

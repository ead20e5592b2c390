"""One ledger: nothing old is ever new (issue 31 §4), for every type-checking server.

A file starts with an error in it (``missing_one``, undefined). A write replaces it with another
(``missing_two``): the new one is new, the old one is gone. A second write restores the exact
original text: the original error is not new — it was there before the run touched the file
(before: the ledger had forgotten it with the first write and reported it as new). And a
checkpoint marked before the first write, when the run had not seen the file, takes that
write's baseline as its own: ``diagnostics since`` says the original error was fixed and the
new one introduced, not "baseline unknown".
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from lsp_testkit import WRITE_AUTO, Caller, copy_project, need

import tether


@attrs.frozen
class Case:
    server: str
    binary: str
    project: str
    path: str
    #: a line of the file, and the same line using an undefined ``NAME``
    line: str
    broken: str


CASES = [
    Case("clangd", "clangd", "cproj", "util.c", "    return a + b;", "    return a + b + NAME;"),
    Case(
        "gopls",
        "gopls",
        "goproj",
        "shapes.go",
        "\treturn Square{Side: side}",
        "\treturn Square{Side: side + NAME}",
    ),
    Case(
        "typescript-language-server",
        "typescript-language-server",
        "tsproj",
        "src/greet.ts",
        "    return `Good day, ${name}`;",
        "    return `Good day, ${name}` + NAME;",
    ),
    Case(
        "basedpyright",
        "basedpyright-langserver",
        "pyproj",
        "pkg/shapes.py",
        "    return Square(side)",
        "    return Square(side + NAME)",
    ),
]
LSP = {"diagnostics_timeout_s": 60.0, "dependents_timeout_s": 30.0}
#: and the post-processing of a write (60 s by default) may take them all
CONFIG = {"core": {**WRITE_AUTO, "post_process_timeout_s": 300.0}, "lsp": LSP}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.server) for c in CASES])
def test_restoring_the_original_text_reports_nothing_old_as_new(case: Case, tmp_path: Path) -> None:
    need(case.binary)
    workdir = copy_project(case.project, tmp_path)
    target = workdir / case.path
    text = target.read_text()
    assert case.line in text
    one = case.broken.replace("NAME", "missing_one")
    two = case.broken.replace("NAME", "missing_two")
    target.write_text(text.replace(case.line, one))
    with tether.open_run_sync(workdir, config=CONFIG) as run:
        caller = Caller(run)
        caller.ok(action="checkpoint", name="turn")
        swapped = caller.ok("edit", path=case.path, old=one, new=two)
        assert "missing_two" in swapped and "missing_one" not in swapped, swapped
        since = caller.ok(action="diagnostics", since="turn", file=case.path)
        assert "baseline unknown" not in since, since
        assert "1 introduced, 1 fixed" in since, since
        restored = caller.ok("edit", path=case.path, old=two, new=one)
        # the original error is back, and it is not news
        assert "missing_one" not in restored, restored
        assert "New diagnostics from" not in restored, restored

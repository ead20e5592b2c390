"""A write's diagnostics tell the truth on a fresh run: never "no diagnostics" for a text the
server has not reported on, never an old error called new, never errors of a half-sent change.

Each run here is cold (a new server, the file never opened), as every `tether call` is:
- typescript-language-server publishes a file's diagnostics once per tsserver pass, without a
  version; its first publish after a change can be the syntax pass alone (empty), which passed
  for the whole answer: the first write of `const n: number = "x"` reported nothing and
  `lsp diagnostics` said "no diagnostics". ``heavy.ts`` makes the semantic pass slow enough
  that the syntax pass is published first.
- the first write of a file that already had an error reported that error as new (no baseline).
- a change of several files was diagnosed file by file, each as soon as it was sent.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from lsp_testkit import Caller, copy_project, need, open_lsp_run

HEAVY_TS = (
    'type D = "0" | "1" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9";\n'
    "export type Code = `${D}${D}${D}${D}`;\n"
    "export type Pair = `${Code}-${D}`;\n"
)


@attrs.frozen
class Case:
    server: str
    binary: str
    project: str
    path: str
    #: the file as it is before the run, with one error already in it
    original: str
    #: (old, new) for `edit`: adds an error on a line of its own
    breaking: tuple[str, str]
    #: a substring of the error the breaking edit adds
    error: str
    #: a substring of the error already there
    existing: str
    #: (old, new): whitespace only
    spacing: tuple[str, str]
    extra_files: tuple[tuple[str, str], ...] = ()


CASES = [
    Case(
        "typescript-language-server",
        "typescript-language-server",
        "tsproj",
        "src/util.ts",
        'import { Pair } from "./heavy";\nexport const p: Pair = "1234-5";\n'
        "export const old: string = 1;\nexport const ok = 1;\n",
        ("export const ok = 1;", 'export const ok = 1;\nexport const n: number = "x";'),
        "[2322]: Type 'string' is not assignable to type 'number'",
        "[2322]: Type 'number' is not assignable to type 'string'",
        ("export const ok = 1;", "export const ok = 1;\n\n"),
        (("src/heavy.ts", HEAVY_TS),),
    ),
    Case(
        "basedpyright",
        "basedpyright-langserver",
        "pyproj",
        "pkg/old.py",
        "def f(x: int) -> int:\n    return x\n\n\nvalue: str = f(1)\n",
        ("def f(x: int) -> int:\n", "n: int = 'x'\n\n\ndef f(x: int) -> int:\n"),
        "reportAssignmentType",
        'Type "int" is not assignable to declared type "str"',
        ("    return x\n", "    return x \n"),
    ),
    Case(
        "clangd",
        "clangd",
        "cproj",
        "util.c",
        '#include "util.h"\n\nint add(int a, int b) {\n    return a + b + missing_one;\n}\n\n'
        "void bump(struct counter *c) {\n    c->value = add(c->value, 1);\n}\n",
        (
            "void bump(struct counter *c) {\n",
            "void bump(struct counter *c) {\n    c->value = missing_two;\n",
        ),
        "missing_two",
        "missing_one",
        ("    return a + b", "    return a  +  b"),
    ),
]


def _project(case: Case, tmp_path: Path) -> Path:
    workdir = copy_project(case.project, tmp_path)
    for rel, text in case.extra_files:
        (workdir / rel).write_text(text)
    (workdir / case.path).write_text(case.original)
    return workdir


def _settled_diagnostics(caller: Caller, path: str) -> str:
    """`lsp diagnostics` asked again, as its answer says, while the server is still at it."""
    for _ in range(8):
        result = caller.run.call("lsp", {"action": "diagnostics", "file": path})
        text = result.text_content
        if "still computing" not in text:
            assert not result.is_error, text
            return text
    return text


@pytest.mark.parametrize("case", [pytest.param(c, id=c.server) for c in CASES])
def test_a_first_write_reports_its_error_or_says_it_is_not_computed(
    case: Case, tmp_path: Path
) -> None:
    need(case.binary)
    workdir = _project(case, tmp_path)
    # long enough for a cold server on a loaded machine: the answer is then the server's
    with open_lsp_run(workdir, {"diagnostics_timeout_s": 60.0}) as run:
        caller = Caller(run)
        old, new = case.breaking
        written = caller.ok("edit", path=case.path, old=old, new=new)
        # the error, or a word that the server has not reported yet: never silence
        assert case.error in written or "not computed yet for the text just written" in written, (
            written
        )
        if case.error in written:
            assert f"New diagnostics from {case.server}" in written, written
            assert case.existing not in written, written  # it was there before the write
        listed = _settled_diagnostics(caller, case.path)
        assert not listed.startswith("no diagnostics"), listed
        assert case.error in listed and case.existing in listed, listed


@pytest.mark.parametrize("case", [pytest.param(c, id=c.server) for c in CASES])
def test_an_error_already_there_is_not_new(case: Case, tmp_path: Path) -> None:
    need(case.binary)
    workdir = _project(case, tmp_path)
    with open_lsp_run(workdir, {"diagnostics_timeout_s": 60.0}) as run:
        caller = Caller(run)
        old, new = case.spacing
        spaced = caller.ok("edit", path=case.path, old=old, new=new)
        # the first write of the file: its baseline was taken from the text before it (a
        # note on the files that use a changed name may follow; nothing is new)
        assert spaced.startswith("edited ") and "iagnostics" not in spaced, spaced
        old, new = case.breaking
        broken = caller.ok("edit", path=case.path, old=old, new=new)
        assert f"New diagnostics from {case.server}" in broken and case.error in broken, broken
        assert case.existing not in broken, broken


@attrs.frozen
class Change:
    server: str
    binary: str
    project: str
    #: the renamed symbol: (file, line, symbol, new name)
    rename: tuple[str, int, str, str]
    #: a file to open in the server first (the change then reaches an open document too)
    opened: str


CHANGES = [
    Change("clangd", "clangd", "cproj", ("util.h", 8, "add", "plus"), "main.c"),
    Change(
        "basedpyright",
        "basedpyright-langserver",
        "pyproj",
        ("pkg/shapes.py", 19, "make_square", "square_of"),
        "pkg/use.py",
    ),
]


@pytest.mark.parametrize("change", [pytest.param(c, id=c.server) for c in CHANGES])
def test_a_multi_file_change_is_diagnosed_once_every_file_is_sent(
    change: Change, tmp_path: Path
) -> None:
    need(change.binary)
    workdir = copy_project(change.project, tmp_path)
    with open_lsp_run(workdir, {"diagnostics_timeout_s": 60.0}) as run:
        caller = Caller(run)
        caller.ok(action="symbols", file=change.opened)
        file, line, symbol, new_name = change.rename
        renamed = caller.ok("lsp_rename", file=file, line=line, symbol=symbol, new_name=new_name)
        # a consistent rename introduces nothing: an error here was computed on half of it
        assert renamed.startswith(f"renamed `{symbol}` to `{new_name}`"), renamed
        assert "iagnostics" not in renamed, renamed
        # and the same through a patch over every file, undoing the rename
        sources = [p for p in workdir.rglob("*") if p.suffix in {".c", ".h", ".py"}]
        files = sorted(p for p in sources if new_name in p.read_text())
        patch = ""
        for path in files:
            rel = path.relative_to(workdir)
            before = path.read_text().splitlines(keepends=True)
            after = [row.replace(new_name, symbol) for row in before]
            patch += f"--- a/{rel}\n+++ b/{rel}\n@@ -1,{len(before)} +1,{len(after)} @@\n"
            patch += "".join(f"-{row}" for row in before) + "".join(f"+{row}" for row in after)
        patched = caller.ok("apply_patch", patch=patch)
        assert "iagnostics" not in patched, patched

"""A change in a file others depend on reaches the answers about those others (issue 31).

For every type-checking server, one change that breaks another file — a C header's prototype
(clangd: its callers in other ``.c`` files), a Go function's signature (gopls: its call site in
another file of the package), a TypeScript export (typescript-language-server: its importer), a
Python function's signature (basedpyright: its caller in another module) — made two ways:

- by tether (``edit``): the write's result names the new errors of the dependent file, and the
  write that undoes it says where it looked and that nothing is new there;
- by another process (the file written on disk): the next ``lsp diagnostics`` of the dependent,
  already open in the server, has the error — and once the change is undone, no longer has it.

Before: the write reported nothing about other files, and clangd and gopls answered the
dependent's diagnostics from before the change.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from lsp_testkit import Caller, copy_project, need, open_lsp_run


@attrs.frozen
class Dep:
    server: str
    binary: str
    project: str
    #: the file others depend on, and (old, new) of a change that breaks its users
    written: str
    change: tuple[str, str]
    #: a file that uses it, and a substring of the error the change causes there
    dependent: str
    error: str


DEPS = [
    Dep(
        "clangd",
        "clangd",
        "cproj",
        "util.h",
        ("int add(int a, int b);", "int add(int a, int b, int c);"),
        "main.c",
        "Too few arguments to function call",
    ),
    Dep(
        "gopls",
        "gopls",
        "goproj",
        "shapes.go",
        ("func MakeSquare(side float64) Square {", "func MakeSquare(side float64, n int) Square {"),
        "main.go",
        "not enough arguments in call to MakeSquare",
    ),
    Dep(
        "typescript-language-server",
        "typescript-language-server",
        "tsproj",
        "src/greet.ts",
        (
            "export function makeGreeter(): Greeter {",
            "export function makeGreeter(n: number): Greeter {",
        ),
        "src/main.ts",
        "Expected 1 arguments, but got 0",
    ),
    Dep(
        "basedpyright",
        "basedpyright-langserver",
        "pyproj",
        "pkg/shapes.py",
        (
            "def make_square(side: float) -> Square:",
            "def make_square(side: float, n: int) -> Square:",
        ),
        "pkg/use.py",
        'Argument missing for parameter "n"',
    ),
]
PARAMS = [pytest.param(dep, id=dep.server) for dep in DEPS]
#: long enough for a cold server on a loaded machine
LSP = {"diagnostics_timeout_s": 60.0, "dependents_timeout_s": 30.0}


@pytest.mark.parametrize("dep", PARAMS)
def test_a_write_that_breaks_another_file_says_so(dep: Dep, tmp_path: Path) -> None:
    need(dep.binary)
    workdir = copy_project(dep.project, tmp_path)
    with open_lsp_run(workdir, LSP) as run:
        caller = Caller(run)
        old, new = dep.change
        broken = caller.ok("edit", path=dep.written, old=old, new=new)
        assert "New diagnostics in files that use" in broken, broken
        assert f"from {dep.server}" in broken, broken
        assert f"{dep.dependent}:" in broken and dep.error in broken, broken
        # undone: where it looked, and nothing new there (the error it fixed is not "new")
        fixed = caller.ok("edit", path=dep.written, old=new, new=old)
        assert dep.error not in fixed, fixed
        assert f"checked {dep.dependent}" in fixed and "nothing new there" in fixed, fixed


@pytest.mark.parametrize("dep", PARAMS)
def test_a_change_by_another_process_reaches_an_open_dependent(dep: Dep, tmp_path: Path) -> None:
    need(dep.binary)
    workdir = copy_project(dep.project, tmp_path)
    with open_lsp_run(workdir, LSP) as run:
        caller = Caller(run)
        clean = caller.ok(action="diagnostics", file=dep.dependent)
        assert dep.error not in clean, clean
        target = workdir / dep.written
        original = target.read_text()
        old, new = dep.change
        target.write_text(original.replace(old, new))  # a shell, an editor, git
        broken = caller.ok(action="diagnostics", file=dep.dependent)
        assert dep.error in broken, broken
        target.write_text(original)  # `git checkout` of the file
        restored = caller.ok(action="diagnostics", file=dep.dependent)
        assert dep.error not in restored, restored

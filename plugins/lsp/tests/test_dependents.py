"""A change in a file others depend on reaches the answers about those others (issue 31).

For every type-checking server, one change that breaks another file — a C header's prototype
(clangd: its callers in other ``.c`` files), a Go function's signature (gopls: its call site in
another file of the package), a TypeScript export (typescript-language-server: its importer), a
Python function's signature (basedpyright: its caller in another module) — made two ways:

- previewed (``lsp_rename preview: true`` of the declaration): nothing is predicted broken;
- by tether (``edit``): the write's result names the new errors of the dependent file, and the
  write that undoes it says where it looked and that nothing is new there;
- by another process (the file written on disk): the next ``lsp diagnostics`` of the dependent,
  already open in the server, has the error — and once the change is undone, no longer has it.

Before: the write reported nothing about other files, and clangd and gopls answered the
dependent's diagnostics from before the change.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import attrs
import pytest
from lsp_testkit import WRITE_AUTO, Caller, copy_project, need

import tether
from tether.workdir.reading import Reader
from tether_lsp.dependents import changed_names, find_dependents


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
    #: a rename of the changed declaration, previewed: (line in ``written``, symbol, new name)
    rename: tuple[int, str, str]


DEPS = [
    Dep(
        "clangd",
        "clangd",
        "cproj",
        "util.h",
        ("int add(int a, int b);", "int add(int a, int b, int c);"),
        "main.c",
        "Too few arguments to function call",
        (8, "add", "plus"),
    ),
    Dep(
        "gopls",
        "gopls",
        "goproj",
        "shapes.go",
        ("func MakeSquare(side float64) Square {", "func MakeSquare(side float64, n int) Square {"),
        "main.go",
        "not enough arguments in call to MakeSquare",
        (14, "MakeSquare", "BuildSquare"),
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
        (11, "makeGreeter", "buildGreeter"),
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
        (19, "make_square", "build_square"),
    ),
]
PARAMS = [pytest.param(dep, id=dep.server) for dep in DEPS]
#: long enough for a cold server on a loaded machine
LSP = {"diagnostics_timeout_s": 60.0, "dependents_timeout_s": 30.0}
#: and the post-processing of a write (60 s by default) may take them all
CONFIG = {"core": {**WRITE_AUTO, "post_process_timeout_s": 300.0}, "lsp": LSP}


@pytest.mark.parametrize("dep", PARAMS)
def test_a_change_reaches_the_files_that_depend_on_it(dep: Dep, tmp_path: Path) -> None:
    """One server per case, both ways: a write by tether, then one by another process."""
    need(dep.binary)
    workdir = copy_project(dep.project, tmp_path)
    with tether.open_run_sync(workdir, config=CONFIG) as run:
        caller = Caller(run)
        # a consistent rename, previewed on the whole staged change (the header included):
        # it introduces nothing anywhere (clangd read the header from disk and predicted
        # "Call to undeclared function 'plus'" in main.c)
        line, symbol, new_name = dep.rename
        args = {"file": dep.written, "line": line, "symbol": symbol, "new_name": new_name}
        preview = caller.ok("lsp_rename", preview=True, **args)
        assert f"{dep.dependent}: nothing new from {dep.server}" in preview, preview
        assert "would introduce" not in preview, preview
        old, new = dep.change
        broken = caller.ok("edit", path=dep.written, old=old, new=new)
        assert "New diagnostics in files that use" in broken, broken
        assert f"from {dep.server}" in broken, broken
        assert f"{dep.dependent}:" in broken and dep.error in broken, broken
        # undone: where it looked, and nothing new there (the error it fixed is not "new")
        fixed = caller.ok("edit", path=dep.written, old=new, new=old)
        assert dep.error not in fixed, fixed
        assert f"checked {dep.dependent}" in fixed and "nothing new there" in fixed, fixed
        # now by another process, the dependent open in the server and clean
        clean = caller.ok(action="diagnostics", file=dep.dependent)
        assert dep.error not in clean, clean
        target = workdir / dep.written
        original = target.read_text()
        target.write_text(original.replace(old, new))  # a shell, an editor, git
        broken = caller.ok(action="diagnostics", file=dep.dependent)
        assert dep.error in broken, broken
        target.write_text(original)  # `git checkout` of the file
        restored = caller.ok(action="diagnostics", file=dep.dependent)
        assert dep.error not in restored, restored


@pytest.mark.parametrize(
    ("before", "after", "declared"),
    [
        (
            "int strbuffer_init(strbuffer_t *strbuff) JANSSON_ATTRS((warn_unused_result));",
            "int strbuffer_init(strbuffer_t *strbuff, int n) JANSSON_ATTRS((warn_unused_result));",
            "strbuffer_init",
        ),
        (
            "func (f *FlagSet) VarPF(v Value) *Flag {",
            "func (f *FlagSet) VarPF(v Value, n int) *Flag {",
            "VarPF",
        ),
        (
            "export const stableHash = (arg: any): string =>",
            "export const stableHash = (arg: any, n: number): string =>",
            "stableHash",
        ),
        (
            "def make_square(side: float) -> Square:",
            "def make_square(side: float, n: int) -> Square:",
            "make_square",
        ),
    ],
    ids=["c", "go", "ts", "python"],
)
def test_the_files_using_the_changed_declaration_come_first(
    before: str, after: str, declared: str, tmp_path: Path
) -> None:
    """Ranked without a server: the file calling the changed function before files that only
    share a common word of the changed line (a type, a macro, a parameter's name)."""
    first, others = changed_names(before, after)
    assert first[0] == declared, (first, others)
    common = [tmp_path / f"common{i}.txt" for i in range(3)]
    for path in common:
        path.write_text(" ".join(others))
    caller = tmp_path / "caller.txt"
    caller.write_text(f"x = {declared}(1)\n")
    with Reader(tmp_path) as reader:
        found = find_dependents(reader, [*common, caller], [], first, others)
    assert found.files[0] == caller, found


def test_a_fifo_or_a_symlink_among_the_dependents_is_never_opened(tmp_path: Path) -> None:
    """The files searched for a changed name are the checkout's: one that is a FIFO (an open
    would block the search forever) or a symlink leading out of the workdir is counted as
    unread, never opened; the search goes on."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.c").write_text("int strbuffer_init(void);\n")
    workdir = tmp_path / "workdir"
    workdir.mkdir()
    caller = workdir / "caller.c"
    caller.write_text("strbuffer_init();\n")
    fifo = workdir / "fifo.c"
    os.mkfifo(fifo)
    link = workdir / "link.c"
    link.symlink_to(outside / "secret.c")
    done: list[Any] = []

    def search() -> None:
        with Reader(workdir) as reader:
            done.append(find_dependents(reader, [fifo, link, caller], [], ["strbuffer_init"], []))

    thread = threading.Thread(target=search, daemon=True)
    thread.start()
    thread.join(10)
    assert done, "the search blocked on the FIFO"
    (found,) = done
    assert found.files == (caller,), found
    assert set(found.unread) == {fifo, link}, found

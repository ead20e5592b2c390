"""Files changed on disk by another process (the harness's shell, ``git checkout``) are seen by
every server before the next answer.

After a shell inserted 3 lines in cJSON.c, clangd's ``definition`` answered the old line number;
after ``git checkout`` added a file, ``references`` missed it. Here a separate process writes (a
subprocess, then ``git checkout`` of another branch) while the servers run, and the very next
query must answer for the disk's text.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from lsp_testkit import Caller, copy_project, need, open_lsp_run


@attrs.frozen
class Row:
    server: str
    binary: str
    project: str
    #: where the symbol is used and asked about
    use: str
    line: int
    symbol: str
    #: the file that declares it, and the line of the declaration there
    target: str
    declared: int
    #: a file the other branch adds, using the symbol (its name and text)
    added: str
    added_text: str
    #: the workdir's ``[lsp]`` configuration
    lsp: dict[str, object] = attrs.field(factory=dict)


ROWS = [
    Row(
        "basedpyright",
        "basedpyright-langserver",
        "pyproj",
        "pkg/use.py",
        3,
        "make_square",
        "pkg/shapes.py",
        19,
        "pkg/more.py",
        "from pkg.shapes import make_square\n\nbig = make_square(9.0)\n",
    ),
    Row(
        "typescript-language-server",
        "typescript-language-server",
        "tsproj",
        "src/main.ts",
        3,
        "makeGreeter",
        "src/greet.ts",
        11,
        "src/more.ts",
        'import { makeGreeter } from "./greet";\n\nexport const other = makeGreeter();\n',
    ),
    Row(
        "clangd",
        "clangd",
        "cproj",
        "main.c",
        0,  # found below: the line calling the symbol
        "add",
        "util.c",
        0,
        "more.c",
        '#include "util.h"\n\nint more(void) { return add(1, 2); }\n',
    ),
]


def _git(workdir: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=workdir,
        check=True,
        capture_output=True,
    )


def _line_of(path: Path, needle: str) -> int:
    for number, text in enumerate(path.read_text().splitlines(), 1):
        if needle in text:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


@pytest.fixture(params=ROWS, ids=[row.server for row in ROWS])
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Row, Path, Caller]]:
    row: Row = request.param
    need(row.binary)
    workdir = copy_project(row.project, tmp_path)
    if row.project == "cproj":
        import json

        entries = json.loads((workdir / "compile_commands.json").read_text())
        entries.append(
            {
                "directory": str(workdir),
                "file": str(workdir / row.added),
                "arguments": ["cc", "-c", row.added],
            }
        )
        (workdir / "compile_commands.json").write_text(json.dumps(entries))
    _git(workdir, "init", "-q", "-b", "main")
    _git(workdir, "add", "-A")
    _git(workdir, "commit", "-q", "-m", "base")
    _git(workdir, "checkout", "-q", "-b", "other")
    (workdir / row.added).write_text(row.added_text)
    _git(workdir, "add", "-A")
    _git(workdir, "commit", "-q", "-m", "adds a use")
    _git(workdir, "checkout", "-q", "main")
    with open_lsp_run(workdir, row.lsp or None) as run:
        yield row, workdir, Caller(run)


def _where(row: Row, workdir: Path) -> tuple[int, int]:
    """(line of the use, line of the declaration) as the files are now."""
    if row.project == "cproj":
        use = _line_of(workdir / row.use, f"{row.symbol}(")
        declared = _line_of(workdir / row.target, f"int {row.symbol}(")
        return use, declared
    return row.line, _line_of(workdir / row.target, row.symbol)


def test_definition_after_a_shell_inserted_lines_above_it(case: tuple[Row, Path, Caller]) -> None:
    row, workdir, lsp = case
    use, declared = _where(row, workdir)
    args = {"action": "definition", "file": row.use, "line": use, "symbol": row.symbol}
    # before the change: once the server has indexed the project (clangd answers with the
    # header's declaration until its background index has the source)
    deadline = time.monotonic() + 30
    while f"{row.target}:{declared}:" not in (first := lsp.ok(**args)):
        assert time.monotonic() < deadline, first
        time.sleep(0.5)
    # another process inserts three lines above the declaration (the harness's shell)
    script = (
        "import pathlib, sys; p = pathlib.Path(sys.argv[1]); "
        "p.write_text('// one\\n// two\\n// three\\n'.replace('//', sys.argv[2]) + p.read_text())"
    )
    comment = "#" if row.target.endswith(".py") else "//"
    subprocess.run([sys.executable, "-c", script, str(workdir / row.target), comment], check=True)
    answer = lsp.ok(**args)
    assert f"{row.target}:{declared + 3}:" in answer, answer


def test_references_after_git_checkout_adds_a_file(case: tuple[Row, Path, Caller]) -> None:
    row, workdir, lsp = case
    use, _ = _where(row, workdir)
    args = {"action": "references", "file": row.use, "line": use, "symbol": row.symbol}
    assert row.added not in lsp.ok(**args)
    _git(workdir, "checkout", "-q", "other")
    answer = lsp.ok(**args)
    assert f"{row.added}:3:" in answer, answer

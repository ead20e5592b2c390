"""Breakpoints that survive edits: when a file with breakpoints changes — through a tether write
or another process writing the disk — each breakpoint moves with the text it was set on, or is
reported lost or ambiguous; never left on a line that now says something else. The rule is
checked on generated edits, then against real debugpy and lldb."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import anyio
import attrs
import pytest

import tether
from tether.workdir.writing import atomic_write_async
from tether_debug.anchors import follow

pytestmark = pytest.mark.anyio

TEXT = """\
def add(a, b):
    result = a + b
    return result


def main():
    total = 0
    for n in range(5):
        total = add(total, n)
    return total
"""
LINE = 2  # `result = a + b`
WANTED = "    result = a + b"


def _edit(text: str, at: int, insert: list[str] | None = None, delete: int = 0) -> str:
    lines = text.splitlines()
    lines[at - 1 : at - 1 + delete] = insert or []
    return "\n".join(lines) + "\n"


#: (an edit of TEXT, the line the breakpoint on LINE must end on — None: dropped — and words the
#: answer must hold)
EDITS = {
    **{
        f"insert_{n}_above": (_edit(TEXT, 1, ["# new"] * n), LINE + n, f"to {LINE + n}")
        for n in (1, 3, 7)
    },
    **{
        f"insert_{n}_below": (_edit(TEXT, LINE + 1, ["    pass"] * n), LINE, "stays")
        for n in (1, 4)
    },
    "insert_at_the_line": (_edit(TEXT, LINE, ["    x = 1"]), LINE + 1, f"to {LINE + 1}"),
    # removing the line above keeps the breakpoint's own line: it moves up
    "delete_above": (_edit(TEXT, 1, delete=1), LINE - 1, f"to {LINE - 1}"),
    "delete_the_line": (_edit(TEXT, LINE, delete=1), None, "lost (the line `result = a + b`"),
    "edit_the_line": (
        _edit(TEXT, LINE, ["    result = a - b"], delete=1),
        None,
        "is now `result = a - b`",
    ),
    "duplicate_elsewhere": (_edit(TEXT, 10, [WANTED]), None, "ambiguous"),
    "duplicate_beside": (_edit(TEXT, LINE, [WANTED]), None, "ambiguous"),
    "move_the_line_down": (
        _edit(_edit(TEXT, LINE, delete=1), 5, [WANTED]),
        5,
        "itself moved",
    ),
}


@pytest.mark.parametrize("edit", EDITS, ids=list(EDITS))
def test_a_breakpoint_follows_its_line_or_says_why_not(edit: str) -> None:
    new_text, expected, said = EDITS[edit]
    move = follow(TEXT, new_text, LINE)
    assert move.new == expected, move
    assert said in move.describe(), move.describe()
    if move.new is not None:  # never on a line that now says something else
        assert new_text.splitlines()[move.new - 1] == WANTED


@pytest.mark.parametrize(
    ("new_line", "expected", "said"),
    [
        ("    result = a - b  # fixed", LINE, "edited; 'result' is on it"),
        ("    total = a - b", None, "lost"),
    ],
)
def test_an_edited_line_is_found_again_by_its_symbol(
    new_line: str, expected: int | None, said: str
) -> None:
    new_text = _edit(TEXT, 1, ["# header"])
    new_text = _edit(new_text, LINE + 1, [new_line], delete=1)
    expected = None if expected is None else expected + 1
    move = follow(TEXT, new_text, LINE, "result")
    assert move.new == expected, move
    assert said in move.describe(), move.describe()


# --- against real adapters ------------------------------------------------------------------


@attrs.frozen
class SaveArgs:
    path: str = tether.arg(description="where")
    text: str = tether.arg(description="what")


async def save(call: tether.CallContext, args: SaveArgs) -> str:
    await atomic_write_async(call.run.confine(args.path), args.text, root=call.run.workdir)
    return f"saved {args.path}"


SAVE = tether.ToolSpec(
    name="save", tier=tether.Tier.READ, args=SaveArgs, handler=save, description="a host write"
)


async def _write(run: tether.Run, how: str, path: Path, text: str) -> None:
    if how == "tether":
        result = await run.call("save", {"path": path.name, "text": text})
        assert not result.is_error, result.text_content
    else:  # another process, behind tether's back
        code = "import pathlib, sys; pathlib.Path(sys.argv[1]).write_text(sys.argv[2])"
        await anyio.run_process([sys.executable, "-c", code, str(path), text])


@pytest.mark.parametrize("how", ["tether", "disk"])
async def test_debugpy_stops_on_the_moved_line_after_lines_are_inserted_above(
    dbg, debug_run, py_workdir: Path, how: str
) -> None:
    path = py_workdir / "loop.py"
    async with debug_run(py_workdir) as run:
        run.register_host_tool(SAVE)
        await dbg.ok(run, op="breakpoints", file="loop.py", lines=[5], symbol="result")
        await _write(run, how, path, "# one\n# two\n# three\n" + path.read_text())
        text = await dbg.ok(run, op="launch", program="loop.py")
        assert "line 5: moved from line 5 to 8 (the line `result = a + b`)" in text, text
        assert "at loop.py:8 in add" in text, text
        status = await dbg.ok(run, op="status")
        assert "loop.py: 8" in status, status


async def test_debugpy_a_deleted_line_is_lost_and_never_stops(
    dbg, debug_run, py_workdir: Path
) -> None:
    path = py_workdir / "loop.py"
    async with debug_run(py_workdir) as run:
        await dbg.ok(run, op="breakpoints", file="loop.py", lines=[5])
        await dbg.ok(run, op="breakpoints", file="loop.py", lines=[15], condition="n == 0")
        path.write_text(path.read_text().replace("    result = a + b\n", ""))
        said = await dbg.ok(run, op="status")
        assert "line 5: lost (the line `result = a + b` is gone)" in said, said
        # a moved breakpoint keeps its settings
        assert "line 15 [if n == 0]: moved from line 15 to 14" in said, said
        assert "loop.py: 14 [if n == 0]." in said, said
        text = await dbg.ok(run, op="launch", program="loop.py")
        assert "at loop.py:14 in main" in text, text  # the first stop is the moved one
        # an edit while the program runs: the program keeps the text it loaded
        path.write_text("# a header\n" + path.read_text())
        text = await dbg.ok(run, op="threads")
        assert "line 14 [if n == 0]: moved from line 14 to 15" in text, text
        assert "keeps its breakpoints where they were; the moves apply from the next launch" in text


async def test_debugpy_an_edited_line_without_a_symbol_is_lost_with_its_new_text(
    dbg, debug_run, py_workdir: Path
) -> None:
    path = py_workdir / "loop.py"
    async with debug_run(py_workdir) as run:
        await dbg.ok(run, op="breakpoints", file="loop.py", lines=[5])
        path.write_text(path.read_text().replace("result = a + b", "result = b + a"))
        text = await dbg.ok(run, op="breakpoints", file="loop.py", lines=[15])
        assert "lost (the line `result = a + b` is now `result = b + a`)" in text, text
        assert "Breakpoints in loop.py: line 15." in text, text


async def test_a_symbol_not_on_the_line_is_refused_by_name(
    dbg, debug_run, py_workdir: Path
) -> None:
    async with debug_run(py_workdir) as run:
        said = await dbg.error(run, op="breakpoints", file="loop.py", lines=[5], symbol="total")
        assert "symbol" in said and "'total' is not on line 5 of loop.py" in said, said
        said = await dbg.error(run, op="breakpoints", function="add", symbol="add")
        assert "symbol: used with file and lines" in said, said


async def test_lldb_stops_on_the_moved_line_of_the_rebuilt_program(
    dbg, debug_run, c_workdir: Path
) -> None:
    compiler = shutil.which("gcc") or shutil.which("cc")
    assert compiler is not None
    source = c_workdir / "prog.c"
    async with debug_run(c_workdir) as run:
        run.register_host_tool(SAVE)
        await dbg.ok(run, op="breakpoints", file="prog.c", lines=[4], symbol="result")
        text = source.read_text().replace("#include <stdio.h>\n", "#include <stdio.h>\n\n\n")
        await _write(run, "tether", source, text)
        await anyio.run_process([compiler, "-g", "-O0", "-o", "prog", "prog.c"], cwd=c_workdir)
        text = await dbg.ok(run, op="launch", program="prog")
        assert "line 4: moved from line 4 to 6 (the line `int result = x * x;`)" in text, text
        assert "at prog.c:6 in square" in text, text

"""A live session and a file edited after its program started: a breakpoint given on the file's
text now goes to the same code in the text the program loaded, or is refused by name; a stop is
reported in the loaded text and says where that line is now. Generated edits (insertions and
deletions above, below and at the line), written by tether or by another process, against
real debugpy and lldb."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import attrs
import pytest

import tether
from tether.workdir.writing import atomic_write_async

pytestmark = pytest.mark.anyio


@attrs.frozen
class SaveArgs:
    path: str = tether.arg(description="where")
    text: str = tether.arg(description="what")


async def save(call: tether.CallContext, args: SaveArgs) -> str:
    await atomic_write_async(call.run.confine(args.path), args.text, root=call.run.workdir)
    return f"saved {args.path}"


#: a harness's own write tool (the core's writer: tether knows what the file held before)
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


def _edit(text: str, at: int, insert: list[str] | None = None, delete: int = 0) -> str:
    lines = text.splitlines()
    lines[at - 1 : at - 1 + delete] = insert or []
    return "\n".join(lines) + "\n"


#: The fixtures have the same shape: line 2 is blank, line T=4 (C) / 5 (Python) computes
#: `result` in a function the loop calls, line T+1 returns it.
@attrs.frozen
class Program:
    file: str
    program: str
    target: int  # the `result = ...` line
    loop: int  # the line of the loop calling the function (the first stop)
    function: str
    comment: str
    other_statement: str  # a different statement for the target line


PYTHON = Program("loop.py", "loop.py", 5, 15, "add", "# a note", "    result = b + a")
C = Program("prog.c", "prog", 4, 12, "square", "// a note", "    int result = x + x;")
GO = Program("main.go", "main.go", 11, 48, "main.square", "// a note", "\tresult := x + x")


@attrs.frozen
class Edit:
    change: Callable[[str, Program], str]
    #: the lines asked for after the edit (lines of the file now), from the target line T
    ask: Callable[[int], list[int]]
    #: the line the program then stops at (a line of the text it runs), None: it never does
    stops: Callable[[int], int | None]
    #: the stop's note: where that line is in the file now (None: no note, the line is unmoved)
    now: Callable[[int], int | None]
    #: words the breakpoints answer must hold
    said: Callable[[int], str]


EDITS = {
    "insert_1_above": Edit(
        lambda text, p: _edit(text, 1, [p.comment]),
        lambda t: [t + 1],
        lambda t: t,
        lambda t: t + 1,
        lambda t: f"line {t + 1} (line {t} in the text the program runs): verified",
    ),
    "insert_3_above": Edit(
        lambda text, p: _edit(text, 1, [p.comment] * 3),
        lambda t: [t + 3],
        lambda t: t,
        lambda t: t + 3,
        lambda t: f"line {t + 3} (line {t} in the text the program runs): verified",
    ),
    "insert_below": Edit(
        lambda text, p: _edit(text, 2 + p.target, [p.comment] * 2),
        lambda t: [t],
        lambda t: t,
        lambda t: None,
        lambda t: f"line {t}: verified",
    ),
    "delete_above": Edit(
        lambda text, p: _edit(text, 2, delete=1),
        lambda t: [t - 1],
        lambda t: t,
        lambda t: t - 1,
        lambda t: f"line {t - 1} (line {t} in the text the program runs): verified",
    ),
    # the new line T is refused; T+1 (the target's own text) goes to T
    "insert_at_the_line": Edit(
        lambda text, p: _edit(text, p.target, [p.comment]),
        lambda t: [t, t + 1],
        lambda t: t,
        lambda t: t + 1,
        lambda t: (
            f"line {t}: NOT set: `{{comment}}` did not exist when the program started "
            "(the file changed since); restart the program to break there"
        ),
    ),
    # the line after it is now line T: it goes to T+1
    "delete_the_line": Edit(
        lambda text, p: _edit(text, p.target, delete=1),
        lambda t: [t],
        lambda t: t + 1,
        lambda t: t,
        lambda t: f"line {t} (line {t + 1} in the text the program runs): verified",
    ),
    "edit_the_line": Edit(
        lambda text, p: _edit(text, p.target, [p.other_statement], delete=1),
        lambda t: [t],
        lambda t: None,
        lambda t: None,
        lambda t: f"line {t}: NOT set: `{{other}}` did not exist when the program started",
    ),
}


async def _edited_live(
    dbg, run: tether.Run, workdir: Path, program: Program, edit: Edit, how: str
) -> None:
    source = workdir / program.file
    loaded = source.read_text().splitlines()
    await dbg.ok(run, op="breakpoints", file=program.file, lines=[program.loop])
    text = await dbg.ok(run, op="launch", program=program.program)
    assert f"at {program.file}:{program.loop}" in text, text
    await _write(run, how, source, edit.change(source.read_text(), program))

    t = program.target
    said = await dbg.ok(run, op="breakpoints", file=program.file, lines=edit.ask(t))
    expected = edit.said(t).format(comment=program.comment, other=program.other_statement.strip())
    assert expected in said, said

    text = await dbg.ok(run, op="continue")
    stops = edit.stops(t)
    if stops is None:
        assert f"in {program.function}" not in text, text  # never stopped on other code
        return
    now = edit.now(t)
    note = (
        f" (line {stops} in the text the program runs; line {now} in the file now)"
        if now is not None
        else ""
    )
    assert f"at {program.file}:{stops}{note} in {program.function}" in text, text
    # the source line shown is the one the program runs, not the file's line of that number
    assert f"    {stops} | {loaded[stops - 1].strip()}" in text, text
    stack = await dbg.ok(run, op="stack")
    assert f"{program.function} at {program.file}:{stops}{note}" in stack, stack


@pytest.mark.parametrize("how", ["tether", "disk"])
@pytest.mark.parametrize("edit", EDITS, ids=list(EDITS))
async def test_debugpy_a_breakpoint_set_after_an_edit_lands_on_the_code_the_program_runs(
    dbg, debug_run, py_workdir: Path, edit: str, how: str
) -> None:
    async with debug_run(py_workdir) as run:
        run.register_host_tool(SAVE)
        await _edited_live(dbg, run, py_workdir, PYTHON, EDITS[edit], how)


@pytest.mark.parametrize("how", ["tether", "disk"])
@pytest.mark.parametrize("edit", EDITS, ids=list(EDITS))
async def test_lldb_a_breakpoint_set_after_an_edit_lands_on_the_code_the_program_runs(
    dbg, debug_run, c_workdir: Path, edit: str, how: str
) -> None:
    async with debug_run(c_workdir) as run:
        run.register_host_tool(SAVE)
        await _edited_live(dbg, run, c_workdir, C, EDITS[edit], how)


#: delve builds the program at each launch: the edits that move, refuse and shift the line
DELVE_EDITS = ["insert_3_above", "insert_at_the_line", "delete_the_line"]


@pytest.mark.parametrize("edit", DELVE_EDITS)
async def test_delve_a_breakpoint_set_after_an_edit_lands_on_the_code_the_program_runs(
    dbg, debug_run, go_workdir: Path, edit: str
) -> None:
    async with debug_run(go_workdir) as run:
        await _edited_live(dbg, run, go_workdir, GO, EDITS[edit], "disk")


MAIN = """\
import helper


def main():
    total = 0
    for n in range(3):
        total += helper.twice(n)
    return total


main()
"""
HELPER = """\
def twice(x):
    doubled = x * 2
    return doubled
"""


@pytest.mark.parametrize("how", ["tether", "disk"])
async def test_a_file_the_session_had_not_seen_is_mapped_from_tethers_write_or_refused(
    dbg, debug_run, py_workdir: Path, how: str
) -> None:
    """A file with no breakpoint and no stop before its edit: tether's write says what it held
    before (the text the program loaded); another process's write leaves it unknown, and a
    breakpoint there is refused rather than guessed."""
    (py_workdir / "main.py").write_text(MAIN)
    helper = py_workdir / "helper.py"
    helper.write_text(HELPER)
    async with debug_run(py_workdir) as run:
        run.register_host_tool(SAVE)
        await dbg.ok(run, op="breakpoints", file="main.py", lines=[7])
        text = await dbg.ok(run, op="launch", program="main.py")
        assert "at main.py:7 in main" in text, text
        await _write(run, how, helper, "# one\n# two\n" + HELPER)
        said = await dbg.ok(run, op="breakpoints", file="helper.py", lines=[4])
        if how == "disk":
            assert (
                "line 4: NOT set: the file changed since the program started and tether has no "
                "copy of the text it runs, so the line cannot be placed in it; restart the "
                "program to break there"
            ) in said, said
            text = await dbg.ok(run, op="continue")
            assert "in twice" not in text, text
            return
        assert "line 4 (line 2 in the text the program runs): verified" in said, said
        text = await dbg.ok(run, op="continue")
        where = "helper.py:2 (line 2 in the text the program runs; line 4 in the file now)"
        assert f"at {where} in twice" in text, text
        assert "    2 | doubled = x * 2" in text, text


async def test_run_to_a_line_that_did_not_exist_is_refused_by_name(
    dbg, debug_run, py_workdir: Path
) -> None:
    source = py_workdir / "loop.py"
    async with debug_run(py_workdir) as run:
        await dbg.ok(run, op="breakpoints", file="loop.py", lines=[15])
        await dbg.ok(run, op="launch", program="loop.py")
        source.write_text(_edit(source.read_text(), 5, ["    print(a)"]))
        said = await dbg.error(run, op="run_to", file="loop.py", line=5)
        assert "line: line 5 of loop.py: `print(a)` did not exist when the program started" in (
            said
        ), said
        text = await dbg.ok(run, op="run_to", file="loop.py", line=6)
        assert "Ran to loop.py:6." in text, text
        assert "at loop.py:5 (line 5 in the text the program runs; line 6 in the file now)" in text


@pytest.mark.parametrize("program", [PYTHON, C, GO], ids=["python", "c", "go"])
def test_the_fixtures_have_the_shape_the_edits_assume(program: Program) -> None:
    fixture = Path(__file__).parent / "fixtures" / ("go/" if program is GO else "") / program.file
    lines = fixture.read_text().splitlines()
    assert lines[1] == ""
    assert "result :=" in lines[program.target - 1] or "result = " in lines[program.target - 1]
    assert lines[program.target].strip().startswith("return result")
    assert f"{program.function.removeprefix('main.')}(" in lines[program.loop - 1]


async def test_a_step_in_an_edited_file_sends_no_more_requests_than_one_in_an_unedited_one(
    dbg, debug_run, py_workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mapping is tether's own work: a step still sends `next` and one `stackTrace`, the
    first breakpoints after an edit one `setPydevdSourceMap` more (once per file)."""
    from tether_debug.client import DapClient

    sent: list[str] = []
    send_request = DapClient.send_request

    async def counting(self: DapClient, command: str, arguments: object = None) -> int:
        sent.append(command)
        return await send_request(self, command, arguments)  # type: ignore[arg-type]

    monkeypatch.setattr(DapClient, "send_request", counting)
    source = py_workdir / "loop.py"
    async with debug_run(py_workdir) as run:
        await dbg.ok(run, op="breakpoints", file="loop.py", lines=[5])
        await dbg.ok(run, op="launch", program="loop.py")
        sent.clear()
        await dbg.ok(run, op="step_over")
        assert sent == ["next", "stackTrace"], sent
        source.write_text("# one\n# two\n" + source.read_text())
        sent.clear()
        text = await dbg.ok(run, op="step_over")
        assert sent == ["next", "stackTrace"], sent
        # back in main's loop from `return result`
        assert "at loop.py:14 (line 14 in the text the program runs; line 16 in the file now)" in (
            text
        ), text
        sent.clear()
        await dbg.ok(run, op="breakpoints", file="loop.py", lines=[17])
        assert sent == ["setPydevdSourceMap", "setBreakpoints"], sent
        sent.clear()
        await dbg.ok(run, op="breakpoints", file="loop.py", lines=[16])
        assert sent == ["setBreakpoints"], sent

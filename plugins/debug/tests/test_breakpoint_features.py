"""Conditions, hit conditions, log points, function and exception breakpoints, set_variable and
run_to, against every real adapter: each where its capabilities offer it, refused by name where
they do not (the recorded capabilities say which; test_features.py keeps that record true)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from tether_debug import features

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent / "fixtures"
CAPABILITIES = {
    adapter_id: record["capabilities"]
    for adapter_id, record in json.loads((FIXTURES / "capabilities.json").read_text()).items()
}


@attrs.frozen
class Case:
    """One adapter's fixture program and the places in it the tests use."""

    adapter: str
    workdir: str  # the conftest fixture that builds the workdir
    program: str
    file: str
    #: the first line of the called function, its argument, and what it is on each call
    line: int
    var: str
    values: tuple[int, ...]
    #: the function's name for a function breakpoint, and the line after it returns
    function: str
    result_line: int
    #: a line in the caller's loop (runs once per call) and a line after the loop
    loop_line: int
    after_line: int
    #: how a log point's message shows in an answer for the first call
    logged: str

    def evaluated(self, value: int) -> str:
        return f"{value} (int)"


CASES = {
    "debugpy": Case(
        "debugpy",
        "py_workdir",
        "loop.py",
        "loop.py",
        5,
        "b",
        (0, 1, 2, 3, 4),
        "add",
        6,
        15,
        16,
        "  b=0",
    ),
    "lldb": Case(
        "lldb", "c_workdir", "prog", "prog.c", 4, "x", (1, 2, 3), "square", 5, 12, 14, "  x=1"
    ),
    "delve": Case(
        "delve",
        "go_workdir",
        "main.go",
        "main.go",
        11,
        "x",
        (1, 2, 3),
        "main.square",
        12,
        48,
        60,
        "  > [Go 1]: x=1",
    ),
}


def _cases(field: str, supported: bool) -> list[object]:
    return [
        pytest.param(case, id=case.adapter)
        for case in CASES.values()
        if features.supports(CAPABILITIES[case.adapter], field) is supported
    ]


@pytest.fixture
def workdir(request: pytest.FixtureRequest) -> Path:
    case: Case = request.getfixturevalue("case")
    path: Path = request.getfixturevalue(case.workdir)
    return path


def _no_lone_field_tests() -> None:  # every feature column has at least one supporting adapter
    for field in ("condition", "hit_condition", "log_message", "function", "set_variable"):
        assert _cases(field, True), field


_no_lone_field_tests()


@pytest.mark.parametrize("case", _cases("condition", True))
async def test_a_conditional_breakpoint_stops_only_when_true(
    dbg, debug_run, workdir: Path, case: Case
) -> None:
    wanted = case.values[2]
    async with debug_run(workdir) as run:
        said = await dbg.ok(
            run,
            op="breakpoints",
            file=case.file,
            lines=[case.line],
            condition=f"{case.var} == {wanted}",
        )
        assert f"line {case.line} [if {case.var} == {wanted}]" in said
        text = await dbg.ok(run, op="launch", program=case.program)
        assert f"  line {case.line} [if {case.var} == {wanted}]: verified" in text
        assert f"at {case.file}:{case.line} in " in text
        value = await dbg.ok(run, op="evaluate", expression=case.var)
        assert value.startswith(case.evaluated(wanted)), value


#: tether's hit conditions, one meaning on every adapter: the hits (counted from 1) that stop
HIT_MEANINGS: dict[str, Callable[[int], bool]] = {
    "2": lambda hit: hit == 2,
    "== 2": lambda hit: hit == 2,
    ">= 2": lambda hit: hit >= 2,
    "> 1": lambda hit: hit > 1,
    "<= 2": lambda hit: hit <= 2,
    "% 2": lambda hit: hit % 2 == 0,
}

#: lldb-vscode takes a bare N as an ignore count (it stops from the Nth hit on): what it can express
LLDB_HIT_FORMS = {">= 2", "> 1"}


async def _stopped_hits(dbg, run, case: Case, answer: str) -> list[int]:  # type: ignore[no-untyped-def]
    """Which calls of the fixture's function (1-based) the breakpoint stopped on, continuing
    until the program ends."""
    hits = []
    while f"at {case.file}:{case.line} in " in answer:
        value = await dbg.ok(run, op="evaluate", expression=case.var)
        hits.append(
            next(i for i, v in enumerate(case.values, 1) if value.startswith(case.evaluated(v)))
        )
        answer = await dbg.ok(run, op="continue")
    assert "The session ended" in answer, answer
    return hits


@pytest.mark.parametrize("form", list(HIT_MEANINGS))
@pytest.mark.parametrize("case", _cases("hit_condition", True))
async def test_a_hit_condition_means_the_same_on_every_adapter(
    dbg, debug_run, workdir: Path, case: Case, form: str
) -> None:
    """Each form stops on the same hits everywhere, or is refused by name (lldb-vscode reads a
    bare N as "from the Nth hit on" and ignores any other text: before, "2" stopped on every
    hit from 2 under lldb and only on hit 2 under debugpy)."""
    expressible = case.adapter != "lldb" or form in LLDB_HIT_FORMS
    async with debug_run(workdir) as run:
        await dbg.ok(run, op="breakpoints", file=case.file, lines=[case.line], hit_condition=form)
        text = await dbg.ok(run, op="launch", program=case.program)
        if not expressible:
            assert f"[hit {form}]: NOT set: {case.adapter} cannot stop on hits" in text, text
            assert "The session ended" in text or "exited" in text, text
            return
        wanted = [hit for hit in range(1, len(case.values) + 1) if HIT_MEANINGS[form](hit)]
        assert await _stopped_hits(dbg, run, case, text) == wanted


async def test_a_hit_condition_an_adapter_cannot_express_is_refused_during_a_session(
    dbg, debug_run, c_workdir: Path
) -> None:
    case = CASES["lldb"]
    async with debug_run(c_workdir) as run:
        await dbg.ok(run, op="breakpoints", file=case.file, lines=[case.loop_line])
        await dbg.ok(run, op="launch", program=case.program)
        error = await dbg.error(
            run, op="breakpoints", file=case.file, lines=[case.line], hit_condition="% 2"
        )
        assert error == (
            'hit_condition: lldb cannot stop on hits "% 2": of the hit conditions it takes only '
            '">= N", "> N"; op "breakpoints" cannot use it'
        )


@pytest.mark.parametrize("form", ["0", "-1", ">=", "== x", "2 hits", "!= 2", ">=> 2"])
async def test_a_hit_condition_outside_the_forms_is_refused_naming_them(
    dbg, debug_run, py_workdir: Path, form: str
) -> None:
    async with debug_run(py_workdir) as run:
        error = await dbg.error(
            run, op="breakpoints", file="loop.py", lines=[5], hit_condition=form
        )
        assert error.startswith('hit_condition: expected "N" (only the Nth hit)'), error
        assert repr(form) in error


@pytest.mark.parametrize("case", _cases("hit_condition", False))
async def test_a_hit_condition_is_refused_by_name_where_unsupported(
    dbg, debug_run, workdir: Path, case: Case
) -> None:
    refusal = (
        f"{case.adapter} does not support hit conditions "
        "(supportsHitConditionalBreakpoints is false)"
    )
    async with debug_run(workdir) as run:
        # before a session the adapter is unknown: kept, and reported NOT set at launch
        await dbg.ok(run, op="breakpoints", file=case.file, lines=[case.loop_line])
        await dbg.ok(run, op="breakpoints", file=case.file, lines=[case.line], hit_condition="2")
        text = await dbg.ok(run, op="launch", program=case.program)
        assert f"  line {case.line} [hit 2]: NOT set: {refusal}" in text
        # it was not sent: the first stop is the plain breakpoint, not the first call
        assert f"at {case.file}:{case.loop_line} in " in text
        # during a session it is refused at once, and nothing changes
        assert (
            await dbg.error(
                run, op="breakpoints", file=case.file, lines=[case.after_line], hit_condition="3"
            )
            == f'hit_condition: {refusal}; op "breakpoints" cannot use it'
        )


@pytest.mark.parametrize("case", _cases("log_message", True))
async def test_a_log_point_does_not_stop_and_its_output_comes_with_the_next_answer(
    dbg, debug_run, workdir: Path, case: Case
) -> None:
    async with debug_run(workdir) as run:
        await dbg.ok(
            run,
            op="breakpoints",
            file=case.file,
            lines=[case.line],
            log_message=f"{case.var}={{{case.var}}}",
        )
        # a plain breakpoint in the same file stays (a call with a setting adds to the file)
        said = await dbg.ok(run, op="breakpoints", file=case.file, lines=[case.after_line])
        assert said.startswith(f"Breakpoints in {case.file}: line {case.after_line}.")
        await dbg.ok(
            run,
            op="breakpoints",
            file=case.file,
            lines=[case.line],
            log_message=f"{case.var}={{{case.var}}}",
        )
        text = await dbg.ok(run, op="launch", program=case.program)
        assert f"[log '{case.var}={{{case.var}}}', does not stop]: verified" in text
        assert f"at {case.file}:{case.after_line} in " in text  # never stopped on the log point
        log = text.split("Log points printed (they do not stop):\n", 1)[1].splitlines()
        assert log[0] == case.logged
        assert len(log) == len(case.values)
        # said once: the next answer does not repeat it
        assert "Log points printed" not in await dbg.ok(run, op="stack")


@pytest.mark.parametrize("case", _cases("log_message", False))
async def test_a_log_point_is_refused_by_name_where_unsupported(
    dbg, debug_run, workdir: Path, case: Case
) -> None:
    refusal = f"{case.adapter} does not support log points (supportsLogPoints is false)"
    async with debug_run(workdir) as run:
        await dbg.ok(run, op="breakpoints", file=case.file, lines=[case.line], log_message="x")
        await dbg.ok(run, op="breakpoints", file=case.file, lines=[case.after_line], condition="1")
        text = await dbg.ok(run, op="launch", program=case.program)
        # not sent, so it cannot stop where a log point never would
        assert f"  line {case.line} [log 'x', does not stop]: NOT set: {refusal}" in text
        assert f"at {case.file}:{case.after_line} in " in text
        assert (
            await dbg.error(
                run, op="breakpoints", file=case.file, lines=[case.loop_line], log_message="y"
            )
            == f'log_message: {refusal}; op "breakpoints" cannot use it'
        )


@pytest.mark.parametrize("case", _cases("function", True))
async def test_a_function_breakpoint_stops_in_that_function(
    dbg, debug_run, workdir: Path, case: Case
) -> None:
    async with debug_run(workdir) as run:
        said = await dbg.ok(run, op="breakpoints", function=case.function)
        assert said.startswith(f"Function breakpoints: {case.function}.")
        text = await dbg.ok(run, op="launch", program=case.program)
        assert f"functions:\n  function {case.function}: verified" in text
        # the reason is the adapter's ("function breakpoint", "breakpoint: breakpoint 1.1")
        assert text.split("\nStopped (", 1)[1].split(") at ", 1)[1].startswith(f"{case.file}:"), (
            text
        )
        assert f" in {case.function} (" in text or f" in {case.function.split('.')[-1]} (" in text
        value = await dbg.ok(run, op="evaluate", expression=case.var)
        assert value.startswith(case.evaluated(case.values[0])), value
        # removed during the session: the program runs to its end
        cleared = await dbg.ok(run, op="breakpoints", function=case.function, remove=True)
        assert cleared == "Cleared every function breakpoint (sent to the running session)."
        assert (await dbg.ok(run, op="continue")).startswith(
            "The session ended: the program exited with code 0."
        )


@pytest.mark.parametrize("case", _cases("set_variable", True))
async def test_set_variable_changes_what_the_program_computes(
    dbg, debug_run, workdir: Path, case: Case
) -> None:
    async with debug_run(workdir) as run:
        await dbg.ok(run, op="breakpoints", file=case.file, lines=[case.line])
        await dbg.ok(run, op="launch", program=case.program)
        said = await dbg.ok(run, op="set_variable", name=case.var, value="7")
        how = (
            "setExpression"
            if features.supports(CAPABILITIES[case.adapter], "set_expression")
            else "setVariable"
        )
        assert said.startswith(f"{case.var} = 7"), said
        assert said.endswith(f" through {how})"), said
        assert (await dbg.ok(run, op="evaluate", expression=case.var)).startswith("7 (int)")
        assert "is stale" not in said
        # never a new variable made up by a typo
        missing = await dbg.error(run, op="set_variable", name="no_such_variable", value="1")
        assert missing.startswith("name: no variable 'no_such_variable' in frame_id "), missing


@pytest.mark.parametrize("case", [pytest.param(c, id=c.adapter) for c in CASES.values()])
async def test_run_to_stops_there_once_and_leaves_no_breakpoint(
    dbg, debug_run, workdir: Path, case: Case
) -> None:
    async with debug_run(workdir) as run:
        await dbg.ok(run, op="breakpoints", file=case.file, lines=[case.line])
        await dbg.ok(run, op="launch", program=case.program)
        await dbg.ok(run, op="breakpoints", file=case.file, lines=[case.line], remove=True)
        text = await dbg.ok(run, op="run_to", file=case.file, line=case.loop_line)
        assert text.startswith(f"Ran to {case.file}:{case.loop_line}.\nStopped ("), text
        # the one-shot breakpoint is gone: the loop line runs again, and nothing stops there
        assert "Breakpoints: none." in await dbg.ok(run, op="status")
        end = await dbg.ok(run, op="continue")
        assert end.startswith("The session ended: the program exited with code 0."), end


@pytest.mark.parametrize("case", [pytest.param(c, id=c.adapter) for c in CASES.values()])
async def test_the_launch_answers_top_frame_is_the_one_stack_shows(
    dbg, debug_run, workdir: Path, case: Case
) -> None:
    async with debug_run(workdir) as run:
        await dbg.ok(run, op="breakpoints", file=case.file, lines=[case.line])
        text = await dbg.ok(run, op="launch", program=case.program)
        top = dbg.number_after(text, "Top frame_id ")
        stack = await dbg.ok(run, op="stack")
        assert stack.startswith(f"frame_id {top}: "), (top, stack)


async def test_exception_filters_chosen_per_call(dbg, debug_run, py_workdir: Path) -> None:
    shutil.copy(FIXTURES / "caught.py", py_workdir / "caught.py")
    async with debug_run(py_workdir) as run:
        said = await dbg.ok(run, op="breakpoints", exceptions=["raised"])
        assert said.startswith("Exception filters: raised. No session is running")
        text = await dbg.ok(run, op="launch", program="caught.py")
        # a caught exception stops the program only with "raised"
        assert "Exception: ValueError: caught on purpose" in text, text
        assert await dbg.error(run, op="breakpoints", exceptions=["thrown"]) == (
            "exceptions: debugpy offers no exception filter 'thrown'; it offers: raised, "
            "uncaught, userUnhandled"
        )
        assert await dbg.ok(run, op="breakpoints", exceptions=[]) == (
            "Exception filters of the running debugpy session: none (no exception stops the "
            "program)."
        )
        end = await dbg.ok(run, op="continue")
        assert end.startswith("The session ended: the program exited with code 0."), end


async def test_exception_filters_are_refused_where_the_adapter_offers_none(
    dbg, debug_run, go_workdir: Path
) -> None:
    assert not features.exception_filters(CAPABILITIES["delve"])
    async with debug_run(go_workdir) as run:
        await dbg.ok(run, op="breakpoints", file="main.go", lines=[11])
        await dbg.ok(run, op="launch", program="main.go")
        assert await dbg.error(run, op="breakpoints", exceptions=["panic"]) == (
            "exceptions: delve offers no exception filters (exceptionBreakpointFilters is empty)"
        )


async def test_breakpoints_arguments_name_the_field(dbg, debug_run, py_workdir: Path) -> None:
    async with debug_run(py_workdir) as run:
        assert await dbg.error(run, op="breakpoints") == (
            'file: op "breakpoints" takes exactly one of file (with lines), function and '
            "exceptions; none was given"
        )
        assert await dbg.error(run, op="breakpoints", file="loop.py", function="add") == (
            'function: op "breakpoints" takes exactly one of file (with lines), function and '
            "exceptions; file and function were given"
        )
        assert await dbg.error(run, op="breakpoints", file="loop.py") == (
            'lines: required for op "breakpoints" with file'
        )
        assert await dbg.error(run, op="breakpoints", function="add", lines=[3]) == (
            'lines: used only with file in op "breakpoints"; leave it out'
        )
        assert (
            await dbg.error(run, op="breakpoints", exceptions=["raised"], condition="x")
            == 'condition: used with file or function in op "breakpoints"; leave it out'
        )
        assert (
            await dbg.error(run, op="breakpoints", file="loop.py", lines=[5], remove=True)
            == "lines: no breakpoint on line 5 to remove (this file has: none)"
        )
        assert (
            await dbg.error(run, op="breakpoints", file="loop.py", lines=[], condition="a > 1")
            == "lines: condition needs the lines it applies to; got []"
        )
        assert await dbg.error(run, op="breakpoints", function="f", remove=True) == (
            "function: no function breakpoint 'f' to remove (set: none)"
        )
        assert "condition: expected" in await dbg.error(
            run, op="breakpoints", file="loop.py", lines=[5], condition=""
        )
        assert await dbg.error(run, op="run_to", file="loop.py") == (
            'invalid arguments for debug:\nline: required for op "run_to"'
        )
        assert await dbg.error(run, op="set_variable", name="a") == (
            'invalid arguments for debug:\nvalue: required for op "set_variable"'
        )


#: settings a breakpoint may have before a call that does not mention it
BEFORE = {
    "plain": {},
    "log point": {"log_message": "b={b}"},
    "condition": {"condition": "b > 1"},
    "hit condition": {"hit_condition": ">= 2"},
}


@pytest.mark.parametrize("before", list(BEFORE))
@pytest.mark.parametrize("live", [False, True], ids=["before launch", "live session"])
async def test_an_answer_names_every_breakpoint_a_call_took_out_or_changed(
    dbg, debug_run, py_workdir: Path, before: str, live: bool
) -> None:
    """A call without a setting makes ``lines`` the file's whole list: the breakpoints it drops
    (and one whose settings it resets) are named in its answer, never dropped in silence."""
    case = CASES["debugpy"]
    async with debug_run(py_workdir) as run:
        if live:
            await dbg.ok(run, op="breakpoints", file=case.file, lines=[case.after_line])
            await dbg.ok(run, op="launch", program=case.program)
        await dbg.ok(run, op="breakpoints", file=case.file, lines=[case.line], **BEFORE[before])
        described = {
            "plain": "",
            "log point": " [log 'b={b}', does not stop]",
            "condition": " [if b > 1]",
            "hit condition": " [hit >= 2]",
        }[before]
        said = await dbg.ok(run, op="breakpoints", file=case.file, lines=[case.loop_line])
        assert f"Removed: line {case.line}{described}" in said, said
        assert "sets the file's whole list" in said
        if before != "plain":
            await dbg.ok(run, op="breakpoints", file=case.file, lines=[case.line], **BEFORE[before])
            said = await dbg.ok(run, op="breakpoints", file=case.file, lines=[case.line])
            assert f"Changed: line {case.line}{described} is now plain." in said, said
            assert f"line {case.loop_line}" in said  # the loop line went too, and says so

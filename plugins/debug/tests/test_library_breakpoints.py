"""Breakpoints in the code a program loads from outside the workdir — its interpreter's
standard library, the Go toolchain — are allowed (a breakpoint writes nothing) under the roots
the adapter reports, and refused elsewhere, naming those roots."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

pytestmark = pytest.mark.anyio


def _line_of(path: Path, text: str, after: int = 0) -> int:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if text in line:
            return number + after
    raise AssertionError(f"{text!r} not in {path}")


async def test_a_breakpoint_in_the_python_standard_library(
    dbg, debug_run, py_workdir: Path
) -> None:
    python = shutil.which("python3")
    assert python is not None  # the debuggee's interpreter when the project has no venv
    found = await anyio.run_process([python, "-c", "import json; print(json.__file__)"])
    library = Path(found.stdout.decode().strip())
    line = _line_of(library, "return _default_encoder.encode(obj)")
    (py_workdir / "uses_json.py").write_text("import json\n\nprint(json.dumps([1, 2]))\n")
    async with debug_run(py_workdir) as run:
        said = await dbg.ok(run, op="breakpoints", file=str(library), lines=[line])
        assert said.startswith(f"Breakpoints in {library} (the standard library of "), said
        text = await dbg.ok(run, op="launch", program="uses_json.py")
        assert f"Stopped (breakpoint) at {library}:{line} (outside the workdir) in dumps" in text, (
            text
        )
        assert "In the program's own code: uses_json.py:3 in <module>" in text
        assert (await dbg.ok(run, op="evaluate", expression="obj")).startswith("[1, 2] (list)")
        # elsewhere outside the workdir stays refused, and the answer names what is allowed
        elsewhere = py_workdir.parent / "elsewhere.py"
        elsewhere.write_text("x = 1\n")
        refused = await dbg.error(run, op="breakpoints", file=str(elsewhere), lines=[1])
        assert refused.startswith(f"file: {str(elsewhere)!r} is outside the workdir"), refused
        assert "breakpoints may go only in the program's library roots: " in refused
        assert "(the standard library of " in refused and "(installed packages of " in refused


async def test_a_breakpoint_in_the_go_standard_library(dbg, debug_run, go_workdir: Path) -> None:
    goroot = Path((await anyio.run_process(["go", "env", "GOROOT"])).stdout.decode().strip())
    library = goroot / "src" / "strings" / "strings.go"
    line = _line_of(library, "func Repeat(", after=1)
    async with debug_run(go_workdir) as run:
        said = await dbg.ok(run, op="breakpoints", file=str(library), lines=[line])
        assert said.startswith(
            f"Breakpoints in {library} (the Go standard library (GOROOT): {goroot})"
        ), said
        text = await dbg.ok(run, op="launch", program="main.go")
        assert (
            f"Stopped (breakpoint) at {library}:{line} (outside the workdir) in strings.Repeat"
            in text
        ), text
        assert "In the program's own code: main.go:45 in main.main" in text


async def test_a_library_breakpoint_set_during_a_session_debugpy_would_ignore_waits_for_launch(
    dbg, debug_run, py_workdir: Path
) -> None:
    """debugpy started with justMyCode on (no library breakpoint at launch) accepts a library
    breakpoint and never stops there: it is not sent (the answer says why), it is kept, and the
    next launch stops at it."""
    python = shutil.which("python3")
    assert python is not None
    found = await anyio.run_process([python, "-c", "import json; print(json.__file__)"])
    library = Path(found.stdout.decode().strip())
    line = _line_of(library, "return _default_encoder.encode(obj)")
    (py_workdir / "uses_json.py").write_text("import json\n\nprint(json.dumps([1, 2]))\n")
    async with debug_run(py_workdir) as run:
        await dbg.ok(run, op="breakpoints", file="uses_json.py", lines=[3])
        text = await dbg.ok(run, op="launch", program="uses_json.py")
        assert "Stopped (breakpoint) at uses_json.py:3" in text, text
        said = await dbg.ok(run, op="breakpoints", file=str(library), lines=[line])
        assert f"Breakpoints in {library} (the standard library of " in said, said
        assert "NOT sent to the running session: debugpy was started with justMyCode on" in said
        ended = await dbg.ok(run, op="continue")
        assert "the program exited with code 0" in ended, ended
        again = await dbg.ok(run, op="launch", program="uses_json.py")
        assert "Stopped (breakpoint) at uses_json.py:3" in again, again
        hit = await dbg.ok(run, op="continue")
        assert f"Stopped (breakpoint) at {library}:{line} (outside the workdir) in dumps" in hit, (
            hit
        )

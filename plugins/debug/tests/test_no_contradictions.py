"""What one answer says, the next one keeps: a pending breakpoint in a library not loaded yet,
continue after attach, a stop that comes after "still running"; and any native program with
debug information (a Makefile project, no root marker) is debuggable by path."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from tether.processes.managed import kill_tree
from tether.testing import require_real

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent / "fixtures"


async def _ends(dbg, run) -> None:  # type: ignore[no-untyped-def]
    """continue, and the program runs to its end (status says so once it has, however slow)."""
    said = await dbg.ok(run, op="continue")
    with anyio.fail_after(30):
        while "ended: the program exited with code 0" not in said:
            assert "Stopped" not in said, said
            await anyio.sleep(0.2)
            said = await dbg.ok(run, op="status")


@pytest.fixture
def make_workdir(tether_workdir: Path) -> Path:
    """A Makefile project: a host that dlopens a shared library, built with make (no CMake)."""
    require_real(shutil.which("make") is not None, "make (apt-get install make)")
    require_real(shutil.which("cc") is not None, "a C compiler (apt-get install gcc)")
    require_real(
        any(shutil.which(n) for n in ("lldb-dap", "lldb-vscode", "lldb-vscode-14")),
        "lldb's DAP adapter (apt-get install lldb-14)",
    )
    for source in (FIXTURES / "plugin").iterdir():
        shutil.copy(source, tether_workdir / source.name)
    subprocess.run(["make", "-s"], cwd=tether_workdir, check=True, timeout=120)
    return tether_workdir


async def test_any_native_program_with_debug_info_needs_no_root_marker(
    dbg, debug_run, make_workdir: Path
) -> None:
    async with debug_run(make_workdir) as run:
        adapters = await dbg.ok(run, op="adapters")
        assert "needed: it runs from the workdir" in adapters
        end = await dbg.ok(run, op="launch", program="host")
        assert end.startswith("Launched host with lldb"), end
        assert "The session ended: the program exited with code 0.\nOutput:\nplug=42" in end


async def test_a_breakpoint_in_a_library_not_loaded_yet_is_pending_then_hit(
    dbg, debug_run, make_workdir: Path
) -> None:
    async with debug_run(make_workdir) as run:
        await dbg.ok(run, op="breakpoints", file="plug.c", lines=[2])
        await dbg.ok(run, op="breakpoints", file="host.c", lines=[5])
        text = await dbg.ok(run, op="launch", program="host")
        assert "at host.c:5 in main" in text
        assert "plug.c:\n  line 2: pending (set when code from plug.c loads;" in text, text
        hit = await dbg.ok(run, op="continue")
        assert hit.startswith("Stopped (breakpoint"), hit
        assert " at plug.c:2 in plug (" in hit, hit
        assert "plug.c: 2" in await dbg.ok(run, op="status")


async def test_a_stop_after_still_running_is_seen_by_the_next_op(
    dbg, debug_run, py_workdir: Path
) -> None:
    shutil.copy(FIXTURES / "sleepy.py", py_workdir / "sleepy.py")
    async with debug_run(py_workdir, debug={"stop_timeout_s": 1.5}) as run:
        await dbg.ok(run, op="breakpoints", file="sleepy.py", lines=[4])
        text = await dbg.ok(run, op="launch", program="sleepy.py")
        assert "Still running after 1.5 s without stopping" in text
        session = run.resources["debug_supervisor"].session
        with anyio.fail_after(20):
            while session.stop is None:
                await anyio.sleep(0.1)
        threads = await dbg.ok(run, op="threads")
        assert "\nMeanwhile the program stopped:\nStopped (breakpoint) at sleepy.py:4" in threads
        # seen once: the next op does not repeat it, and continue goes on
        assert "Meanwhile" not in await dbg.ok(run, op="threads")
        await _ends(dbg, run)


async def test_continue_does_not_pass_a_stop_the_agent_was_not_told_of(
    dbg, debug_run, py_workdir: Path
) -> None:
    shutil.copy(FIXTURES / "sleepy.py", py_workdir / "sleepy.py")
    async with debug_run(py_workdir, debug={"stop_timeout_s": 1.5}) as run:
        await dbg.ok(run, op="breakpoints", file="sleepy.py", lines=[4])
        assert "Still running" in await dbg.ok(run, op="launch", program="sleepy.py")
        session = run.resources["debug_supervisor"].session
        with anyio.fail_after(20):
            while session.stop is None:
                await anyio.sleep(0.1)
        held = await dbg.ok(run, op="continue")
        assert held.startswith(
            "The program stopped since the last answer; nothing was resumed (call continue "
            "again to go on):\nStopped (breakpoint) at sleepy.py:4"
        ), held
        await _ends(dbg, run)


async def test_continue_after_attach_runs_on_to_a_breakpoint(
    dbg, debug_run, go_workdir: Path
) -> None:
    await anyio.run_process(
        ["go", "build", "-gcflags=all=-N -l", "-o", "spinner", "."], cwd=go_workdir
    )
    spinner = await anyio.open_process(
        [str(go_workdir / "spinner"), "spin"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        async with debug_run(go_workdir) as run:
            text = await dbg.ok(run, op="attach", pid=spinner.pid, adapter="delve")
            assert "or continue to run on to a breakpoint" in text
            await dbg.ok(run, op="breakpoints", file="main.go", lines=[29])
            stopped = await dbg.ok(run, op="continue")
            assert stopped.startswith("Stopped (breakpoint) at main.go:29 in main.spin"), stopped
            await dbg.ok(run, op="terminate")
    finally:
        kill_tree(spinner.pid)
        await spinner.aclose()

"""A debug adapter that stops answering (SIGSTOP) is named unresponsive by ``status``, and after
``restart_after_timeouts`` requests in a row that timed out the session is ended: adapter and
debuggee killed, said plainly in the result of the call that met the last timeout. Real debugpy
and real lldb, stopped at a breakpoint."""

from __future__ import annotations

import os
import re
import signal
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path

import anyio
import pytest

import tether
import tether_debug.hooks
from tether.processes.hang import activity
from tether.processes.managed import descendants, is_alive, kill_tree

pytestmark = pytest.mark.anyio

#: short enough to keep the tests quick, long enough for a loaded machine's answers
TIMEOUT_S = 3.0
UNRESPONSIVE = (
    r"Adapter: {id} \(pid {pid}\): unresponsive since \d\d:\d\d:\d\d UTC \(1 request in a row "
    r"timed out; its process is stopped\); after 2 timeouts in a row the session is ended"
)
ENDED = (
    "the {id} adapter did not answer 2 requests in a row; the session was ended (adapter and "
    "debuggee killed). launch again to start over"
)


@contextmanager
def stopped(pid: int) -> Iterator[None]:
    """SIGSTOP ``pid`` (and wait until it is stopped: the signal is delivered asynchronously);
    let it go again on the way out if it is still there."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 5
    while not activity({pid})[0] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert activity({pid})[0], f"pid {pid} did not stop"
    try:
        yield
    finally:
        if is_alive(pid):
            os.kill(pid, signal.SIGCONT)


async def gone(pids: set[int]) -> bool:
    """Every pid gone (not even a stopped process left); waits a little for reaping."""
    with anyio.move_on_after(5):
        while any(is_alive(pid) for pid in pids):
            await anyio.sleep(0.05)
    return not any(is_alive(pid) for pid in pids)


async def hang_and_end(dbg, run: tether.Run, adapter_id: str, op: dict[str, object]) -> None:
    session = run.resources["debug_supervisor"].session
    adapter = session.process.pid
    pids = dbg.session_pids(run)
    assert adapter in pids and len(pids) >= 2 and dbg.alive(pids) == pids
    with stopped(adapter):
        first = await dbg.error(run, **op)
        assert re.search(r"did not answer '\w+' within 3 s", first), first
        status = await dbg.ok(run, op="status")
        assert re.search(UNRESPONSIVE.format(id=adapter_id, pid=adapter), status), status
        assert session.live
        second = await dbg.error(run, **op)  # the second timeout in a row
        assert ENDED.format(id=adapter_id) in second, second
        assert not session.live
        assert await gone(pids), f"left alive: {dbg.alive(pids)}"
        # the stopped adapter itself was killed and reaped, not left stopped
        assert not Path(f"/proc/{adapter}").exists()
    after = await dbg.ok(run, op="status")
    assert "No live session." in after and ENDED.format(id=adapter_id) in after, after
    refused = await dbg.error(run, op="stack")
    assert "has ended: the " + adapter_id in refused


async def test_a_stopped_debugpy_adapter_is_unresponsive_then_the_session_ends(
    dbg, debug_run, py_workdir: Path
) -> None:
    async with debug_run(py_workdir, debug={"request_timeout_s": TIMEOUT_S}) as run:
        await dbg.ok(run, op="breakpoints", file="forever.py", lines=[5])
        assert "Stopped (breakpoint) at forever.py:5" in await dbg.ok(
            run, op="launch", program="forever.py"
        )
        await hang_and_end(dbg, run, "debugpy", {"op": "threads"})
        # not relaunched behind the agent's back; a new launch starts over
        assert "Stopped (breakpoint) at forever.py:5" in await dbg.ok(
            run, op="launch", program="forever.py"
        )


async def test_a_stopped_lldb_adapter_is_unresponsive_then_the_session_ends(
    dbg, debug_run, c_workdir: Path
) -> None:
    async with debug_run(c_workdir, debug={"request_timeout_s": TIMEOUT_S}) as run:
        await dbg.ok(run, op="breakpoints", file="prog.c", lines=[14])
        assert "at prog.c:14 in main" in await dbg.ok(run, op="launch", program="prog")
        await hang_and_end(dbg, run, "lldb", {"op": "evaluate", "expression": "sum"})


async def test_one_timeout_then_an_answer_clears_the_mark(dbg, debug_run, py_workdir: Path) -> None:
    async with debug_run(py_workdir, debug={"request_timeout_s": TIMEOUT_S}) as run:
        await dbg.ok(run, op="breakpoints", file="forever.py", lines=[5])
        await dbg.ok(run, op="launch", program="forever.py")
        session = run.resources["debug_supervisor"].session
        adapter = session.process.pid
        with stopped(adapter):
            await dbg.error(run, op="threads")
            assert "unresponsive since" in await dbg.ok(run, op="status")
        # it answers again: the mark is gone and the count starts over
        assert "thread_id 1" in await dbg.ok(run, op="threads")
        status = await dbg.ok(run, op="status")
        assert "unresponsive" not in status and "Stopped (breakpoint) at forever.py:5" in status
        with stopped(adapter):
            await dbg.error(run, op="threads")  # one timeout again, not the second in a row
            assert session.live
        assert "thread_id 1" in await dbg.ok(run, op="threads")
        assert session.live and is_alive(adapter)


async def test_restart_after_timeouts_is_bounded_and_a_workdir_may_lower_it(
    py_workdir: Path,
) -> None:
    def opened(limit: int) -> AbstractAsyncContextManager[tether.Run]:
        return tether.open_run(
            py_workdir,
            conversation_id="c1",
            plugins=[tether_debug.hooks],
            entry_points=False,
            workdir_config={"debug": {"restart_after_timeouts": limit}},
        )

    # a workdir file may only lower it (issue 22): 0 is out of bounds and 3 would loosen it —
    # both are ignored and said, never an error that stops the run
    for limit in (0, 3):
        async with opened(limit) as run:
            assert run.resources["debug_supervisor"].config.restart_after_timeouts == 2
            assert any("debug.restart_after_timeouts: ignored" in n for n in run.config_notes)
    async with opened(1) as run:
        assert run.resources["debug_supervisor"].config.restart_after_timeouts == 1


async def test_a_busy_session_is_never_ended(dbg, debug_run, py_workdir: Path) -> None:
    """Requests that time out while the debuggee computes (a long evaluate burns CPU) are a
    busy session, not a hung adapter: nothing is ended."""
    async with debug_run(py_workdir, debug={"request_timeout_s": TIMEOUT_S}) as run:
        await dbg.ok(run, op="breakpoints", file="forever.py", lines=[5])
        await dbg.ok(run, op="launch", program="forever.py")
        session = run.resources["debug_supervisor"].session
        for _ in range(2):
            slow = await dbg.error(run, op="evaluate", expression="sum(range(10**10))")
            assert "did not answer 'evaluate' within 3 s" in slow, slow
            assert not session.hang.unresponsive
        assert session.hang.timeouts_in_row == 2 and session.live
        assert "unresponsive" not in await dbg.ok(run, op="status")


async def test_a_stopped_debuggee_ends_the_session_at_the_second_timeout(
    dbg, debug_run, py_workdir: Path
) -> None:
    """debugpy's adapter passes most requests on to pydevd inside the debuggee: with the
    debuggee stopped it still runs but answers nothing. One timeout proves nothing (it might be
    computing); the second in a row with no CPU used by any process of the session does."""
    async with debug_run(py_workdir, debug={"request_timeout_s": TIMEOUT_S}) as run:
        await dbg.ok(run, op="breakpoints", file="forever.py", lines=[5])
        await dbg.ok(run, op="launch", program="forever.py")
        session = run.resources["debug_supervisor"].session
        pids = dbg.session_pids(run)
        with stopped(session.debuggee_pid):
            await dbg.error(run, op="threads")
            assert session.hang.timeouts_in_row == 1 and not session.hang.unresponsive
            assert "unresponsive" not in await dbg.ok(run, op="status")
            second = await dbg.error(run, op="threads")
            assert ENDED.format(id="debugpy") in second, second
            assert re.search(
                r"it used 0\.\d\d s of CPU in the \d+ s since the first of them", second
            )
            assert await gone(pids), f"left alive: {dbg.alive(pids)}"


async def test_an_attached_adapter_that_stops_answering_is_let_go_not_killed(
    dbg, debug_run, py_workdir: Path
) -> None:
    """Attached over TCP to a program's own debug server (``debugpy --listen``), no process of
    the session is tether's: two timeouts in a row with nothing heard are the verdict, the
    connection is closed and the program, someone else's, keeps running."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    listen = ["-m", "debugpy", "--listen", f"127.0.0.1:{port}", "--wait-for-client", "forever.py"]
    target = await anyio.open_process(
        [sys.executable, *listen], cwd=py_workdir, start_new_session=True
    )
    try:
        async with debug_run(py_workdir, debug={"request_timeout_s": TIMEOUT_S}) as run:
            with anyio.fail_after(20):
                while (await run.call("debug", {"op": "attach", "port": port})).is_error:
                    await anyio.sleep(0.2)
            session = run.resources["debug_supervisor"].session
            program = {target.pid, *descendants(target.pid)}
            with stopped(target.pid):
                await dbg.error(run, op="threads")
                assert not session.hang.unresponsive  # one timeout: it may be computing
                second = await dbg.error(run, op="threads")
                assert (
                    "the debugpy adapter did not answer 2 requests in a row; the session was "
                    "ended (connection closed; the attached program keeps running). attach again "
                    "to start over (unresponsive since "
                ) in second, second
                assert "nothing was heard from it since the first of them" in second
                assert not session.live
                assert dbg.alive(program) == program
    finally:
        kill_tree(target.pid)
        await target.aclose()

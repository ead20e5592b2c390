"""The debug tool against real debugpy on Python fixture programs."""

from __future__ import annotations

import os
import signal
import socket
import statistics
import sys
import time
from pathlib import Path

import anyio
import pytest

import tether
from tether_debug import Resolution
from tether_debug.adapters import Debugpy, Probe

pytestmark = pytest.mark.anyio


async def test_breakpoints_stepping_frames_variables_evaluate_and_output(
    dbg, debug_run, py_workdir: Path
) -> None:
    async with debug_run(py_workdir) as run:
        await dbg.ok(run, op="breakpoints", file="loop.py", lines=[5])
        text = await dbg.ok(run, op="launch", program="loop.py", args=["alpha"])
        assert text.startswith("Launched loop.py with debugpy, pid ")
        assert "loop.py:\n  line 5: verified" in text
        assert "Stopped (breakpoint) at loop.py:5 in add (thread_id 1)." in text
        assert "    5 | result = a + b" in text

        stack = await dbg.ok(run, op="stack")
        lines = stack.splitlines()
        assert lines[0].endswith(": add at loop.py:5") and lines[1] == "    5 | result = a + b"
        assert lines[2].endswith(": main at loop.py:15")
        assert lines[3].endswith(": <module> at loop.py:20")
        main_frame = dbg.number_after(lines[2], "frame_id ")

        # evaluate in the top frame by default, and in a frame's own scope when asked
        assert (await dbg.ok(run, op="evaluate", expression="(a, b)")).startswith("(0, 0) (tuple)")
        in_main = await dbg.ok(
            run, op="evaluate", expression="len(numbers) + total", frame_id=main_frame
        )
        assert in_main.startswith("120 (int)") and f"in frame_id {main_frame}" in in_main

        scopes = await dbg.ok(run, op="scopes", frame_id=main_frame)
        assert scopes.startswith("Locals: reference ")
        local_vars = await dbg.ok(
            run, op="variables", reference=dbg.number_after(scopes, "reference ")
        )
        label_line = next(
            line for line in local_vars.splitlines() if line.startswith("label (str) = ")
        )
        assert "… (" in label_line and len(label_line) < 480
        assert "(1 values cut to 400 characters)" in local_vars
        numbers_line = next(
            line for line in local_vars.splitlines() if line.startswith("numbers (list)")
        )
        children = await dbg.ok(
            run, op="variables", reference=dbg.number_after(numbers_line, "[reference ")
        )
        assert "\n000 (int) = 0\n" in children and "\n047 (int) = 47\n" in children
        assert "048 (int)" not in children  # debugpy's two groups come first: 50 children in all
        assert children.splitlines()[-1] == "(50 of 104 variables shown)"

        step = await dbg.ok(run, op="step_over")
        assert step.startswith("Stopped (step) at loop.py:6 in add")
        out = await dbg.ok(run, op="step_out")
        assert out.startswith("Stopped (step) at loop.py:15 in main")
        await dbg.ok(run, op="breakpoints", file="loop.py", lines=[])
        assert (await dbg.ok(run, op="step_over")).startswith(
            "Stopped (step) at loop.py:14 in main"
        )
        assert (await dbg.ok(run, op="step_over")).startswith(
            "Stopped (step) at loop.py:15 in main"
        )
        assert (await dbg.ok(run, op="step_in")).startswith("Stopped (step) at loop.py:5 in add")

        # ids handed out before the program moved are refused as stale, not passed on
        stale = await dbg.error(run, op="scopes", frame_id=main_frame)
        assert stale == (
            f"frame_id: frame {main_frame} is stale: it belongs to an earlier stop and the program has "
            "moved since; call stack again"
        )
        assert await dbg.error(run, op="variables", reference=987654) == (
            "reference: 987654 is not a reference of the current stop; call scopes for valid ids"
        )

        output = await dbg.ok(run, op="output")
        assert output.startswith("hello from the debuggee ['alpha']\n")
        assert (
            await dbg.ok(run, op="output") == "(no new output since the last call)\n[session live]"
        )

        threads = await dbg.ok(run, op="threads")
        assert "thread_id 1: MainThread" in threads

        end = await dbg.ok(run, op="continue")
        assert end.startswith(
            "The session ended: the program exited with code 0.\nOutput:\ntotal 10 1000"
        )
        status = await dbg.ok(run, op="status")
        assert "ended: the program exited with code 0." in status
        assert "has ended: the program exited with code 0" in await dbg.error(run, op="step_over")


async def test_a_deep_stack_and_a_long_value_are_capped_and_say_so(
    dbg, debug_run, py_workdir: Path
) -> None:
    async with debug_run(py_workdir) as run:
        await dbg.ok(run, op="breakpoints", file="deep.py", lines=[3])
        text = await dbg.ok(run, op="launch", program="deep.py")
        assert "Stopped (breakpoint) at deep.py:3 in descend" in text
        stack = (await dbg.ok(run, op="stack")).splitlines()
        # 45 calls of descend and <module>: 46 frames, 30 shown
        assert stack[-1] == "(30 of 46 frames shown)"
        assert sum(": descend at deep.py:" in line for line in stack) == 30
        value = await dbg.ok(run, op="evaluate", expression="'x' * 10000")
        # the repr has 10002 characters (its quotes); 4000 are shown
        assert value.startswith("'" + "x" * 3999 + "… (6002 more characters) (str)\n")


async def test_an_uncaught_exception_stops_with_its_type_and_message(
    dbg, debug_run, py_workdir: Path
) -> None:
    async with debug_run(py_workdir) as run:
        text = await dbg.ok(run, op="launch", program="crash.py")
        assert "Stopped (exception" in text and "at crash.py:2 in divide" in text
        assert "Exception: ZeroDivisionError: division by zero" in text
        # an exception raised by the evaluated code is an error, and the session stays stopped
        failure = await dbg.error(run, op="evaluate", expression="1 + undefined_name")
        assert failure == (
            'evaluate failed:\n  File "<string>", line 1, in <module>\n'
            "NameError: name 'undefined_name' is not defined"
        )
        assert "Stopped (exception" in await dbg.ok(run, op="status")
        end = await dbg.ok(run, op="continue")
        assert "The session ended: the program exited with code 1." in end
        assert "about to divide" in end


async def test_a_syntax_error_in_the_debuggee_is_reported_with_its_output(
    dbg, debug_run, py_workdir: Path
) -> None:
    async with debug_run(py_workdir) as run:
        text = await dbg.ok(run, op="launch", program="broken.py")
        assert "The session ended: the program exited with code 1." in text
        assert "SyntaxError" in text
        assert "No live session" in await dbg.ok(run, op="status")


async def test_second_launch_is_refused_and_terminate_leaves_no_process(
    dbg, debug_run, py_workdir: Path
) -> None:
    async with debug_run(py_workdir) as run:
        await dbg.ok(run, op="breakpoints", file="forever.py", lines=[5])
        first = await dbg.ok(run, op="launch", program="forever.py")
        assert "Stopped (breakpoint) at forever.py:5" in first
        pids = dbg.session_pids(run)
        assert len(pids) >= 2 and dbg.alive(pids) == pids
        refused = await dbg.error(run, op="launch", program="loop.py")
        assert refused.startswith(
            "a debug session is already running in this conversation: debugpy launch of forever.py, started at "
        )
        assert refused.endswith(
            "stopped. It is not replaced: call terminate first to start another."
        )
        assert (await dbg.error(run, op="attach", port=5678)).startswith(
            "a debug session is already running"
        )
        assert "Stopped (breakpoint) at forever.py:5" in await dbg.ok(run, op="status")
        done = await dbg.ok(run, op="terminate")
        assert done.startswith(
            "Terminated the debugpy session of forever.py: the debuggee and adapter are gone."
        )
        assert dbg.alive(pids) == set()
        assert "ended: terminated on request" in await dbg.ok(run, op="status")
        # and a new session may start now
        again = await dbg.ok(run, op="launch", program="forever.py")
        assert "Stopped (breakpoint) at forever.py:5" in again


async def test_pause_a_running_program(dbg, debug_run, py_workdir: Path) -> None:
    (py_workdir / "spin.py").write_text(
        "import time\nprint('spinning', flush=True)\ncount = 0\nwhile True:\n"
        "    count += 1\n    time.sleep(0.01)\n"
    )
    async with debug_run(py_workdir, debug={"stop_timeout_s": 1.0}) as run:
        text = await dbg.ok(run, op="launch", program="spin.py")
        assert text.endswith(
            "Still running after 1 s without stopping: use pause, or status/continue later."
        )
        assert "The program is running." in await dbg.ok(run, op="status")
        assert "needs a stopped program; it is running" in await dbg.error(run, op="step_over")
        # pydevd may still be starting the program: pause once it runs its own code
        with anyio.fail_after(20):
            while "spinning" not in await dbg.ok(run, op="output"):
                await anyio.sleep(0.1)
        paused = await dbg.ok(run, op="pause")
        assert paused.startswith("Stopped (pause) at spin.py:")
        assert (await dbg.ok(run, op="evaluate", expression="count > 0")).startswith("True (bool)")


async def test_the_ttl_kills_the_session_and_status_says_why(
    dbg, debug_run, py_workdir: Path
) -> None:
    # long enough for a launch on a loaded machine (it takes 2-4 s on 2 busy cores)
    async with debug_run(py_workdir, debug={"ttl_s": 8.0}) as run:
        await dbg.ok(run, op="breakpoints", file="forever.py", lines=[5])
        await dbg.ok(run, op="launch", program="forever.py")
        pids = dbg.session_pids(run)
        with anyio.fail_after(30):
            while "No live session" not in (status := await dbg.ok(run, op="status")):
                await anyio.sleep(0.2)
        assert "ended: the session's TTL of 8 s expired at " in status
        assert "debuggee and adapter killed" in status
        assert dbg.alive(pids) == set()


async def test_closing_the_run_kills_adapter_and_debuggee(dbg, debug_run, py_workdir: Path) -> None:
    async with debug_run(py_workdir) as run:
        await dbg.ok(run, op="breakpoints", file="forever.py", lines=[5])
        await dbg.ok(run, op="launch", program="forever.py")
        pids = dbg.session_pids(run)
        assert dbg.alive(pids) == pids
    assert dbg.alive(pids) == set()


async def test_an_adapter_that_dies_is_reported_and_the_debuggee_cleaned_up(
    dbg, debug_run, py_workdir: Path
) -> None:
    async with debug_run(py_workdir) as run:
        await dbg.ok(run, op="breakpoints", file="forever.py", lines=[5])
        await dbg.ok(run, op="launch", program="forever.py")
        pids = dbg.session_pids(run)
        session = run.resources["debug_supervisor"].session
        os.kill(session.process.pid, signal.SIGKILL)
        with anyio.fail_after(10):
            while "No live session" not in (status := await dbg.ok(run, op="status")):
                await anyio.sleep(0.1)
        assert "ended: the debugpy adapter stopped unexpectedly (exit code -9)" in status
        assert "has ended: the debugpy adapter stopped unexpectedly" in await dbg.error(
            run, op="continue"
        )
        with anyio.fail_after(5):
            while dbg.alive(pids):
                await anyio.sleep(0.1)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_attach_to_a_closed_port_is_a_clear_error(dbg, debug_run, py_workdir: Path) -> None:
    port = _free_port()
    async with debug_run(py_workdir) as run:
        text = await dbg.error(run, op="attach", port=port)
        assert text.startswith(f"port: nothing accepts connections on 127.0.0.1:{port} (")
        assert "python -m debugpy --listen" in text
        status = await dbg.ok(run, op="status")
        assert (
            f"(debugpy attach of 127.0.0.1:{port}" in status
            and "ended: attach failed: port: nothing" in status
        )


async def test_attach_over_tcp_to_a_program_started_with_debugpy_listen(
    dbg, debug_run, py_workdir: Path
) -> None:
    port = _free_port()
    target = await anyio.open_process(
        [
            sys.executable,
            "-m",
            "debugpy",
            "--listen",
            f"127.0.0.1:{port}",
            "--wait-for-client",
            "forever.py",
        ],
        cwd=py_workdir,
        start_new_session=True,
    )
    try:
        async with debug_run(py_workdir) as run:
            # a probe connection would use up the listener's one client: retry attach instead
            with anyio.fail_after(20):
                while (result := await run.call("debug", {"op": "attach", "port": port})).is_error:
                    assert "nothing accepts connections" in result.text_content
                    await anyio.sleep(0.2)
            attached = result.text_content
            assert attached.startswith(f"Attached to 127.0.0.1:{port} with debugpy.")
            assert "\nThreads (1):\n  thread_id 1: MainThread\n" in attached
            # no breakpoint yet, so nothing can stop it before the result is written
            assert "call pause to stop it where it is" in attached
            # a breakpoint set on the running program stops it there by itself
            await dbg.ok(run, op="breakpoints", file="forever.py", lines=[6])
            with anyio.fail_after(15):
                while "Stopped (breakpoint) at forever.py:6" not in await dbg.ok(run, op="status"):
                    await anyio.sleep(0.1)
            assert (await dbg.ok(run, op="evaluate", expression="count >= 0")).startswith(
                "True (bool)"
            )
            done = await dbg.ok(run, op="terminate")
            assert done.startswith(f"Terminated the debugpy session of 127.0.0.1:{port}: detached")
        assert dbg.alive({target.pid}) == {
            target.pid
        }  # detaching leaves someone else's program running
    finally:
        from tether.processes.managed import kill_tree

        kill_tree(target.pid)
        await target.aclose()


class _DebugpyOverTcp(Debugpy):
    """debugpy's adapter in debugServer mode: the same TCP transport path as dlv dap."""

    id = "debugpy-tcp"
    transport = "tcp"

    async def resolve(self, root: Path | None, probe: Probe) -> Resolution:
        found = await super().resolve(root, probe)
        assert found.command is not None
        return Resolution(
            (*found.command, "--host", "127.0.0.1", "--port", "{port}"),
            found.detail,
            found.launch_defaults,
        )


class _TcpPlugin:
    @tether.hookimpl
    def tether_debug_adapters(self) -> list[Debugpy]:
        return [_DebugpyOverTcp()]


async def test_an_adapter_that_listens_on_tcp(dbg, debug_run, py_workdir: Path) -> None:
    async with debug_run(py_workdir, plugins=[_TcpPlugin()]) as run:
        await dbg.ok(run, op="breakpoints", file="loop.py", lines=[16])
        text = await dbg.ok(run, op="launch", program="loop.py", adapter="debugpy-tcp")
        assert text.startswith("Launched loop.py with debugpy-tcp")
        assert "Stopped (breakpoint) at loop.py:16 in main" in text
        pids = dbg.session_pids(run)
        assert "total (int) = 10" in await dbg.ok(
            run,
            op="variables",
            reference=dbg.number_after(
                await dbg.ok(run, op="scopes", frame_id=dbg.number_after(text, "Top frame_id ")),
                "reference ",
            ),
        )
        await dbg.ok(run, op="terminate")
        assert dbg.alive(pids) == set()


async def test_the_projects_own_venv_runs_the_program(dbg, debug_run, py_workdir: Path) -> None:
    import venv

    venv.EnvBuilder(with_pip=False, symlinks=True).create(py_workdir / ".venv")
    (py_workdir / "where.py").write_text("import sys\nprint('prefix', sys.prefix)\n")
    async with debug_run(py_workdir) as run:
        adapters = await dbg.ok(run, op="adapters")
        assert (
            f"the program runs with {py_workdir}/.venv/bin/python (the project's venv)" in adapters
        )
        text = await dbg.ok(run, op="launch", program="where.py")
        assert "The session ended: the program exited with code 0." in text
        assert f"prefix {py_workdir}/.venv" in text


async def test_configured_exception_filters_replace_the_defaults(
    dbg, debug_run, py_workdir: Path
) -> None:
    (py_workdir / "caught.py").write_text(
        "try:\n    int('x')\nexcept ValueError:\n    pass\nprint('recovered')\n"
    )
    async with debug_run(py_workdir, debug={"exception_filters": {"debugpy": ["raised"]}}) as run:
        text = await dbg.ok(run, op="launch", program="caught.py")
        assert "Stopped (exception" in text and "at caught.py:2" in text
        assert "Exception: ValueError: invalid literal for int() with base 10: 'x'" in text
        assert "recovered" in await dbg.ok(run, op="continue")


async def test_requests_do_not_wait_on_a_delayed_ack(dbg, debug_run, py_workdir: Path) -> None:
    """pydevd writes header and body in two sends without TCP_NODELAY (debugpy#2054): a stock
    adapter delays its ACK of the header, so every request that reaches pydevd takes at least
    Linux's minimum delayed-ACK time (40 ms). tether's adapter launcher ACKs at once. The bound
    is that floor, not a speed target: a stock adapter cannot meet it however idle the machine."""
    if not sys.platform.startswith("linux"):
        pytest.skip("TCP_QUICKACK is Linux's")
    async with debug_run(py_workdir) as run:
        await dbg.ok(run, op="breakpoints", file="loop.py", lines=[14])
        await dbg.ok(run, op="launch", program="loop.py")
        session = run.resources["debug_supervisor"].session
        thread = session.stop.thread_id
        timings = []
        for _ in range(9):
            began = time.perf_counter()
            await session.client.request("stackTrace", {"threadId": thread, "levels": 1})
            timings.append(time.perf_counter() - began)
        assert statistics.median(timings) < 0.040, timings
        await dbg.ok(run, op="terminate")

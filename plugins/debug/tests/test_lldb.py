"""The debug tool against real lldb (Debian's lldb-vscode-14) on a C program built with -g."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.anyio


async def test_breakpoint_step_variables_evaluate_and_exit(dbg, debug_run, c_workdir: Path) -> None:
    async with debug_run(c_workdir) as run:
        adapters = await dbg.ok(run, op="adapters")
        assert (
            "- lldb [native executables (ELF/Mach-O, built with -g); attach by port (gdb-remote) or pid]: usable: lldb-"
            in adapters
        )

        await dbg.ok(run, op="breakpoints", file="prog.c", lines=[2, 4])
        text = await dbg.ok(run, op="launch", program="prog", args=["one", "two"])
        assert text.startswith("Launched prog with lldb")
        # line 2 holds no code: lldb moves it, and the report says where
        assert "  line 2: moved by the adapter to line 4\n  line 4: verified" in text
        assert "Stopped (breakpoint" in text and "at prog.c:4 in square" in text
        assert "    4 | int result = x * x;" in text

        # a line past the end never verifies: said so, with the nearest line that did
        report = await dbg.ok(run, op="breakpoints", file="prog.c", lines=[4, 200])
        assert report == (
            "Breakpoints in prog.c (sent to the running session):\n"
            "  line 4: verified\n"
            "  line 200: NOT verified; nearest verified line: 4\n"
            "Removed: line 2 (a call without condition, hit_condition or log_message sets the "
            "file's whole list; pass a setting to add lines, remove: true to take some out)."
        )
        stack = (await dbg.ok(run, op="stack")).splitlines()
        assert stack[0].endswith(": square at prog.c:4")
        assert stack[2].endswith(": main at prog.c:12")

        step = await dbg.ok(run, op="step_over")
        assert step.startswith("Stopped (step) at prog.c:5 in square")
        assert "    5 | return result;" in step

        # lldb reuses frame ids: one from before the step is refused until stack lists it again
        old_main = dbg.number_after(stack[2], "frame_id ")
        assert "call stack again" in await dbg.error(run, op="scopes", frame_id=old_main)
        top = dbg.number_after(step, "Top frame_id ")
        scopes = await dbg.ok(run, op="scopes", frame_id=top)
        assert scopes.startswith("Locals: reference ")
        local_vars = await dbg.ok(
            run, op="variables", reference=dbg.number_after(scopes, "reference ")
        )
        assert local_vars.splitlines() == ["x (int) = 1", "result (int) = 1"]

        assert (await dbg.ok(run, op="evaluate", expression="x * 10")).startswith("10 (int)")
        out = await dbg.ok(run, op="step_out")
        assert out.startswith("Stopped (step) at prog.c:12 in main")
        main_frame = dbg.number_after(out, "Top frame_id ")
        main_scopes = await dbg.ok(run, op="scopes", frame_id=main_frame)
        main_vars = await dbg.ok(
            run, op="variables", reference=dbg.number_after(main_scopes, "reference ")
        )
        values_line = next(
            line for line in main_vars.splitlines() if line.startswith("values (int[3])")
        )
        children = await dbg.ok(
            run, op="variables", reference=dbg.number_after(values_line, "[reference ")
        )
        assert children.splitlines() == ["[0] (int) = 1", "[1] (int) = 2", "[2] (int) = 3"]

        pids = dbg.session_pids(run)
        await dbg.ok(run, op="breakpoints", file="prog.c", lines=[])
        end = await dbg.ok(run, op="continue")
        assert end == "The session ended: the program exited with code 0.\nOutput:\nsum=14 argc=3"
        assert dbg.alive(pids) == set()


async def test_terminate_a_stopped_native_program(dbg, debug_run, c_workdir: Path) -> None:
    async with debug_run(c_workdir) as run:
        await dbg.ok(run, op="breakpoints", file="prog.c", lines=[14])
        text = await dbg.ok(run, op="launch", program="prog")
        assert "at prog.c:14 in main" in text
        assert (await dbg.ok(run, op="evaluate", expression="sum")).startswith("14 (int)")
        pids = dbg.session_pids(run)
        assert len(pids) >= 2
        done = await dbg.ok(run, op="terminate")
        assert done.startswith(
            "Terminated the lldb session of prog: the debuggee and adapter are gone."
        )
        assert dbg.alive(pids) == set()


async def test_attach_to_a_gdb_remote_stub(dbg, debug_run, c_workdir: Path) -> None:
    import shutil
    import socket

    import anyio

    from tether.processes.managed import kill_tree
    from tether.testing import require_real

    server = shutil.which("lldb-server-14") or shutil.which("lldb-server")
    require_real(server is not None, "lldb-server (apt-get install lldb-14)")
    assert server is not None
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    stub = await anyio.open_process(
        [server, "gdbserver", f"127.0.0.1:{port}", "./prog"], cwd=c_workdir, start_new_session=True
    )
    try:
        async with debug_run(c_workdir) as run:
            await dbg.ok(run, op="breakpoints", file="prog.c", lines=[4])
            with anyio.fail_after(20):  # until the stub listens
                while (result := await run.call("debug", {"op": "attach", "port": port})).is_error:
                    await anyio.sleep(0.2)
            assert result.text_content.startswith(f"Attached to 127.0.0.1:{port} with lldb.")
            assert "\nThreads (1):\n  thread_id " in result.text_content
            stopped = await dbg.ok(run, op="continue")
            assert "at prog.c:4 in square" in stopped
            assert (await dbg.ok(run, op="evaluate", expression="x")).startswith("1 (int)")
            done = await dbg.ok(run, op="terminate")
            assert done.startswith(f"Terminated the lldb session of 127.0.0.1:{port}: detached")
    finally:
        kill_tree(stub.pid)
        await stub.aclose()


async def test_attach_to_a_closed_port_says_what_to_start(dbg, debug_run, c_workdir: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with debug_run(c_workdir) as run:
        text = await dbg.error(run, op="attach", port=port)
        assert text.startswith("attach failed: ")
        assert text.endswith(
            f"Is a debug server listening on 127.0.0.1:{port}? Start the program under one first, "
            f"e.g. lldb-server gdbserver 127.0.0.1:{port} ./prog"
        )
        status = await dbg.ok(run, op="status")
        assert f"The last one (lldb attach of 127.0.0.1:{port}, " in status
        assert "ended: attach failed: " in status and "attach failed: attach failed" not in status


async def test_attach_by_pid_reports_threads_and_pause_stops_it(
    dbg, debug_run, c_workdir: Path
) -> None:
    import shutil

    import anyio

    from tether.processes.managed import kill_tree

    shutil.copy(Path(__file__).parent / "fixtures" / "spin.c", c_workdir / "spin.c")
    await anyio.run_process(["gcc", "-g", "-O0", "-o", "spin", "spin.c"], cwd=c_workdir)
    spinner = await anyio.open_process([str(c_workdir / "spin")], start_new_session=True)
    try:
        async with debug_run(c_workdir) as run:
            text = await dbg.ok(run, op="attach", pid=spinner.pid)
            assert text.startswith(f"Attached to pid {spinner.pid} with lldb.")
            assert f"\nThreads (1):\n  thread_id {spinner.pid}: Thread #1 spin\n" in text
            assert text.endswith(
                "Attaching does not pause it: call pause to stop it where it is (then stack, "
                "scopes, evaluate), or continue to run on to a breakpoint."
            )
            assert "The program is running." in await dbg.ok(run, op="status")
            session = run.resources["debug_supervisor"].session
            events: list[object] = []
            on_event = session._on_event
            session._client._on_event = lambda m: (events.append(m), on_event(m))
            paused = await dbg.ok(run, op="pause")
            # lldb pauses with SIGSTOP, inside libc's sleep: the program's own frame is named
            assert paused.startswith("Stopped ("), (paused, events)
            assert "In the program's own code: spin.c:7 in main (frame_id " in paused
            assert "    7 | usleep(10000);" in paused
            main = dbg.number_after(paused, "in main (frame_id ")
            assert (await dbg.ok(run, op="evaluate", expression="n > 0", frame_id=main)).startswith(
                "true (bool)"
            )
            done = await dbg.ok(run, op="terminate")
            assert done.startswith(f"Terminated the lldb session of pid {spinner.pid}: detached")
        await anyio.sleep(0.3)
        assert spinner.returncode is None  # detached, not killed
    finally:
        kill_tree(spinner.pid)
        await spinner.aclose()


async def test_attach_by_pid_to_no_such_process_names_the_field(
    dbg, debug_run, c_workdir: Path
) -> None:
    async with debug_run(c_workdir) as run:
        assert await dbg.error(run, op="attach", pid=4_000_000) == (
            "pid: no process with pid 4000000 is running"
        )
        assert await dbg.error(run, op="attach", pid=1, adapter="dart") == (
            "adapter: the dart adapter cannot attach by pid (it does not attach at all)"
        )

"""The debug tool against real delve (Debian 12's `dlv dap`, 1.20) on a Go module."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import anyio
import pytest
from anyio.abc import SocketAttribute

from tether.processes.managed import kill_tree

pytestmark = pytest.mark.anyio


def _build(workdir: Path, name: str) -> Path:
    """The fixture built in ``workdir`` with delve's flags (the module's cache is warm)."""
    subprocess.run(
        ["go", "build", "-gcflags=all=-N -l", "-o", name, "."], cwd=workdir, check=True, timeout=300
    )
    return workdir / name


async def test_adapters_says_delve_is_usable_on_a_go_checkout_and_why_not_without_go_mod(
    dbg, debug_run, go_workdir: Path, tmp_path: Path
) -> None:
    async with debug_run(go_workdir) as run:
        text = await dbg.ok(run, op="adapters")
    assert (
        "- delve [Go (.go); attach by port or pid]: usable: dlv dap --listen 127.0.0.1:0, "
        "the OS picks the port (/" in text
    )
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "main.go").write_text("package main\n\nfunc main() {}\n")
    async with debug_run(plain) as run:
        text = await dbg.ok(run, op="adapters")
        assert (
            "- delve [Go (.go); attach by port or pid]: unusable: no root marker (go.mod) found\n"
            in text
        )
        failure = await dbg.error(run, op="launch", program="main.go")
    assert failure == (
        "the delve adapter cannot debug 'main.go' here: unusable: no root marker (go.mod) found"
    )


async def test_breakpoints_steps_frames_variables_evaluate_output_and_exit(
    dbg, debug_run, go_workdir: Path
) -> None:
    async with debug_run(go_workdir) as run:
        before = await dbg.ok(run, op="breakpoints", file="main.go", lines=[11])
        assert before.endswith("No session is running: they are sent at launch/attach.")
        text = await dbg.ok(run, op="launch", program="main.go", args=["alpha"])
        assert text.startswith("Launched main.go with delve.")
        assert "main.go:\n  line 11: verified" in text
        assert "Stopped (breakpoint) at main.go:11 in main.square (thread_id 1)." in text
        assert "    11 | result := x * x" in text

        # the OS chose the port (dlv listens on 127.0.0.1:0 and says where); loopback only
        session = run.resources["debug_supervisor"].session
        assert session.process.argv[1:] == ["dap", "--listen", "127.0.0.1:0"]
        host, port = session.client._send.extra(SocketAttribute.remote_address)
        assert host == "127.0.0.1" and port > 0

        step = await dbg.ok(run, op="step_over")
        assert step.startswith("Stopped (step) at main.go:12 in main.square")
        assert "    12 | return result" in step
        top = dbg.number_after(step, "Top frame_id ")
        scopes = await dbg.ok(run, op="scopes", frame_id=top)
        assert scopes.startswith("Locals: reference ")
        square_vars = await dbg.ok(
            run, op="variables", reference=dbg.number_after(scopes, "reference ")
        )
        assert "x (int) = 1" in square_vars.splitlines()
        assert "result (int) = 1" in square_vars.splitlines()

        stack = (await dbg.ok(run, op="stack")).splitlines()
        assert stack[0].endswith(": main.square at main.go:12")
        assert stack[1] == "    12 | return result"
        assert stack[2].endswith(": main.main at main.go:48")
        main_frame = dbg.number_after(stack[2], "frame_id ")
        # evaluate in the top frame by default, and in another frame's scope when asked
        assert (await dbg.ok(run, op="evaluate", expression="x * 10")).startswith("10 (int)")
        in_main = await dbg.ok(
            run, op="evaluate", expression="len(numbers) + n", frame_id=main_frame
        )
        assert in_main.startswith("120 (int)") and f"in frame_id {main_frame}" in in_main
        assert await dbg.error(run, op="evaluate", expression="nosuch") == (
            "evaluate failed: Unable to evaluate expression: could not find symbol value for nosuch"
        )

        out = await dbg.ok(run, op="step_out")
        assert out.startswith("Stopped (step) at main.go:48 in main.main")
        # delve numbers frames from 1000 at every stop: an id from before the step is refused
        stale = await dbg.error(run, op="scopes", frame_id=main_frame)
        assert "call stack again" in stale
        main_top = dbg.number_after(out, "Top frame_id ")
        main_scopes = await dbg.ok(run, op="scopes", frame_id=main_top)
        main_vars = await dbg.ok(
            run, op="variables", reference=dbg.number_after(main_scopes, "reference ")
        )
        assert 'mode (string) = "alpha"' in main_vars.splitlines()
        label = next(line for line in main_vars.splitlines() if line.startswith("label (string)"))
        assert "… (" in label and len(label) < 480
        assert "(1 values cut to 400 characters)" in main_vars
        numbers = next(
            line for line in main_vars.splitlines() if line.startswith("numbers ([]int)")
        )
        children = await dbg.ok(
            run, op="variables", reference=dbg.number_after(numbers, "[reference ")
        )
        # delve loads 64 of the 120 elements; tether shows 50 of those and says so
        assert children.splitlines()[:2] == ["[0] (int) = 0", "[1] (int) = 1"]
        assert children.splitlines()[-2:] == ["[49] (int) = 49", "(50 of 64 variables shown)"]

        assert (await dbg.ok(run, op="step_over")).startswith("Stopped (step) at main.go:47")
        assert (await dbg.ok(run, op="step_over")).startswith("Stopped (step) at main.go:48")
        # stepping into a function, delve stops on its `func` line first (the prologue)
        assert (await dbg.ok(run, op="step_in")).startswith(
            "Stopped (step) at main.go:10 in main.square"
        )

        # delve 1.20 lets the program write to its own stdout/stderr: both reach output
        output = await dbg.ok(run, op="output")
        assert output.startswith("hello from go [alpha]\n")
        assert "to stderr\n" in output
        threads = await dbg.ok(run, op="threads")
        assert "thread_id 1: * [Go 1] main.square" in threads

        pids = dbg.session_pids(run)
        assert len(pids) >= 2  # dlv and the program it built
        await dbg.ok(run, op="breakpoints", file="main.go", lines=[])
        end = await dbg.ok(run, op="continue")
        assert end == "The session ended: the program exited with code 0.\nOutput:\ntotal 14 1000"
        assert dbg.alive(pids) == set()


async def test_a_panic_stops_like_an_uncaught_exception_and_exit_codes_are_reported(
    dbg, debug_run, go_workdir: Path
) -> None:
    async with debug_run(go_workdir) as run:
        text = await dbg.ok(run, op="launch", program="main.go", args=["panic"])
        assert "Stopped (exception: panic) at " in text  # delve stops in runtime.fatalpanic
        assert "Exception: panic: runtime error: integer divide by zero" in text
        assert "In the program's own code: main.go:23 in main.divide (frame_id " in text
        assert "    23 | return a / b" in text
        own = dbg.number_after(text, "main.divide (frame_id ")
        scopes = await dbg.ok(run, op="scopes", frame_id=own)
        args = await dbg.ok(run, op="variables", reference=dbg.number_after(scopes, "reference "))
        assert {"a (int) = 14", "b (int) = 0"} <= set(args.splitlines())
        end = await dbg.ok(run, op="continue")
        assert end.startswith("The session ended: the program exited with code 2.\nOutput:\n")
        assert "panic: runtime error: integer divide by zero\n" in end

        # delve sends no `exited` event: the code comes from what it says on its console
        text = await dbg.ok(run, op="launch", program="main.go", args=["exit"])
        assert "The session ended: the program exited with code 3." in text


async def test_a_deep_stack_is_capped_and_says_so(dbg, debug_run, go_workdir: Path) -> None:
    async with debug_run(go_workdir) as run:
        await dbg.ok(run, op="breakpoints", file="main.go", lines=[17])
        text = await dbg.ok(run, op="launch", program="main.go", args=["deep"])
        assert "Stopped (breakpoint) at main.go:17 in main.depth" in text
        stack = (await dbg.ok(run, op="stack")).splitlines()
        assert len([line for line in stack if line.startswith("frame_id ")]) == 30
        # delve's totalFrames is levels + 50, not a count: tether checks it and does not repeat it
        assert stack[-1] == "(30 of more than 30 frames shown)"


async def test_terminate_leaves_no_process_and_no_build(dbg, debug_run, go_workdir: Path) -> None:
    async with debug_run(go_workdir) as run:
        await dbg.ok(run, op="breakpoints", file="main.go", lines=[11])
        await dbg.ok(run, op="launch", program="main.go")
        session = run.resources["debug_supervisor"].session
        build = session.scratch / "debuggee"
        pids = dbg.session_pids(run)
        assert any(os.path.realpath(f"/proc/{pid}/exe") == str(build) for pid in pids)
        done = await dbg.ok(run, op="terminate")
        assert done.startswith(
            "Terminated the delve session of main.go: the debuggee and adapter are gone."
        )
        assert dbg.alive(pids) == set()
        assert not session.scratch.exists()
        assert not list(go_workdir.glob("__debug_bin*"))


async def test_attach_by_pid_reports_goroutines_and_offers_pause(
    dbg, debug_run, go_workdir: Path
) -> None:
    program = _build(go_workdir, "spinner")
    spinner = await anyio.open_process(
        [str(program), "spin"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        async with debug_run(go_workdir) as run:
            text = await dbg.ok(run, op="attach", pid=spinner.pid)
            assert text.startswith(f"Attached to pid {spinner.pid} with delve.")
            assert "\nThreads (" in text and "\n  thread_id 1: [Go 1] " in text
            assert "call pause to stop it where it is" in text
            paused = await dbg.ok(run, op="pause")
            assert paused.startswith("Stopped (pause) at ")
            assert "In the program's own code: main.go:30 in main.spin" in paused
            done = await dbg.ok(run, op="terminate")
            assert done.startswith(f"Terminated the delve session of pid {spinner.pid}: detached")
        await anyio.sleep(0.3)
        assert spinner.returncode is None  # detached, not killed
    finally:
        kill_tree(spinner.pid)
        await spinner.aclose()


async def test_attach_to_a_headless_delve_by_port(dbg, debug_run, go_workdir: Path) -> None:
    program = _build(go_workdir, "spinner")
    headless = ["dlv", "exec", "--headless", "--continue", "--accept-multiclient"]
    server = await anyio.open_process(
        [*headless, "--listen", "127.0.0.1:0", str(program), "--", "spin"],
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        assert server.stdout is not None
        # dlv says where it listens before --continue has started the program; a client that
        # attaches in between finds it running at configurationDone ("debuggee is running"):
        # attach once the program has printed its first line
        printed = b""
        with anyio.fail_after(30):
            while b"hello from go" not in printed:
                printed += await server.stdout.receive()
        found = re.search(r"API server listening at: 127\.0\.0\.1:(\d+)", printed.decode())
        assert found, printed
        port = int(found.group(1))
        async with debug_run(go_workdir) as run:
            text = await dbg.ok(run, op="attach", port=port)
            assert text.startswith(f"Attached to 127.0.0.1:{port} with delve.")
            assert "\n  thread_id 1: [Go 1] " in text
            paused = await dbg.ok(run, op="pause")
            assert "In the program's own code: main.go:30 in main.spin" in paused
            done = await dbg.ok(run, op="terminate")
            assert done.startswith(f"Terminated the delve session of 127.0.0.1:{port}: detached")
    finally:
        kill_tree(server.pid)
        await server.aclose()


async def test_a_build_error_is_reported_with_the_compilers_words(
    dbg, debug_run, go_workdir: Path
) -> None:
    (go_workdir / "broken.go").write_text('package main\n\nfunc broken() int {\n\treturn "x"\n}\n')
    async with debug_run(go_workdir) as run:
        text = await dbg.error(run, op="launch", program="main.go")
        assert text.startswith(
            "launch failed: Failed to launch: Build error: Check the debug console for details."
        )
        assert "\nOutput:\nBuild Error: " in text
        assert 'broken.go:4:9: cannot use "x" (untyped string constant) as int value' in text
        assert "ended: launch failed: Failed to launch" in await dbg.ok(run, op="status")


async def test_a_built_go_executable_runs_under_delve_when_named(
    dbg, debug_run, go_workdir: Path
) -> None:
    program = _build(go_workdir, "fixture")
    async with debug_run(go_workdir) as run:
        await dbg.ok(run, op="breakpoints", file="main.go", lines=[11])
        # an executable is lldb's by default; adapter "delve" runs it in dlv's exec mode
        text = await dbg.ok(run, op="launch", program=program.name, adapter="delve")
        assert "Stopped (breakpoint) at main.go:11 in main.square" in text
        await dbg.ok(run, op="breakpoints", file="main.go", lines=[])
        assert (await dbg.ok(run, op="continue")).startswith(
            "The session ended: the program exited with code 0."
        )


@pytest.mark.parametrize("when", ["at launch", "while stopped"])
async def test_a_line_delve_cannot_take_names_the_nearest_line_it_can(
    dbg, debug_run, go_workdir: Path, when: str
) -> None:
    """Line 14 is blank, between two functions: delve answers NOT verified, and the answer names
    the nearest line delve does take (asked of delve itself, with the program not running) —
    before, it named none when no other breakpoint of the file had verified."""
    async with debug_run(go_workdir) as run:
        if when == "at launch":
            await dbg.ok(run, op="breakpoints", file="main.go", lines=[14])
            text = await dbg.ok(run, op="launch", program="main.go", args=["alpha"])
        else:
            await dbg.ok(run, op="breakpoints", file="main.go", lines=[11])
            await dbg.ok(run, op="launch", program="main.go", args=["alpha"])
            text = await dbg.ok(run, op="breakpoints", file="main.go", lines=[14])
        found = re.search(r"line 14: NOT verified.*; nearest line the adapter takes: (\d+)", text)
        assert found, text
        assert int(found.group(1)) in (13, 15)
        # the probe left nothing behind: the program runs to its end without another stop
        if when == "while stopped":
            assert "The session ended" in await dbg.ok(run, op="continue")

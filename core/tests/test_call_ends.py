"""Every call ends within its timeout whatever it waits on, and the CLI process ends after its
run closes even when a timed-out call's thread is still blocked (issue 22, item 2)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import anyio
import attrs
import pytest

import tether

pytestmark = pytest.mark.anyio


@attrs.frozen
class NoArgs:
    pass


async def test_a_blocked_synchronous_host_tool_ends_at_its_timeout(tmp_path):
    """A host tool (synchronous, run in a worker thread) blocked on something that never comes:
    the call answers "timed out" at its timeout instead of waiting for the thread."""
    release = threading.Event()

    def blocked(call: tether.CallContext, args: NoArgs) -> str:
        release.wait(30)  # a FIFO without a writer, a hung mount…
        return "never"

    config = {"core": {"call_timeout_s": 0.5}}
    try:
        async with tether.open_run(tmp_path, config=config, entry_points=False) as run:
            run.register_host_tool(tether.ToolSpec("blocked", "read", NoArgs, blocked, "blocks"))
            started = time.monotonic()
            result = await run.call("blocked", {})
            elapsed = time.monotonic() - started
    finally:
        release.set()
    assert result.is_error and "blocked timed out after 0.5 s" in result.text_content
    assert elapsed < 2, elapsed


def test_the_cli_exits_without_a_thread_its_run_abandoned(tmp_path):
    """``leave_no_thread`` (the CLI's last step): a non-daemon thread still blocked after the run
    closed would keep Python alive forever at exit; the process exits after a short grace and
    says so on stderr, with the command's exit code."""
    script = textwrap.dedent(
        """
        import os, sys, threading
        from tether.cli import leave_no_thread
        fifo = sys.argv[1]
        os.mkfifo(fifo)
        threading.Thread(target=lambda: open(fifo).read(), name="blocked reader").start()
        print("answer", flush=True)
        leave_no_thread("call", 1)
        print("not reached")
        """
    )
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "fifo")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert time.monotonic() - started < 10
    assert out.returncode == 1 and out.stdout == "answer\n"
    assert "tether call: 1 thread(s) of timed-out calls still blocked (blocked reader)" in (
        out.stderr
    )


async def test_a_cancelled_scan_in_a_call_leaves_no_thread(tmp_path):
    """A tool scanning through the core's reader, cut by the call's timeout: the call answers
    at its timeout and the scan's thread has ended right after."""
    from tether.workdir.reading import Reader, off_loop

    ended = threading.Event()

    async def scan(call: tether.CallContext, args: NoArgs) -> str:
        def work(reader: Reader) -> str:
            try:
                while True:
                    reader.check()
                    time.sleep(0.001)
            finally:
                ended.set()

        return await off_loop(call.run.workdir, work)

    config = {"core": {"call_timeout_s": 0.3}}
    async with tether.open_run(tmp_path, config=config, entry_points=False) as run:
        run.register_host_tool(tether.ToolSpec("scan", "read", NoArgs, scan, "scans"))
        result = await run.call("scan", {})
    assert result.is_error and "timed out after 0.3 s" in result.text_content
    assert await anyio.to_thread.run_sync(ended.wait, 2)

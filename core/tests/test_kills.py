"""A run's processes die with the process that holds the run, however it dies."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tether.process import owned_by

HARNESS = r"""
import json, sys, anyio, tether

async def main(workdir):
    async with tether.open_run(workdir, conversation_id="k", entry_points=False) as run:
        # a tree: a child, a grandchild, and a double-forked daemon in its own session
        await run.spawn(["sh", "-c", "(setsid sleep 300 &); sleep 300 & sleep 300"], stdin=False)
        print(json.dumps({"owner": run.owner}), flush=True)
        await anyio.sleep(300)

anyio.run(main, sys.argv[1])
"""


def wait_for(predicate, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    return predicate()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_a_harness_killed_with_a_run_open_leaves_no_process(tmp_path, sig):
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        owner = json.loads(harness.stdout.readline())["owner"]
        kids = wait_for(lambda: len(found := owned_by(f"{owner}/", prefix=True)) >= 4 and found)
        assert len(kids) >= 4, kids  # sh, two sleeps and the daemon
        os.kill(harness.pid, sig)
        harness.wait(timeout=10)
        killed_at = time.monotonic()
        left = wait_for(lambda: not owned_by(f"{owner}/", prefix=True), timeout_s=2.0)
        assert left, f"still alive 2 s after {sig.name}: {owned_by(f'{owner}/', prefix=True)}"
        assert time.monotonic() - killed_at < 2.0
    finally:
        harness.kill()
        harness.wait()

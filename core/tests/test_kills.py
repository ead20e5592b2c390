"""A run's processes die with the process that holds the run, however it dies."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tether.processes.managed import owned_by
from tether.testing import default_signals

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
        [sys.executable, "-c", HARNESS, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,
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


def start_session(tmp_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tether.cli",
            "session",
            "--workdir",
            str(tmp_path),
            "--approve=exec",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,
    )
    assert json.loads(proc.stdout.readline())["ready"] is True  # the session's first line
    send(proc, {"id": 1, "tool": "echo_exec", "args": {"argv": DAEMONS, "background": True}})
    reply = json.loads(proc.stdout.readline())
    assert not reply["is_error"], reply
    return proc


DAEMONS = ["sh", "-c", "(setsid sleep 300 &); sleep 300 & sleep 300"]


def send(proc, message):
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()


def marked_children(proc):
    marker = f"{proc.pid}."  # the run's owner marker starts with the pid of its process
    return owned_by(marker, prefix=True)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signalled_session_answers_its_calls_in_flight_and_leaves_no_process(tmp_path, sig):
    proc = start_session(tmp_path)
    try:
        assert wait_for(lambda: len(marked_children(proc)) >= 4)
        send(proc, {"id": 2, "tool": "echo", "args": {"message": "slow", "delay_s": 60}})
        time.sleep(0.3)  # the call is in flight (stdin stays open: the session must not wait on it)
        os.kill(proc.pid, sig)
        assert proc.wait(timeout=10) == 128 + sig
        reply = json.loads(proc.stdout.readline())
        assert reply["id"] == 2 and reply["is_error"]
        assert sig.name in reply["content"][0]["text"], reply
        assert wait_for(lambda: not marked_children(proc), timeout_s=2.0)
    finally:
        proc.kill()
        proc.wait()


def test_a_second_signal_exits_at_once(tmp_path):
    proc = start_session(tmp_path)
    try:
        assert wait_for(lambda: len(marked_children(proc)) >= 4)
        # a child that ignores SIGTERM keeps the graceful close busy for its grace period
        stubborn = ["sh", "-c", "trap '' TERM; sleep 300"]
        send(proc, {"id": 2, "tool": "echo_exec", "args": {"argv": stubborn, "background": True}})
        assert not json.loads(proc.stdout.readline())["is_error"]
        os.kill(proc.pid, signal.SIGTERM)
        time.sleep(0.1)
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=10) == 128 + signal.SIGINT  # the second signal's exit
        assert wait_for(lambda: not marked_children(proc), timeout_s=2.0)
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signalled_call_leaves_no_process(tmp_path, sig):
    script = "(setsid sleep 300 &); sleep 300 & exec sleep 300"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tether.cli",
            "call",
            "echo_exec",
            json.dumps({"argv": ["sh", "-c", script]}),
            f"--workdir={tmp_path}",
            "--approve=exec",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,
    )
    try:
        assert wait_for(lambda: len(marked_children(proc)) >= 3)
        os.kill(proc.pid, sig)
        code = proc.wait(timeout=10)
        if sig != signal.SIGKILL:
            assert code == 128 + sig
            result = json.loads(proc.stdout.read())
            assert result["is_error"] and sig.name in result["content"][0]["text"]
        assert wait_for(lambda: not marked_children(proc), timeout_s=2.0)
    finally:
        proc.kill()
        proc.wait()

"""`tether session` under a real pseudo-terminal: the client's request lines are not echoed back
on the output it reads, and the terminal's settings are restored when the session ends."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest


def read_until(fd: int, predicate, timeout: float = 60.0) -> bytes:
    out = b""
    deadline = time.monotonic() + timeout
    while not predicate(out):
        left = deadline - time.monotonic()
        assert left > 0, f"timed out; read so far: {out!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the slave side is closed
                break
            if not chunk:
                break
            out += chunk
    return out


def replies_in(out: bytes) -> list[dict]:
    """The complete `tools` replies in ``out`` (lines end in CR LF on a terminal)."""
    found = []
    for line in out.split(b"\n")[:-1]:
        try:
            reply = json.loads(line.rstrip(b"\r"))
        except ValueError:
            continue
        if isinstance(reply, dict) and "tools" in reply:
            found.append(reply)
    return found


@pytest.mark.parametrize("interactive", [False, True])
def test_a_session_under_a_pty_does_not_echo_requests(tmp_path: Path, interactive: bool) -> None:
    master, slave = pty.openpty()
    before = termios.tcgetattr(slave)
    assert before[3] & termios.ECHO, "a fresh pty echoes"
    argv = [sys.executable, "-m", "tether", "session", "--workdir", str(tmp_path)]
    if interactive:
        argv.append("--interactive")
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        ready = read_until(master, lambda out: b'"ready"' in out)
        requests = [{"id": n, "request": "tools"} for n in (1, 2, 3)]
        for request in requests:
            os.write(master, json.dumps(request).encode() + b"\n")
        out = read_until(master, lambda out: len(replies_in(out)) >= 3)
        lines = [line for line in (ready + out).replace(b"\r", b"").split(b"\n") if line.strip()]
        echoed = [line for line in lines if b'"request"' in line]
        assert not echoed, f"request lines came back on the output: {echoed[:3]}"
        assert [reply["id"] for reply in replies_in(out)] == [1, 2, 3]
        os.write(master, b"\x04")  # end of input, as a person types it: the session ends
        assert proc.wait(timeout=30) == 0
        after = termios.tcgetattr(slave)
        assert after[3] & termios.ECHO, "the terminal's echo is restored at the end"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
        os.close(slave)
        assert proc.stderr is not None
        proc.stderr.close()

"""Hang attacks: a debug adapter and a language server stopped (SIGSTOP) in the middle of a
session, through the real ``tether session``. The promise: ``status`` does not call either
healthy; the second request in a row that times out ends the debug session and says so, and the
next query after two restarts the language server and says so; no process of the stopped one is
left (SIGKILL needs no SIGCONT).

The processes are found by the run's owner marker, like the kill attacks'.
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import time
from pathlib import Path

from attack_cli import Session

from tether.processes.hang import activity
from tether.processes.managed import is_alive, kill_tree
from tether.testing import require_real

PROGRAM = "import time\nx = 1\ntime.sleep(0.1)\nprint(x)\n"


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "?"


def asker(session: Session, tool: str):
    def ask(n: int, args: dict) -> dict:
        session.send({"id": n, "tool": tool, "args": args})
        reply = session.line()
        assert reply.get("id") == n, reply
        return reply

    return ask


def text(reply: dict) -> str:
    return "".join(part.get("text", "") for part in reply["content"])


def stop(pids: list[int]) -> None:
    """SIGSTOP each, and wait until they are stopped (delivery is asynchronous)."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 5
    while not activity(pids)[0] and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_stopped_debug_adapter_ends_its_session_and_leaves_no_process(
    tmp_path, tally, survivors
) -> None:
    require_real(importlib.util.find_spec("debugpy") is not None, "debugpy")
    work = tmp_path / "work"
    work.mkdir()
    (work / "pyproject.toml").write_text('[project]\nname = "victim"\nversion = "0"\n')
    (work / "prog.py").write_text(PROGRAM)
    config = tmp_path / "harness.toml"
    config.write_text("[debug]\nrequest_timeout_s = 3.0\n")
    session = Session(work, f"--config={config}", "--approve=exec")
    held, orphans = False, 0
    try:
        ask = asker(session, "debug")
        ask(1, {"op": "breakpoints", "file": "prog.py", "lines": [4]})
        launched = ask(2, {"op": "launch", "program": "prog.py"})
        assert "Stopped (breakpoint) at prog.py:4" in text(launched), launched
        mine = survivors(f"TETHER_OWNER={session.proc.pid}.")
        (adapter,) = [p for p in mine if "debugpy_adapter.py" in cmdline(p)]
        assert any("prog.py" in cmdline(p) for p in mine), [cmdline(p) for p in mine]
        stop([adapter])
        first = ask(3, {"op": "threads"})
        assert first["is_error"] and "did not answer 'threads' within 3 s" in text(first), first
        status = text(ask(4, {"op": "status"}))
        assert re.search(r"Adapter: debugpy \(pid \d+\): unresponsive since ", status), status
        second = ask(5, {"op": "threads"})
        ended = (
            "the debugpy adapter did not answer 2 requests in a row; the session was ended "
            "(adapter and debuggee killed). launch again to start over"
        )
        assert second["is_error"] and ended in text(second), second
        deadline = time.monotonic() + 2
        while (left := survivors(f"TETHER_OWNER={session.proc.pid}.")) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.02)
        orphans = len(left)
        assert not left, [cmdline(p) for p in left]
        # the session goes on: a new launch starts over
        again = ask(6, {"op": "launch", "program": "prog.py"})
        assert "Stopped (breakpoint) at prog.py:4" in text(again), again
        held = True
    finally:
        tally.record("hangs", held=held, orphans=orphans)
        for pid in survivors(f"TETHER_OWNER={session.proc.pid}."):
            kill_tree(pid)  # one that exits meanwhile is no error
        session.proc.kill()
        session.proc.wait()


def test_a_stopped_language_server_is_restarted_and_leaves_no_process(
    tmp_path, tally, survivors
) -> None:
    require_real("basedpyright-langserver", "node")
    work = tmp_path / "work"
    (work / "pkg").mkdir(parents=True)
    (work / "pyproject.toml").write_text('[project]\nname = "victim"\nversion = "0"\n')
    (work / "pkg" / "__init__.py").write_text("")
    (work / "pkg" / "mod.py").write_text("def square(n: int) -> int:\n    return n * n\n")
    config = tmp_path / "harness.toml"
    config.write_text("[lsp]\nrequest_timeout_s = 3.0\n")
    session = Session(work, f"--config={config}")
    hover = {"action": "hover", "file": "pkg/mod.py", "line": 1, "symbol": "square"}
    held, orphans = False, 0
    try:
        ask = asker(session, "lsp")
        assert "square" in text(ask(1, hover))  # the server is up and has answered
        server = [
            p
            for p in survivors(f"TETHER_OWNER={session.proc.pid}.")
            if "basedpyright" in cmdline(p)
        ]
        assert server
        stop(server)
        first = ask(2, hover)
        assert first["is_error"] and "still computing" in text(first), first
        status = text(ask(3, {"action": "status"}))
        assert re.search(r"unresponsive since \d\d:\d\d:\d\d UTC \(1 request", status), status
        assert ask(4, hover)["is_error"]  # the second timeout in a row
        restarted = ask(5, hover)
        assert not restarted["is_error"] and "(restarted basedpyright" in text(restarted), restarted
        deadline = time.monotonic() + 2
        while (left := [p for p in server if is_alive(p)]) and time.monotonic() < deadline:
            time.sleep(0.02)
        orphans = len(left)
        assert not left, [cmdline(p) for p in left]
        held = True
    finally:
        tally.record("hangs", held=held, orphans=orphans)
        for pid in survivors(f"TETHER_OWNER={session.proc.pid}."):
            kill_tree(pid)  # one that exits meanwhile is no error
        session.proc.kill()
        session.proc.wait()

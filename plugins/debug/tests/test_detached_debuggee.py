"""A debuggee that double-forks, calls ``setsid`` and empties its environment leaves every tree
tether follows (issue 22, section 4): ``debug terminate`` must end it or say it is alive, never
answer "gone" while it runs on. A real debugpy, through ``tether session`` (a subreaper)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tether.processes.managed import is_alive
from tether.testing import require_real

PROGRAM = """\
import os
import time


def detach():
    child = os.fork()
    if child == 0:
        os.setsid()
        if os.fork() == 0:
            with open("daemon.tmp", "w") as fh:
                fh.write(str(os.getpid()))
            os.rename("daemon.tmp", "daemon.pid")
            os.execve("/bin/sleep", ["sleep", "120"], {})
        os._exit(0)
    os.waitpid(child, 0)


detach()
while not os.path.exists("daemon.pid"):
    time.sleep(0.01)
stop_here = 1
time.sleep(120)
"""
BREAK_LINE = PROGRAM.splitlines().index("stop_here = 1") + 1


def test_terminate_ends_a_debuggee_that_left_its_tree_and_environment(tmp_path: Path) -> None:
    require_real(importlib.util.find_spec("debugpy") is not None, "debugpy (pip install debugpy)")
    work = tmp_path / "work"
    work.mkdir()
    (work / "pyproject.toml").write_text('[project]\nname = "dfork"\nversion = "0"\n')
    (work / "dfork.py").write_text(PROGRAM)
    requests = [
        {"tool": "debug", "args": {"op": "breakpoints", "file": "dfork.py", "lines": [BREAK_LINE]}},
        {"tool": "debug", "args": {"op": "launch", "program": "dfork.py", "adapter": "debugpy"}},
        {"tool": "debug", "args": {"op": "terminate"}},
    ]
    session = subprocess.Popen(
        [sys.executable, "-m", "tether.cli", "session", f"--workdir={work}", "--approve=exec"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TETHER_LOAD_PLUGINS": "debug"},
    )
    assert session.stdin is not None and session.stdout is not None
    daemon = None
    try:
        replies = []
        for n, request in enumerate(requests, 1):
            session.stdin.write(json.dumps({"id": n, **request}) + "\n")
            session.stdin.flush()
            while True:
                reply = json.loads(session.stdout.readline())
                if reply.get("id") == n:
                    break
            assert not reply["is_error"], reply
            replies.append(reply["content"][0]["text"])
            if n == 2:
                assert f"dfork.py:{BREAK_LINE}" in replies[-1], replies[-1]
                daemon = int((work / "daemon.pid").read_text())
                assert is_alive(daemon)
        terminated = replies[-1]
        time.sleep(0.2)
        alive = is_alive(daemon)
        # either it was ended (and said so) or the answer says it still runs — never "gone"
        assert not alive, terminated
        assert f"{daemon} `sleep 120`" in terminated, terminated
        session.stdin.close()
        assert session.wait(timeout=30) == 0, session.stderr.read() if session.stderr else ""
    finally:
        if session.poll() is None:
            session.kill()
            session.wait()
        if daemon is not None and is_alive(daemon):
            os.kill(daemon, 9)

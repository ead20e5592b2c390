"""Through the real ``tether`` CLI: tools only with --vibe; a session's EOF leaves nothing behind."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from vibe_testlib import AGENT, pids_in, survivors

VIBE_TOOLS = ["vibe_kill", "vibe_list", "vibe_send", "vibe_spawn", "vibe_wait"]


def write_config(path: Path) -> Path:
    command = json.dumps([sys.executable, str(AGENT), "{brief}"])
    path.write_text(f"[vibe]\nkill_grace_s = 0.5\n\n[vibe.runners.fast]\ncommand = {command}\n")
    return path


def tether(
    *args: str, stdin: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"TETHER_LOAD_PLUGINS": "vibe", "PATH": "/usr/bin:/bin"},
    )


def test_tools_listed_only_with_vibe(tmp_path: Path) -> None:
    config = write_config(tmp_path / "tether.toml")
    plain = tether("tools", "--workdir", str(tmp_path), "--config", str(config))
    assert plain.returncode == 0, plain.stderr
    assert [t["name"] for t in json.loads(plain.stdout) if t["name"].startswith("vibe")] == []
    vibe = tether("tools", "--vibe", "--workdir", str(tmp_path), "--config", str(config))
    assert vibe.returncode == 0, vibe.stderr
    tools = {t["name"]: t for t in json.loads(vibe.stdout)}
    assert sorted(n for n in tools if n.startswith("vibe")) == VIBE_TOOLS
    assert {tools[n]["tier"] for n in VIBE_TOOLS} == {"read"}


def test_session_eof_kills_workers(tmp_path: Path) -> None:
    config = write_config(tmp_path / "tether.toml")
    pidfile = tmp_path / "pids"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tether.cli",
            "session",
            "--vibe",
            "--workdir",
            str(tmp_path),
            "--config",
            str(config),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"TETHER_LOAD_PLUGINS": "vibe", "PATH": "/usr/bin:/bin"},
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        brief = f"say: up\ngrandchildren: {pidfile}\nhang"
        request = {"id": 1, "tool": "vibe_spawn", "args": {"brief": brief, "label": "stuck"}}
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["ready"] is True  # the session's first line
        reply = json.loads(proc.stdout.readline())
        assert reply["id"] == 1 and not reply["is_error"], reply
        assert reply["meta"]["status"] == "running"
        deadline = time.monotonic() + 20
        while not pidfile.exists():
            assert time.monotonic() < deadline, "the worker never started its children"
            time.sleep(0.05)
        pids = pids_in(pidfile)
        assert len(pids) == 4 and survivors(pids) == pids
        proc.stdin.close()  # EOF: the session closes its run
        assert proc.wait(timeout=30) == 0, proc.stderr.read() if proc.stderr else ""
        assert survivors(pids) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

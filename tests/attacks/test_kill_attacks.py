"""Kill attacks: a run with a language server, kernels, a debug session and a vibe worker with
grandchildren alive, killed with each of the four signals, in ``tether session``, ``tether call``
and a harness holding an ``open_run``; every process the run started must be gone within 2 s.

The processes are counted by their owner marker (``TETHER_OWNER=<pid of the run's process>.…``),
which every process of a run carries, double-forked daemons included.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tether.testing import require_real

SIGNALS = [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP, signal.SIGINT]
# a vibe worker whose children and a double-forked grandchild outlive nothing
WORKER = ["sh", "-c", "(setsid sleep 300 &); sleep 300 & sleep 300 & wait"]
PROGRAM = "import time\nx = 1\ntime.sleep(0.1)\nprint(x)\n"


def project(tmp_path: Path) -> tuple[Path, Path]:
    """A workdir (a Python package, a program to debug) and a harness config outside it."""
    require_real("basedpyright-langserver", "node")
    work = tmp_path / "work"
    (work / "pkg").mkdir(parents=True)
    (work / "pyproject.toml").write_text('[project]\nname = "victim"\nversion = "0"\n')
    (work / "pkg" / "__init__.py").write_text("")
    (work / "pkg" / "mod.py").write_text("def square(n: int) -> int:\n    return n * n\n")
    (work / "prog.py").write_text(PROGRAM)
    config = tmp_path / "harness.toml"
    config.write_text(
        f"[vibe]\nkill_grace_s = 0.5\n\n[vibe.runners.fast]\ncommand = {json.dumps(WORKER)}\n"
    )
    return work, config


HOVER = {"action": "hover", "file": "pkg/mod.py", "line": 1, "symbol": "square"}
BREAK = {"op": "breakpoints", "file": "prog.py", "lines": [4]}
LAUNCH = {"op": "launch", "program": "prog.py"}
SPAWN = {"brief": "wait for the end", "label": "sleeper"}
PY = {"code": "1 + 1", "description": "start the python kernel with a sum"}
JS = {"code": "1 + 1", "description": "start the node kernel with a sum", "language": "javascript"}


# started together after the breakpoints are set (the two eval cells run one after the other)
CONCURRENT = [("lsp", HOVER), ("eval", PY), ("eval", JS), ("debug", LAUNCH), ("vibe_spawn", SPAWN)]


def send(proc: subprocess.Popen[str], n: int, tool: str, args: dict) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"id": n, "tool": tool, "args": args}) + "\n")
    proc.stdin.flush()


Marked = Callable[[int], list[int]]


@pytest.fixture
def marked(survivors) -> Marked:
    """Live processes of the run owned by the process ``pid`` (its marker starts with it)."""
    return lambda pid: survivors(f"TETHER_OWNER={pid}.")


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "?"


def all_alive(pid: int, marked: Marked, timeout_s: float = 60.0) -> list[int]:
    """Wait until the run of ``pid`` has every component up: basedpyright, ipykernel, node,
    debugpy and its debuggee, and the worker's sleeps (grandchildren, daemon included)."""
    wanted = ["basedpyright", "ipykernel", "node_kernel", "debugpy", "prog.py", "sleep 300"]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists():
            raise AssertionError(f"the run's process {pid} died before every component came up")
        pids = marked(pid)
        lines = [cmdline(p) for p in pids]
        missing = [w for w in wanted if not any(w in line for line in lines)]
        if not missing and sum("sleep 300" in line for line in lines) >= 3:
            return pids
        time.sleep(0.1)
    raise AssertionError(f"not every component came up: missing {missing}; have {lines}")


def gone_within(pid: int, marked: Marked, seconds: float = 2.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not marked(pid):
            return []
        time.sleep(0.02)
    return marked(pid)


def finish(proc: subprocess.Popen[str], sig: int, alive: list[int], tally, marked: Marked) -> None:
    os.kill(proc.pid, sig)
    try:
        # a graceful close (SIGTERM/HUP/INT) is bounded by the run's close timeouts, 10 s per
        # resource: on a loaded machine a harness's close took more than 15 s once in CI
        proc.wait(timeout=45)
    finally:
        orphans = gone_within(proc.pid, marked)
        for p in orphans:
            os.kill(p, signal.SIGKILL)
        tally.record("kills", held=not orphans and len(alive) >= 7, orphans=len(orphans))
    assert len(alive) >= 7, alive
    assert not orphans, [cmdline(p) for p in orphans]
    if sig != signal.SIGKILL:
        assert proc.returncode in (128 + sig, -sig), proc.returncode


def tether_cli(*args: str, **kwargs) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tether.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_killed_session_leaves_no_process(tmp_path, sig, tally, marked):
    work, config = project(tmp_path)
    proc = tether_cli(
        "session",
        "--vibe",
        f"--workdir={work}",
        f"--config={config}",
        "--approve=exec",
        stdin=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert json.loads(proc.stdout.readline())["ready"] is True  # the session is up
        send(proc, 0, "debug", BREAK)
        assert not json.loads(proc.stdout.readline())["is_error"]
        # everything else at once; the calls are still in flight when the signal comes
        for n, (tool, args) in enumerate(CONCURRENT, start=1):
            send(proc, n, tool, args)
        alive = all_alive(proc.pid, marked)
        finish(proc, sig, alive, tally, marked)
    finally:
        proc.kill()
        proc.wait()


CALL_CELL = """
import time
for name, args in {calls!r}:
    result = tool(name, args)
print("all up", flush=True)
time.sleep(300)
"""


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_killed_call_leaves_no_process(tmp_path, sig, tally, marked):
    """One ``tether call eval`` whose cell brings the others up through tool(): the python
    kernel hosts the call (eval runs one cell at a time, so no node kernel here)."""
    work, config = project(tmp_path)
    calls = [("debug", BREAK), ("vibe_spawn", SPAWN), ("debug", LAUNCH), ("lsp", HOVER)]
    cell = {"code": CALL_CELL.format(calls=calls), "description": "bring every component up now"}
    proc = tether_cli(
        "call",
        "eval",
        json.dumps(cell),
        "--vibe",
        f"--workdir={work}",
        f"--config={config}",
        "--approve=exec",
        stdin=subprocess.DEVNULL,
    )
    try:
        wanted = ["basedpyright", "ipykernel", "debugpy", "prog.py", "sleep 300"]
        alive = wait_for_components(proc.pid, wanted, marked)
        finish(proc, sig, alive, tally, marked)
        if sig != signal.SIGKILL:
            assert proc.stdout is not None
            result = json.loads(proc.stdout.read())
            assert result["is_error"] and sig.name in result["content"][0]["text"]
    finally:
        proc.kill()
        proc.wait()


def wait_for_components(
    pid: int, wanted: list[str], marked: Marked, timeout_s: float = 60.0
) -> list[int]:
    deadline = time.monotonic() + timeout_s
    lines: list[str] = []
    while time.monotonic() < deadline:
        pids = marked(pid)
        lines = [cmdline(p) for p in pids]
        if all(any(w in line for line in lines) for w in wanted) and (
            sum("sleep 300" in line for line in lines) >= 3
        ):
            return pids
        time.sleep(0.1)
    raise AssertionError(f"not every component came up: {wanted}; have {lines}")


HARNESS = r"""
import json, sys, anyio, tether
from tether.config import read_config_file
from pathlib import Path

async def main(work, config_path, calls):
    config = read_config_file(Path(config_path))  # harness configuration
    auto = {"read": "auto", "write": "auto", "exec": "auto"}
    config.setdefault("core", {})["approval"] = auto
    async with tether.open_run(work, conversation_id="h", config=config, vibe=True) as run:
        await run.call("debug", calls[0][1])
        async with anyio.create_task_group() as tg:
            for name, args in calls[1:]:
                tg.start_soon(run.call, name, args)
        await anyio.sleep(300)

anyio.run(main, sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))
"""


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_killed_harness_leaves_no_process(tmp_path, sig, tally, marked):
    work, config = project(tmp_path)
    calls = [("debug", BREAK), *CONCURRENT]
    proc = subprocess.Popen(
        [sys.executable, "-c", HARNESS, str(work), str(config), json.dumps(calls)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        alive = all_alive(proc.pid, marked)
        finish(proc, sig, alive, tally, marked)
    finally:
        proc.kill()
        proc.wait()

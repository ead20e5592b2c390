"""Helpers for the vibe tests: the test agent CLI and /proc checks for leftover processes."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

import tether.processes.managed

AGENT = Path(__file__).with_name("agent_cli.py")
AGENT_COMMAND = [sys.executable, str(AGENT), "{brief}"]


def command_config(**vibe: Any) -> dict[str, Any]:
    """A [vibe] table running the test agent CLI for both tiers (brief as argv)."""
    table: dict[str, Any] = {
        "runners": {"fast": {"command": AGENT_COMMAND}, "good": {"command": AGENT_COMMAND}},
        "kill_grace_s": 0.5,
    }
    table.update(vibe)
    return {"vibe": table}


# Every process this test session starts inherits this marker, so the survivor scan counts only
# ours — not those of another suite running on the same machine at the same time.
SESSION_ENV = "TETHER_VIBE_TEST_SESSION"
os.environ.setdefault(SESSION_ENV, uuid.uuid4().hex)
_SESSION_MARK = f"{SESSION_ENV}={os.environ[SESSION_ENV]}".encode()


def stray_processes() -> list[int]:
    """Pids of this session's test agent CLIs or their children still running."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            if b"vibe-test-process" not in cmdline and AGENT.name.encode() not in cmdline:
                continue
            if _SESSION_MARK not in (entry / "environ").read_bytes().split(b"\0"):
                continue
        except OSError:
            continue
        if alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def describe_process(pid: int) -> str:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return "(gone)"
    return (
        f"ppid {stat[1]} pgid {stat[2]} state {stat[0]}: {cmdline.decode(errors='replace')[:200]}"
    )


def alive(pid: int) -> bool:
    """True while pid exists and is not a zombie (a zombie has already exited)."""
    return tether.processes.managed.is_alive(pid)


async def wait_for_file(path: Path, timeout: float = 10.0) -> str:
    with anyio.fail_after(timeout):
        while not path.exists():
            await anyio.sleep(0.02)
    return path.read_text()


async def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)


def pids_in(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()]


def survivors(pids: list[int]) -> list[int]:
    return [pid for pid in pids if alive(pid)]


async def open_error(factory: Callable[..., Any], **kwargs: Any) -> BaseException:
    """The exception opening a run raised, unwrapped from the run's task-group ExceptionGroup."""
    try:
        async with factory(**kwargs):
            pass
    except BaseException as exc:
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        return exc
    raise AssertionError("the run opened without an error")

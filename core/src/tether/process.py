"""Child processes owned by a run: own process group, bounded stderr tail, whole-tree kill.

Every process a plugin starts goes through :meth:`tether.Run.spawn` (or is adopted with
:meth:`tether.Run.adopt_pid`), so closing the run leaves nothing behind.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from tether.text import TailBuffer

_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux), so daemonised
    grandchildren stay findable and killable. Used by the CLI; returns False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parent_map() -> dict[int, int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
            parents[int(entry)] = int(stat.rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return parents


def descendants(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (not ``pid`` itself), read from /proc."""
    parents = _parent_map()
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    found: set[int] = set()
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def group_members(pgid: int) -> set[int]:
    """Live pids whose process group is ``pgid`` (they stay in the group after its leader exits
    and they are re-parented, so they are no longer the leader's descendants)."""
    members: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != b"Z":
                members.add(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return members


def _tree(pid: int) -> set[int]:
    """``pid``, its descendants, the members of the group it leads, and their descendants."""
    tree = {pid} | descendants(pid)
    for member in group_members(pid) - tree:
        tree |= {member} | descendants(member)
    return tree


def is_alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


# children started by spawn(): the event loop's child watcher reaps them, never us
_spawned: set[int] = set()


def _reap(pids: set[int]) -> None:
    for pid in pids - _spawned:
        try:
            os.waitpid(pid, os.WNOHANG)
        except (ChildProcessError, OSError):
            pass


def kill_tree(pid: int, sig: int = signal.SIGKILL) -> set[int]:
    """Send ``sig`` to ``pid``, every descendant, and the process groups they are in — including
    the group ``pid`` led, whose members may have been re-parented; return the pids hit."""
    tree = _tree(pid)
    groups = set()
    for member in tree:
        try:
            groups.add(os.getpgid(member))
        except OSError:
            pass
    own_group = os.getpgrp()
    for group in groups - {own_group}:
        try:
            os.killpg(group, sig)
        except OSError:
            pass
    for member in tree:
        try:
            os.kill(member, sig)
        except OSError:
            pass
    if sig == signal.SIGKILL:
        _reap(tree)
    return tree


async def terminate_tree(pid: int, grace_s: float = 1.0) -> None:
    """SIGTERM the tree, wait up to ``grace_s`` for it to go, then SIGKILL whatever is left."""
    tree = kill_tree(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        _reap(tree)
        if not any(is_alive(p) for p in tree):
            break
        await anyio.sleep(0.02)
    tree |= _tree(pid)
    for member in tree:
        if is_alive(member):
            kill_tree(member)
    _reap(tree)


def kill_orphans() -> set[int]:
    """Kill every remaining descendant of this process and reap it.

    For a process that owns all its children (the CLI, a subreaper): daemonised grandchildren
    that escaped their tree were re-parented here and are found this way.
    """
    killed: set[int] = set()
    for pid in descendants(os.getpid()):
        if is_alive(pid):
            killed |= kill_tree(pid)
    _reap(killed)
    return killed


class ManagedProcess:
    """A child started by :func:`spawn`: pipes, a bounded stderr tail, tree termination."""

    def __init__(
        self, process: anyio.abc.Process, argv: Sequence[str], stderr_tail: TailBuffer
    ) -> None:
        self.process = process
        self.argv = list(argv)
        self.stderr_tail = stderr_tail
        self.started_at = time.time()

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def stdin(self) -> anyio.abc.ByteSendStream:
        assert self.process.stdin is not None, "spawned without stdin=True"
        return self.process.stdin

    @property
    def stdout(self) -> anyio.abc.ByteReceiveStream:
        assert self.process.stdout is not None, "spawned without stdout=True"
        return self.process.stdout

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def wait(self) -> int:
        return await self.process.wait()

    async def terminate(self, grace_s: float = 1.0) -> None:
        """Stop the process and every descendant (SIGTERM, then SIGKILL after ``grace_s``)."""
        with anyio.CancelScope(shield=True):
            if self.process.returncode is None or descendants(self.pid) or group_members(self.pid):
                await terminate_tree(self.pid, grace_s)
            with anyio.move_on_after(max(grace_s, 0.5)):
                await self.process.aclose()  # closes the pipes and the transport, reaps the child
            _spawned.discard(self.pid)

    def forget(self) -> None:
        _spawned.discard(self.pid)

    def kill(self) -> None:
        """SIGKILL the whole tree now (synchronous)."""
        kill_tree(self.pid)


async def spawn(
    argv: Sequence[str],
    *,
    task_group: anyio.abc.TaskGroup,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bool = True,
    stdout: bool = True,
    stderr_bytes: int = 16 * 1024,
) -> ManagedProcess:
    """Start ``argv`` in a new process group; stderr is drained into a bounded tail.

    Raises :class:`FileNotFoundError`/:class:`PermissionError` when the program cannot start.
    """
    full_env: dict[str, Any] | None = None
    if env is not None:
        full_env = {**os.environ, **env}
    process = await anyio.open_process(
        list(argv),
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE if stdout else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=str(cwd) if cwd is not None else None,
        env=full_env,
        start_new_session=True,
    )
    tail = TailBuffer(stderr_bytes)
    managed = ManagedProcess(process, argv, tail)
    _spawned.add(process.pid)

    async def drain() -> None:
        assert process.stderr is not None
        try:
            async for chunk in process.stderr:
                tail.write(chunk)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass

    task_group.start_soon(drain)
    return managed

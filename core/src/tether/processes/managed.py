"""Child processes owned by a run: own process group, bounded stderr tail, whole-tree kill.

Every process a plugin starts goes through :meth:`tether.Run.spawn` (or is adopted with
:meth:`tether.Run.adopt_pid`), so closing the run leaves nothing behind.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import attrs

from tether.processes import procinfo
from tether.text import TailBuffer

_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux), so daemonised
    grandchildren stay findable and killable. Used by the CLI; returns False where unsupported,
    and under the portable backend (``TETHER_PORTABLE=1``: Linux behaving as macOS would, see
    :mod:`tether.processes.procinfo`)."""
    import ctypes  # only the CLI needs it: not paid by every import of tether

    global _subreaper
    if procinfo.portable():
        _subreaper = False
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        _subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        _subreaper = False
    return _subreaper


def _parent_map() -> dict[int, int]:
    parents: dict[int, int] = {}
    for pid in procinfo.pids():
        stat = procinfo.stat(pid)
        if stat is not None:
            parents[pid] = stat.ppid
    return parents


def descendants(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (not ``pid`` itself)."""
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
    for pid in procinfo.pids():
        stat = procinfo.stat(pid)
        if stat is not None and stat.pgid == pgid and not stat.zombie:
            members.add(pid)
    return members


def is_alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    stat = procinfo.stat(pid)
    return stat is not None and not stat.zombie


#: Environment variable that marks every process a run starts, and so every descendant that keeps
#: its environment: double-forked daemons leave the tree and the group, but not the marker.
OWNER_ENV = "TETHER_OWNER"


def owned_by(marker: str, *, prefix: bool = False) -> set[int]:
    """Live pids whose environment holds ``TETHER_OWNER=<marker>`` (or one starting with it)."""
    needle = f"{OWNER_ENV}={marker}".encode()
    found: set[int] = set()
    me = os.getpid()
    for pid in procinfo.pids():
        if pid == me:
            continue
        for item in procinfo.environ(pid) or ():
            if item == needle or (prefix and item.startswith(needle)):
                if is_alive(pid):
                    found.add(pid)
                break
    return found


def start_time(pid: int) -> int | None:
    """When ``pid`` started (comparable with other start times only: see
    :mod:`tether.processes.procinfo`), or None when it is gone. A pid and its start time name one
    process: a number reused after an exit (and the reaping that frees it) has another."""
    stat = procinfo.stat(pid)
    return None if stat is None else stat.started


def _parent(pid: int) -> int | None:
    stat = procinfo.stat(pid)
    return None if stat is None else stat.ppid


def _carries(pid: int, marker: str) -> bool:
    """``pid``'s environment holds ``TETHER_OWNER=<marker>`` (a marker ending in ``/`` is a
    prefix: any process of that run)."""
    needle = f"{OWNER_ENV}={marker}".encode()
    environ = procinfo.environ(pid) or []
    if marker.endswith("/"):
        return any(item.startswith(needle) for item in environ)
    return needle in environ


_subreaper = False


def _ancestors_of_this_process() -> set[int]:
    found: set[int] = set()
    pid: int | None = os.getpid()
    while pid and pid not in found:
        found.add(pid)
        pid = _parent(pid)
    return found


def is_subreaper() -> bool:
    """True once :func:`become_subreaper` made this process the reaper of its orphans."""
    return _subreaper


def orphans_here(since: int) -> set[int]:
    """Live children of this process that started at or after ``since`` (start-time ticks).
    In a subreaper these include the daemons that left their tree — a double fork, ``setsid``,
    an emptied environment — re-parented here; elsewhere such daemons went to init, unseen."""
    me = os.getpid()
    found: set[int] = set()
    for pid, parent in _parent_map().items():
        if parent != me or not is_alive(pid):
            continue
        started = start_time(pid)
        if started is not None and started >= since:
            found.add(pid)
    return found


def describe(pid: int) -> str:
    """``pid`` and its command line, for a message (``1234 sleep 120``)."""
    argv = procinfo.cmdline(pid)
    if argv is None:
        return str(pid)
    shown = " ".join(a.decode("utf-8", "replace") for a in argv)
    return f"{pid} `{shown[:80]}`" if shown else str(pid)


def descends_from_this_process(pid: int) -> bool:
    """``pid`` is a child of this process or below one (a library's own worker)."""
    me = os.getpid()
    parent = _parent(pid)
    hops = 0
    while parent is not None and parent > 1 and hops < 512:
        if parent == me:
            return True
        parent = _parent(parent)
        hops += 1
    return False


class Lineage:
    """Which processes may be signalled: the only judge every kill in tether goes through.

    A process is owned when it is one of the roots (a process its owner started or adopted,
    named by pid *and* start time, so a pid reused after an exit is not), when its environment
    carries the owner's ``TETHER_OWNER`` marker, when it is in a group or session a root leads
    (a background job left behind by a leader that exited), when it descends from a root, or
    when it
    was seen owned before (a daemon re-parented away from its root keeps its start time). When
    this process made itself a subreaper (the CLI: one run per process), every descendant of it
    is owned too — daemons that left their tree were re-parented here. Never owned: pid 1, this
    process and its ancestors, a pid that reports no start time.
    """

    def __init__(self, marker: str | None = None) -> None:
        #: ``TETHER_OWNER=<marker>`` marks an owned process (ending in ``/``: a prefix, a run's)
        self.marker = marker
        self._roots: dict[int, int] = {}
        self._seen: set[tuple[int, int]] = set()

    @classmethod
    def of(cls, pid: int, marker: str | None = None, *, floor: int | None = None) -> Lineage:
        """The lineage of one process the caller started itself (its start time read now).
        ``floor``: a start time taken before it was started (:func:`procinfo.started_floor`),
        the root's when it already exited and was reaped (a leader that left a background job
        in its group may be gone before anyone reads its start time)."""
        lineage = cls(marker)
        if not lineage.add_root(pid) and floor is not None and pid > 1:
            lineage._roots[pid] = floor
        return lineage

    def add_root(self, pid: int, started: int | None = None) -> bool:
        """Own ``pid`` and its descendants (``started``: its start time, read now if not given).
        False when the process is already gone."""
        started = start_time(pid) if started is None else started
        if started is None or pid <= 1:
            return False
        self._roots[pid] = started
        return True

    def remove_root(self, pid: int) -> None:
        self._roots.pop(pid, None)

    @property
    def roots(self) -> dict[int, int]:
        return dict(self._roots)

    def owns(self, pid: int) -> bool:
        """True if ``pid`` is owned (see the class); an owned one is remembered."""
        started = start_time(pid)
        if started is None or pid <= 1 or pid in _ancestors_of_this_process():
            return False
        if self._roots.get(pid) == started or (pid, started) in self._seen:
            return True
        owned = self.marker is not None and _carries(pid, self.marker)
        if not owned:
            owned = self._in_a_root_group(pid, started) or self._descends(pid)
        if owned:
            self._seen.add((pid, started))
        return owned

    def _in_a_root_group(self, pid: int, started: int) -> bool:
        """``pid`` is in the process group or session a root leads (every root starts in its
        own), even after the leader exited. The kernel gives no new process a pid still used
        as a group or session id, so a group named after a root is the root's — unless the
        root's number was reused once its group had emptied: a member must not be older than
        the root, and a live leader must be the root itself."""
        stat = procinfo.stat(pid)
        if stat is None:
            return False
        ids = {stat.pgid, stat.sid}
        for leader in ids - {os.getpid()}:  # this process's own group is not a child's
            root_started = self._roots.get(leader)
            if root_started is None or started < root_started:
                continue
            if start_time(leader) in (None, root_started):
                return True
        return False

    def _descends(self, pid: int) -> bool:
        me = os.getpid()
        hops = 0
        parent = _parent(pid)
        while parent is not None and parent > 1 and hops < 512:
            started = start_time(parent)
            if self._roots.get(parent) == started or (parent, started) in self._seen:
                return True
            if parent == me:
                return _subreaper
            parent = _parent(parent)
            hops += 1
        return False

    def observe(self, pids: set[int]) -> set[int]:
        """Remember which of ``pids`` are owned now (while they are still attached to their
        root), so they stay owned after they leave its tree; return those."""
        return {pid for pid in pids if self.owns(pid)}


def _tree(pid: int, marker: str | None = None) -> set[int]:
    """``pid``, its descendants, the members of the group it led, the processes carrying its
    owner marker, and all their descendants (candidates: :class:`Lineage` decides)."""
    roots = {pid} | group_members(pid)
    if marker is not None:
        roots |= owned_by(marker)
    tree: set[int] = set()
    for root in roots:
        if root not in tree:
            tree |= {root} | descendants(root)
    return tree


def _signal_all(tree: set[int], sig: int, lineage: Lineage) -> set[int]:
    """Signal the members of ``tree`` that ``lineage`` owns, and whole process groups whose
    every member it owns; return the pids signalled."""
    owned = {pid for pid in tree if lineage.owns(pid)}
    groups = set()
    for member in owned:
        try:
            groups.add(os.getpgid(member))
        except OSError:
            pass
    for group in groups - {os.getpgrp(), 0, 1}:
        # killpg is atomic against a member forking meanwhile, but a group may hold others
        if all(lineage.owns(member) for member in group_members(group)):
            try:
                os.killpg(group, sig)
            except OSError:
                pass
    for member in owned:
        try:
            os.kill(member, sig)
        except OSError:
            pass
    return owned


def kill_tree(
    pid: int,
    sig: int = signal.SIGKILL,
    *,
    marker: str | None = None,
    lineage: Lineage | None = None,
) -> set[int]:
    """Send ``sig`` to ``pid``, every descendant, the group ``pid`` led (whose members may have
    been re-parented) and the processes carrying ``marker`` — those ``lineage`` owns; return
    the pids hit. Without ``lineage``, ``pid`` is one the caller started itself (its start time
    is read now): a pid learnt from anyone else (a debug adapter's report) is judged by the
    run's lineage, ``run.process_owner.lineage``.

    Nothing is reaped here: a child's own parent (the event loop, ``subprocess``) collects it.
    """
    if lineage is None:
        lineage = Lineage.of(pid, marker)
    return _signal_all(_tree(pid, marker), sig, lineage)


async def terminate_tree(
    pid: int, grace_s: float = 1.0, *, marker: str | None = None, lineage: Lineage | None = None
) -> None:
    """SIGTERM the tree, wait up to ``grace_s`` for it to go, then SIGKILL whatever is left
    (what ``lineage`` owns, as :func:`kill_tree`)."""
    if lineage is None:
        lineage = Lineage.of(pid, marker)
    tree = kill_tree(pid, signal.SIGTERM, marker=marker, lineage=lineage)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(is_alive(p) for p in tree):
        await anyio.sleep(0.02)
    tree |= _tree(pid, marker)
    _signal_all({p for p in tree if is_alive(p)}, signal.SIGKILL, lineage)


def kill_orphans() -> set[int]:
    """Kill every remaining descendant of this process and reap the zombies left to it.

    For a process that owns all its children (the CLI, a subreaper): daemonised grandchildren
    that escaped their tree were re-parented here and are found this way.
    """
    killed: set[int] = set()
    mine = Lineage()
    mine.add_root(os.getpid())  # everything below this process is its own
    for pid in descendants(os.getpid()):
        if is_alive(pid):
            killed |= kill_tree(pid, lineage=mine)
    while True:
        try:
            reaped, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if reaped == 0:
            break
    return killed


@attrs.frozen
class CommandResult:
    """What :meth:`tether.Run.run_command` returns."""

    argv: tuple[str, ...]
    #: the exit code; None when the command was killed for running out of time
    returncode: int | None
    stdout: bytes
    #: the tail of its stderr (bounded)
    stderr: str
    #: stdout bytes beyond the cap, dropped
    stdout_dropped: int = 0

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")


class ManagedProcess:
    """A child started by :func:`spawn`: pipes, a bounded stderr tail, tree termination."""

    def __init__(
        self,
        process: anyio.abc.Process,
        argv: Sequence[str],
        stderr_tail: TailBuffer,
        marker: str | None = None,
        started_floor: int | None = None,
    ) -> None:
        self.process = process
        self.argv = list(argv)
        self.stderr_tail = stderr_tail
        self.marker = marker
        self.started_at = time.time()
        self.terminated = False
        self._drained = anyio.Event()
        #: what this process may signal: itself (pid and start time, read before anyone could
        #: reap it), its descendants, its group and the processes carrying its marker
        self.lineage = Lineage.of(process.pid, marker, floor=started_floor)

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
        """The exit code, once the process exited and its stderr was read to the end (bounded)."""
        code = await self.process.wait()
        with anyio.move_on_after(1.0):
            await self._drained.wait()
        return code

    async def terminate(self, grace_s: float = 1.0) -> None:
        """Stop the process and every descendant (SIGTERM, then SIGKILL after ``grace_s``),
        including re-parented group members and daemons that kept the owner marker."""
        if self.terminated:
            return
        with anyio.CancelScope(shield=True):
            await terminate_tree(self.pid, grace_s, marker=self.marker, lineage=self.lineage)
            with anyio.move_on_after(max(grace_s, 0.5)):
                await self.process.aclose()  # closes the pipes and the transport, reaps the child
            self.terminated = True

    def kill(self) -> None:
        """SIGKILL the whole tree now (synchronous)."""
        kill_tree(self.pid, marker=self.marker, lineage=self.lineage)


async def spawn(
    argv: Sequence[str],
    *,
    task_group: anyio.abc.TaskGroup,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bool = True,
    stdout: bool = True,
    stderr_bytes: int = 16 * 1024,
    marker: str | None = None,
) -> ManagedProcess:
    """Start ``argv`` in a new process group; stderr is drained into a bounded tail.

    ``marker`` goes into the child's environment as ``TETHER_OWNER`` so that its descendants can be
    found even after they detach (see :func:`owned_by`).

    Raises :class:`FileNotFoundError`/:class:`PermissionError` when the program cannot start.
    """
    import subprocess  # the event loop imports it to start a process anyway; not at import time

    full_env: dict[str, Any] | None = None
    if env is not None or marker is not None:
        full_env = {**os.environ, **(env or {})}
        if marker is not None:
            full_env[OWNER_ENV] = marker
    floor = procinfo.started_floor()  # the child's start time, should it be reaped at once
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
    managed = ManagedProcess(process, argv, tail, marker, floor)

    async def drain() -> None:
        assert process.stderr is not None
        try:
            async for chunk in process.stderr:
                tail.write(chunk)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            managed._drained.set()

    task_group.start_soon(drain)
    return managed

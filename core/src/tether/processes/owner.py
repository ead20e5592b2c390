"""The process owner of a run: every child it starts, and their end when it closes.

Every process carries ``TETHER_OWNER=<owner>/<n>`` in its environment, so a daemon that left
every process tree is still found and killed. A library that starts its own processes passes
:meth:`ProcessOwner.child_env` to them and hands their pids to :meth:`ProcessOwner.adopt_pid`.
"""

from __future__ import annotations

import itertools
import logging
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel

from tether.errors import ToolError
from tether.processes import confine as _confine
from tether.processes import launch as _launch
from tether.processes import managed as _process

_log = logging.getLogger(__name__)


class ProcessOwner:
    """Starts and ends the processes of one run (see :func:`tether.processes.managed.spawn`)."""

    def __init__(
        self, task_group: anyio.abc.TaskGroup, cwd: Path, *, trust_workdir: bool = True
    ) -> None:
        self._task_group = task_group
        self._cwd = cwd
        #: False: every start is sanitised (:mod:`tether.processes.launch`)
        self.trust_workdir = trust_workdir
        self._processes: list[_process.ManagedProcess] = []
        self._adopted: set[int] = set()
        self._ids = itertools.count(1)
        #: the marker every process of this run carries
        self.owner = f"{os.getpid()}.{os.urandom(6).hex()}"
        #: the judge of every kill for this run: what it spawned or adopted (pid and start
        #: time), their descendants, and what carries its marker — nothing else is signalled
        self.lineage = _process.Lineage(f"{self.owner}/")
        self.closed = False
        self._swept = False
        self._directory: Path | None = None

    @property
    def directory(self) -> Path:
        """The run's own directory (made on first use, removed at close): the only place a
        confined program may write (:mod:`tether.processes.confine`), where its pinned caches, build info
        and temporary files go."""
        if self._directory is None:
            if self.closed:  # made now, it would outlive the run
                raise ToolError("the run is closed; no new process can start")
            import tempfile

            self._directory = Path(tempfile.mkdtemp(prefix="tether-run-"))
        return self._directory

    @property
    def confinement(self) -> _confine.Confinement:
        """What confines a program started with ``confine=True`` on this run: Landlock, bwrap,
        or nothing; ``kind`` is "none" on a trusted workdir (nothing is confined there)."""
        if self.trust_workdir:
            return _confine.Confinement("none", reason="the harness trusts the workdir")
        return _confine.detect()

    @property
    def processes(self) -> list[_process.ManagedProcess]:
        return list(self._processes)

    @property
    def adopted(self) -> frozenset[int]:
        """The pids of processes libraries started for the run, still to be killed at close."""
        return frozenset(self._adopted)

    async def spawn(
        self, argv: Sequence[str], *, confine: bool = False, **kwargs: Any
    ) -> _process.ManagedProcess:
        """Start a child that belongs to the run.

        The start is shielded from cancellation; if the caller was cancelled meanwhile, the
        process it will never see is terminated at once and the cancellation goes on. On an
        untrusted workdir the program's launch profile applies (:func:`tether.processes.launch.sanitise`);
        a program it refuses raises :class:`tether.processes.launch.LaunchRefused` (an ``OSError``).
        ``confine``: a program started for a read-tier call; on an untrusted workdir it can
        write only in :attr:`directory` (:mod:`tether.processes.confine`).
        """
        if self.closed:
            raise ToolError("the run is closed; no new process can start")
        if not self.trust_workdir:
            cwd = Path(kwargs.get("cwd") or self._cwd)
            argv, env = await _launch.sanitise(argv, kwargs.get("env"), cwd, self._probe)
            if confine:
                argv, env = _confine.wrap(argv, self.directory, env)
            kwargs["env"] = env
        return await self._spawn(argv, **kwargs)

    async def _probe(self, argv: Sequence[str], cwd: Path) -> tuple[int, bytes] | None:
        """A launch profile's own short command (as given: no profile applies to it)."""
        try:
            done = await self._bounded(argv, cwd, None, 10.0, 1024 * 1024)
        except OSError:
            return None
        return None if done.returncode is None else (done.returncode, done.stdout)

    async def _spawn(self, argv: Sequence[str], **kwargs: Any) -> _process.ManagedProcess:
        marker = f"{self.owner}/{next(self._ids)}"
        with anyio.CancelScope(shield=True):
            proc = await _process.spawn(argv, task_group=self._task_group, marker=marker, **kwargs)
            self._processes = [p for p in self._processes if not p.terminated]
            self._processes.append(proc)
            self.lineage.add_root(proc.pid, proc.lineage.roots.get(proc.pid))
        try:
            await anyio.lowlevel.checkpoint()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await proc.terminate(grace_s=0.2)
            raise
        return proc

    async def run_command(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float,
        cwd: str | os.PathLike[str] | None = None,
        max_output_bytes: int = 4 * 1024 * 1024,
        env: Mapping[str, str] | None = None,
        confine: bool = False,
    ) -> _process.CommandResult:
        """Run a short command (git, a version probe), bounded in time and in output: on timeout
        its whole tree is killed and ``timed_out`` is set; stdout beyond ``max_output_bytes`` is
        dropped and counted; stderr keeps its tail. A program that cannot start raises
        ``OSError``."""
        if self.closed:
            raise ToolError("the run is closed; no new process can start")
        where = Path(cwd if cwd is not None else self._cwd)
        if not self.trust_workdir:
            argv, env = await _launch.sanitise(argv, env, where, self._probe)
            if confine:
                argv, env = _confine.wrap(argv, self.directory, env)
        return await self._bounded(argv, where, env, timeout_s, max_output_bytes)

    async def _bounded(
        self,
        argv: Sequence[str],
        cwd: Path,
        env: Mapping[str, str] | None,
        timeout_s: float,
        max_output_bytes: int,
    ) -> _process.CommandResult:
        proc = await self._spawn(list(argv), cwd=cwd, stdin=False, env=env)
        out = bytearray()
        dropped = 0
        code: int | None = None
        with anyio.move_on_after(timeout_s):
            try:
                async for chunk in proc.stdout:
                    room = max_output_bytes - len(out)
                    out += chunk[:room]
                    dropped += max(0, len(chunk) - room)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                # the run's close ended the command (and closed its pipes) under us
                raise ToolError(f"the run closed while `{argv[0]}` ran") from None
            code = await proc.wait()
        if code is None:
            with anyio.CancelScope(shield=True):
                await proc.terminate(grace_s=0.2)
        return _process.CommandResult(
            tuple(argv), code, bytes(out), proc.stderr_tail.text(), dropped
        )

    def child_env(self) -> dict[str, str]:
        """Environment entries for a process a library starts on the run's behalf."""
        return {_process.OWNER_ENV: f"{self.owner}/adopted"}

    def adopt_pid(self, pid: int) -> bool:
        """Kill the tree of ``pid`` (started by a library, not :meth:`spawn`) at close. Only a
        process of this one's own tree or carrying the run's marker can be adopted (its start
        time is recorded, so the number reused by another process later is not the run's):
        False, and nothing adopted, for any other."""
        if not (self.lineage.owns(pid) or _process.descends_from_this_process(pid)):
            _log.warning("tether: not adopting pid %d: it is not a process of this run", pid)
            return False
        if not self.lineage.add_root(pid):
            return False
        self._adopted.add(pid)
        return True

    def release_pid(self, pid: int) -> None:
        """``pid`` (adopted) has exited and been reaped by the library that started it: its
        number may now belong to someone else, so the close must not kill it."""
        self._adopted.discard(pid)
        self.lineage.remove_root(pid)

    def owns(self, pid: int) -> bool:
        """True if ``pid`` is the run's (see :class:`tether.processes.managed.Lineage`)."""
        return self.lineage.owns(pid)

    def kill_tree(self, pid: int, sig: int = signal.SIGKILL) -> set[int]:
        """Signal ``pid``'s tree — only what the run owns (a pid someone reported, a debug
        adapter's ``systemProcessId``, is never taken on trust); return the pids signalled."""
        return _process.kill_tree(pid, sig, lineage=self.lineage)

    def strays(self, since: int, marker: str | None = None) -> set[int]:
        """The run's processes that left every tree it can follow: orphans re-parented to this
        process (a subreaper, as the CLI is) that started at or after ``since`` (start-time
        ticks), that the run did not start directly, and that carry no marker of another of its
        processes (``marker``: the one whose strays are wanted). Empty where this process is
        not a subreaper: such daemons went to init and cannot be told from anyone else's."""
        if not _process.is_subreaper():
            return set()
        direct = {p.pid for p in self._processes} | self._adopted
        found = set()
        for pid in _process.orphans_here(since) - direct:
            if not self.lineage.owns(pid):
                continue
            if _process._carries(pid, f"{self.owner}/") and not (
                marker is not None and _process._carries(pid, marker)
            ):
                continue  # another process's daemon (it kept its marker): not these strays
            found.add(pid)
        return found

    async def close(self, grace_s: float = 0.5) -> None:
        """Terminate every process (SIGTERM, then SIGKILL after ``grace_s``), the adopted trees
        and every process still carrying the run's marker. No process can start after it."""
        self.closed = True
        async with anyio.create_task_group() as tg:
            for proc in self._processes:
                tg.start_soon(proc.terminate, grace_s)
        self.kill_all()
        self._swept = True

    def kill_all(self) -> None:
        """SIGKILL everything the run owns, at once (what a close cut short left)."""
        self.closed = True
        if self._swept:
            return
        for proc in self._processes:
            if not proc.terminated:  # a reaped pid may already belong to someone else
                proc.kill()
        for pid in self._adopted:
            self.kill_tree(pid)
        # daemons that left every tree still carry the run's marker
        for pid in _process.owned_by(f"{self.owner}/", prefix=True):
            self.kill_tree(pid)
        if self._directory is not None:
            import shutil

            # what its programs left there goes too (symlinks removed, never followed)
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None


__all__ = ["ProcessOwner"]

"""Atomic file writes, alone and across many files: all or nothing, confined to the workdir at the
moment of writing, and across a kill of the process at any instant.

:func:`apply_changes` is the one place tether writes files. It opens every directory from the
workdir's own descriptor, one component at a time with ``O_NOFOLLOW`` (a directory or file that
became a symlink since the change was proposed is refused, wherever it points), records the change
in a write-ahead journal outside the workdir (:mod:`tether.workdir.journal`), writes every new content to
a temp file beside its target and syncs it, marks the change committed, then checks each target's
directory again right before renaming the temp file over it. A process killed before the commit
mark leaves a change the next run (or ``tether recover``) rolls back; after it, one it rolls
forward. Either way no temp file, backup or created directory is left behind.

Power loss: the journal is ``fsync``-ed before any temp file is written; the temp files and the
new directories are made durable (one ``syncfs`` of the workdir's filesystem) before the commit
mark, which is itself synced; the renames are made durable the same way before the journal is
removed. So after the machine itself crashes, recovery finds either the old files and a journal
to roll back, or a committed journal and every new content on disk to roll forward. Without that
ordering a rename can reach the disk before the data it names (an empty file after the reboot).
What the sync cannot buy: a disk that acknowledges writes it has only cached (no write barrier)
can still lose them.

Other processes: a change holds its workdir's write lock (:func:`tether.workdir.journal.workdir_lock`)
from before its stale check until its journal is gone, and first finishes or undoes any change a
dead process left there. So two tether processes on one workdir take turns: no change lands
between another's check and its renames (an update answered "written" is never lost) and none
runs on top of a half-done one. :func:`apply_changes_async` waits for the lock and writes in a
worker thread, so the event loop never waits; a plan (a callable instead of the list of changes)
is computed under the lock, from the files as they are then.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import attrs

from tether.errors import PathError, ToolError
from tether.workdir.journal import (
    Journal,
    Walker,
    backup_name,
    digest,
    pending,
    read_file,
    recover_locked,
    relative_parts,
    restore,
    temp_name,
    workdir_lock,
)

# The files written by the call running in this context: the core's writers record here, and the
# run puts them on the call's result (``ToolResult.written``), so post-processors such as
# diagnostics-on-write know what a call wrote without guessing from its arguments — and what each
# file held before (``ToolResult.before``), so they can tell what the call changed.
_written: ContextVar[WriteLog | None] = ContextVar("tether_written", default=None)


@attrs.define
class WriteLog:
    """One call's writes: the paths in order, and what each held before the call's first write
    of it (None: the call created it)."""

    paths: dict[Path, None] = attrs.field(factory=dict)
    before: dict[Path, bytes | None] = attrs.field(factory=dict)


def record_written(
    paths: Iterable[Path | str], before: Mapping[Path, bytes | None] | None = None
) -> None:
    """Note files the current call wrote (the core's writers do it; a tool writing by other
    means may call it too), with what they held before when the writer knows it. Outside a call
    it does nothing."""
    log = _written.get()
    if log is None:
        return
    for path in paths:
        log.paths[Path(path)] = None
    for path, content in (before or {}).items():
        log.before.setdefault(Path(path), content)  # the first write of a call saw the original


@contextmanager
def recording_writes() -> Iterator[WriteLog]:
    """Collect what :func:`record_written` notes inside the block (one call's writes)."""
    log = WriteLog()
    token = _written.set(log)
    try:
        yield log
    finally:
        _written.reset(token)


#: The workdir the current tool call writes into (set by the call pipeline), for callers of
#: :func:`apply_changes` / :func:`atomic_write` that do not pass ``root``.
_write_root: ContextVar[Path | None] = ContextVar("tether_write_root", default=None)


@contextmanager
def writes_confined_to(root: Path) -> Iterator[None]:
    """Make ``root`` the default workdir of every write in this context."""
    token = _write_root.set(root)
    try:
        yield
    finally:
        _write_root.reset(token)


def _root_for(paths: Sequence[Path] | None, root: Path | str | None) -> Path:
    if root is not None:
        return Path(root).resolve()
    current = _write_root.get()
    if current is not None:
        return current
    if paths is None:
        raise TypeError("a plan computed under the write lock needs root= (or a tool call's)")
    # outside any run: confined to the directories the files are in
    return Path(os.path.commonpath([str(Path(p).parent) for p in paths])).resolve()


def write_temp(path: Path, fd: int, data: bytes) -> None:
    """Write the new content of ``path`` into its temp file ``fd`` (tests replace this seam to
    make a write fail)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


_libc: Any = None


def sync_filesystem(fd: int) -> None:
    """Make everything written on the filesystem holding ``fd`` durable: one ``syncfs`` (Linux)
    instead of an ``fsync`` per file (300 of them cost seconds); ``sync`` elsewhere."""
    global _libc
    if _libc is None:
        import ctypes  # a write needs it, an import of tether does not

        try:
            _libc = ctypes.CDLL(None, use_errno=True)
            _libc.syncfs.argtypes = [ctypes.c_int]
        except (OSError, AttributeError):
            _libc = False
    if _libc is False or _libc.syncfs(fd) != 0:
        os.sync()


def atomic_write(
    path: Path | str,
    data: str | bytes,
    *,
    root: Path | str | None = None,
    lock_timeout: float | None = None,
) -> None:
    """Write ``data`` to ``path`` atomically (a reader sees the old content or the new one), the
    way :func:`apply_changes` writes one file. The file's mode is kept; a new file gets the
    umask's mode, like any editor's."""
    path = Path(path)
    content = data.encode("utf-8") if isinstance(data, str) else data
    base = _root_for([path], root)
    apply_changes(
        lambda current: [FileChange(path, current(path), content)],
        root=base,
        lock_timeout=lock_timeout,
    )


async def atomic_write_async(
    path: Path | str,
    data: str | bytes,
    *,
    root: Path | str | None = None,
    lock_timeout: float | None = None,
) -> None:
    """:func:`atomic_write` from async code: the wait for the lock and the write run in a worker
    thread (see :func:`apply_changes_async`)."""
    import anyio.to_thread

    base = _root_for([Path(path)], root)
    write = functools.partial(atomic_write, path, data, root=base, lock_timeout=lock_timeout)
    await anyio.to_thread.run_sync(write)


@attrs.frozen
class FileChange:
    """One file of a multi-file change: what it must hold now (None: must not exist) and after."""

    path: Path = attrs.field(converter=Path)
    expected: bytes | None
    new: bytes


class StaleFiles(ToolError):
    """Files changed since the change was computed; nothing was written."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = list(paths)
        names = ", ".join(str(p) for p in self.paths)
        super().__init__(
            f"nothing was written: these files changed since the edit was prepared: {names}"
        )


@attrs.define
class _Step:
    parts: tuple[str, ...]
    change: FileChange
    mode: int | None


#: What a plan is given: the current content of a file of the workdir (None: it does not exist),
#: read without following a symlink, and only from a regular file.
CurrentContent = Callable[[Path], "bytes | None"]
#: A change computed under the write lock from the files as they are then.
Plan = Callable[[CurrentContent], Sequence[FileChange]]


def apply_changes(
    changes: Sequence[FileChange] | Plan,
    *,
    root: Path | str | None = None,
    fault: Callable[[str, Path], None] | None = None,
    lock_timeout: float | None = None,
) -> None:
    """Apply every change or none, confined to ``root`` (default: the workdir of the current
    tool call), holding the workdir's write lock (waiting at most ``lock_timeout`` s for it, then
    :class:`tether.workdir.journal.WorkdirBusy`; a change a dead process left is recovered first).

    ``changes`` is the list, or a plan: a callable given :data:`CurrentContent` and returning
    the list, called under the lock (so a read-modify-write such as an edit sees no other
    process's write between its read and its write; an error it raises writes nothing).
    Every file is then compared with ``expected``; any mismatch raises :class:`StaleFiles` and
    writes nothing. A path that leaves ``root`` or passes through a symlink raises a
    :class:`PathError` and writes nothing, whether found while planning or right before a rename
    (then the files already renamed are put back). An ``OSError`` while writing undoes everything
    too. ``fault(step, path)`` is called before each temp file (``"temp"``), before the commit
    mark (``"commit"``) and before each rename (``"rename"``): tests raise from it.
    """
    base = _root_for(None if callable(changes) else [c.path for c in changes], root)
    with workdir_lock(base, lock_timeout):
        if pending(base):  # a change whose process died: finish or undo it before this one
            for line in recover_locked(base):
                _warn_recovered(line)
        with Walker(base) as walker:
            if callable(changes):
                changes = list(changes(functools.partial(_current, walker, base)))
            _check_and_apply(walker, base, changes, fault)
    record_written((c.path for c in changes), {c.path: c.expected for c in changes})


async def apply_changes_async(
    changes: Sequence[FileChange] | Plan,
    *,
    root: Path | str | None = None,
    lock_timeout: float | None = None,
) -> None:
    """:func:`apply_changes` from async code: the wait for the write lock and the write run in a
    worker thread, so the event loop is never held up by another process's change. Cancelled
    while it waits for the lock, nothing is written; once the lock is held the change completes
    (all or nothing) before the cancellation is delivered."""
    import anyio.to_thread

    base = _root_for(None if callable(changes) else [c.path for c in changes], root)
    write = functools.partial(apply_changes, changes, root=base, lock_timeout=lock_timeout)
    await anyio.to_thread.run_sync(write)  # the thread runs in a copy of this context


def _warn_recovered(line: str) -> None:
    from tether.terminal import warn  # paid only when a dead process left a change behind

    warn("tether: recovered %s", line)


def _current(walker: Walker, base: Path, path: Path) -> bytes | None:
    parts = relative_parts(base, path)
    dfd = walker.open_dir(parts[:-1])
    return None if dfd is None else read_file(dfd, parts[-1], "/".join(parts))[0]


def _check_and_apply(
    walker: Walker,
    base: Path,
    changes: Sequence[FileChange],
    fault: Callable[[str, Path], None] | None,
) -> None:
    steps: list[_Step] = []
    stale: list[Path] = []
    for change in changes:
        parts = relative_parts(base, change.path)
        dfd = walker.open_dir(parts[:-1])
        current, mode = (None, None) if dfd is None else read_file(dfd, parts[-1], "/".join(parts))
        if current != change.expected:
            stale.append(change.path)
        elif current != change.new:
            steps.append(_Step(parts, change, mode))
    if stale:
        raise StaleFiles(stale)
    if steps:
        _apply(walker, base, steps, fault)


def _apply(
    walker: Walker, base: Path, steps: list[_Step], fault: Callable[[str, Path], None] | None
) -> None:
    missing = _missing_dirs(walker, steps)
    change_id = os.urandom(8).hex()
    journal = Journal.begin(base, change_id, _journal_record(change_id, base, missing, steps))
    created: list[tuple[str, ...]] = []
    try:
        _stage(walker, change_id, steps, missing, created, fault)
        sync_filesystem(walker.root_fd)  # every temp file and new directory is on disk
        if fault:
            fault("commit", base)
        journal.mark("committed")
    except BaseException:
        # nothing in the workdir was replaced yet: take back what was added
        _discard(walker, change_id, steps, created)
        journal.end()
        raise
    renamed: list[int] = []
    try:
        _rename_all(walker, change_id, steps, renamed, fault)
    except BaseException:
        _roll_back(walker, journal, change_id, steps, renamed, created)
        raise
    sync_filesystem(walker.root_fd)  # the renames are on disk before the journal goes
    journal.end()


def _missing_dirs(walker: Walker, steps: list[_Step]) -> list[tuple[str, ...]]:
    """The directories the change must create, each once, parents before children."""
    missing: list[tuple[str, ...]] = []
    for step in steps:
        for depth in range(1, len(step.parts)):
            prefix = step.parts[:depth]
            if prefix not in missing and walker.open_dir(prefix) is None:
                missing.append(prefix)
    return missing


def _journal_record(
    change_id: str, base: Path, missing: list[tuple[str, ...]], steps: list[_Step]
) -> dict[str, Any]:
    """What the journal records before anything is written: enough to roll back or forward."""
    return {
        "version": 1,
        "id": change_id,
        "root": str(base),
        "dirs": ["/".join(d) for d in missing],
        "entries": [
            {
                "path": "/".join(s.parts),
                "before": digest(s.change.expected),
                "after": digest(s.change.new),
            }
            for s in steps
        ],
    }


def _stage(
    walker: Walker,
    change_id: str,
    steps: list[_Step],
    missing: list[tuple[str, ...]],
    created: list[tuple[str, ...]],
    fault: Callable[[str, Path], None] | None,
) -> None:
    """Create the missing directories (each added to ``created`` as soon as it is made, for the
    undo) and write every new content to a temp file beside its target."""
    for prefix in missing:
        if walker.make_dir(prefix):
            created.append(prefix)
    for index, step in enumerate(steps):
        if fault:
            fault("temp", step.change.path)
        _write_step_temp(walker, change_id, index, step)


def _write_step_temp(walker: Walker, change_id: str, index: int, step: _Step) -> None:
    dfd = walker.open_dir(step.parts[:-1])
    assert dfd is not None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp_name(change_id, index), flags, 0o666, dir_fd=dfd)
    try:
        if step.mode is not None:
            os.fchmod(fd, step.mode)
        write_temp(step.change.path, fd, step.change.new)
    finally:
        os.close(fd)


def _rename_all(
    walker: Walker,
    change_id: str,
    steps: list[_Step],
    renamed: list[int],
    fault: Callable[[str, Path], None] | None,
) -> None:
    """Rename each temp file over its target, checking the target again right before (each
    index added to ``renamed`` as soon as its rename is done, for the undo)."""
    for index, step in enumerate(steps):
        if fault:
            fault("rename", step.change.path)
        shown = "/".join(step.parts)
        dfd = walker.still_there(step.parts[:-1])
        name = step.parts[-1]
        current, _ = read_file(dfd, name, shown)  # refuses a target that became a symlink
        if current != step.change.expected:
            raise StaleFiles([step.change.path])
        os.replace(temp_name(change_id, index), name, src_dir_fd=dfd, dst_dir_fd=dfd)
        renamed.append(index)


def _roll_back(
    walker: Walker,
    journal: Journal,
    change_id: str,
    steps: list[_Step],
    renamed: list[int],
    created: list[tuple[str, ...]],
) -> None:
    """Undo a change that failed during its renames: every file as it was, nothing added left."""
    # the old content of the files already replaced goes to the journal first, so that a
    # kill during the undo can still be rolled back
    for index in renamed:
        old = steps[index].change.expected
        if old is not None:
            journal.save_before(index, old)
    journal.mark("rollback")
    _undo(walker, change_id, steps, renamed)
    _discard(walker, change_id, steps, created)
    sync_filesystem(walker.root_fd)
    journal.end()


def _unlink(dfd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dfd)
    except FileNotFoundError:
        pass


def _undo(walker: Walker, change_id: str, steps: list[_Step], renamed: list[int]) -> None:
    """Put back the old content of the files already renamed (through a temp file each)."""
    for index in reversed(renamed):
        step = steps[index]
        try:
            dfd = walker.still_there(step.parts[:-1])
        except PathError:
            continue  # its directory was moved away: nothing of the workdir to restore there
        if step.change.expected is None:
            _unlink(dfd, step.parts[-1])
        else:
            restore(
                dfd, backup_name(change_id, index), step.parts[-1], step.change.expected, step.mode
            )


def _discard(
    walker: Walker, change_id: str, steps: list[_Step], created: list[tuple[str, ...]]
) -> None:
    """Remove the change's temp files and backups, then the directories it created."""
    for index, step in enumerate(steps):
        try:
            dfd = walker.open_dir(step.parts[:-1])
        except PathError:
            continue
        if dfd is not None:
            _unlink(dfd, temp_name(change_id, index))
            _unlink(dfd, backup_name(change_id, index))
    for prefix in sorted(created, key=len, reverse=True):
        parent = walker.open_dir(prefix[:-1])
        if parent is not None:
            try:
                os.rmdir(prefix[-1], dir_fd=parent)
            except OSError:
                pass

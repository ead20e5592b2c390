"""The write-ahead journal of multi-file changes, and the recovery that finishes or undoes a
change its process did not live to complete.

A change (see :func:`tether.workdir.writing.apply_changes`) is recorded here before it touches the workdir:
one JSON file per change under ``$XDG_STATE_HOME/tether/<workdir hash>/`` (default
``~/.local/state``; mode 0700, outside the workdir so that no write tool can forge an entry).
It names each file (relative to the workdir), the SHA-256 of its content before (or that it did
not exist) and after, and the directories the change creates. The change then writes its temp
files (``.<id>.<n>.tether-tmp``, in the target's directory) and, once all are on disk, drops a
``<id>.committed`` marker: the commit point. Before it, recovery rolls the change back (removes the
temp files and the directories it created); after it, recovery rolls it forward (renames the
remaining temp files over their targets). A change refused part way through its renames (a
directory became a symlink, a file changed) first saves the old content of the files it already
replaced next to its journal (``<id>.<n>.before``), drops ``<id>.rollback`` and puts them back
(through ``.<id>.<n>.tether-bak`` and a rename); recovery finishes that undo the same way.

Recovery trusts nothing in a journal it did not just check: each path is re-confined to the
workdir (no ``..``, no absolute path, no symlink on the way, walked with ``O_NOFOLLOW``), temp and
backup names are derived from the journal's id (never read from it), a temp file is renamed only
if its content has the recorded after-hash, and only over a target whose content still has the
recorded before-hash. A change still in progress in a live process holds an ``flock`` on its
journal and is left alone.

The workdir's write lock (:func:`workdir_lock`) makes tether processes take turns on one workdir:
an ``flock`` on ``$XDG_STATE_HOME/tether/<workdir hash>.lock`` (removed by its holder as it lets
go), held by a change from before its stale check until its journal is gone, and by recovery for
all of its work. So no other process's
change can come between a change's check and its renames, and recovery never runs beside a live
change. The kernel drops the lock when its holder dies, however it dies; a waiter gives up after a
bounded time and names the holder.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from tether.errors import PathError, ToolError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: the largest file a change reads to compare with what it expects (``read``'s own cap)
WRITE_READ_MAX_BYTES = 256 * 1024 * 1024


def _sha256(data: bytes) -> str:
    import hashlib  # OpenSSL's start-up: paid when a run opens, not by `import tether`

    return hashlib.sha256(data).hexdigest()


def digest(data: bytes | None) -> str | None:
    return None if data is None else _sha256(data)


def state_dir(workdir: Path) -> Path:
    """Where the journals of ``workdir`` live (not created here)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    key = _sha256(os.fsencode(str(workdir)))[:24]
    return Path(base) / "tether" / key


def temp_name(change_id: str, index: int) -> str:
    return f".{change_id}.{index}.tether-tmp"


def backup_name(change_id: str, index: int) -> str:
    return f".{change_id}.{index}.tether-bak"


def _ensure_private_dir(path: Path) -> None:
    """Create ``path`` (and its ``tether`` parent) mode 0700; refuse one others could write."""
    os.makedirs(path.parent.parent, exist_ok=True)  # $XDG_STATE_HOME itself
    for level in (path.parent, path):
        try:
            os.mkdir(level, 0o700)
        except FileExistsError:
            pass
    info = os.stat(path, follow_symlinks=False)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ToolError(
            f"the journal directory {str(path)!r} is not a private directory of this user "
            "(expected mode 0700, owned by you); nothing was written"
        )


def _fsync_dir(path: Path | int) -> None:
    fd = path if isinstance(path, int) else os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        if not isinstance(path, int):
            os.close(fd)


@attrs.define
class Journal:
    """The journal of one change in progress (held locked by the process applying it)."""

    directory: Path
    change_id: str
    fd: int

    @classmethod
    def begin(cls, workdir: Path, change_id: str, record: dict[str, Any]) -> Journal:
        directory = state_dir(workdir)
        tmp = directory / f"{change_id}.json.tmp"
        for attempt in (1, 2):  # a change ending at the same time may remove the empty directory
            _ensure_private_dir(directory)
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
                break
            except FileNotFoundError:
                if attempt == 2:
                    raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # the lock stays with the inode across the rename
            os.write(fd, json.dumps(record).encode())
            os.fsync(fd)
            os.rename(tmp, directory / f"{change_id}.json")
            _fsync_dir(directory)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        return cls(directory, change_id, fd)

    def mark(self, state: str) -> None:
        """Record ``committed`` or ``rollback`` durably."""
        os.close(
            os.open(self.directory / f"{self.change_id}.{state}", os.O_WRONLY | os.O_CREAT, 0o600)
        )
        _fsync_dir(self.directory)

    def save_before(self, index: int, data: bytes) -> None:
        """Keep the old content of entry ``index`` (before undoing a change part way through)."""
        path = self.directory / f"{self.change_id}.{index}.before"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)

    def end(self) -> None:
        """The change is complete (or wholly undone): forget it."""
        _forget(self.directory, self.change_id)
        os.close(self.fd)
        try:
            self.directory.rmdir()  # the last change of this workdir: leave no trace
        except OSError:
            pass


def _forget(directory: Path, change_id: str) -> None:
    # the journal first: once it is gone the change is over. Removing a marker first would let a
    # kill in between turn a finished change into one to roll back (its new files deleted); what
    # a kill leaves after the journal is swept by the next recovery (:func:`_sweep_orphans`).
    (directory / f"{change_id}.json").unlink(missing_ok=True)
    for name in os.listdir(directory):
        if name.startswith(f"{change_id}."):
            (directory / name).unlink(missing_ok=True)


def restore(dir_fd: int, tmp: str, name: str, data: bytes, mode: int | None) -> None:
    """Write ``data`` back to ``name`` through the temp file ``tmp`` and a rename."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o666, dir_fd=dir_fd)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


# --- walking inside the workdir -------------------------------------------------------------


def relative_parts(root: Path, path: Path | str, field: str = "path") -> tuple[str, ...]:
    """``path`` (absolute, or relative to ``root``) as components below ``root``; a PathError for
    anything that leaves it lexically."""
    text = os.fspath(path)
    if not text or "\x00" in text:
        raise PathError(field, "expected a non-empty path without NUL bytes")
    candidate = Path(os.path.normpath(os.path.join(root, text)))
    try:
        parts = candidate.relative_to(root).parts
    except ValueError:
        raise PathError(field, f"{text!r} is outside the workdir {str(root)!r}") from None
    if not parts or ".." in parts:
        raise PathError(field, f"{text!r} does not name a file inside the workdir")
    for part in parts:
        size = len(os.fsencode(part))
        if size > 255:
            raise PathError(
                field, f"the name {part[:40]!r}… is {size} bytes long; a file name has at most 255"
            )
    return parts


class Walker:
    """Directory file descriptors inside one workdir, each opened from the workdir's own
    descriptor one component at a time with ``O_NOFOLLOW``: a component that is a symlink (to
    anywhere) is refused, so nothing opened here can lie outside the workdir at the time it was
    opened. Use as a context manager; every descriptor is closed at the end."""

    #: what the walk is for, in its refusals ("tether writes only through real directories")
    verb = "writes"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root_fd = os.open(root, _DIR_FLAGS)
        self._fds: dict[tuple[str, ...], int] = {(): self.root_fd}

    def __enter__(self) -> Walker:
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def open_dir(self, parts: Sequence[str], field: str = "path") -> int | None:
        """The descriptor of directory ``parts`` (cached), or None if a component is missing."""
        key = tuple(parts)
        if key in self._fds:
            return self._fds[key]
        parent = self.open_dir(key[:-1], field)
        if parent is None:
            return None
        fd = _open_component(parent, key, field, self.verb)
        if fd is not None:
            self._fds[key] = fd
        return fd

    def still_there(self, parts: Sequence[str], field: str = "path") -> int:
        """Walk ``parts`` afresh from the workdir and check it is the directory opened before
        (same device and inode); its cached descriptor, or a PathError. The check right before a
        rename: a directory moved away or swapped for a symlink since is refused."""
        key = tuple(parts)
        cached = self.open_dir(key, field)
        if cached is None:
            raise PathError(field, f"{'/'.join(key)!r} no longer exists")
        fd = self.root_fd
        fresh: list[int] = []
        try:
            for depth in range(1, len(key) + 1):
                nxt = _open_component(fd, key[:depth], field, self.verb)
                if nxt is None:
                    raise PathError(field, f"{'/'.join(key[:depth])!r} no longer exists")
                fresh.append(nxt)
                fd = nxt
            a, b = os.fstat(fd), os.fstat(cached)
            if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino):
                raise PathError(
                    field, f"{'/'.join(key)!r} was replaced while the change was being written"
                )
        finally:
            for opened in fresh:
                os.close(opened)
        return cached

    def make_dir(self, parts: Sequence[str], field: str = "path") -> bool:
        """Create directory ``parts`` (its parent must exist); False if it already existed."""
        parent = self.open_dir(parts[:-1], field)
        if parent is None:
            raise PathError(field, f"{'/'.join(parts[:-1])!r} does not exist")
        try:
            os.mkdir(parts[-1], 0o777, dir_fd=parent)
            created = True
        except FileExistsError:
            created = False
        if self.open_dir(parts, field) is None:
            raise PathError(field, f"{'/'.join(parts)!r} vanished as it was created")
        return created


def _open_component(
    parent: int, parts: tuple[str, ...], field: str, verb: str = "writes"
) -> int | None:
    try:
        return os.open(parts[-1], _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as exc:
        shown = "/".join(parts)
        if exc.errno == errno.ENOTDIR and _is_symlink(parent, parts[-1]):
            exc.errno = errno.ELOOP  # O_DIRECTORY | O_NOFOLLOW on a symlink fails with ENOTDIR
        if exc.errno == errno.ELOOP:
            raise PathError(
                field, f"{shown!r} is a symlink; tether {verb} only through real directories"
            ) from None
        if exc.errno == errno.ENOTDIR:
            raise PathError(field, f"{shown!r} is not a directory") from None
        raise


def _is_symlink(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def read_file(
    dir_fd: int, name: str, shown: str, field: str = "path"
) -> tuple[bytes | None, int | None]:
    """The content and mode of ``name`` in ``dir_fd`` (None, None when it does not exist),
    without following a symlink."""
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd
        )
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathError(
                field, f"{shown!r} is a symlink; tether writes only to regular files"
            ) from None
        if exc.errno == errno.ENXIO:  # a socket (or a device without its driver): say which
            from tether.workdir.reading import kind_of

            kind = kind_of(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
            raise PathError(field, f"{shown!r} is {kind}, not a regular file") from None
        raise
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise PathError(field, f"{shown!r} is a directory")
        if not stat.S_ISREG(info.st_mode):
            from tether.workdir.reading import kind_of

            raise PathError(field, f"{shown!r} is {kind_of(info.st_mode)}, not a regular file")
        if info.st_size > WRITE_READ_MAX_BYTES:  # never load a huge (or sparse) file whole
            raise PathError(
                field,
                f"{shown!r} is {info.st_size:,} bytes, over the cap of "
                f"{WRITE_READ_MAX_BYTES:,} bytes tether reads of one file; nothing was written",
            )
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), stat.S_IMODE(info.st_mode)
    finally:
        os.close(fd)


def _lexists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False


# --- the workdir's write lock -------------------------------------------------------------------

#: How long a change or a recovery waits for another one on the same workdir before giving up.
LOCK_TIMEOUT_S = 30.0


class WorkdirBusy(ToolError):
    """Another change held the workdir's write lock for the whole wait; nothing was written."""


def lock_path(workdir: Path) -> Path:
    """The lock file of ``workdir``: beside its journal directory, which comes and goes."""
    directory = state_dir(workdir)
    return directory.parent / f"{directory.name}.lock"


@contextmanager
def workdir_lock(workdir: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold the write lock of ``workdir`` (resolved) for the block, waiting at most ``timeout``
    seconds (default :data:`LOCK_TIMEOUT_S`) for it: :class:`WorkdirBusy`, naming the holder,
    when it stays taken. Every open of the lock file is its own ``flock``, so two threads of one
    process exclude each other too (and a thread must not take it twice). Waiting polls: in a
    worker thread of anyio the wait ends when the calling task is cancelled.

    The holder removes the lock file as it lets go (no file is left per workdir ever written);
    so a waiter that gets the lock checks the file it locked is still the one at the path, and
    starts again on the new one when it is not."""
    path = lock_path(workdir)
    timeout = LOCK_TIMEOUT_S if timeout is None else timeout
    deadline = time.monotonic() + timeout
    while True:
        fd = _open_lock(path)
        try:
            _wait_for_lock(fd, workdir, path, deadline, timeout)
            held = os.fstat(fd)
            try:
                now = os.stat(path, follow_symlinks=False)
            except FileNotFoundError:
                now = None
        except BaseException:
            os.close(fd)
            raise
        if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
            break
        os.close(fd)  # the holder before removed it: lock the file at the path now
    try:
        yield
    finally:
        try:
            os.unlink(path)  # while still held: a waiter on it will see it gone
        except OSError:
            pass
        os.close(fd)  # drops the lock (the kernel does the same if the process dies)


def _open_lock(path: Path) -> int:
    os.makedirs(path.parent.parent, exist_ok=True)  # $XDG_STATE_HOME itself
    try:
        os.mkdir(path.parent, 0o700)
    except FileExistsError:
        pass
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise ToolError(
            f"nothing was written: cannot open the lock file {str(path)!r}: {exc}"
        ) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
        os.close(fd)
        raise ToolError(
            f"nothing was written: the lock file {str(path)!r} is not a file of this user"
        )
    return fd


def _wait_for_lock(fd: int, workdir: Path, path: Path, deadline: float, timeout: float) -> None:
    pause = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        _raise_if_cancelled()
        left = deadline - time.monotonic()
        if left <= 0:
            raise WorkdirBusy(
                f"nothing was written: {lock_holder(fd)} held the write lock of "
                f"{str(workdir)!r} for all the {timeout:g} s this waited for it (lock file "
                f"{str(path)!r}); try again when it is done"
            )
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.02)


def _raise_if_cancelled() -> None:
    """In a worker thread of anyio: raise the cancellation of the task waiting for it."""
    from anyio.from_thread import check_cancelled

    try:
        check_cancelled()
    except RuntimeError:
        pass  # not an anyio worker thread: the timeout alone bounds the wait


def lock_holder(fd: int) -> str:
    """Who holds the ``flock`` on ``fd``'s file, as well as ``/proc/locks`` tells (Linux)."""
    info = os.fstat(fd)
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            rows = [line.split() for line in fh]
    except OSError:
        return "another process"
    exact = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    # "1: FLOCK  ADVISORY  WRITE <pid> <maj:min:inode> 0 EOF" (waiters' rows have "->" second);
    # on an overlay the device shown is the layer's, so the inode alone is the fallback
    rows = [r for r in rows if len(r) >= 6 and r[1] == "FLOCK"]
    held = [r for r in rows if r[5] == exact] or [
        r for r in rows if r[5].rsplit(":", 1)[-1] == str(info.st_ino)
    ]
    if not held:
        return "another process"
    pid = held[0][4]
    if pid == str(os.getpid()):
        return f"another call of this process ({pid})"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            command = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        command = ""
    return f"process {pid}" + (f" ({command[:200]})" if command else "")


# --- recovery ---------------------------------------------------------------------------------


def _journals(directory: Path) -> Iterator[str]:
    try:
        names = sorted(os.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return
    for name in names:
        if name.endswith(".json"):
            yield name[: -len(".json")]
        elif name.endswith(".json.tmp"):
            # killed while its journal was written: the workdir was not touched yet
            _remove_unlocked(directory / name)


def _remove_unlocked(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        path.unlink(missing_ok=True)
    except OSError:
        pass
    finally:
        os.close(fd)


def pending(workdir: Path) -> bool:
    """Cheap: is anything left in ``workdir``'s journal directory (a journal, or the markers of
    one whose process died while removing it)?"""
    try:
        return bool(os.listdir(state_dir(workdir)))
    except OSError:
        return False


def recover(workdir: Path | str, *, lock_timeout: float | None = None) -> list[str]:
    """Finish or undo every change on ``workdir`` whose process died; one line per change.
    Holds the workdir's write lock (:func:`workdir_lock`), so no live change runs beside it."""
    root = Path(workdir).resolve()
    with workdir_lock(root, lock_timeout):
        return recover_locked(root)


def recover_locked(root: Path) -> list[str]:
    """:func:`recover`, for a caller already holding ``root``'s write lock."""
    directory = state_dir(root)
    if not directory.is_dir():
        return []
    info = os.stat(directory, follow_symlinks=False)
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        return [f"journal directory {str(directory)!r} is not private (mode 0700); ignored"]
    report = []
    for change_id in _journals(directory):
        path = directory / f"{change_id}.json"
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live process is applying it
            if not path.exists():
                continue  # finished between listing and locking
            report.append(_recover_one(root, directory, change_id, fd))
            _forget(directory, change_id)
        finally:
            os.close(fd)
    _sweep_orphans(directory)
    try:
        directory.rmdir()  # nothing left for this workdir
    except OSError:
        pass
    return report


def _sweep_orphans(directory: Path) -> None:
    """Remove what a change killed while it was being forgotten left: files of a change whose
    journal is gone (markers, saved copies). Under the write lock no change of ours is live."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    live = {n[: -len(".json")] for n in names if n.endswith(".json")}
    live |= {n[: -len(".json.tmp")] for n in names if n.endswith(".json.tmp")}
    for name in names:
        if name.split(".", 1)[0] not in live:
            (directory / name).unlink(missing_ok=True)


def _recover_one(root: Path, directory: Path, change_id: str, fd: int) -> str:
    try:
        with os.fdopen(os.dup(fd), "rb") as fh:
            record = json.loads(fh.read())
        entries = record["entries"]
        dirs = record["dirs"]
        if record.get("root") != str(root) or record.get("id") != change_id:
            return f"change {change_id}: journal names another workdir or change; ignored"
        if not isinstance(entries, list) or not isinstance(dirs, list):
            raise TypeError("entries and dirs must be lists")
    except (ValueError, KeyError, TypeError) as exc:
        return f"change {change_id}: unreadable journal ({exc}); ignored"
    committed = (directory / f"{change_id}.committed").exists()
    rollback = (directory / f"{change_id}.rollback").exists()
    forward = committed and not rollback
    done, skipped = 0, []
    with Walker(root) as walker:
        for index, entry in enumerate(entries):
            try:
                outcome = _recover_entry(walker, root, directory, change_id, index, entry, forward)
            except (PathError, ToolError, OSError, KeyError, TypeError, ValueError) as exc:
                outcome = f"{entry.get('path') if isinstance(entry, dict) else entry!r}: {exc}"
            if outcome is None:
                done += 1
            else:
                skipped.append(outcome)
        if not forward:
            _remove_created_dirs(walker, root, dirs)
    verb = "rolled forward" if forward else "rolled back"
    line = f"change {change_id}: {verb} ({done} of {len(entries)} files)"
    if skipped:
        line += "; left alone: " + "; ".join(skipped)
    return line


def _recover_entry(
    walker: Walker,
    root: Path,
    directory: Path,
    change_id: str,
    index: int,
    entry: dict[str, Any],
    forward: bool,
) -> str | None:
    """Put one file where the change wants it; None when done, else why it was left alone."""
    parts = relative_parts(root, entry["path"])  # re-confined: no .., no absolute path
    before, after = entry["before"], entry["after"]
    dfd = walker.open_dir(parts[:-1])  # no symlink on the way
    if dfd is None:
        return f"{'/'.join(parts)}: its directory is gone" if forward else None
    name, shown = parts[-1], "/".join(parts)
    tmp, bak = temp_name(change_id, index), backup_name(change_id, index)
    current, mode = read_file(dfd, name, shown)
    state = digest(current)
    problem: str | None = None
    if forward:
        if state == after:
            pass
        elif state == before and _lexists(dfd, tmp):
            temp, _ = read_file(dfd, tmp, tmp)
            if digest(temp) != after:
                problem = f"{shown}: its temp file does not hold the recorded new content"
            else:
                os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        else:
            problem = f"{shown}: changed since (not its recorded before-state)"
    elif state == after and state != before:
        if before is None:
            os.unlink(name, dir_fd=dfd)
        else:
            saved = _read_saved(directory / f"{change_id}.{index}.before")
            if saved is not None and digest(saved) == before:
                restore(dfd, bak, name, saved, mode)
            else:
                problem = f"{shown}: no saved copy with its recorded before-state"
    elif state != before:
        problem = f"{shown}: changed since (neither its recorded before- nor after-state)"
    for leftover in (tmp, bak):
        if _lexists(dfd, leftover):
            os.unlink(leftover, dir_fd=dfd)
    os.fsync(dfd)
    return problem


def _read_saved(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _remove_created_dirs(walker: Walker, root: Path, dirs: list[Any]) -> None:
    """The directories a rolled-back change created, deepest first, if they are empty."""
    for raw in sorted((d for d in dirs if isinstance(d, str)), key=len, reverse=True):
        try:
            parts = relative_parts(root, raw)
            parent = walker.open_dir(parts[:-1])
            if parent is not None:
                os.rmdir(parts[-1], dir_fd=parent)
        except (PathError, OSError):
            continue

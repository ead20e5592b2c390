"""The one reader of workdir files: off the event loop, no symlink followed at any component,
regular files only, a byte cap checked before reading, and cancellable.

Every tool and family reads workdir files through here (``tests/test_read_rule.py`` checks that
no other module opens one). A path is first confined (:func:`tether.workdir.paths.confine`: resolved, and
refused when it leaves the workdir), then opened the way :mod:`tether.workdir.writing` writes: every
directory from the workdir's own descriptor, one component at a time with ``O_NOFOLLOW``
(:class:`tether.workdir.journal.Walker`), so a directory swapped for a symlink between the check and the
read is refused, never followed. The file itself is looked at (``lstat``) before it is opened, so
a FIFO, a socket or a device is refused by name without being opened; it is then opened with
``O_NOFOLLOW | O_NONBLOCK`` and checked again (``fstat``: a regular file, the same inode). Its size
is compared with the cap before a byte is read, and the read stops at the cap should the file
grow. A regular file opened this way cannot block a read indefinitely, so a cancelled read's
thread ends at its next chunk: :func:`off_loop` sets the stop flag when the call is cancelled
(its timeout) and the thread leaves at once, holding no file.

In a coroutine, use :func:`read_bytes` / :func:`read_text`, or :func:`off_loop` to run a whole
scan (many files) in one worker thread. Synchronous code already off the event loop (a worker
process, a thread) uses :class:`Reader` directly.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import anyio.to_thread

from tether.errors import PathError, ToolError
from tether.workdir.journal import Walker, relative_parts
from tether.workdir.paths import confine

T = TypeVar("T")

#: the most bytes of one file tether reads unless a caller says less (a source file bigger than
#: this is generated or data; no language server or parser is useful on it)
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
CHUNK_BYTES = 1 << 20

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, as a refusal names it."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


class UnreadableFile(PathError):
    """A workdir file tether does not read: missing, not a regular file, a symlink, too large.
    ``shown`` is the path as the caller named it; ``reason`` the short why (``"a FIFO"``,
    ``"missing"``, ``"too large"``), for a scan that skips it and says so."""

    def __init__(self, field: str, shown: str, reason: str, message: str) -> None:
        self.shown = shown
        self.reason = reason
        super().__init__(field, message)


class ReadCancelled(Exception):
    """The read's call was cancelled (its timeout): the thread stops reading."""


class _ReadWalker(Walker):
    verb = "reads"


class Reader:
    """Reads regular files below ``root`` without following a symlink; one per thread, used as
    a context manager (it holds the directory descriptors of its walk). ``stop``, when set,
    makes the next chunk raise :class:`ReadCancelled`."""

    def __init__(self, root: Path | str, *, stop: threading.Event | None = None) -> None:
        self.root = Path(root).resolve()
        self.stop = stop or threading.Event()
        self._walker = _ReadWalker(self.root)

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self._walker.__exit__(*exc)

    def check(self) -> None:
        """Raise :class:`ReadCancelled` when the call was cancelled (for a long scan's loop)."""
        if self.stop.is_set():
            raise ReadCancelled

    def read(
        self,
        path: Path | str,
        *,
        field: str = "path",
        max_bytes: int = DEFAULT_MAX_BYTES,
        shown: str | None = None,
    ) -> bytes:
        """The whole content of ``path`` (absolute inside the workdir, or relative to it)."""
        return b"".join(self.chunks(path, field=field, max_bytes=max_bytes, shown=shown))

    def read_text(
        self,
        path: Path | str,
        *,
        field: str = "path",
        max_bytes: int = DEFAULT_MAX_BYTES,
        shown: str | None = None,
        errors: str = "strict",
    ) -> str:
        """:meth:`read` decoded as UTF-8; with ``errors="strict"`` a file that is not UTF-8 is a
        ToolError naming it."""
        data = self.read(path, field=field, max_bytes=max_bytes, shown=shown)
        try:
            return data.decode("utf-8", errors)
        except UnicodeDecodeError:
            raise ToolError(f"{shown or str(path)!r} is not UTF-8 text") from None

    def chunks(
        self,
        path: Path | str,
        *,
        field: str = "path",
        max_bytes: int = DEFAULT_MAX_BYTES,
        shown: str | None = None,
    ) -> Iterator[bytes]:
        """The content of ``path`` chunk by chunk (a reader that keeps only a window of it).
        The file is opened and checked before the first chunk is given."""
        name = shown if shown is not None else str(path)
        fd = self._open(path, field, name, max_bytes)
        return self._chunks(fd, field, name, max_bytes)

    def _chunks(self, fd: int, field: str, name: str, max_bytes: int) -> Iterator[bytes]:
        try:
            total = 0
            while True:
                self.check()
                chunk = os.read(fd, min(CHUNK_BYTES, max_bytes + 1 - total))
                if not chunk:
                    return
                total += len(chunk)
                if total > max_bytes:
                    raise _too_large(field, name, total, max_bytes, grew=True)
                yield chunk
        finally:
            os.close(fd)

    def stat(
        self, path: Path | str, *, field: str = "path", shown: str | None = None
    ) -> os.stat_result:
        """``lstat`` of ``path`` reached without following a symlink; an :class:`UnreadableFile`
        when it is missing or not a regular file (a scan's look before it reads)."""
        name = shown if shown is not None else str(path)
        direct = self._direct(path)
        if direct is not None:
            return direct[2]
        directory, leaf = self._locate(path, field, name)
        return self._look(directory, leaf, field, name)

    def _direct(self, path: Path | str) -> tuple[int, str, os.stat_result] | None:
        """A plain relative path's directory, leaf and ``lstat`` when every component is a
        real directory and the leaf a regular file; else None (the caller then confines it).

        Such a path resolves to itself, so confining it (``realpath``: an ``lstat`` per
        component per file, and pathlib's parsing) only repeats what this walk checks: each
        directory opened with ``O_NOFOLLOW`` from the workdir's descriptor, the leaf looked at
        without following it. A scan of many files (a search's) pays it per file; it doubled
        the cost of a warm search. A ``..``, ``.``, an absolute path, a symlink anywhere, a
        missing or odd file: None, and the confined path answers, refusals worded as before.
        """
        self.check()
        # (a long path goes the confined way, which holds it to PATH_MAX as before)
        if not isinstance(path, str) or not 0 < len(path) < 1024 or path[0] == "/":
            return None
        if "\x00" in path:
            return None
        parts = path.split("/")
        if "" in parts or "." in parts or ".." in parts:
            return None
        try:
            directory = self._walker.open_dir(parts[:-1])
            if directory is None:
                return None
            info = os.stat(parts[-1], dir_fd=directory, follow_symlinks=False)
        except (OSError, PathError, ValueError):
            return None
        if not stat.S_ISREG(info.st_mode):
            return None
        return directory, parts[-1], info

    def _locate(self, path: Path | str, field: str, name: str) -> tuple[int, str]:
        self.check()
        try:
            real = confine(self.root, os.fspath(path), field)
            parts = relative_parts(self.root, real, field)
            directory = self._walker.open_dir(parts[:-1], field)
        except OSError as exc:
            raise _os_refusal(field, name, exc) from None
        except UnreadableFile:
            raise
        except PathError as exc:  # outside the workdir, through a symlink, a symlink loop
            reason = "a symlink" if "symlink" in exc.expected else "outside the workdir"
            # said of the path as the caller named it, not of its resolved form
            message = exc.expected.replace(repr(os.fspath(path)), repr(name))
            raise UnreadableFile(field, name, reason, message) from None
        if directory is None:
            raise UnreadableFile(field, name, "missing", f"no such file {name!r}")
        return directory, parts[-1]

    def _look(self, directory: int, leaf: str, field: str, name: str) -> os.stat_result:
        try:
            # look before opening: a FIFO, a socket or a device is never opened at all
            before = os.stat(leaf, dir_fd=directory, follow_symlinks=False)
        except FileNotFoundError:
            raise UnreadableFile(field, name, "missing", f"no such file {name!r}") from None
        except OSError as exc:
            raise _os_refusal(field, name, exc) from None
        _require_regular(before.st_mode, field, name)
        return before

    def _open(self, path: Path | str, field: str, name: str, max_bytes: int) -> int:
        direct = self._direct(path)
        if direct is not None:
            directory, leaf, before = direct
        else:
            directory, leaf = self._locate(path, field, name)
            before = self._look(directory, leaf, field, name)
        if before.st_size > max_bytes:
            raise _too_large(field, name, before.st_size, max_bytes)
        try:
            fd = os.open(leaf, _OPEN_FLAGS, dir_fd=directory)
        except FileNotFoundError:
            raise UnreadableFile(field, name, "missing", f"no such file {name!r}") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # swapped for a symlink since the look
                _require_regular(stat.S_IFLNK, field, name)
            raise _os_refusal(field, name, exc) from None
        try:
            info = os.fstat(fd)
            _require_regular(info.st_mode, field, name)
            if (info.st_dev, info.st_ino) != (before.st_dev, before.st_ino):
                raise UnreadableFile(
                    field, name, "replaced", f"{name!r} was replaced while it was being read"
                )
            if info.st_size > max_bytes:
                raise _too_large(field, name, info.st_size, max_bytes)
        except BaseException:
            os.close(fd)
            raise
        return fd


def _require_regular(mode: int, field: str, name: str) -> None:
    if stat.S_ISREG(mode):
        return
    kind = kind_of(mode)
    if stat.S_ISLNK(mode):
        message = f"{name!r} became a symlink; tether reads only regular files, not through a link"
    else:
        message = f"{name!r} is {kind}, not a regular file; tether reads only regular files"
    raise UnreadableFile(field, name, kind, message)


def _too_large(field: str, name: str, size: int, cap: int, *, grew: bool = False) -> UnreadableFile:
    what = "grew past" if grew else f"is {size:,} bytes, over"
    return UnreadableFile(
        field,
        name,
        "too large",
        f"{name!r} {what} the cap of {cap:,} bytes tether reads of one file; nothing of it was "
        "read",
    )


def _os_refusal(field: str, name: str, exc: OSError) -> UnreadableFile:
    reasons = {
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.ENAMETOOLONG: "a name too long",
        errno.ENOTDIR: "a component is not a directory",
        errno.ELOOP: "a symlink",
        errno.ENXIO: "not a regular file",
    }
    reason = reasons.get(exc.errno or 0, exc.strerror or type(exc).__name__)
    return UnreadableFile(field, name, reason, f"cannot read {name!r}: {reason}")


async def off_loop(root: Path | str, work: Callable[[Reader], T]) -> T:
    """Run ``work(reader)`` in a worker thread with a :class:`Reader` on ``root``. When the
    calling task is cancelled (the call's timeout) the call returns at once and the thread stops
    at its next chunk or :meth:`Reader.check` — nothing it does can block."""
    stop = threading.Event()

    def job() -> T:
        with Reader(root, stop=stop) as reader:
            return work(reader)

    try:
        return await anyio.to_thread.run_sync(job, abandon_on_cancel=True)
    finally:
        stop.set()


async def read_bytes(
    root: Path | str,
    path: Path | str,
    *,
    field: str = "path",
    max_bytes: int = DEFAULT_MAX_BYTES,
    shown: str | None = None,
) -> bytes:
    """The content of the workdir file ``path``, read off the event loop (see :class:`Reader`)."""
    return await off_loop(
        root, lambda reader: reader.read(path, field=field, max_bytes=max_bytes, shown=shown)
    )


async def read_text(
    root: Path | str,
    path: Path | str,
    *,
    field: str = "path",
    max_bytes: int = DEFAULT_MAX_BYTES,
    shown: str | None = None,
    errors: str = "strict",
) -> str:
    """:func:`read_bytes` decoded as UTF-8 (see :meth:`Reader.read_text`)."""
    return await off_loop(
        root,
        lambda reader: reader.read_text(
            path, field=field, max_bytes=max_bytes, shown=shown, errors=errors
        ),
    )


def read_outside(
    path: Path | str, *, field: str = "path", max_bytes: int = DEFAULT_MAX_BYTES
) -> bytes:
    """A file that is not the workdir's (the harness's ``--config``, a library's source a server
    pointed at): symlinks are followed, but it must be a regular file of at most ``max_bytes``,
    looked at before it is opened and opened ``O_NONBLOCK`` — it never blocks and never loads
    more than the cap. Refusals are :class:`UnreadableFile` naming ``field``."""
    name = str(path)
    try:
        before = os.stat(path)
        _require_regular(before.st_mode, field, name)
        if before.st_size > max_bytes:
            raise _too_large(field, name, before.st_size, max_bytes)
        fd = os.open(path, _OPEN_FLAGS & ~os.O_NOFOLLOW)
    except FileNotFoundError:
        raise UnreadableFile(field, name, "missing", f"no such file {name!r}") from None
    except OSError as exc:
        raise _os_refusal(field, name, exc) from None
    try:
        _require_regular(os.fstat(fd).st_mode, field, name)
        return _read_capped(fd, field, name, max_bytes)
    finally:
        os.close(fd)


def peek(path: Path | str, size: int) -> bytes | None:
    """The first ``size`` bytes of ``path`` if it is a regular file (an executable's magic
    number, a result file's head); None otherwise. Never blocks."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = os.open(path, _OPEN_FLAGS & ~os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, total = [], 0
        while total < size and (chunk := os.read(fd, min(CHUNK_BYTES, size - total))):
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_capped(fd: int, field: str, name: str, max_bytes: int) -> bytes:
    chunks, total = [], 0
    while chunk := os.read(fd, min(CHUNK_BYTES, max_bytes + 1 - total)):
        chunks.append(chunk)
        total += len(chunk)
        if total > max_bytes:
            raise _too_large(field, name, total, max_bytes, grew=True)
    return b"".join(chunks)


__all__ = [
    "DEFAULT_MAX_BYTES",
    "ReadCancelled",
    "Reader",
    "UnreadableFile",
    "kind_of",
    "off_loop",
    "peek",
    "read_bytes",
    "read_outside",
    "read_text",
]

"""Atomic file writes, alone and across many files (all or nothing)."""

from __future__ import annotations

import contextvars
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import attrs

from tether.errors import ToolError

# The files written by the call running in this context: the core's writers record here, and the
# run puts them on the call's result (``ToolResult.written``), so post-processors such as
# diagnostics-on-write know what a call wrote without guessing from its arguments.
_written: contextvars.ContextVar[dict[Path, None] | None] = contextvars.ContextVar(
    "tether_written", default=None
)


def record_written(paths: Iterable[Path | str]) -> None:
    """Note files the current call wrote (the core's writers do it; a tool writing by other
    means may call it too). Outside a call it does nothing."""
    sink = _written.get()
    if sink is not None:
        for path in paths:
            sink[Path(path)] = None


@contextmanager
def recording_writes() -> Iterator[dict[Path, None]]:
    """Collect what :func:`record_written` notes inside the block (one call's writes)."""
    sink: dict[Path, None] = {}
    token = _written.set(sink)
    try:
        yield sink
    finally:
        _written.reset(token)


def atomic_write(path: Path | str, data: str | bytes) -> None:
    """Write ``data`` to ``path`` through a temp file in the same directory and a rename.

    A reader sees the old content or the new one, never a part. The file's mode is kept.
    """
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        mode: int | None = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tether-tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
        record_written([path])
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


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


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def apply_changes(changes: Sequence[FileChange], *, write: object = None) -> None:
    """Apply every change or none.

    First every file is compared with ``expected``; any mismatch raises :class:`StaleFiles` and
    writes nothing. Then each file is written atomically; if a write fails, the files already
    replaced get their old content back (or are removed, if they did not exist) and the error is
    raised. ``write`` replaces :func:`atomic_write` (tests inject failures with it).
    """
    writer = write if callable(write) else atomic_write
    stale = [c.path for c in changes if _read(c.path) != c.expected]
    if stale:
        raise StaleFiles(stale)
    done: list[FileChange] = []
    try:
        for change in changes:
            writer(change.path, change.new)
            done.append(change)
    except BaseException:
        for change in reversed(done):
            if change.expected is None:
                change.path.unlink(missing_ok=True)
            else:
                atomic_write(change.path, change.expected)
        raise

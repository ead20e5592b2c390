"""The files changed under a server's root since the last query, from Linux's inotify, with a
barrier that proves every change made before the query has been read.

A query must never be answered on a text the disk no longer has (issue 25, item 4). Scanning
the root's mtimes before each query keeps that promise at ~0.2 s per query on a 25,000-file
tree; a watcher with a settle delay did not keep it (a change made just before the query could
still be on its way). Here the promise rests on inotify's one ordered queue per instance: the
kernel queues a change's event inside the system call that makes it, so after the query touches
a directory of its own *watched by the same instance*, every change whose call returned before
that touch is queued before the touch's event. Reading up to that event reads all of them.

Whatever this cannot follow exactly — the queue overflowed, a watched directory was moved or
removed, the watch limit was reached, the barrier did not come back in time — answers None,
and the caller scans the whole root as before (:func:`tether_lsp.documents.scan_root`).
"""

from __future__ import annotations

import array
import ctypes
import ctypes.util
import errno
import fcntl
import os
import select
import shutil
import struct
import sys
import tempfile
import termios
import threading
from collections.abc import Callable

_IN_MODIFY = 0x002
_IN_ATTRIB = 0x004
_IN_CLOSE_WRITE = 0x008
_IN_MOVED_FROM = 0x040
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x01000000
_IN_DONT_FOLLOW = 0x02000000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000

_WATCHED = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
)
#: events that mean a watched directory's paths are no longer what the watch says
_TREE_CHANGED = _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_Q_OVERFLOW
_EVENT = struct.Struct("iIII")
#: how long a query waits for its barrier to come back before scanning instead
BARRIER_TIMEOUT_S = 2.0

_libc: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL | None:
    global _libc
    if _libc is None and sys.platform.startswith("linux"):
        name = ctypes.util.find_library("c") or "libc.so.6"
        _libc = ctypes.CDLL(name, use_errno=True)
    return _libc


class WatchUnavailable(Exception):
    """inotify cannot watch this tree (not Linux, the watch limit, a vanished root)."""


class TreeWatch:
    """An inotify watch of every directory under ``root`` (those ``skip`` names excepted), and a
    barrier directory of its own. :meth:`changed` is called from one thread at a time."""

    def __init__(self, root: str, skip: Callable[[str], bool]) -> None:
        libc = _lib()
        if libc is None:
            raise WatchUnavailable("inotify is Linux's")
        self._libc = libc
        self.root = root
        self._skip = skip
        self._lock = threading.Lock()
        self._closing = False
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            raise WatchUnavailable(os.strerror(ctypes.get_errno()))
        self._fd = fd
        self._dirs: dict[int, str] = {}
        #: :meth:`quiet` read an event that was not its barrier's: the next :meth:`changed`
        #: cannot say what changed (a scan)
        self._lost = False
        self._barrier = tempfile.mkdtemp(prefix="tether-lsp-barrier-")
        try:
            self._barrier_wd = self._add(self._barrier)
            self._watch_tree(root, into=None)
        except BaseException:
            self._close_now()
            raise

    def close(self) -> None:
        """Closed now, or by the :meth:`changed` in progress in another thread when it ends
        (the event loop never waits for a barrier)."""
        self._closing = True
        if self._lock.acquire(blocking=False):
            try:
                self._close_now()
            finally:
                self._lock.release()

    def _close_now(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        shutil.rmtree(self._barrier, ignore_errors=True)

    def _add(self, directory: str) -> int:
        wd = self._libc.inotify_add_watch(
            self._fd, os.fsencode(directory), _WATCHED | _IN_ONLYDIR | _IN_DONT_FOLLOW
        )
        if wd < 0:
            code = ctypes.get_errno()
            if code in (errno.ENOENT, errno.ENOTDIR):
                return -1  # gone meanwhile: its parent's event says so
            raise WatchUnavailable(f"inotify_add_watch {directory}: {os.strerror(code)}")
        self._dirs[wd] = directory
        return wd

    def _watch_tree(self, top: str, into: set[str] | None) -> None:
        """Watch ``top`` and every directory below it; with ``into``, add the files found (a
        directory that appeared: its files were made before its watch existed)."""
        stack = [top]
        while stack:
            directory = stack.pop()
            if self._add(directory) < 0:
                continue
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir:
                    if not self._skip(entry.name):
                        stack.append(entry.path)
                elif into is not None:
                    into.add(entry.path)

    def changed(self) -> set[str] | None:
        """The paths changed under the root since the last call, every change made before this
        call included; None when only a scan of the whole root can say (and the watch is
        rebuilt for the next call)."""
        with self._lock:
            if self._closing:
                self._close_now()  # closed while another call held the watch
            if self._fd < 0:
                return None
            try:
                found = None if self._lost else self._read_to_barrier()
            except (WatchUnavailable, OSError):
                found = None
            if self._closing:
                self._close_now()
                return None
            if found is None:
                self._lost = False
                self._rebuild()
            return found

    def quiet(self) -> bool:
        """True when nothing changed under the root since the last :meth:`changed` or
        :meth:`quiet`, told at once, without waiting or reading a directory: the barrier is
        touched and its event is the only one queued (``FIONREAD`` says one event's bytes; a
        second event, or a later one identical to it, makes more). That event is read. False,
        with nothing read, when anything else is queued (:meth:`changed` reads it), when
        another thread holds the watch, or when it must be rebuilt. Cheap enough for the event
        loop: a ``utime`` of the barrier, an ``ioctl`` and one read of 16 bytes."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            if self._closing or self._fd < 0 or self._lost:
                return False
            os.utime(self._barrier)
            pending = array.array("i", [0])
            fcntl.ioctl(self._fd, termios.FIONREAD, pending, True)
            if pending[0] != _EVENT.size:
                return False
            wd, _mask, _cookie, length = _EVENT.unpack(os.read(self._fd, _EVENT.size))
            if wd != self._barrier_wd or length:
                self._lost = True  # not the barrier's: whatever it said, a scan will see
                return False
            return True
        except OSError:
            return False
        finally:
            if self._closing:
                self._close_now()
            self._lock.release()

    def _rebuild(self) -> None:
        os.close(self._fd)
        self._fd = -1
        self._dirs.clear()
        fd = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return  # no watch: every later call answers None (a scan)
        self._fd = fd
        try:
            self._barrier_wd = self._add(self._barrier)
            self._watch_tree(self.root, into=None)
        except WatchUnavailable:
            os.close(self._fd)
            self._fd = -1

    def _read_to_barrier(self) -> set[str] | None:
        # the barrier: an attribute change of our own watched directory, queued after every
        # change whose system call returned before this one
        os.utime(self._barrier)
        found: set[str] = set()
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        while True:
            if not poller.poll(int(BARRIER_TIMEOUT_S * 1000)):
                return None
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                continue
            offset = 0
            reached = False
            while offset < len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size
                name = data[offset : offset + length].split(b"\0", 1)[0]
                offset += length
                if wd == self._barrier_wd:
                    reached = True  # the rest of this read is taken too: changes made later
                    continue
                if mask & _TREE_CHANGED:
                    return None
                if mask & _IN_IGNORED:
                    self._dirs.pop(wd, None)
                    continue
                directory = self._dirs.get(wd)
                if directory is None:
                    continue
                path = os.path.join(directory, os.fsdecode(name)) if name else directory
                if mask & _IN_ISDIR:
                    if mask & (_IN_MOVED_FROM | _IN_DELETE):
                        return None  # the files under it vanished, unnamed
                    if mask & (_IN_CREATE | _IN_MOVED_TO) and not self._skip(os.fsdecode(name)):
                        self._watch_tree(path, into=found)
                    continue
                found.add(path)
            if reached:
                return found

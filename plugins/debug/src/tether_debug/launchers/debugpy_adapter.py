"""Run debugpy's adapter with socket options that take away pydevd's ~44 ms per message.

tether starts debugpy's adapter itself (``python <this file> ...`` instead of
``python -m debugpy.adapter ...``), with whichever interpreter can import debugpy, so this file
uses the standard library and debugpy only. It changes nothing on disk and nothing in the
debuggee: it wraps, in this (the adapter's) process, the one place where debugpy turns a
socket into a message stream (``JsonIOStream.from_socket``).

Why: pydevd (inside the debuggee) writes every message as two ``sendall`` calls, header then
body, on a socket without ``TCP_NODELAY`` (debugpy#2054). Nagle's algorithm holds the body until
the header is ACKed, and the receiving side (this adapter) delays that ACK by up to ~40 ms on
Linux. Here the adapter's side of each connection gets:

- ``TCP_QUICKACK``, re-armed after every read (Linux clears it as the connection's traffic
  pattern changes), so the header is ACKed at once and pydevd's body leaves without waiting;
- ``TCP_NODELAY``, so the adapter's own writes never wait on the other side's delayed ACK.

On a platform without ``TCP_QUICKACK`` (macOS, Windows) only ``TCP_NODELAY`` is set and the
adapter behaves as stock debugpy does.
"""

from __future__ import annotations

import os
import runpy
import socket
import sys
from typing import Any

_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)


class _QuickAckReader:
    """The receiving side of a socket, buffered, re-arming ``TCP_QUICKACK`` after every ``recv``.

    It offers what ``JsonIOStream`` reads with: ``readline()``, ``read(n)``, ``close()``. Not an
    ``io.BufferedReader``: closing one takes the lock a reader thread blocked in ``recv`` holds,
    and debugpy closes streams from another thread."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = b""
        self._eof = False
        self._quickack = _QUICKACK is not None and _set(sock, _QUICKACK)

    def _fill(self) -> bool:
        if self._eof:
            return False
        chunk = self._sock.recv(65536)
        if self._quickack:
            assert _QUICKACK is not None
            _set(self._sock, _QUICKACK)
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    def readline(self) -> bytes:
        while b"\n" not in self._buffer and self._fill():
            pass
        end = self._buffer.find(b"\n") + 1 or len(self._buffer)
        line, self._buffer = self._buffer[:end], self._buffer[end:]
        return line

    def read(self, size: int) -> bytes:
        if not self._buffer:
            self._fill()
        chunk, self._buffer = self._buffer[:size], self._buffer[size:]
        return chunk

    def close(self) -> None:
        self._eof = True


def _set(sock: socket.socket, option: int) -> bool:
    try:
        sock.setsockopt(socket.IPPROTO_TCP, option, 1)
    except (OSError, AttributeError):
        return False
    return True


def _install() -> None:
    """Wrap ``JsonIOStream.from_socket``; a debugpy without it runs as shipped."""
    try:
        from debugpy.common import messaging

        original = messaging.JsonIOStream.from_socket.__func__  # type: ignore[attr-defined]
    except (ImportError, AttributeError):
        return

    def from_socket(cls: Any, sock: socket.socket, name: str | None = None) -> Any:
        stream = original(cls, sock, name)
        if sock.family in (socket.AF_INET, socket.AF_INET6) and hasattr(stream, "_reader"):
            _set(sock, socket.TCP_NODELAY)
            # buffered, too: on a raw socket debugpy's readline() costs one recv per byte
            stream._reader = _QuickAckReader(sock)
        return stream

    messaging.JsonIOStream.from_socket = classmethod(from_socket)  # type: ignore[method-assign,assignment]


def main() -> None:
    # sys.path[0] is this file's directory when run by path: keep it out of debugpy's imports
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == here:
        del sys.path[0]
    _install()
    sys.argv[0] = "debugpy.adapter"
    runpy.run_module("debugpy.adapter", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()

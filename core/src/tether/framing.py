"""Content-Length framed JSON messages (the base protocol of both LSP and DAP), and a table of
pending requests waiting for their responses."""

from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.abc

_MAX_HEADER = 8192


class FramingError(Exception):
    """The peer sent something that is not a Content-Length framed JSON message."""


class FramedReader:
    """Reads ``Content-Length: N\\r\\n\\r\\n<N bytes of JSON>`` messages from a byte stream."""

    def __init__(
        self, stream: anyio.abc.ByteReceiveStream, max_message: int = 256 * 1024 * 1024
    ) -> None:
        self._stream = stream
        self._buf = bytearray()
        self._max = max_message

    async def _fill(self) -> None:
        chunk = await self._stream.receive(65536)  # raises EndOfStream at EOF
        self._buf += chunk

    async def read(self) -> Any:
        """The next message, decoded. Raises :class:`anyio.EndOfStream` at EOF."""
        while True:
            end = self._buf.find(b"\r\n\r\n")
            if end >= 0:
                break
            if len(self._buf) > _MAX_HEADER:
                raise FramingError(
                    f"no header end within {_MAX_HEADER} bytes: {bytes(self._buf[:80])!r}"
                )
            await self._fill()
        header = bytes(self._buf[:end]).decode("ascii", "replace")
        del self._buf[: end + 4]
        length = None
        for line in header.split("\r\n"):
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    raise FramingError(f"bad Content-Length: {value.strip()!r}") from None
        if length is None or length < 0 or length > self._max:
            raise FramingError(f"missing or unusable Content-Length in header {header!r}")
        while len(self._buf) < length:
            await self._fill()
        body = bytes(self._buf[:length])
        del self._buf[:length]
        try:
            return json.loads(body)
        except ValueError as exc:
            raise FramingError(f"message body is not JSON: {exc}") from None


class FramedWriter:
    """Writes messages with a Content-Length header; safe to share between tasks."""

    def __init__(self, stream: anyio.abc.ByteSendStream) -> None:
        self._stream = stream
        self._lock = anyio.Lock()

    async def write(self, message: Any) -> None:
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        frame = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        async with self._lock:
            await self._stream.send(frame)


class _Waiter:
    __slots__ = ("error", "event", "message")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.message: Any = None
        self.error: BaseException | None = None


class PendingRequests:
    """Requests sent and not yet answered, keyed by id.

    ``register(id)`` before sending, then ``await wait(id, timeout)``; the reader task calls
    ``resolve(id, message)``; ``fail_all(exc)`` wakes every waiter when the peer dies.
    """

    def __init__(self) -> None:
        self._waiters: dict[Any, _Waiter] = {}

    def register(self, request_id: Any) -> None:
        self._waiters[request_id] = _Waiter()

    def resolve(self, request_id: Any, message: Any) -> bool:
        waiter = self._waiters.get(request_id)
        if waiter is None:
            return False
        waiter.message = message
        waiter.event.set()
        return True

    def fail_all(self, error: BaseException) -> None:
        for waiter in self._waiters.values():
            if not waiter.event.is_set():
                waiter.error = error
                waiter.event.set()

    def discard(self, request_id: Any) -> None:
        self._waiters.pop(request_id, None)

    def __contains__(self, request_id: Any) -> bool:
        return request_id in self._waiters

    def __len__(self) -> int:
        return len(self._waiters)

    async def wait(self, request_id: Any, timeout: float | None) -> Any:
        """The response to ``request_id``; :class:`TimeoutError` after ``timeout`` seconds."""
        waiter = self._waiters.get(request_id)
        if waiter is None:
            self.register(request_id)
            waiter = self._waiters[request_id]
        try:
            with anyio.fail_after(timeout):
                await waiter.event.wait()
        finally:
            self._waiters.pop(request_id, None)
        if waiter.error is not None:
            raise waiter.error
        return waiter.message

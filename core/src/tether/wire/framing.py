"""Splitting a byte stream into messages, on anyio's buffered byte streams: newline-delimited
lines (the session protocol, the node kernel, agent CLIs' output) and Content-Length framed JSON
(the base protocol of both LSP and DAP); and a table of pending requests waiting for their
responses.

One over-limit policy for both: a line or frame over its reader's limit raises an error naming
the limit (:class:`LineTooLong`, :class:`FrameTooLarge`) as soon as it is known, its bytes are
dropped without being buffered, and the reader stays usable: the next read returns the next
line (or frame). A stream that is not framed at all (no header end, no usable Content-Length)
raises :class:`FramingError`; there is no next frame to find then.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

if TYPE_CHECKING:
    from anyio.streams.buffered import BufferedByteReceiveStream

# A Content-Length header block longer than this is not one.
_MAX_HEADER = 8192
# An over-long line is dropped this many bytes at a time (what stays buffered while skipping).
_SKIP_CHUNK = 65536


class FramingError(Exception):
    """The peer sent something that is not a line or framed message this reader accepts."""


class LineTooLong(FramingError):
    """A line longer than the reader's ``limit``; it was (or is being) skipped, the reader goes
    on with the next line. ``head`` holds the line's first bytes."""

    def __init__(self, limit: int, head: bytes) -> None:
        self.limit = limit
        self.head = head
        super().__init__(
            f"a line over the limit of {limit} bytes was skipped (it began {head[:80]!r})"
        )


class FrameTooLarge(FramingError):
    """A message whose Content-Length is over the reader's ``limit``; its body was (or is
    being) skipped, the reader goes on with the next message."""

    def __init__(self, limit: int, size: int) -> None:
        self.limit = limit
        self.size = size
        super().__init__(f"a message of {size} bytes, over the limit of {limit} bytes, was skipped")


def _buffered(stream: anyio.abc.AnyByteReceiveStream) -> BufferedByteReceiveStream:
    # imported on first use: its dataclasses cost milliseconds at the import of every family
    from anyio.streams.buffered import BufferedByteReceiveStream

    if isinstance(stream, BufferedByteReceiveStream):
        return stream
    return BufferedByteReceiveStream(stream)


class LineReader:
    """Newline-delimited lines of a byte stream, each at most ``max_line_bytes`` long.

    ``await receive_line()`` (or ``async for line in reader``) gives the next line without its
    ``\\n`` (a ``\\r`` before it is kept: callers strip what they do not want). A line over
    ``max_line_bytes`` raises :class:`LineTooLong` as soon as the limit is passed; the rest of
    that line, up to and including its newline, is dropped by the next read, which then
    returns the line after it. Iteration may go on after the error (call ``__anext__`` again).
    At EOF an unterminated last line is returned like any other; then :class:`anyio.EndOfStream`
    (iteration stops). Cancelling a read loses nothing: the next read resumes where it was.
    """

    def __init__(self, stream: anyio.abc.AnyByteReceiveStream, *, max_line_bytes: int) -> None:
        if max_line_bytes < 1:
            raise ValueError(f"max_line_bytes must be at least 1, got {max_line_bytes}")
        self._stream = _buffered(stream)
        self.max_line_bytes = max_line_bytes
        self._skipping = False
        self._ended = False

    async def receive_line(self) -> bytes:
        """The next line; :class:`LineTooLong` for an over-long one; EndOfStream at EOF."""
        if self._ended:
            raise anyio.EndOfStream
        stream = self._stream
        try:
            while self._skipping:
                try:
                    await stream.receive_until(b"\n", _SKIP_CHUNK)
                    self._skipping = False
                except anyio.DelimiterNotFound:
                    await stream.receive(sys.maxsize)  # the buffer (no newline in it), not more
            try:
                line = await stream.receive_until(b"\n", self.max_line_bytes + 1)
            except anyio.DelimiterNotFound:
                dropped = await stream.receive(sys.maxsize)  # the buffer (the line's start)
                self._skipping = True
                raise LineTooLong(self.max_line_bytes, dropped[:80]) from None
        except anyio.IncompleteRead:
            self._ended = True
            rest = b"" if self._skipping else stream.buffer
            if not rest:
                raise anyio.EndOfStream from None
            await stream.receive(sys.maxsize)
            line = rest
        if len(line) > self.max_line_bytes:  # its newline came in the chunk that passed the limit
            raise LineTooLong(self.max_line_bytes, line[:80])
        return line

    @property
    def stream(self) -> BufferedByteReceiveStream:
        """The buffered stream under the reader: reading it directly (to stop splitting lines
        and take the rest as it comes) gets the bytes already buffered first."""
        return self._stream

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> bytes:
        try:
            return await self.receive_line()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class FramedReader:
    """Reads ``Content-Length: N\\r\\n\\r\\n<N bytes>`` messages from a byte stream.

    ``await read()`` gives the next message decoded as JSON, ``await receive_frame()`` its raw
    body. A message over ``max_frame_bytes`` raises :class:`FrameTooLarge` without its body
    being buffered; the next read skips the body and returns the message after it. A header
    block over 8 KiB or without a usable Content-Length raises :class:`FramingError` (the stream
    is not framed: stop reading it). EOF between messages raises :class:`anyio.EndOfStream`; EOF
    inside a header or body raises :class:`FramingError` saying how much was missing.
    Cancelling a read loses nothing: the next read resumes where it was.
    """

    def __init__(
        self,
        stream: anyio.abc.AnyByteReceiveStream,
        max_frame_bytes: int = 256 * 1024 * 1024,
    ) -> None:
        self._stream = _buffered(stream)
        self.max_frame_bytes = max_frame_bytes
        self._skip = 0  # bytes of an over-large body still to drop
        self._length: int | None = None  # the body length of a header already read

    async def receive_frame(self) -> bytes:
        """The next message's body, as bytes."""
        stream = self._stream
        while self._skip:
            try:
                self._skip -= len(await stream.receive(min(self._skip, _SKIP_CHUNK)))
            except anyio.EndOfStream:
                raise FramingError(
                    f"the stream ended inside a skipped message ({self._skip} bytes missing)"
                ) from None
        if self._length is None:
            self._length = self._content_length(await self._receive_header())
            if self._length > self.max_frame_bytes:
                self._skip, self._length = self._length, None
                raise FrameTooLarge(self.max_frame_bytes, self._skip)
        try:
            body = await stream.receive_exactly(self._length)
        except anyio.IncompleteRead:
            raise FramingError(
                f"the stream ended inside a message: {len(stream.buffer)} of "
                f"{self._length} bytes came"
            ) from None
        self._length = None
        return body

    async def read(self) -> Any:
        """The next message, decoded. Raises :class:`anyio.EndOfStream` at EOF."""
        body = await self.receive_frame()
        try:
            return json.loads(body)
        except ValueError as exc:
            raise FramingError(f"message body is not JSON: {exc}") from None

    async def _receive_header(self) -> str:
        try:
            header = await self._stream.receive_until(b"\r\n\r\n", _MAX_HEADER)
        except anyio.DelimiterNotFound:
            raise FramingError(
                f"no header end within {_MAX_HEADER} bytes: {self._stream.buffer[:80]!r}"
            ) from None
        except anyio.IncompleteRead:
            partial = self._stream.buffer
            if not partial.strip():
                raise anyio.EndOfStream from None
            raise FramingError(
                f"the stream ended inside a message header: {partial[:80]!r}"
            ) from None
        return header.decode("ascii", "replace")

    @staticmethod
    def _content_length(header: str) -> int:
        length = None
        for line in header.split("\r\n"):
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    raise FramingError(f"bad Content-Length: {value.strip()!r}") from None
        if length is None or length < 0:
            raise FramingError(f"missing or unusable Content-Length in header {header!r}")
        return length


class FramedWriter:
    """Writes messages with a Content-Length header; safe to share between tasks. The lock
    keeps one frame's bytes together on a stream whose send may wait halfway; taking it when
    it is free does not yield (an uncontended anyio lock otherwise does: every writer of a
    busy connection then queued behind one trip round the event loop)."""

    def __init__(self, stream: anyio.abc.ByteSendStream) -> None:
        self._stream = stream
        self._lock = anyio.Lock(fast_acquire=True)

    async def write(self, message: Any) -> None:
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        frame = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        async with self._lock:
            await self._stream.send(frame)


class _Waiter:
    __slots__ = ("error", "event", "message", "waiting")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.message: Any = None
        self.error: BaseException | None = None
        #: the callers in :meth:`PendingRequests.wait` for it now
        self.waiting = 0


class PendingRequests:
    """Requests sent and not yet answered, keyed by id.

    ``register(id)`` before sending, then ``await wait(id, timeout)``; the reader task calls
    ``resolve(id, message)``; ``fail_all(exc)`` wakes every waiter when the peer dies. Several
    callers may wait for one id (a request that answers them all): the id stays pending until
    it is answered or its last caller stops waiting (:meth:`waiting` counts them).
    """

    def __init__(self) -> None:
        self._waiters: dict[Any, _Waiter] = {}

    def register(self, request_id: Any) -> None:
        """Await ``request_id`` from now on (a no-op when it is pending already)."""
        self._waiters.setdefault(request_id, _Waiter())

    def waiting(self, request_id: Any) -> int:
        """How many callers wait for ``request_id`` now."""
        waiter = self._waiters.get(request_id)
        return 0 if waiter is None else waiter.waiting

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
        waiter.waiting += 1
        try:
            with anyio.fail_after(timeout):
                await waiter.event.wait()
        finally:
            waiter.waiting -= 1
            if (waiter.event.is_set() or not waiter.waiting) and (
                self._waiters.get(request_id) is waiter
            ):
                del self._waiters[request_id]
        if waiter.error is not None:
            raise waiter.error
        return waiter.message

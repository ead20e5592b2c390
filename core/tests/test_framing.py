"""The core's line and frame readers (``tether.wire.framing``): however the stream is chunked, at
their limits, and at EOF."""

from __future__ import annotations

import json

import anyio
import anyio.abc
import pytest

from tether.wire.framing import FramedReader, FrameTooLarge, FramingError, LineReader, LineTooLong

pytestmark = pytest.mark.anyio


class Chunks(anyio.abc.ByteReceiveStream):
    """A byte stream that hands out ``data`` ``size`` bytes at a time (fewer when asked for
    fewer), then EOF; it counts the bytes handed out."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data = data
        self.size = size
        self.pos = 0

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await anyio.lowlevel.checkpoint()
        if self.pos >= len(self.data):
            raise anyio.EndOfStream
        n = min(self.size, max_bytes)
        chunk = self.data[self.pos : self.pos + n]
        self.pos += len(chunk)
        return chunk

    async def aclose(self) -> None:
        pass


SIZES = (1, 2, 3, 5, 7, 64, 1 << 20)


async def all_lines(reader: LineReader) -> list[bytes | str]:
    """Every line, with an over-long one as ``"too long"``, until EOF."""
    out: list[bytes | str] = []
    while True:
        try:
            out.append(await reader.receive_line())
        except LineTooLong as exc:
            assert exc.limit == reader.max_line_bytes
            assert str(reader.max_line_bytes) in str(exc)
            out.append("too long")
        except anyio.EndOfStream:
            return out


@pytest.mark.parametrize("size", SIZES)
async def test_lines_across_chunks_and_partial_reads(size: int) -> None:
    data = "alpha\r\nbéta\n\ngamma without newline".encode()
    reader = LineReader(Chunks(data, size), max_line_bytes=100)
    assert await all_lines(reader) == [b"alpha\r", "béta".encode(), b"", b"gamma without newline"]


async def test_lines_from_an_object_stream_of_chunks() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](10)
    for chunk in (b"one\ntw", b"o\n", b"three"):
        send.send_nowait(chunk)
    send.close()
    assert [line async for line in LineReader(receive, max_line_bytes=10)] == [
        b"one",
        b"two",
        b"three",
    ]


@pytest.mark.parametrize("size", SIZES)
async def test_an_over_long_line_is_reported_and_skipped(size: int) -> None:
    data = b"x" * 10 + b"\n" + b"y" * 11 + b"\n" + b"z" * 5000 + b"\n" + b"after\n" + b"w" * 30
    reader = LineReader(Chunks(data, size), max_line_bytes=10)
    # a line of exactly the limit is kept; one byte more is refused, whether its newline came
    # with the chunk that passed the limit or thousands of bytes later
    assert await all_lines(reader) == [b"x" * 10, "too long", "too long", b"after", "too long"]


async def test_an_over_long_line_is_not_buffered_while_skipped() -> None:
    stream = Chunks(b"h" * 100 + b"x" * 10_000_000 + b"\nnext\n", 65536)
    reader = LineReader(stream, max_line_bytes=1000)
    with pytest.raises(LineTooLong) as caught:
        await reader.receive_line()
    assert caught.value.head == b"h" * 80
    assert stream.pos < 70_000  # reported as soon as the limit was passed
    assert await reader.receive_line() == b"next"


async def test_a_cancelled_line_read_loses_nothing() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](10)
    reader = LineReader(receive, max_line_bytes=100)
    send.send_nowait(b"first ha")
    with anyio.move_on_after(0.05):
        await reader.receive_line()
    send.send_nowait(b"lf\nsecond\n")
    assert await reader.receive_line() == b"first half"
    assert await reader.receive_line() == b"second"
    send.send_nowait(b"q" * 150)  # cancelled while skipping an over-long line
    with pytest.raises(LineTooLong), anyio.fail_after(5):
        await reader.receive_line()
    with anyio.move_on_after(0.05):
        await reader.receive_line()
    send.send_nowait(b"qqq\nthird\n")
    with anyio.fail_after(5):  # a reader that buffers the whole line would wait for more
        assert await reader.receive_line() == b"third"


async def test_eof_mid_line_and_while_skipping() -> None:
    reader = LineReader(Chunks(b"a\npartial", 3), max_line_bytes=50)
    assert [line async for line in reader] == [b"a", b"partial"]
    with pytest.raises(anyio.EndOfStream):
        await reader.receive_line()
    reader = LineReader(Chunks(b"a\n" + b"b" * 100, 3), max_line_bytes=50)
    assert await all_lines(reader) == [b"a", "too long"]
    assert await all_lines(LineReader(Chunks(b"", 3), max_line_bytes=5)) == []


def frame(message: object) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


async def all_frames(reader: FramedReader) -> list[object]:
    out: list[object] = []
    while True:
        try:
            out.append(await reader.read())
        except FrameTooLarge as exc:
            assert exc.limit == reader.max_frame_bytes
            assert str(reader.max_frame_bytes) in str(exc)
            out.append(f"too large: {exc.size}")
        except anyio.EndOfStream:
            return out


@pytest.mark.parametrize("size", SIZES)
async def test_frames_across_chunks_and_partial_reads(size: int) -> None:
    messages = [{"id": i, "text": "é" * i} for i in range(5)]
    other_headers = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
    data = b"".join(frame(m) for m in messages[:3])
    data += (
        other_headers
        + frame(messages[3])
        + b"content-length:  %d \r\n\r\n%s"
        % (
            len(json.dumps(messages[4]).encode()),
            json.dumps(messages[4]).encode(),
        )
    )
    # every header, its end and the bodies are split wherever the chunk size puts them
    assert await all_frames(FramedReader(Chunks(data, size))) == messages


@pytest.mark.parametrize("size", SIZES)
async def test_an_over_large_frame_is_reported_and_skipped(size: int) -> None:
    big = {"blob": "x" * 300}
    data = frame({"a": 1}) + frame(big) + frame({"b": 2})
    big_size = len(json.dumps(big))
    reader = FramedReader(Chunks(data, size), max_frame_bytes=100)
    assert await all_frames(reader) == [{"a": 1}, f"too large: {big_size}", {"b": 2}]


async def test_an_over_large_frame_is_not_buffered() -> None:
    body = b'"' + b"x" * 10_000_000 + b'"'
    stream = Chunks(b"Content-Length: %d\r\n\r\n%s%s" % (len(body), body, frame(7)), 65536)
    reader = FramedReader(stream, max_frame_bytes=1000)
    with pytest.raises(FrameTooLarge, match="over the limit of 1000 bytes"):
        await reader.read()
    assert stream.pos <= 65536  # reported from the header, before the body was read
    assert await reader.read() == 7


async def test_eof_between_inside_a_header_and_inside_a_body() -> None:
    assert await all_frames(FramedReader(Chunks(frame(1) + b"\r\n", 4))) == [1]
    with pytest.raises(FramingError, match="ended inside a message header"):
        await FramedReader(Chunks(b"Content-Length: 1", 4)).read()
    with pytest.raises(FramingError, match="3 of 10 bytes came"):
        await FramedReader(Chunks(b"Content-Length: 10\r\n\r\n[1,", 2)).read()
    reader = FramedReader(Chunks(frame(1) + b"Content-Length: 500\r\n\r\n[1", 3), 100)
    assert await reader.read() == 1
    with pytest.raises(FrameTooLarge):
        await reader.read()
    with pytest.raises(FramingError, match="ended inside a skipped message"):
        await reader.read()


async def test_unframed_input_is_refused() -> None:
    with pytest.raises(FramingError, match="no header end within 8192 bytes"):
        await FramedReader(Chunks(b"x" * 20_000, 1000)).read()
    with pytest.raises(FramingError, match="missing or unusable Content-Length"):
        await FramedReader(Chunks(b"Content-Type: x\r\n\r\n{}", 1000)).read()
    with pytest.raises(FramingError, match="missing or unusable Content-Length"):
        await FramedReader(Chunks(b"Content-Length: -1\r\n\r\n{}", 1000)).read()


async def test_a_cancelled_frame_read_loses_nothing() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](10)
    reader = FramedReader(receive)
    data = frame({"whole": True})
    send.send_nowait(data[:25])  # the header and part of the body
    with anyio.move_on_after(0.05):
        await reader.read()
    send.send_nowait(data[25:] + frame(2))
    assert await reader.read() == {"whole": True}
    assert await reader.read() == 2


async def test_the_rest_of_the_stream_is_read_unsplit_after_some_lines() -> None:
    reader = LineReader(
        Chunks(b"listening at: 5678\nprogram output, no newline", 1 << 20), max_line_bytes=100
    )
    assert await reader.receive_line() == b"listening at: 5678"
    assert b"".join([chunk async for chunk in reader.stream]) == b"program output, no newline"

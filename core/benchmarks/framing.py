"""Throughput of ``tether.wire.framing.LineReader`` and ``FramedReader`` side by side with the
hand-rolled bytearray splitters the plugins used before (the node kernel's line splitter and
the old Content-Length reader), over the same in-memory 64 KiB chunks.

    uv run python core/benchmarks/framing.py [--repeat 5]

Prints the median time of each and the ratio (tether / hand-rolled); the CPU time of the
process, as the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Awaitable, Callable

import anyio
import anyio.abc

from tether.wire.framing import FramedReader, LineReader

CHUNK = 65536


class Chunks(anyio.abc.ByteReceiveStream):
    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.pos = 0

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self.pos >= len(self.data):
            raise anyio.EndOfStream
        chunk = bytes(self.data[self.pos : self.pos + min(CHUNK, max_bytes)])
        self.pos += len(chunk)
        return chunk

    async def aclose(self) -> None:
        pass


async def hand_rolled_lines(data: bytes) -> int:
    """The node kernel's ``_Lines`` as it was: find the newline in a bytearray, else read."""
    stream, buffer, count = Chunks(data), bytearray(), 0
    while True:
        newline = buffer.find(b"\n")
        if newline >= 0:
            bytes(buffer[:newline])
            del buffer[: newline + 1]
            count += 1
            continue
        try:
            buffer += await stream.receive(CHUNK)
        except anyio.EndOfStream:
            return count


async def tether_lines(data: bytes) -> int:
    count = 0
    async for _ in LineReader(Chunks(data), max_line_bytes=64 * 1024 * 1024):
        count += 1
    return count


async def hand_rolled_frames(data: bytes) -> int:
    """The Content-Length reader as it was before it moved onto the buffered stream."""
    stream, buffer, count = Chunks(data), bytearray(), 0
    while True:
        while (end := buffer.find(b"\r\n\r\n")) < 0:
            try:
                buffer += await stream.receive(CHUNK)
            except anyio.EndOfStream:
                return count
        length = int(bytes(buffer[:end]).split(b":")[1])
        del buffer[: end + 4]
        while len(buffer) < length:
            buffer += await stream.receive(CHUNK)
        json.loads(bytes(buffer[:length]))
        del buffer[:length]
        count += 1


async def tether_frames(data: bytes) -> int:
    reader, count = FramedReader(Chunks(data)), 0
    while True:
        try:
            await reader.read()
        except anyio.EndOfStream:
            return count
        count += 1


def timed(fn: Callable[[bytes], Awaitable[int]], data: bytes, repeat: int) -> tuple[float, int]:
    times, count = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = anyio.run(fn, data)
        times.append(time.perf_counter() - start)
    return statistics.median(times), count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    short = b"".join(
        json.dumps({"id": i, "text": "x" * 80}).encode() + b"\n" for i in range(200_000)
    )
    long = b"".join(b"y" * 1_000_000 + b"\n" for _ in range(40))
    bodies = [json.dumps({"id": i, "result": {"text": "z" * 300}}).encode() for i in range(50_000)]
    frames = b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in bodies)
    cases = [
        ("200k lines of ~100 B", hand_rolled_lines, tether_lines, short),
        ("40 lines of 1 MB", hand_rolled_lines, tether_lines, long),
        ("50k frames of ~330 B", hand_rolled_frames, tether_frames, frames),
    ]
    cpu = time.process_time()
    print(f"{'case':<22} {'hand-rolled':>12} {'tether':>10} {'ratio':>7}")
    for name, before, after, data in cases:
        (old, n_old), (new, n_new) = timed(before, data, repeat), timed(after, data, repeat)
        assert n_old == n_new, (name, n_old, n_new)
        print(f"{name:<22} {old * 1000:>9.1f} ms {new * 1000:>7.1f} ms {new / old:>6.2f}x")
    print(f"CPU of the process: {time.process_time() - cpu:.1f} s")


if __name__ == "__main__":
    main()

"""Splitting a worker's stdout into lines, however the pipe chunks it."""

from __future__ import annotations

import anyio
import pytest

from tether_vibe import runners

pytestmark = pytest.mark.anyio


async def lines_of(chunks: list[bytes]) -> list[str]:
    send, receive = anyio.create_memory_object_stream[bytes](len(chunks))
    for chunk in chunks:
        send.send_nowait(chunk)
    send.close()
    out: list[str] = []
    await runners._read_lines(
        receive,  # type: ignore[arg-type]
        out.append,
        lambda exc: out.append(f"skipped over {exc.limit}: {exc.head!r}"),
    )
    return out


async def test_lines_across_chunks() -> None:
    data = "alpha\r\nbéta\n\ngamma without newline".encode()
    expected = ["alpha", "béta", "", "gamma without newline"]
    for size in (1, 2, 3, 7, len(data)):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        assert await lines_of(chunks) == expected, size


async def test_an_overlong_line_is_skipped_and_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runners, "MAX_LINE_BYTES", 10)
    got = await lines_of([b"x" * 8, b"x" * 8, b"xx\nshort\n", b"y" * 11 + b"\nlast"])
    assert got == [
        "skipped over 10: " + repr(b"x" * 16),
        "short",
        "skipped over 10: " + repr(b"y" * 11),
        "last",
    ]

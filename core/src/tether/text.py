"""Bounded text: tails, caps and truncation that say what they cut."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


class TailBuffer:
    """Keeps the last ``max_bytes`` bytes written to it and counts what it dropped."""

    def __init__(self, max_bytes: int = 64 * 1024) -> None:
        self.max_bytes = max_bytes
        self._buf = bytearray()
        self.dropped = 0
        self.total = 0

    def write(self, data: bytes | str) -> None:
        if isinstance(data, str):
            data = data.encode("utf-8", "replace")
        self.total += len(data)
        self._buf += data
        excess = len(self._buf) - self.max_bytes
        if excess > 0:
            del self._buf[:excess]
            self.dropped += excess

    def text(self) -> str:
        return self._buf.decode("utf-8", "replace")

    def render(self) -> str:
        """The tail, prefixed with how much was dropped when something was."""
        body = self.text()
        if self.dropped:
            return f"[… {self.dropped} earlier bytes dropped]\n{body}"
        return body

    def since(self, offset: int) -> tuple[str, int]:
        """What was written after the absolute byte ``offset`` (a reader's cursor; ``total`` is
        the next cursor), and how many bytes after ``offset`` were already dropped unread."""
        start = self.total - len(self._buf)
        begin = max(offset, start)
        missed = begin - offset if offset < begin else 0
        return bytes(self._buf[begin - start :]).decode("utf-8", "replace"), missed

    def __len__(self) -> int:
        return len(self._buf)


def cap(items: Sequence[T], limit: int, noun: str = "shown") -> tuple[list[T], str | None]:
    """``items[:limit]`` and a note such as ``"50 of 312 shown"`` when something was cut."""
    shown = list(items[:limit])
    if len(items) > limit:
        return shown, f"{limit} of {len(items)} {noun}"
    return shown, None


def truncate(text: str, limit: int) -> str:
    """``text`` or its first ``limit`` characters plus how many were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"

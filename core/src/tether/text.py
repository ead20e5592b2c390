"""Bounded text: tails, caps and truncation that say what they cut."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
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


def cap(items: Sequence[T], limit: int, noun: str = "") -> tuple[list[T], str | None]:
    """``items[:limit]`` and a note such as ``"50 of 312 references shown"`` when something was cut.

    Every "N of M shown" of every plugin comes from here, so they read alike.
    """
    shown = list(items[:limit])
    return shown, shown_note(limit, len(items), noun)


def shown_note(limit: int, total: int, noun: str = "") -> str | None:
    """:func:`cap`'s note for a caller that counted ``total`` items but kept only ``limit``."""
    if total <= limit:
        return None
    noun = noun.removesuffix("shown").strip()  # callers written before the noun was separate
    return f"{limit} of {total} {noun + ' ' if noun else ''}shown"


#: names an answer lists back at most (a checkpoint, a util, a label…), and characters of each
LISTED_NAMES = 20
LISTED_NAME_CHARS = 80


def listing(names: Iterable[object], *, empty: str = "none", quote: bool = True) -> str:
    """Names echoed in an answer (``"marked: 'a', 'b'"``), bounded whatever the input holds: at
    most :data:`LISTED_NAMES`, each cut to :data:`LISTED_NAME_CHARS` characters (saying how many
    were cut), then ``… and N more``. Every list of names from the model's or the checkout's
    input that an answer echoes comes from here."""
    items = list(names)
    shown = []
    for name in items[:LISTED_NAMES]:
        text = truncate(str(name), LISTED_NAME_CHARS)
        shown.append(repr(text) if quote else text)
    if len(items) > LISTED_NAMES:
        shown.append(f"… and {len(items) - LISTED_NAMES} more")
    return ", ".join(shown) or empty


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``"1 file"``, ``"3 files"``, ``"2 matches"``; ``many`` for an irregular plural."""
    if count == 1:
        return f"1 {noun}"
    if many is None:
        many = noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")
    return f"{count} {many}"


def duration(seconds: float) -> str:
    """An elapsed time, timeout or budget in one wording: ``"0.4 s"``, ``"12 s"``,
    ``"2 min 5 s"``, ``"5 min"``, ``"1 h 3 min"``."""
    seconds = max(0.0, seconds)
    if seconds < 10:
        return f"{seconds:.1f} s".replace(".0 s", " s")
    whole = round(seconds)
    if whole < 120:
        return f"{whole} s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{minutes} min {secs} s" if secs else f"{minutes} min"


def clock(stamp: float) -> str:
    """A wall-clock time (``time.time()``) as ``"14:03:09 UTC"``: one zone in every result."""
    return time.strftime("%H:%M:%S UTC", time.gmtime(stamp))


def timestamp(stamp: float) -> str:
    """A wall-clock time (``time.time()``) as ISO 8601 in UTC, to the second, for JSON:
    ``"2026-12-01T14:03:09+00:00"`` (what ``datetime.isoformat(timespec="seconds")`` gives)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(stamp))


def truncate(text: str, limit: int) -> str:
    """``text`` or its first ``limit`` characters plus how many were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


# C0 controls (newline, ESC…), DEL, C1 controls, and the bidirectional overrides and isolates
# that reorder what a reader sees
_UNSAFE = {
    *range(0x00, 0x20),
    0x7F,
    *range(0x80, 0xA0),
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    0x200E,
    0x200F,
}
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def show_path(path: object) -> str:
    """A file name as shown to the model: control characters escaped (``\\n``, ``\\x1b``,
    ``\\u202e``) and a backslash doubled only where it would read as one of those escapes, so
    a name cannot break a result's lines, inject terminal sequences or fake a line of output."""
    text = str(path)
    if not any(ord(ch) in _UNSAFE for ch in text):
        return text
    out = []
    for ch in text:
        code = ord(ch)
        if code not in _UNSAFE:
            out.append(ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out)

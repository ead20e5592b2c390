"""The text a debug session's answers are made of: frame labels, the source line a frame
points at, an adapter's error and exception messages made readable, log point lines."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

import anyio

from tether.reading import UnreadableFile, read_outside


def traceback_tail(message: str) -> str:
    """A Python traceback cut to the part about the evaluated code (debugpy includes its own
    frames); other messages unchanged."""
    if "Traceback (most recent call last):" not in message:
        return message
    lines = message.rstrip().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith('  File "<string>"')]
    tail = lines[starts[-1] :] if starts else lines[-1:]
    return "\n".join(tail)


def unquote(text: str) -> str:
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, str) else text


def frame_label(frame: Mapping[str, Any]) -> str:
    source = frame.get("source") or {}
    where = source.get("path") or source.get("name") or "?"
    return f"{frame.get('name', '?')} at {where}:{frame.get('line', '?')}"


#: the largest source file a stack frame's line is shown from
SOURCE_LINE_MAX_BYTES = 8 * 1024 * 1024


async def source_line(path: str | None, line: int | None) -> str | None:
    """Line ``line`` of the source file ``path`` a frame points at (the program's or a
    library's), read off the event loop; None when it is no regular file or over the cap."""
    if not path or not line:
        return None
    try:
        # never blocks (a FIFO is refused, not opened) and never loads a huge file
        data = await anyio.to_thread.run_sync(
            functools.partial(read_outside, path, max_bytes=SOURCE_LINE_MAX_BYTES),
            abandon_on_cancel=True,
        )
    except UnreadableFile:
        return None
    lines = data.decode("utf-8", "replace").split("\n")
    return lines[line - 1].rstrip("\r") if line <= len(lines) else None


def exception_text(info: Mapping[str, Any]) -> str | None:
    """An ``exceptionInfo`` answer as one line ("kind: description"), None when empty."""
    kind = info.get("exceptionId") or ""
    text = str(info.get("description") or "")
    if len(text) > 1 and text[0] == text[-1] == '"':
        text = unquote(text)  # delve quotes a panic's string value
    return f"{kind}: {text}".strip(": ") or None


def logged_text(lines: list[str], dropped: int, kept: int) -> str:
    """What log points printed, for an answer ('' if nothing)."""
    if not lines:
        return ""
    head = "Log points printed (they do not stop):"
    if dropped:
        head += f" ({dropped} earlier lines dropped; the last {kept} kept)"
    return "\n".join([head, *(f"  {line}" for line in lines)])

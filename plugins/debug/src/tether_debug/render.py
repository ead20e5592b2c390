"""The text a debug session's answers are made of: frame labels, the source line a frame
points at, an adapter's error and exception messages made readable, log point lines,
locations, and the breakpoints a session holds. Stop reports, which ask the adapter for what
they show, are :mod:`tether_debug.report`."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio

from tether.workdir.paths import OUTSIDE, is_inside, relative
from tether.workdir.reading import UnreadableFile, read_outside
from tether_debug import breakpoints as bp
from tether_debug import features

if TYPE_CHECKING:
    from tether_debug.session import DebugSession


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


def what(session: DebugSession) -> str:
    """What the session debugs, and how."""
    return f"{session.adapter.id} {session.mode} of {session.target}"


def location(session: DebugSession, path: str | None, line: Any) -> str:
    """``file:line`` as shown: relative to the workdir, or absolute and marked as outside
    it (the interpreter's, a library's: its lines are not the checkout's). A line the
    program reports is in the text it runs: when the file changed since, the session says
    where that line is now."""
    workdir = session.run.workdir
    where = f"{relative(workdir, path) if path else '?'}:{line}"
    if path and not is_inside(workdir, path):
        where += OUTSIDE
    if path and isinstance(line, int) and line > 0:
        where += session.loaded.note(path, line)
    return where


def breakpoint_report(session: DebugSession) -> str:
    """Each breakpoint the session holds, as the adapter answered it."""
    parts = []
    for path, states in session.breakpoints.items():
        name = relative(session.run.workdir, path)
        parts.append(f"{name}:\n{bp.render(states, name)}")
    if session.function_breakpoints:
        parts.append(f"functions:\n{bp.render(session.function_breakpoints)}")
    if session.exceptions_refused:
        offered = [name for name, _ in features.exception_filters(session.capabilities)]
        parts.append(
            f"Exception filters NOT set: {session.adapter.id} offers no "
            f"{', '.join(session.exceptions_refused)} (it offers: {', '.join(offered) or 'none'})"
        )
    if not parts:
        return "Breakpoints: none."
    return "\n".join(["Breakpoints:", *parts])

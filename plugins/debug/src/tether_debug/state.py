"""What a debug session knows of its program between answers: its phase, where it stopped,
and the bounded log of what it printed."""

from __future__ import annotations

import enum

import attrs

from tether.text import TailBuffer


class Phase(enum.Enum):
    STARTING = "starting"
    RUNNING = "running"
    STOPPED = "stopped"
    ENDED = "ended"


@attrs.define
class StopPoint:
    """Where the program stopped, as the stop event and its top frame say."""

    reason: str
    thread_id: int | None
    description: str | None = None
    frame_id: int | None = None
    frame_name: str | None = None
    path: str | None = None
    line: int | None = None
    source_line: str | None = None
    exception: str | None = None
    #: when the top frame is outside the workdir: the nearest frame inside it
    #: (frame_id, name, path, line)
    own_frame: tuple[int, str, str, int] | None = None


class OutputLog:
    """The program's stdout/stderr: a bounded tail plus a read cursor, so each ``output`` call
    returns only what is new and says what was dropped before it was read."""

    def __init__(self, max_bytes: int) -> None:
        self._tail = TailBuffer(max_bytes)
        self._cursor = 0  # absolute byte offset already returned
        self._sources: list[tuple[TailBuffer, list[int]]] = []

    def write(self, text: str) -> None:
        self._tail.write(text)

    def follow(self, source: TailBuffer) -> None:
        """Also take what is written to ``source`` (e.g. an adapter's stderr tail, where a
        debuggee that inherited it writes), pulled in whenever the log is read."""
        self._sources.append((source, [source.total]))

    def _pull(self) -> None:
        for source, cursor in self._sources:
            text, _ = source.since(cursor[0])
            cursor[0] = source.total
            if text:
                self._tail.write(text)

    @property
    def unread(self) -> int:
        """Bytes written and not yet returned (dropped ones included)."""
        self._pull()
        return self._tail.total - self._cursor

    def read_new(self, limit: int) -> tuple[str, list[str]]:
        self._pull()
        text, missed = self._tail.since(self._cursor)
        notes = []
        if missed:
            notes.append(
                f"{missed} bytes were dropped before they were read "
                f"(the session keeps the last {self._tail.max_bytes} bytes)"
            )
        if len(text) > limit:
            chunk = text[:limit]
            notes.append(
                f"{limit} of {len(text)} new characters shown; call output again for the rest"
            )
            self._cursor += missed + len(chunk.encode("utf-8"))
            return chunk, notes
        self._cursor = self._tail.total
        return text, notes

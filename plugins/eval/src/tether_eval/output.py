"""What a cell produced, bounded: text and images in order, with notes saying what was cut."""

from __future__ import annotations

import re
from typing import Any

import tether
from tether.text import TailBuffer

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")


def strip_ansi(text: str) -> str:
    """Remove terminal colour and cursor codes (IPython tracebacks, pip progress bars)."""
    return _ANSI.sub("", text)


def collapse_carriage_returns(text: str) -> str:
    """A progress bar redrawn with ``\r`` keeps only its last state on each line."""
    if "\r" not in text:
        return text
    lines = []
    for line in text.split("\n"):
        parts = [p for p in line.split("\r") if p]
        lines.append(parts[-1] if parts else "")
    return "\n".join(lines)


class CellOutput:
    """Collects a cell's output up to ``max_chars`` of text and ``max_images`` images.

    The first half of the text budget keeps the head of the output, the second half its tail
    (a flood's last lines are usually the interesting ones); what falls between is counted.
    """

    def __init__(self, max_chars: int = 50_000, max_images: int = 8) -> None:
        self._head_budget = max_chars // 2
        self._head_used = 0
        self._tail = TailBuffer(max_chars - self._head_budget)
        self._parts: list[tether.Text | tether.Image] = []
        self._text: list[str] = []
        self._images_dropped = 0
        self._max_images = max_images
        self.notes: list[str] = []
        self.error = False
        self.interrupted: str | None = None
        self.produced = False
        self._total_bytes = 0

    def write(self, text: str) -> None:
        """Append text (stream output, a repr, a traceback)."""
        if not text:
            return
        self.produced = True
        text = collapse_carriage_returns(strip_ansi(text))
        self._total_bytes += len(text.encode("utf-8", "replace"))
        room = self._head_budget - self._head_used
        if room > 0 and not len(self._tail):
            piece = text[:room]
            self._text.append(piece)
            self._head_used += len(piece)
            text = text[room:]
        if text:
            self._tail.write(text)

    def image(self, data: bytes, mime_type: str = "image/png") -> None:
        self.produced = True
        if sum(isinstance(p, tether.Image) for p in self._parts) >= self._max_images:
            self._images_dropped += 1
            return
        self._flush_text()
        self._parts.append(tether.Image(data=data, mime_type=mime_type))

    def clear(self) -> None:
        """``clear_output()``: forget what was shown so far (notes stay)."""
        self._parts.clear()
        self._text.clear()
        self._head_used = 0
        self._tail = TailBuffer(self._tail.max_bytes)

    def note(self, text: str) -> None:
        """A line from tether itself (interruption, lost state), shown after the output."""
        self.notes.append(text)

    def _flush_text(self) -> None:
        if self._text:
            self._parts.append(tether.Text("".join(self._text)))
            self._text.clear()

    def result(self, **meta: Any) -> tether.ToolResult:
        self._flush_text()
        parts = list(self._parts)
        if len(self._tail):
            cut = self._tail.dropped
            marker = (
                f"[… output cut here: {cut} of {self._total_bytes} bytes dropped; the first "
                f"{self._head_used} and the last {len(self._tail)} are shown]\n"
                if cut
                else ""
            )
            parts.append(tether.Text(marker + self._tail.text()))
        if self._images_dropped:
            shown = self._max_images
            self.note(
                f"{shown} of {shown + self._images_dropped} images shown "
                f"({self._images_dropped} dropped by the image cap)"
            )
        notes = [*self.notes, *([self.interrupted] if self.interrupted else [])]
        if notes:
            parts.append(tether.Text("\n".join(f"[{n}]" for n in notes)))
        if not parts:
            parts.append(tether.Text("(no output)"))
        merged: list[tether.Text | tether.Image] = []
        for part in parts:
            if merged and isinstance(part, tether.Text) and isinstance(merged[-1], tether.Text):
                joined = merged[-1].text
                if not joined.endswith("\n"):
                    joined += "\n"
                merged[-1] = tether.Text(joined + part.text)
            else:
                merged.append(part)
        is_error = self.error or self.interrupted is not None
        return tether.ToolResult(content=tuple(merged), is_error=is_error, meta=meta)

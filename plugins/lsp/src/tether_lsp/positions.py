"""Positions: ``line`` + ``symbol`` (never a column) to LSP positions, and back.

LSP counts characters in the negotiated encoding (utf-16 by default, utf-8 when the server
picks it); Python strings count code points. Every conversion goes through this module.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import attrs

import tether

_OCCURRENCE = re.compile(r"^(?P<text>.+)#(?P<n>[1-9][0-9]*)$")


@attrs.frozen
class SymbolPosition:
    """A resolved ``line``/``symbol``: 0-based line, code-point columns of the match."""

    line: int
    start: int
    end: int
    line_text: str


def split_lines(text: str) -> list[str]:
    """Lines as LSP counts them (``\\n``, ``\\r\\n`` and ``\\r`` all end a line)."""
    return re.split(r"\r\n|\r|\n", text)


def resolve_position(text: str, line: int, symbol: str, *, where: str) -> SymbolPosition:
    """Find ``symbol`` (optionally ``name#N``) on 1-based ``line`` of ``text``.

    Whole-identifier occurrences win (``f`` on ``def f(x):`` is the function, not the f of
    ``def``); a match inside a longer identifier counts only when there is no whole one. A
    dotted symbol (``Ky.create``) that is not on the line means its last segment.
    """
    lines = split_lines(text)
    if text.endswith(("\n", "\r")):
        lines.pop()
    if line < 1:
        raise tether.ArgumentError("line", f"a 1-based line number, got {line}")
    if line > len(lines):
        raise tether.ArgumentError(
            "line", f"{line} is past the end of {where} ({len(lines)} lines)"
        )
    if symbol == "":
        raise tether.ArgumentError("symbol", "a non-empty substring of the line")
    line_text = lines[line - 1]
    wanted: int | None = None
    needle = symbol
    picked = _OCCURRENCE.match(symbol)
    if picked and picked["text"] not in ("",) and symbol not in line_text:
        needle, wanted = picked["text"], int(picked["n"])
    if needle not in line_text and "." in needle.strip("."):
        needle = needle.rstrip(".").rsplit(".", 1)[1]
    starts = _occurrences(line_text, needle)
    if not starts:
        raise tether.ArgumentError(
            "symbol", f"{needle!r} is not on line {line} of {where}: {line_text.strip()!r}"
        )
    if wanted is None:
        if len(starts) > 1:
            cols = ", ".join(str(s + 1) for s in starts)
            picks = ", ".join(f"{needle}#{i}" for i in range(1, len(starts) + 1))
            raise tether.ArgumentError(
                "symbol",
                f"{needle!r} occurs {len(starts)} times on line {line} of {where} "
                f"(columns {cols}): pick one with {picks}",
            )
        wanted = 1
    if wanted > len(starts):
        raise tether.ArgumentError(
            "symbol",
            f"{needle!r} occurs {len(starts)} time(s) on line {line} of {where}, "
            f"there is no occurrence #{wanted}",
        )
    start = starts[wanted - 1]
    return SymbolPosition(line - 1, start, start + len(needle), line_text)


_WORD = re.compile(r"[\w$]")


def _occurrences(line_text: str, needle: str) -> list[int]:
    """Starts of ``needle`` in the line: the whole-identifier ones when there are any."""
    starts: list[int] = []
    at = line_text.find(needle)
    while at != -1:
        starts.append(at)
        at = line_text.find(needle, at + 1)
    whole = [start for start in starts if is_whole_token(line_text, start, start + len(needle))]
    return whole or starts


def is_whole_token(text: str, start: int, end: int) -> bool:
    """No identifier character touches ``text[start:end]`` on either side (for a needle that
    begins or ends with a non-identifier character that side needs no check)."""
    if start > 0 and _WORD.match(text[start]) and _WORD.match(text[start - 1]):
        return False
    return not (end < len(text) and _WORD.match(text[end - 1]) and _WORD.match(text[end]))


def to_lsp_character(line_text: str, column: int, encoding: str) -> int:
    """Code-point column -> LSP ``character`` in ``encoding``."""
    prefix = line_text[:column]
    if encoding == "utf-8":
        return len(prefix.encode("utf-8"))
    if encoding == "utf-32":
        return len(prefix)
    return len(prefix.encode("utf-16-le")) // 2


def from_lsp_character(line_text: str, character: int, encoding: str) -> int:
    """LSP ``character`` in ``encoding`` -> code-point column (clamped to the line)."""
    if encoding == "utf-32":
        return min(character, len(line_text))
    if encoding == "utf-8":
        data = line_text.encode("utf-8")[:character]
        return len(data.decode("utf-8", errors="ignore"))
    units = 0
    for index, char in enumerate(line_text):
        if units >= character:
            return index
        units += 2 if ord(char) > 0xFFFF else 1
    return len(line_text)


def offset_of(
    lines: list[str], line: int, character: int, encoding: str, eol_lengths: list[int]
) -> int:
    """Absolute code-point offset of an LSP position in a text split into ``lines``."""
    if line >= len(lines):
        return sum(len(text) + eol for text, eol in zip(lines, eol_lengths, strict=True))
    before = sum(
        len(text) + eol for text, eol in zip(lines[:line], eol_lengths[:line], strict=True)
    )
    return before + from_lsp_character(lines[line], character, encoding)


def split_keep_eols(text: str) -> tuple[list[str], list[int]]:
    """Lines without their endings, and the length of each ending (0 for the last line)."""
    lines: list[str] = []
    eols: list[int] = []
    at = 0
    for match in re.finditer(r"\r\n|\r|\n", text):
        lines.append(text[at : match.start()])
        eols.append(match.end() - match.start())
        at = match.end()
    lines.append(text[at:])
    eols.append(0)
    return lines, eols


def apply_text_edits(text: str, edits: list[dict[str, Any]], encoding: str) -> str:
    """Apply LSP ``TextEdit``s (all relative to ``text``) and return the new text."""
    lines, eols = split_keep_eols(text)
    spans: list[tuple[int, int, str]] = []
    for edit in edits:
        rng = edit["range"]
        start = offset_of(lines, rng["start"]["line"], rng["start"]["character"], encoding, eols)
        end = offset_of(lines, rng["end"]["line"], rng["end"]["character"], encoding, eols)
        spans.append((start, end, edit["newText"]))
    # stable sort keeps the server's order for edits inserted at one position
    spans.sort(key=lambda span: (span[0], span[1]))
    for (_, prev_end, _), (start, _, _) in itertools.pairwise(spans):
        if start < prev_end:
            raise tether.ToolError("the server returned overlapping edits; nothing was written")
    out: list[str] = []
    at = 0
    for start, end, new_text in spans:
        out.append(text[at:start])
        out.append(new_text)
        at = end
    out.append(text[at:])
    return "".join(out)

"""Positions: ``line`` + ``symbol`` (never a column) to LSP positions, and back.

LSP counts characters in the negotiated encoding (utf-16 by default, utf-8 when the server
picks it); Python strings count code points. Every conversion goes through this module.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import tether

# the agent's line + symbol rule is the core's, shared with the debug family's breakpoints
from tether.wire.positions import (
    SymbolPosition,
    is_whole_token,
    resolve_position,
    split_lines,
)

if TYPE_CHECKING:
    from lsprotocol import types

__all__ = [
    "SymbolPosition",
    "apply_text_edits",
    "from_lsp_character",
    "is_whole_token",
    "offset_of",
    "resolve_position",
    "split_keep_eols",
    "split_lines",
    "to_lsp_character",
]


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


def apply_text_edits(
    text: str, edits: Sequence[types.TextEdit | types.AnnotatedTextEdit], encoding: str
) -> str:
    """Apply LSP ``TextEdit``s (all relative to ``text``) and return the new text."""
    lines, eols = split_keep_eols(text)
    spans: list[tuple[int, int, str]] = []
    for edit in edits:
        rng = edit.range
        start = offset_of(lines, rng.start.line, rng.start.character, encoding, eols)
        end = offset_of(lines, rng.end.line, rng.end.character, encoding, eols)
        spans.append((start, end, edit.new_text))
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

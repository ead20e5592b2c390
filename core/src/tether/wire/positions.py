"""Positions as the agent gives them: a 1-based ``line`` plus a ``symbol`` substring of it (never a
column). One rule for every family that takes them (lsp positions, debug breakpoints)."""

from __future__ import annotations

import re

import attrs

from tether.errors import ArgumentError

_OCCURRENCE = re.compile(r"^(?P<text>.+)#(?P<n>[1-9][0-9]*)$")


@attrs.frozen
class SymbolPosition:
    """A resolved ``line``/``symbol``: 0-based line, code-point columns of the match."""

    line: int
    start: int
    end: int
    line_text: str


_LINE_END = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """Lines as LSP counts them (``\\n``, ``\\r\\n`` and ``\\r`` all end a line)."""
    # a text without a carriage return (most) splits at "\n" alone: the same lines, a
    # fraction of the regex's time (every query on a document splits it)
    return _LINE_END.split(text) if "\r" in text else text.split("\n")


def resolve_position(
    text: str, line: int, symbol: str, *, where: str, lines: list[str] | None = None
) -> SymbolPosition:
    """Find ``symbol`` (optionally ``name#N``) on 1-based ``line`` of ``text``.

    Whole-identifier occurrences win (``f`` on ``def f(x):`` is the function, not the f of
    ``def``); a match inside a longer identifier counts only when there is no whole one. A
    dotted symbol (``Ky.create``) that is not on the line means its last segment. ``lines``:
    ``split_lines(text)``, when the caller keeps it (a document asked about again); not changed.
    """
    if lines is None:
        lines = split_lines(text)
    # a final line end ends the last line; it does not begin another
    count = len(lines) - 1 if text.endswith(("\n", "\r")) else len(lines)
    if line < 1:
        raise ArgumentError("line", f"a 1-based line number, got {line}")
    if line > count:
        raise ArgumentError("line", f"{line} is past the end of {where} ({count} lines)")
    if symbol == "":
        raise ArgumentError("symbol", "a non-empty substring of the line")
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
        raise ArgumentError(
            "symbol", f"{needle!r} is not on line {line} of {where}: {line_text.strip()!r}"
        )
    if wanted is None:
        if len(starts) > 1:
            cols = ", ".join(str(s + 1) for s in starts)
            picks = ", ".join(f"{needle}#{i}" for i in range(1, len(starts) + 1))
            raise ArgumentError(
                "symbol",
                f"{needle!r} occurs {len(starts)} times on line {line} of {where} "
                f"(columns {cols}): pick one with {picks}",
            )
        wanted = 1
    if wanted > len(starts):
        raise ArgumentError(
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

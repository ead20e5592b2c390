"""Breakpoints that follow their text: a file's text is remembered when its breakpoints are set;
once the file has changed (a tether write or another process), each breakpoint moves to where
its line went, or is dropped as lost or ambiguous — never left on a line that now says
something else."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from tether.wire.positions import is_whole_token, resolve_position, split_lines


@attrs.frozen
class Anchor:
    """A file's text when its breakpoints were last set or moved, and the ``symbol`` each line
    was given with (lines set without one have none)."""

    text: str
    symbols: dict[int, str] = attrs.field(factory=dict)

    def check_symbol(self, lines: Sequence[int], symbol: str, where: str) -> None:
        """Every line holds ``symbol`` (the core's line + symbol rule; errors name the field)."""
        for line in lines:
            resolve_position(self.text, line, symbol, where=where)


@attrs.frozen
class Move:
    """Where one breakpoint went: ``new`` is None when it was dropped; ``why`` says how."""

    old: int
    new: int | None
    why: str

    def describe(self, settings: str = "") -> str:
        """One line; ``settings`` is what the breakpoint does besides stopping (" [if x > 1]")."""
        what = f"line {self.old}{settings}"
        if self.new is None:
            return f"{what}: {self.why}"
        if self.new == self.old:
            return f"{what}: stays ({self.why})"
        return f"{what}: moved from line {self.old} to {self.new} ({self.why})"


#: a breakpoint's file larger than this is not followed (its breakpoints stay where they are)
MAX_FOLLOWED_BYTES = 16 << 20


def read_text(path: Path, workdir: Path) -> str | None:
    """The file's text now, or None when it is gone or unreadable: a workdir file through the
    core's reader (no symlink followed, regular files only), a library file (outside the
    workdir) by the capped, non-blocking outside read."""
    from tether.workdir.reading import Reader, UnreadableFile, read_outside

    try:
        if path.is_relative_to(workdir):  # as written: a symlink in the workdir is refused
            with Reader(workdir) as reader:
                data = reader.read(path, field="file", max_bytes=MAX_FOLLOWED_BYTES)
        else:
            data = read_outside(path, field="file", max_bytes=MAX_FOLLOWED_BYTES)
    except UnreadableFile:
        return None
    return data.decode("utf-8", errors="surrogateescape")


def _lines(text: str) -> list[str]:
    lines = split_lines(text)
    if text.endswith(("\n", "\r")):
        lines.pop()
    return lines


def _shown(text: str) -> str:
    text = text.strip()
    return f"`{text[:77]}...`" if len(text) > 80 else f"`{text}`"


def follow(old_text: str, new_text: str, line: int, symbol: str | None = None) -> Move:
    """Where breakpoint ``line`` of ``old_text`` belongs in ``new_text``.

    Lines the edit left alone map through a line diff; a copy of the line's text that appeared
    elsewhere makes the answer ambiguous (which one was meant is not known). An edited or
    deleted line is found again by its exact text (one place only), or — given ``symbol`` — by
    the symbol on the one line that replaced it; otherwise it is lost."""
    old, new = _lines(old_text), _lines(new_text)
    opcodes = _opcodes(old, new)
    return _follow(old, new, opcodes, line, symbol)


def follow_all(
    old_text: str, new_text: str, lines: Sequence[int], symbols: Mapping[int, str]
) -> list[Move]:
    """:func:`follow` for each of a file's breakpoint lines (one diff for all of them)."""
    old, new = _lines(old_text), _lines(new_text)
    opcodes = _opcodes(old, new)
    return [_follow(old, new, opcodes, line, symbols.get(line)) for line in lines]


def _opcodes(old: list[str], new: list[str]) -> Sequence[tuple[str, int, int, int, int]]:
    import difflib  # with the first edit to follow, not when the tool is imported

    return difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()


def _follow(
    old: list[str],
    new: list[str],
    opcodes: Sequence[tuple[str, int, int, int, int]],
    line: int,
    symbol: str | None,
) -> Move:
    if line > len(old):
        return Move(line, None, "lost (the line was past the end of the file)")
    text = old[line - 1]
    key = text.strip()
    same = [n for n, candidate in enumerate(new, 1) if key and candidate.strip() == key]
    copies_before = sum(1 for candidate in old if key and candidate.strip() == key)
    tag, i1, _, j1, j2 = next(op for op in opcodes if op[1] <= line - 1 < op[2])
    if tag == "equal":
        target = j1 + (line - 1 - i1) + 1
        if len(same) > copies_before:
            return Move(line, None, _ambiguous(key, same))
        return Move(line, target, f"the line {_shown(text)}")
    if len(same) == 1 and copies_before == 1:
        return Move(line, same[0], f"the line {_shown(text)} itself moved")
    if len(same) > 1:
        return Move(line, None, _ambiguous(key, same))
    replaced = list(range(j1 + 1, j2 + 1))
    if symbol is not None:
        holding = [n for n in replaced if _holds(new[n - 1], symbol)]
        if len(holding) == 1:
            n = holding[0]
            return Move(line, n, f"edited; {symbol!r} is on it: {_shown(new[n - 1])}")
        if len(holding) > 1:
            where = ", ".join(map(str, holding))
            return Move(
                line,
                None,
                f"ambiguous: the line {_shown(text)} was edited and {symbol!r} is on lines "
                f"{where} of the new text; set it again on the one you mean",
            )
    if len(replaced) == 1:
        now = _shown(new[replaced[0] - 1])
        return Move(line, None, f"lost (the line {_shown(text)} is now {now})")
    return Move(line, None, f"lost (the line {_shown(text)} is gone)")


def _holds(line_text: str, symbol: str) -> bool:
    at = line_text.find(symbol)
    while at != -1:
        if is_whole_token(line_text, at, at + len(symbol)):
            return True
        at = line_text.find(symbol, at + 1)
    return False


def _ambiguous(key: str, lines: Sequence[int]) -> str:
    where = ", ".join(map(str, lines))
    return (
        f"ambiguous: the line {_shown(key)} is now on lines {where}; set it again on the one "
        "you mean"
    )

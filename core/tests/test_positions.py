"""The line + symbol rule every family uses (lsp positions, debug breakpoints): each way it can
go wrong is an ArgumentError naming the field."""

from __future__ import annotations

import itertools

import pytest

from tether import ArgumentError
from tether.wire.positions import resolve_position, split_lines

TEXT = "def f(x):\n    return f(x) + f(x)\n"


@pytest.mark.parametrize(
    ("line", "symbol", "column"),
    [(1, "f", 4), (1, "x", 6), (2, "f#2", 18), (2, "return", 4), (1, "pkg.f", 4)],
)
def test_a_symbol_resolves_to_its_column(line: int, symbol: str, column: int) -> None:
    assert resolve_position(TEXT, line, symbol, where="a.py").start == column


@pytest.mark.parametrize(
    ("line", "symbol", "field", "said"),
    [
        (3, "f", "line", "3 is past the end of a.py (2 lines)"),
        (0, "f", "line", "a 1-based line number, got 0"),
        (1, "", "symbol", "a non-empty substring of the line"),
        (1, "y", "symbol", "'y' is not on line 1 of a.py"),
        (2, "f", "symbol", "pick one with f#1, f#2"),
        (2, "f#3", "symbol", "there is no occurrence #3"),
    ],
)
def test_a_wrong_position_names_the_field(line: int, symbol: str, field: str, said: str) -> None:
    with pytest.raises(ArgumentError) as caught:
        resolve_position(TEXT, line, symbol, where="a.py")
    assert caught.value.field == field
    assert said in str(caught.value)


#: every line end LSP counts, and characters that end a line for Python's str.splitlines but
#: not for LSP (vertical tab, form feed, file/group/record separators, NEL, LS, PS)
LINE_ENDS = ["\n", "\r\n", "\r"]
NOT_LINE_ENDS = ["\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def _lsp_lines(text: str) -> list[str]:
    """The rule written out: a line ends at \\r\\n, else at a lone \\r or \\n."""
    lines, current, i = [], "", 0
    while i < len(text):
        if text.startswith("\r\n", i) or text[i] in "\r\n":
            lines.append(current)
            current = ""
            i += 2 if text.startswith("\r\n", i) else 1
        else:
            current += text[i]
            i += 1
    return [*lines, current]


@pytest.mark.parametrize(
    "pieces",
    [
        *itertools.product(LINE_ENDS + NOT_LINE_ENDS, repeat=2),
        *[(end, "x", other) for end in LINE_ENDS for other in NOT_LINE_ENDS],
    ],
)
def test_lines_split_as_lsp_counts_them(pieces: tuple[str, ...]) -> None:
    # a file with every mix of line ends (and of characters that only look like ones): the
    # lines are LSP's, whichever way the split is done
    text = "a" + "b".join(pieces) + "c"
    assert split_lines(text) == _lsp_lines(text)
    assert split_lines(text + "\n") == _lsp_lines(text + "\n")


@pytest.mark.parametrize("end", LINE_ENDS)
@pytest.mark.parametrize("final", [True, False], ids=["final-end", "no-final-end"])
def test_lines_kept_by_the_caller_resolve_alike_and_stay_unchanged(end: str, final: bool) -> None:
    # a document's lines split once and kept (an lsp document asked about again)
    text = end.join(["def f(x):", "    return f(x)"]) + (end if final else "")
    lines = split_lines(text)
    kept = list(lines)
    for line, symbol in [(1, "f"), (2, "return"), (2, "x")]:
        expected = resolve_position(text, line, symbol, where="a.py")
        assert resolve_position(text, line, symbol, where="a.py", lines=lines) == expected
    with pytest.raises(ArgumentError, match=r"3 is past the end of a.py \(2 lines\)"):
        resolve_position(text, 3, "f", where="a.py", lines=lines)
    assert lines == kept

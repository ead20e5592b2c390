"""The line + symbol rule every family uses (lsp positions, debug breakpoints): each way it can
go wrong is an ArgumentError naming the field."""

from __future__ import annotations

import pytest

from tether import ArgumentError
from tether.wire.positions import resolve_position

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

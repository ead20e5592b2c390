"""Pure parts: line + symbol resolution, encodings, edit application, the ledger."""

from __future__ import annotations

import pytest
from lsprotocol import types

import tether
from tether_lsp.ledger import DiagnosticLedger
from tether_lsp.positions import (
    apply_text_edits,
    from_lsp_character,
    resolve_position,
    to_lsp_character,
)
from tether_lsp.protocol import converter

LINE = 'label = "😀é"; value = label'


def test_symbol_occurrences_are_picked_or_refused() -> None:
    text = "a = 1\nlabel = label + label\n"
    with pytest.raises(tether.ArgumentError) as ambiguous:
        resolve_position(text, 2, "label", where="f.py")
    assert str(ambiguous.value) == (
        "symbol: 'label' occurs 3 times on line 2 of f.py (columns 1, 9, 17): "
        "pick one with label#1, label#2, label#3"
    )
    assert resolve_position(text, 2, "label#3", where="f.py").start == 16
    # a literal "#" in the symbol still matches literally
    assert resolve_position("x = '#1'\n", 1, "'#1'", where="f.py").start == 4
    with pytest.raises(tether.ArgumentError, match=r"line: 3 is past the end of f.py \(2 lines\)"):
        resolve_position(text, 3, "a", where="f.py")
    with pytest.raises(tether.ArgumentError, match="line: a 1-based line number, got 0"):
        resolve_position(text, 0, "a", where="f.py")


def test_columns_in_each_encoding() -> None:
    column = LINE.index("value")
    assert column == 14
    assert to_lsp_character(LINE, column, "utf-16") == 15  # 😀 is two utf-16 units
    assert to_lsp_character(LINE, column, "utf-8") == 18  # 😀 is four bytes, é two
    assert to_lsp_character(LINE, column, "utf-32") == 14
    for encoding in ("utf-16", "utf-8", "utf-32"):
        assert (
            from_lsp_character(LINE, to_lsp_character(LINE, column, encoding), encoding) == column
        )


def test_edits_apply_against_the_original_text_in_any_order() -> None:
    text = "😀 old(old)\r\nold\n"
    edits = [
        {
            "range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 3}},
            "newText": "new",
        },
        {
            "range": {"start": {"line": 0, "character": 3}, "end": {"line": 0, "character": 6}},
            "newText": "new",
        },
        {
            "range": {"start": {"line": 0, "character": 7}, "end": {"line": 0, "character": 10}},
            "newText": "new",
        },
    ]
    typed = [converter().structure(edit, types.TextEdit) for edit in edits]
    assert apply_text_edits(text, typed, "utf-16") == "😀 new(new)\r\nnew\n"
    inside = {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 8}}
    overlapping = [
        typed[1],
        converter().structure({"range": inside, "newText": "y"}, types.TextEdit),
    ]
    with pytest.raises(tether.ToolError, match="overlapping edits; nothing was written"):
        apply_text_edits(text, overlapping, "utf-16")


def _diag(message: str, line: int, code: str = "E1", severity: int = 1) -> types.Diagnostic:
    start = {"line": line, "character": 0}
    raw = {
        "range": {"start": start, "end": start},
        "message": message,
        "code": code,
        "severity": severity,
    }
    return converter().structure(raw, types.Diagnostic)


def test_ledger_reports_new_keys_and_growing_counts_only(tmp_path: object) -> None:
    from pathlib import Path

    ledger, path = DiagnosticLedger(), Path("a.py")
    assert ledger.new_since_last(path, [_diag("undefined x", 3)]) == [_diag("undefined x", 3)]
    assert ledger.new_since_last(path, [_diag("undefined x", 7)]) == []  # moved
    two = [_diag("undefined x", 7), _diag("undefined x", 9)]
    assert ledger.new_since_last(path, two) == [_diag("undefined x", 9)]  # a second copy
    assert ledger.new_since_last(path, [_diag("undefined x", 7, severity=2)]) == [
        _diag("undefined x", 7, severity=2)
    ]  # another severity is another key
    assert ledger.new_since_last(Path("b.py"), [_diag("undefined x", 1)]) != []  # per file
    assert ledger.new_since_last(path, []) == []
    assert ledger.new_since_last(path, [_diag("undefined x", 7)]) != []  # fixed, then back


def test_a_whole_identifier_wins_over_a_match_inside_another() -> None:
    # the f of `def` is not the function f
    assert resolve_position("def f(x):\n", 1, "f", where="f.py").start == 4
    # several whole ones are still ambiguous, and only they are listed
    with pytest.raises(tether.ArgumentError, match=r"'f' occurs 2 times .*\(columns 5, 11\)"):
        resolve_position("def f(x): f(x)\n", 1, "f", where="f.py")
    assert resolve_position("def f(x): f(x)\n", 1, "f#2", where="f.py").start == 10
    # no whole occurrence: a substring of a longer identifier is used
    assert resolve_position("make_square(2)\n", 1, "square", where="f.py").start == 5
    # `$` is part of a JavaScript identifier
    assert resolve_position("const $a = a;\n", 1, "a", where="f.js").start == 11


def test_a_dotted_symbol_means_its_last_segment() -> None:
    line = "const api = ky.create({prefixUrl: base});\n"
    assert resolve_position(line, 1, "Ky.create", where="f.ts").start == line.index("create")
    # written as it appears on the line, the dotted text itself is used
    assert resolve_position(line, 1, "ky.create", where="f.ts").start == line.index("ky")

"""Captures are whole nodes (issue 36 §2): a type with its arguments, a run with its last
member's `;`, and the advice for a kind this build of a grammar does not have."""

from __future__ import annotations

import pytest

from tether.testing import require_real
from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.testing import captures

DART = """
Future<List<int>> f(int a) async { return []; }
Future<String?> g() async { return null; }
Future<int> h() async { return 1; }
class A extends State<X> { int x = 1; }
final Map<String, int>? m = {};
"""


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (
            "Future<$T> $F($$$P) async { $$$B }",
            [
                {"T": "List<int>", "F": "f", "P": "int a", "B": "return [];"},
                {"T": "String?", "F": "g", "P": "", "B": "return null;"},
                {"T": "int", "F": "h", "P": "", "B": "return 1;"},
            ],
        ),
        ("class $C extends $B { $$$M }", [{"C": "A", "B": "State<X>", "M": "int x = 1;"}]),
        ("final $T $X = $V;", [{"T": "Map<String, int>?", "X": "m", "V": "{}"}]),
    ],
)
def test_dart_types_are_captured_whole(
    registry: GrammarRegistry, pattern: str, expected: list[dict[str, str]]
) -> None:
    assert captures(registry, "dart", pattern, DART) == expected


# A run before the closing token takes the last member's `;` (every grammar whose members end
# with one).
RUNS = {
    "java": ("class $C { $$$M }", "class A { int x = 1; }", "int x = 1;"),
    "dart": ("class $C { $$$M }", "class A { int x = 1; }", "int x = 1;"),
    "cpp": ("struct $C { $$$M };", "struct A { int x = 1; };", "int x = 1;"),
    "csharp": ("class $C { $$$M }", "class A { int x = 1; }", "int x = 1;"),
    "typescript": ("class $C { $$$M }", "class A { x = 1; }", "x = 1;"),
    "c": ("struct $C { $$$M };", "struct A { int x; };", "int x;"),
    "rust": ("struct $C { $$$M }", "struct A { x: u8, }", "x: u8,"),
}


@pytest.mark.parametrize("lang", sorted(RUNS))
def test_a_run_ends_with_its_last_members_terminator(registry: GrammarRegistry, lang: str) -> None:
    grammar = registry.get(lang)
    assert grammar is not None
    if grammar.missing():
        require_real(False, grammar.missing() or "")
    pattern, code, member = RUNS[lang]
    found = captures(registry, lang, pattern, code)
    assert [c["M"] for c in found] == [member], found


def test_a_kind_another_build_has_is_refused_with_what_to_use(registry: GrammarRegistry) -> None:
    from tether_astgrep.rules import RuleError, compile_rule

    grammar = registry.get("dart")
    assert grammar is not None
    with pytest.raises(RuleError) as err:
        compile_rule({"kind": "call_expression"}, grammar)
    assert "argument_part" in str(err.value) and "$F($$$A)" in str(err.value)


# A qualified type (`p.Q<T>`: name, `.`, name, arguments as flat siblings) in every place a
# type stands, for every grammar that declares continuation tokens (found on dart-lang/http:
# `extends jni$_.JType<X>` captured as `jni$_`).
QUALIFIED: dict[str, list[tuple[str, str, dict[str, str]]]] = {
    "dart": [
        (
            "class $C extends $B { $$$M }",
            "class A extends p.Q<X> { int x = 1; }\n",
            {"C": "A", "B": "p.Q<X>", "M": "int x = 1;"},
        ),
        ("final $T $N;", "class A {\n  final p.Q<int> x;\n}\n", {"T": "p.Q<int>", "N": "x"}),
        (
            "Future<$T> $F($$$P) async { $$$B }",
            "Future<a.b.C?> f() async { return null; }\n",
            {"T": "a.b.C?", "F": "f", "P": "", "B": "return null;"},
        ),
    ],
}


def _with_continuation_tokens() -> list[str]:
    from tether_astgrep.grammars import all_grammars

    return sorted(g.id for g in all_grammars() if g.continuation_tokens)


def test_every_grammar_with_continuation_tokens_has_cases() -> None:
    assert sorted(QUALIFIED) == _with_continuation_tokens()


@pytest.mark.parametrize("lang", _with_continuation_tokens())
def test_a_qualified_type_is_captured_whole(registry: GrammarRegistry, lang: str) -> None:
    grammar = registry.get(lang)
    assert grammar is not None
    if grammar.missing():
        require_real(False, grammar.missing() or "")
    for pattern, code, expected in QUALIFIED[lang]:
        assert captures(registry, lang, pattern, code) == [expected], pattern


# A `$$$` run whose items are clauses (Scala's `case` clauses, Elixir's `->` clauses, Python's
# `case`) or end with a default value (Swift's parameters): the run takes them all; none is
# skipped as a clause or field the pattern leaves unmentioned (found side by side: all 118
# `$X match { $$$C }` of com-lihaoyi/mainargs captured nothing; Alamofire's `init($$$P)` lost
# its last parameter's `= [:]`).
CLAUSE_RUNS: dict[str, tuple[str, str, dict[str, str]]] = {
    "scala": (
        "$X match { $$$C }",
        "object O {\n  def f(x: Int) = x match {\n    case 1 => 2\n    case _ => 3\n  }\n}\n",
        {"X": "x", "C": "case 1 => 2\n    case _ => 3"},
    ),
    "elixir": (
        "case $X do\n  $$$C\nend",
        "case x do\n  1 -> :a\n  _ -> :b\nend\n",
        {"X": "x", "C": "1 -> :a\n  _ -> :b\n"},
    ),
    "swift": (
        "func $F($$$P) { $$$B }",
        "func f(a: Int = 1, b: [String: Int] = [:]) { x() }\n",
        {"F": "f", "P": "a: Int = 1, b: [String: Int] = [:]", "B": "x()"},
    ),
    "python": (
        "match $X:\n    $$$C",
        "match x:\n    case 1:\n        pass\n    case _:\n        pass\n",
        {"X": "x", "C": "case 1:\n        pass\n    case _:\n        pass"},
    ),
}


@pytest.mark.parametrize("lang", sorted(CLAUSE_RUNS))
def test_a_run_of_clauses_is_captured_whole(registry: GrammarRegistry, lang: str) -> None:
    grammar = registry.get(lang)
    assert grammar is not None
    if grammar.missing():
        require_real(False, grammar.missing() or "")
    pattern, code, expected = CLAUSE_RUNS[lang]
    assert captures(registry, lang, pattern, code) == [expected]

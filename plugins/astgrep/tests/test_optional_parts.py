"""An optional part in the middle of a definition that the pattern does not mention (a return
type, type parameters, a `where` clause) does not prevent a match at smart strictness, as an
unmentioned leading modifier does not; `cst` is the strict reading (issue 36 §3)."""

from __future__ import annotations

import pytest

from tether.testing import require_real
from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.testing import captures, find

# grammar -> (pattern, code whose definition has optional parts the pattern leaves out, captures)
OPTIONAL: dict[str, tuple[str, str, dict[str, str]]] = {
    "python": (
        "def $F($$$A): $$$B",
        "def f(a) -> int:\n    pass\n",
        {"F": "f", "A": "a", "B": "pass"},
    ),
    "rust": (
        "fn $F($$$P) { $$$B }",
        "fn f<T>(a: T) -> u8 where T: Copy { 1 }\n",
        {"F": "f", "P": "a: T", "B": "1"},
    ),
    "typescript": (
        "function $F($$$P) { $$$B }",
        "function f<T>(a: T): number { return 1 }\n",
        {"F": "f", "P": "a: T", "B": "return 1"},
    ),
    "go": (
        "func $F($$$P) { $$$B }",
        "package a\n\nfunc f[T any](a T) error { return nil }\n",
        {"F": "f", "P": "a T", "B": "return nil"},
    ),
}


@pytest.mark.parametrize("lang", sorted(OPTIONAL))
def test_an_unmentioned_middle_part_does_not_prevent_a_match(
    registry: GrammarRegistry, lang: str
) -> None:
    grammar = registry.get(lang)
    assert grammar is not None
    if grammar.missing():
        require_real(False, grammar.missing() or "")
    pattern, code, expected = OPTIONAL[lang]
    assert captures(registry, lang, pattern, code) == [expected]
    # the strict reading
    assert find(registry, lang, pattern, code, strictness="cst") == []


@pytest.mark.parametrize(
    ("pattern", "code", "expected"),
    [
        (
            "auto $F($$$P) -> $R { $$$B }",
            "auto f(int a) -> int { return a; }\n",
            ["auto f(int a) -> int { return a; }"],
        ),
        (
            "[$$$C]($$$P) { $$$B }",
            "void g() { auto l = [&](int a) { return a; }; }\n",
            ["[&](int a) { return a; }"],
        ),
    ],
)
def test_cpp_trailing_return_types_and_lambdas(
    registry: GrammarRegistry, pattern: str, code: str, expected: list[str]
) -> None:
    grammar = registry.get("cpp")
    assert grammar is not None
    if grammar.missing():
        require_real(False, grammar.missing() or "")
    assert find(registry, "cpp", pattern, code) == expected


def test_an_unmentioned_part_is_never_an_argument(registry: GrammarRegistry) -> None:
    # a field the pattern leaves empty is optional; an argument is never one
    assert find(registry, "python", "f($X)", "f(a, b)\nf(c)\n") == ["f(c)"]


def test_only_a_definitions_optional_parts_are_unmentioned(registry: GrammarRegistry) -> None:
    # an annotated assignment is no definition (no `body`): `$A = $B` does not find it, as in
    # ast-grep
    assert find(registry, "python", "$A = $B", "x: int = 1\ny = 2\n") == ["y = 2"]
    assert find(registry, "rust", "let $X = $Y;", "fn f() { let x: u8 = 1; let y = 2; }") == [
        "let y = 2;"
    ]


def test_dart_mixin_class_modifiers_are_unmentioned(registry: GrammarRegistry) -> None:
    code = "abstract base mixin class A {\n  int x = 1;\n}\n"
    assert find(registry, "dart", "class $C { $$$B }", code) == [code.strip()]


# (grammar, definition kind, token kind) -> (pattern, code with the token, captures): one per
# token a grammar declares in `Grammar.inner_tokens`.
INNER_TOKENS: dict[tuple[str, str, str], tuple[str, str, dict[str, str]]] = {
    ("swift", "init_declaration", "?"): (
        "init($$$P) { $$$B }",
        "class A {\n    init?(y: Int) { return nil }\n}\n",
        {"P": "y: Int", "B": "return nil"},
    ),
    ("swift", "init_declaration", "bang"): (
        "init($$$P) { $$$B }",
        "class A {\n    init!(z: Int) { self.z = z }\n}\n",
        {"P": "z: Int", "B": "self.z = z"},
    ),
}


def _declared_inner_tokens() -> list[tuple[str, str, str]]:
    from tether_astgrep.grammars import all_grammars

    return sorted(
        (g.id, kind, token)
        for g in all_grammars()
        for kind, tokens in g.inner_tokens.items()
        for token in tokens
    )


def test_every_declared_inner_token_has_a_case() -> None:
    assert sorted(INNER_TOKENS) == _declared_inner_tokens()


@pytest.mark.parametrize("key", _declared_inner_tokens(), ids="-".join)
def test_an_unmentioned_inner_token_does_not_prevent_a_match(
    registry: GrammarRegistry, key: tuple[str, str, str]
) -> None:
    """Swift's failable `init?(…)` is found by `init($$$P) { $$$B }` (ast-grep finds it
    too); `cst` is the strict reading, and a pattern that writes the token keeps it."""
    lang = key[0]
    grammar = registry.get(lang)
    assert grammar is not None
    if grammar.missing():
        require_real(False, grammar.missing() or "")
    pattern, code, expected = INNER_TOKENS[key]
    assert captures(registry, lang, pattern, code) == [expected]
    assert find(registry, lang, pattern, code, strictness="cst") == []
    plain = code.replace("init?(", "init(").replace("init!(", "init(")
    if key[2] == "?":
        assert find(registry, lang, pattern.replace("init(", "init?("), plain) == []


# (grammar, keyword kind) -> (pattern, code spelling the keyword another way, captures): one per
# kind a grammar declares in `Grammar.keyword_kinds` (found side by side on Alamofire: two
# `func … rethrows` that `func $F($$$P) { $$$B }` missed while it found every `throws`).
KEYWORD_KINDS: dict[tuple[str, str], tuple[str, str, dict[str, str]]] = {
    ("swift", "throws"): (
        "func $F($$$P) { $$$B }",
        "func around(_ c: () throws -> Void) rethrows { try c() }\n",
        {"F": "around", "P": "_ c: () throws -> Void", "B": "try c()"},
    ),
}


def _declared_keyword_kinds() -> list[tuple[str, str]]:
    from tether_astgrep.grammars import all_grammars

    return sorted((g.id, kind) for g in all_grammars() for kind in g.keyword_kinds)


def test_every_declared_keyword_kind_has_a_case() -> None:
    assert sorted(KEYWORD_KINDS) == _declared_keyword_kinds()


@pytest.mark.parametrize("key", _declared_keyword_kinds(), ids="-".join)
def test_a_keyword_spelled_otherwise_is_unmentioned_too(
    registry: GrammarRegistry, key: tuple[str, str]
) -> None:
    lang = key[0]
    grammar = registry.get(lang)
    assert grammar is not None
    if grammar.missing():
        require_real(False, grammar.missing() or "")
    pattern, code, expected = KEYWORD_KINDS[key]
    assert captures(registry, lang, pattern, code) == [expected]
    assert find(registry, lang, pattern, code, strictness="cst") == []

"""Captures are whole (issue 36 §2), for two shapes found side by side with ast-grep:

- a metavariable that stands where the grammar made a node of the placeholder alone (Swift's
  `let $X = $Y`: `$X` is a `pattern`) binds a tuple of such nodes between brackets whole
  (`let (a, b) = f()` was missed), while a bare list of items is still refused (`puts $X`
  does not find `puts a, nil`, nor `puts(a, nil)`);
- a `$$$` run takes the code the grammar could not read next to it (tree-sitter-cpp leaves
  gtest's `GTEST_ATTRIBUTE_…_` macros before a template's function in an ERROR node:
  `template <typename $T> $$$D` captured the function without them).
"""

from __future__ import annotations

import pytest

from tether.testing import require_real
from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.testing import captures


def _tuples(arity: int) -> dict[str, str]:
    """Every tuple pattern shape of `arity` items, by name."""
    names = [f"a{i}" for i in range(arity)]
    return {
        "plain": f"({', '.join(names)})",
        "wildcard": f"(_, {', '.join(names[1:])})",
        "labelled": f"({', '.join(f'l{i}: {n}' for i, n in enumerate(names))})",
        "nested": f"(({names[0]}, {names[1]}), {', '.join(names[2:]) or 'z'})",
    }


# Each binding form whose tuple the Swift grammar keeps as one node: (pattern, code with `{T}`
# for the tuple, the captures expected with `{T}`).
SWIFT_FORMS = {
    "let": ("let $X = $Y", "let {T} = f()\n", {"X": "{T}", "Y": "f()"}),
    "var": ("var $X = $Y", "var {T} = f()\n", {"X": "{T}", "Y": "f()"}),
    "let typed": ("let $X: $T = $Y", "let {T}: U = f()\n", {"X": "{T}", "T": "U", "Y": "f()"}),
    "for": (
        "for $X in $Y { $$$B }",
        "for {T} in xs { g() }\n",
        {"X": "{T}", "Y": "xs", "B": "g()"},
    ),
    "for case let": (
        "for $X in $Y { $$$B }",
        "for case let {T} in xs { g() }\n",
        {"X": "case let {T}", "Y": "xs", "B": "g()"},
    ),
}
# The forms whose tuple the grammar spells as siblings of the statement (`(`, pattern, `,`,
# pattern, `)` in the `if`): `$X` binds the bracketed list (ast-grep 0.51.1 finds none of these).
# A labelled tuple there (`case let (x: a, y: b)`) is left: its labels are siblings too.
SWIFT_FLAT_FORMS = {
    "case let": (
        "switch $S { case let $X: $$$B }",
        "switch t {\ncase let {T}: g()\n}\n",
        {"S": "t", "X": "{T}", "B": "g()\n"},  # a case's `statements` end with the line
    ),
    "if case let": (
        "if case let $X = $Y { $$$B }",
        "if case let {T} = t { g() }\n",
        {"X": "{T}", "Y": "t", "B": "g()"},
    ),
    "guard case let": (
        "guard case let $X = $Y else { $$$B }",
        "guard case let {T} = t else { return }\n",
        {"X": "{T}", "Y": "t", "B": "return"},
    ),
}
SWIFT_FORMS.update(SWIFT_FLAT_FORMS)
SWIFT_CASES = [
    (form, arity, shape)
    for form in SWIFT_FORMS
    for arity in (2, 3, 4)
    for shape in _tuples(arity)
    if not (form in SWIFT_FLAT_FORMS and shape == "labelled")
]


@pytest.mark.parametrize(("form", "arity", "shape"), SWIFT_CASES)
def test_a_swift_tuple_binding_is_captured_whole(
    registry: GrammarRegistry, form: str, arity: int, shape: str
) -> None:
    pattern, code, expected = SWIFT_FORMS[form]
    tup = _tuples(arity)[shape]
    found = captures(registry, "swift", pattern, code.replace("{T}", tup))
    assert found == [{k: v.replace("{T}", tup) for k, v in expected.items()}]


# One more element stops a pattern that names each one (no `$$$`): the tuple is matched item by
# item, never skipped past.
@pytest.mark.parametrize("arity", [2, 3, 4])
@pytest.mark.parametrize(
    ("pattern", "code"),
    [
        ("let ({V}) = $Y", "let ({T}) = f()\n"),
        ("for ({V}) in $Y {{ $$$B }}", "for ({T}) in xs { g() }\n"),
        ("if case let ({V}) = $Y {{ $$$B }}", "if case let ({T}) = t { g() }\n"),
        ("switch $S {{ case let ({V}): $$$B }}", "switch t {\ncase let ({T}): g()\n}\n"),
    ],
)
def test_a_swift_tuple_pattern_finds_its_arity_only(
    registry: GrammarRegistry, arity: int, pattern: str, code: str
) -> None:
    names = [f"$A{i}" for i in range(arity)]
    pat = pattern.replace("{V}", ", ".join(names)).replace("{{", "{").replace("}}", "}")
    for n in (arity - 1, arity, arity + 1):
        found = captures(
            registry, "swift", pat, code.replace("{T}", ", ".join(f"a{i}" for i in range(n)))
        )
        if n == arity:
            assert len(found) == 1 and [found[0][f"A{i}"] for i in range(arity)] == [
                f"a{i}" for i in range(arity)
            ], (pat, n, found)
        else:
            assert found == [], (pat, n, found)


# A metavariable the grammar made a list of still binds one item only, bracketed or not: the
# brackets make one value only of items of the node's own kind.
@pytest.mark.parametrize(
    ("lang", "pattern", "code", "expected"),
    [
        ("ruby", "puts $X", "puts a, nil\nputs(a, nil)\nputs b\n", [{"X": "b"}]),
        (
            "go",
            "$X := $Y",
            "package a\nfunc f() {\n\ta, b := g()\n\tc := h()\n}\n",
            [{"X": "c", "Y": "h()"}],
        ),
        ("lua", "local $X = $Y", "local a, b = 1, 2\nlocal c = 3\n", [{"X": "c", "Y": "3"}]),
    ],
)
def test_a_list_is_still_not_one_value(
    registry: GrammarRegistry, lang: str, pattern: str, code: str, expected: list[dict[str, str]]
) -> None:
    grammar = registry.get(lang)
    assert grammar is not None
    if grammar.missing():
        require_real(False, grammar.missing() or "")
    assert captures(registry, lang, pattern, code) == expected


# gmock-gtest-all.cc: `template <typename CharType>` then four `GTEST_ATTRIBUTE_…_` macros, then
# the function; from three on, tree-sitter-cpp puts them in an ERROR node.
@pytest.mark.parametrize("macros", [1, 2, 3, 4])
def test_a_run_takes_the_unread_code_beside_it(registry: GrammarRegistry, macros: int) -> None:
    attrs = "".join(f"ATTRIBUTE_{i}_\n" for i in range(macros))
    function = "static int f(int b) {\n  return b;\n}"
    code = f"template <typename T>\n{attrs}{function}\n"
    found = captures(registry, "cpp", "template <typename $T> $$$D", code)
    assert found == [{"T": "T", "D": attrs + function}]


# Unread code at a body's start, middle or end is in the body's run, in C and C++.
@pytest.mark.parametrize("lang", ["c", "cpp"])
@pytest.mark.parametrize(
    "body",
    ["FOO BAR BAZ\n  return 1;", "g();\n  FOO BAR BAZ\n  return 1;", "return 1;\n  FOO BAR BAZ"],
)
def test_a_body_run_takes_the_unread_code_in_it(
    registry: GrammarRegistry, lang: str, body: str
) -> None:
    code = f"static int f(int a) {{\n  {body}\n}}\n"
    found = captures(registry, lang, "static int $F($$$P) { $$$B }", code)
    assert found == [{"F": "f", "P": "int a", "B": body}]


# A macro call with a body (gtest's `TEST(a, b) { … }`, a `FOR_EACH(x, xs) { … }` loop), every
# shape × C and C++: C reads it as a call whose `;` is missing, then a block, in the pattern as
# in the code (it was refused); C++ as a function definition. A written `;` between call and
# body, or one more argument, is other code.
MACRO_PLACES = {
    "top level": "{macro}\nint other(void) {{ return 0; }}\n",
    "in a function": "void f(void) {{\n  {macro}\n}}\n",
}


def _macro(name: str, args: list[str], semicolon: bool = False) -> str:
    return f"{name}({', '.join(args)}){';' if semicolon else ''} {{\n    x();\n  }}"


@pytest.mark.parametrize("lang", ["c", "cpp"])
@pytest.mark.parametrize("place", sorted(MACRO_PLACES))
@pytest.mark.parametrize("arity", [1, 2, 3])
@pytest.mark.parametrize("name", ["TEST", "$M"])
def test_a_macro_call_with_a_body_is_read_and_found(
    registry: GrammarRegistry, lang: str, place: str, arity: int, name: str
) -> None:
    from tether_astgrep.testing import find

    metas = [f"$A{i}" for i in range(arity)]
    pattern = f"{name}({', '.join(metas)}) {{ $$$B }}"
    args = [f"a{i}" for i in range(arity)]
    expected = {f"A{i}": a for i, a in enumerate(args)} | {"B": "x();"}
    if name == "$M":
        expected["M"] = "TEST"
    for code_args, semicolon, hits in (
        (args, False, 1),
        (args, True, 0),  # `TEST(a); { … }`: a call, then a block
        ([*args, "extra"], False, 0),
    ):
        code = MACRO_PLACES[place].format(macro=_macro("TEST", code_args, semicolon))
        found = captures(registry, lang, pattern, code)
        assert found == [expected] * hits, (pattern, code, found)
        find(registry, lang, pattern, code)  # the literal anchors and the kind query agree


# The same macro with arguments no parameter can be (Catch2's `TEST_CASE("name", "[tag]")`,
# `FOR_EACH(x, xs.all)`): the code is a call whose `;` the grammar supplied, then a block, while
# the pattern with metavariables reads as a function definition. Found by neither tool before;
# the pattern now also reads as the call and the block. Every argument kind × arity × place ×
# C and C++, by captures; a written `;` or one more argument is still other code.
ARGUMENTS = {
    "string": '"vectors can be sized"',
    "tag": '"[vector][!mayfail]"',
    "number": "42",
    "negative": "-1",
    "char": "'c'",
    "member": "xs.all",
    "call": "get(x)",
    "sum": "a + b",
    "cast": "(int)n",
}


@pytest.mark.parametrize("lang", ["c", "cpp"])
@pytest.mark.parametrize("place", sorted(MACRO_PLACES))
@pytest.mark.parametrize("arity", [1, 2])
@pytest.mark.parametrize("kind", sorted(ARGUMENTS))
@pytest.mark.parametrize("run", [False, True])
@pytest.mark.parametrize("name", ["TEST_CASE", "$M"])
def test_a_macro_call_whose_arguments_are_no_parameters_is_found(
    registry: GrammarRegistry, lang: str, place: str, arity: int, kind: str, run: bool, name: str
) -> None:
    args = [ARGUMENTS[kind], *["second"] * (arity - 1)]
    if run:  # `TEST_CASE($$$A) { $$$B }`: the arguments as one run
        pattern, expected = f"{name}($$$A) {{ $$$B }}", {"A": ", ".join(args), "B": "x();"}
    else:
        metas = [f"$A{i}" for i in range(arity)]
        pattern = f"{name}({', '.join(metas)}) {{ $$$B }}"
        expected = {f"A{i}": a for i, a in enumerate(args)} | {"B": "x();"}
    if name == "$M":
        expected["M"] = "TEST_CASE"
    for code_args, semicolon, hits in (
        (args, False, 1),
        (args, True, 0),  # `TEST_CASE("x"); { … }`: a call, then a block
        ([*args, "extra"], False, int(run)),  # one more argument: only a run takes it
    ):
        code = MACRO_PLACES[place].format(macro=_macro("TEST_CASE", code_args, semicolon))
        found = captures(registry, lang, pattern, code)
        if hits and run:
            expected["A"] = ", ".join(code_args)
        assert found == [expected] * hits, (pattern, code, found)


# Nested: a `SECTION("…") { … }` inside a `TEST_CASE`, each found once, by its own pattern.
def test_sections_inside_a_test_case_are_found_each_once(registry: GrammarRegistry) -> None:
    code = (
        'TEST_CASE("outer", "[t]") {\n  int v = 1;\n'
        '  SECTION("one") {\n    v = 2;\n  }\n  SECTION(name(3)) {\n    v = 3;\n  }\n}\n'
    )
    found = captures(registry, "cpp", "SECTION($S) { $$$B }", code)
    assert found == [{"S": '"one"', "B": "v = 2;"}, {"S": "name(3)", "B": "v = 3;"}]
    outer = captures(registry, "cpp", "TEST_CASE($$$A) { $$$B }", code)
    assert [c["A"] for c in outer] == ['"outer", "[t]"']


# A statement pattern ending in `;` does not find a macro call whose `;` the grammar supplied:
# the code has none (the literal anchors knew it; the kind query matched it).
@pytest.mark.parametrize("place", sorted(MACRO_PLACES))
def test_a_supplied_semicolon_is_no_written_one(registry: GrammarRegistry, place: str) -> None:
    from tether_astgrep.testing import find

    code = MACRO_PLACES[place].format(macro=_macro("FOR_EACH", ["x", "xs"]))
    assert find(registry, "c", "FOR_EACH($$$A);", code) == []
    assert find(registry, "c", "FOR_EACH($$$A)", code) == ["FOR_EACH(x, xs)"]


# A fragment cut short is still refused, in every grammar with a statement terminator: only a
# supplied terminator before more of the fragment makes a reading.
@pytest.mark.parametrize(("lang", "pattern"), [("c", "if ($X"), ("c", "f($X"), ("cpp", "g($X,")])
def test_a_fragment_cut_short_is_still_refused(
    registry: GrammarRegistry, lang: str, pattern: str
) -> None:
    from tether_astgrep.pattern import PatternError, compile_pattern

    grammar = registry.get(lang)
    assert grammar is not None
    with pytest.raises(PatternError):
        compile_pattern(pattern, grammar)

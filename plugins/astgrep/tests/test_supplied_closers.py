"""A conditional directive on its own is a pattern (`#ifdef $X`, `#ifndef $X`, `#if $C`), found
side by side with ast-grep 0.51.1 on jqlang/jq (332 `#ifdef` blocks ast-grep finds; tether
refused the pattern: "'#endif' missing"). The grammar supplies the `#endif` the fragment lacks
(`Grammar.supplied_closers`); the directive then finds every block it opens, whatever the block
holds, and an `#else` or `#elif` branch after it.
"""

from __future__ import annotations

import pytest

from tether_astgrep.grammars import Grammar, GrammarRegistry, all_grammars
from tether_astgrep.testing import captures, find


def _supplies_endif(grammar: Grammar) -> bool:
    """Whether the grammar reads a lone `#if X` with an `#endif` MISSING (the class here)."""
    if grammar.missing() is not None:
        return False
    if grammar.ts_language.id_for_node_kind("#endif", False) is None:
        return False
    stack = [grammar.parser().parse(b"#if X\n").root_node]
    while stack:
        node = stack.pop()
        if node.is_missing and node.type == "#endif":
            return True
        stack.extend(node.children)
    return False


CLOSING = sorted(g.id for g in all_grammars() if _supplies_endif(g))

# Per language: a declaration, a function's opening and closing, a statement.
PARTS = {
    "c": ("int a;", "void f(void) {", "}", "g();"),
    "cpp": ("int a;", "void f() {", "}", "g();"),
    "csharp": ("class A {}", "class K { void f() {", "} }", "g();"),
}

# (pattern, the directive line in the code, the captures expected); forms a language lacks
# (C# has no `#ifdef`) are left out by its grammar's tokens.
DIRECTIVES = {
    "ifdef": ("#ifdef $X", "#ifdef HAVE_X", {"X": "HAVE_X"}),
    "ifndef": ("#ifndef $X", "#ifndef HAVE_X", {"X": "HAVE_X"}),
    "if": ("#if $C", "#if HAVE_X", {"C": "HAVE_X"}),
    "if and": ("#if $A && $B", "#if HAVE_X && HAVE_Y", {"A": "HAVE_X", "B": "HAVE_Y"}),
}

# Where the block stands and what it holds: {D} the directive, {decl} {open} {close} {stmt}.
PLACES = {
    "top level": "{D}\n{decl}\n#endif\n{decl}\n",
    "top level, else branch": "{D}\n{decl}\n#else\n{decl}\n#endif\n",
    "top level, empty": "{D}\n#endif\n",
    # the newline token after the directive runs on over a blank line (`\n\n`): the literal
    # anchors took it for `\n` and missed the block the kind query finds
    "top level, blank line": "{D}\n\n{decl}\n\n#endif\n",
    "in a function, blank line": "{open}\n{D}\n\n  {stmt}\n#endif\n{close}\n",
    "in a function": "{open}\n{D}\n  {stmt}\n#endif\n{close}\n",
    "in a function, elif": "{open}\n{D}\n  {stmt}\n#elif OTHER\n  {stmt}\n#endif\n{close}\n",
    "nested": "{D}\n#if INNER\n{decl}\n#endif\n#endif\n",
}


def _cases() -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for lang in CLOSING:
        grammar = next(g for g in all_grammars() if g.id == lang)
        for form, (pattern, _, _) in DIRECTIVES.items():
            token = pattern.split()[0]
            if grammar.ts_language.id_for_node_kind(token, False) is not None:
                out.extend((lang, form, place) for place in PLACES)
    return sorted(out)


def _code(lang: str, place: str, directive: str) -> str:
    decl, open_, close, stmt = PARTS[lang]
    return PLACES[place].format(D=directive, decl=decl, open=open_, close=close, stmt=stmt)


def _directive_variants(grammar: Grammar) -> list[str]:
    """The grammar's other kinds for a conditional directive in one context (C#'s
    `preproc_if_in_attribute_list`, a `#if` among a member's attributes)."""
    lang = grammar.ts_language
    names = {lang.node_kind_for_id(i) for i in range(lang.node_kind_count)}
    return sorted(
        n
        for n in names
        if n and n.startswith(("preproc_if_", "preproc_ifdef_")) and lang.id_for_node_kind(n, True)
    )


@pytest.mark.parametrize("lang", CLOSING)
def test_every_context_kind_of_a_directive_is_an_alias(lang: str) -> None:
    grammar = next(g for g in all_grammars() if g.id == lang)
    aliased = {a for kinds in grammar.kind_aliases.values() for a in kinds}
    assert set(_directive_variants(grammar)) <= aliased


def test_a_directive_among_attributes_is_found(registry: GrammarRegistry) -> None:
    code = (
        "class K {\n    [Theory]\n#if FEATURE_X\n    [InlineData(1)]\n#endif\n"
        "    public void T(int a) {}\n}\n"
    )
    assert captures(registry, "csharp", "#if $C", code) == [{"C": "FEATURE_X"}]
    assert len(find(registry, "csharp", "#if FEATURE_X", code)) == 1


def test_every_grammar_that_supplies_an_endif_has_cases() -> None:
    assert CLOSING, "no grammar reads a lone `#if X` with its `#endif` missing"
    assert sorted(PARTS) == CLOSING
    for grammar in all_grammars():
        if grammar.id in CLOSING:
            assert "#endif" in grammar.supplied_closers, grammar.id


@pytest.mark.parametrize(("lang", "form", "place"), _cases())
def test_a_lone_conditional_directive_finds_its_blocks(
    registry: GrammarRegistry, lang: str, form: str, place: str
) -> None:
    pattern, directive, expected = DIRECTIVES[form]
    code = _code(lang, place, directive)
    found = find(registry, lang, pattern, code)  # the literal anchors and the kind query agree
    inner = place == "nested" and form == "if"  # `#if $C` also finds the inner `#if INNER`
    assert len(found) == 1 + inner, (pattern, code, found)
    assert found[0].startswith(directive) and found[0].rstrip().endswith("#endif"), found
    assert captures(registry, lang, pattern, code)[0] == expected


@pytest.mark.parametrize("lang", CLOSING)
def test_the_directive_names_what_it_finds(registry: GrammarRegistry, lang: str) -> None:
    decl = PARTS[lang][0]
    code = f"#if A\n{decl}\n#endif\n#if B\n#endif\n#if A\n#endif\n"
    assert len(find(registry, lang, "#if $C", code)) == 3
    assert find(registry, lang, "#if B", code) == ["#if B\n#endif"]
    # the strict reading names every child: a block that holds code is not the bare directive
    assert len(find(registry, lang, "#if $C", code, strictness="cst")) == 2


@pytest.mark.parametrize("lang", CLOSING)
@pytest.mark.parametrize("pattern", ["#if $X\nint a(", "#if ($C", "if ($X"])
def test_a_fragment_cut_short_elsewhere_is_still_refused(
    registry: GrammarRegistry, lang: str, pattern: str
) -> None:
    from tether_astgrep.pattern import PatternError, compile_pattern

    grammar = registry.get(lang)
    assert grammar is not None
    with pytest.raises(PatternError):
        compile_pattern(pattern, grammar)

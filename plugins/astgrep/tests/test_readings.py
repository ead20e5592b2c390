"""Pattern readings are honest in every grammar: a reading keeps every token of the pattern,
keyword guards come from the grammar, `$$$` adds no token, and every refusal says why."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tether_astgrep.grammars import GrammarRegistry, all_grammars
from tether_astgrep.pattern import (
    METAVAR_RE,
    CompiledPattern,
    MetaVar,
    PatternError,
    PItem,
    compile_pattern,
)
from tether_astgrep.testing import captures, find

GRAMMARS = {g.id: g for g in all_grammars() if g.missing() is None}

# Operator and literal patterns an agent writes in any language.
OPERATOR_PATTERNS = (
    "$X != null",
    "$X != true",
    "$A != false",
    "$X == null",
    "$A == $B",
    "$A < $B",
    "$X + 1",
    "-$X",
    "!$X",
    "$A && $B",
    "f($X)",
    "$X.foo",
    "$X = 1",
    "return $X",
)


def _leaves(item: PItem) -> str:
    if isinstance(item, MetaVar) or item.optional:
        return ""  # an optional token is never required of a match
    if item.text is not None:
        return item.text.decode()
    return "".join(_leaves(c) for c in item.children)


def _readings(compiled: CompiledPattern) -> list[CompiledPattern]:
    return [compiled, *(r for a in compiled.also for r in _readings(a))]


def _tokens(text: str) -> str:
    """The pattern's own tokens: no metavariables, whitespace or commas (never significant)."""
    return re.sub(r"[\s,]", "", METAVAR_RE.sub("", text))


@pytest.mark.parametrize("pattern", OPERATOR_PATTERNS)
@pytest.mark.parametrize("language", sorted(GRAMMARS))
def test_a_reading_keeps_every_token_of_the_pattern(language: str, pattern: str) -> None:
    # Kotlin read `$X != null` as `val X: T` and dropped `!= null` without an error node: a
    # reading of "any node" that matched 129,170 nodes. Refusing is fine; losing tokens is not.
    try:
        compiled = compile_pattern(pattern, GRAMMARS[language])
    except PatternError as exc:
        assert "in any context" not in str(exc)
        return
    for reading in _readings(compiled):
        # (a placeholder glued into a bigger token, bash's word `-$X`, is that token's text)
        kept = re.sub(r"__tmvs?_\w*", "", "".join(_leaves(i) for i in reading.items))
        kept = re.sub(r"[\s,]", "", kept)
        # `;` is the terminator a statement rung adds (`return $X` reads as `return X;`)
        assert kept in (_tokens(pattern), _tokens(pattern) + ";"), reading.interpretation
        assert not isinstance(reading.root, MetaVar) or len(reading.items) > 1


def test_kotlin_not_null_finds_the_comparisons_not_every_node(registry: GrammarRegistry) -> None:
    code = """
    class A(val b: String?) {
        fun f(x: Int?): Int {
            if (x != null) return x
            if (b == null) return 0
            return 1
        }
    }
    """
    assert find(registry, "kotlin", "$X != null", code) == ["x != null"]
    assert find(registry, "kotlin", "$X == null", code) == ["b == null"]
    assert find(registry, "kotlin", "if ($X == null) return $Y", code) == [
        "if (b == null) return 0"
    ]


@pytest.mark.parametrize("cast", ["static_cast", "reinterpret_cast", "const_cast", "dynamic_cast"])
def test_cpp_casts_are_names_to_the_grammar(registry: GrammarRegistry, cast: str) -> None:
    code = f"void f(long p) {{ int a = {cast}<int>(p); g({cast}<char *>(&a)); }}\n"
    assert captures(registry, "cpp", f"{cast}<$T>($X)", code) == [
        {"T": "int", "X": "p"},
        {"T": "char *", "X": "&a"},
    ]


# Words that some language reserves and that the hand lists reserved everywhere they were listed.
WORD_PATTERNS = ("$X == null", "$X = nil", "static_cast<$T>($X)", "typeid($X)", "$X == true")


@pytest.mark.parametrize("pattern", WORD_PATTERNS)
@pytest.mark.parametrize("language", sorted(GRAMMARS))
def test_a_word_is_a_keyword_only_where_the_grammar_has_it(language: str, pattern: str) -> None:
    grammar = GRAMMARS[language]
    try:
        compile_pattern(pattern, grammar)
    except PatternError as exc:
        message = str(exc)
        # The refusal names the true reason at every rung it tried.
        assert "in any context" not in message
        for scaffold in grammar.scaffolds:
            assert f" {scaffold.rung}" in message, message
        for word in re.findall(r"reads the keyword '(\w+)' as a name", message):
            assert word in grammar.reserved_words, message


def test_a_hard_keyword_read_as_a_name_is_refused_saying_so(registry: GrammarRegistry) -> None:
    js = registry.get("javascript")
    assert js is not None
    with pytest.raises(PatternError, match="reads the keyword 'switch' as a name"):
        compile_pattern("switch ($X) { $$$C }", js, rungs=["class member"])


@pytest.mark.parametrize("language", sorted(GRAMMARS))
def test_the_reserved_words_come_from_the_grammar(language: str) -> None:
    grammar = GRAMMARS[language]
    kinds = set(grammar.kind_names)
    for word in grammar.reserved_words:
        assert kinds & {word, f"{word}_keyword", f"_{word}_keyword", f"{word}_builtin"}, word
    assert grammar.soft_keywords <= grammar.reserved_words


@pytest.mark.parametrize(
    ("language", "word", "pattern"),
    [
        ("python", "match", "match($X)"),
        ("python", "print", "print($X)"),
        ("kotlin", "value", "$X.value"),
        ("typescript", "type", "type($X)"),
    ],
)
def test_a_soft_keyword_is_a_name_when_nothing_reads_it_as_a_keyword(
    registry: GrammarRegistry, language: str, word: str, pattern: str
) -> None:
    grammar = registry.get(language)
    assert grammar is not None and word in grammar.soft_keywords
    code = {"python": "{}(a)\n", "kotlin": "val v = a.{}\n", "typescript": "{}(a);\n"}[language]
    assert find(registry, language, pattern, code.format(word))


# `$$$` at the start, in the middle and at the end of calls, blocks and declarations.
MULTI_PATTERNS = (
    "f($$$A)",
    "f($$$A, $X)",
    "f($X, $$$A)",
    "f($X, $$$A, $Y)",
    "$$$A",
    "return $$$A",
    "template<typename $T> $$$D",
    "class $C { $$$B }",
    "if ($C) { $$$B }",
    "$X = $$$V",
    "[$$$A]",
    "$F($$$A).$M($$$B)",
)


@pytest.mark.parametrize("pattern", MULTI_PATTERNS)
@pytest.mark.parametrize("language", sorted(GRAMMARS))
def test_a_multi_placeholder_adds_no_token(language: str, pattern: str) -> None:
    # C++ `template<typename $T> $$$D` was read as `… D;` and found only the templates
    # ending in `;` (51 of 197).
    try:
        compiled = compile_pattern(pattern, GRAMMARS[language])
    except PatternError:
        return
    for reading in _readings(compiled):
        kept = re.sub(r"__tmvs?_\w*", "", "".join(_leaves(i) for i in reading.items))
        kept = re.sub(r"[\s,]", "", kept)
        if pattern.endswith(("$$$A", "$$$D", "$$$V")):
            assert kept == _tokens(pattern), reading.interpretation
        else:
            assert kept in (_tokens(pattern), _tokens(pattern) + ";"), reading.interpretation


def test_cpp_template_with_any_declaration(registry: GrammarRegistry) -> None:
    code = """
    template<typename T> T id(T x) { return x; }
    template<typename T> class A { T a; };
    template<typename T> using V = A<T>;
    template<typename K> struct B;
    """
    found = find(registry, "cpp", "template<typename $T> $$$D", code)
    assert [f.split(">", 1)[1].strip()[:10] for f in found] == [
        "T id(T x) ",
        "class A { ",
        "using V = ",
        "struct B;",
    ]


RETURN_CODE = {
    "c": "int f(int x) { return x + 1; }",
    "cpp": "int f(int x) { return x + 1; }",
    "csharp": "class A { int F(int x) { return x + 1; } }",
    "dart": "int f(int x) { return x + 1; }",
    "java": "class A { int f(int x) { return x + 1; } }",
    "javascript": "function f(x) { return x + 1; }",
    "php": "<?php function f($x) { return $x + 1; }",
    "rust": "fn f(x: i32) -> i32 { return x + 1; }",
    "typescript": "function f(x: number) { return x + 1; }",
}


@pytest.mark.parametrize("language", sorted(RETURN_CODE))
def test_a_run_at_the_end_matches_with_or_without_the_terminator(
    registry: GrammarRegistry, language: str
) -> None:
    code = RETURN_CODE[language]
    run = [c["A"] for c in captures(registry, language, "return $$$A", code)]
    assert run == [code.split("return ")[1].split(";")[0]]


# (pattern, code, the whole value): a chain of calls and selectors where one `$V` stands.
WHOLE_VALUE = {
    "c": ("$N = $V;", "void t(void) { x = a.b(c).d; }", "a.b(c).d"),
    "cpp": ("$N = $V;", "void t() { x = a.b(c).d; }", "a.b(c).d"),
    "csharp": ("$N = $V;", "class A { void T() { x = a.B(c).D; } }", "a.B(c).D"),
    "dart": ("final $N = $V;", "void t() { final x = int.parse(a).abs(); }", "int.parse(a).abs()"),
    "elixir": ("$N = $V", "x = A.b(c).d", "A.b(c).d"),
    "go": ("$N = $V", "package a\nfunc t() { x = a.B(c).D }", "a.B(c).D"),
    "java": ("$N = $V;", "class A { void t() { x = a.b(c).d; } }", "a.b(c).d"),
    "javascript": ("$N = $V", "x = a.b(c).d;", "a.b(c).d"),
    "kotlin": ("val $N = $V", "fun t() { val x = a.b(c).d }", "a.b(c).d"),
    "lua": ("$N = $V", "x = a.b(c).d", "a.b(c).d"),
    "php": ("$N = $V;", "<?php\n$x = $a->b($c)->d;", "$a->b($c)->d"),
    "python": ("$N = $V", "x = a.b(c).d\n", "a.b(c).d"),
    "ruby": ("$N = $V", "x = a.b(c).d\n", "a.b(c).d"),
    "rust": ("let $N = $V;", "fn t() { let x = a.b(c).d; }", "a.b(c).d"),
    "scala": ("val $N = $V", "object A { val x = a.b(c).d }", "a.b(c).d"),
    "swift": ("let $N = $V", "let x = a.b(c).d", "a.b(c).d"),
    "tsx": ("$N = $V", "x = a.b(c).d;", "a.b(c).d"),
    "typescript": ("$N = $V", "x = a.b(c).d;", "a.b(c).d"),
}


@pytest.mark.parametrize("language", sorted(WHOLE_VALUE))
def test_a_metavariable_captures_a_whole_expression(
    registry: GrammarRegistry, language: str
) -> None:
    # Dart lays `int.parse(a)` out as siblings (`int`, `.parse`, `(a)`): `$V` took only `int`,
    # and a rewrite using it would have dropped the rest.
    pattern, code, value = WHOLE_VALUE[language]
    assert [c["V"] for c in captures(registry, language, pattern, code)] == [value]


def test_dart_a_cascade_is_part_of_the_value(registry: GrammarRegistry) -> None:
    code = "void t() { final r = CommandRunner('a', 'b')..addCommand(X()); a.b.dispose(); }"
    assert captures(registry, "dart", "final $N = $V;", code) == [
        {"N": "r", "V": "CommandRunner('a', 'b')..addCommand(X())"}
    ]
    # Shorter where the pattern goes on: the selectors it names are not in the capture.
    assert captures(registry, "dart", "$X.dispose()", code) == [{"X": "a.b"}]


@pytest.mark.parametrize(
    ("language", "pattern", "code", "found"),
    [
        ("kotlin", "val $X = 1;", "fun t() { val a = 1; val b = 2 }", ["val a = 1"]),
        ("kotlin", "a(); b()", "fun t() { a(); b() }", ["a(); b()"]),
        ("swift", "a(); b()", "func t() { a(); b() }", ["a(); b()"]),
    ],
)
def test_a_hidden_separator_is_no_lost_token(
    registry: GrammarRegistry, language: str, pattern: str, code: str, found: list[str]
) -> None:
    # Kotlin and Swift read `;` as a token with no visible node: it is a separator, not code
    # the reading lost.
    assert find(registry, language, pattern, code) == found


KOTLIN_OBJECTS = """
object A {
    val x = 1
    fun f() = 2
}
class B {
    companion object {
        const val Y = 3
    }
}
"""


@pytest.mark.parametrize(
    ("language", "pattern", "code", "expected"),
    [
        (
            "kotlin",
            "object $O { $$$B }",
            KOTLIN_OBJECTS,
            [{"O": "A", "B": "val x = 1\nfun f() = 2"}],
        ),
        ("kotlin", "companion object { $$$B }", KOTLIN_OBJECTS, [{"B": "const val Y = 3"}]),
        (
            "bash",
            "case $X in $$$C esac",
            'case "$1" in\n  a) echo a ;;\n  b|c) echo b ;;\nesac\n',
            [{"X": '"$1"', "C": "a) echo a ;;\nb|c) echo b ;;"}],
        ),
        (
            "swift",
            "defer { $$$B }",
            "func f() {\n  defer { close(); x = 1 }\n}\n",
            [{"B": "close(); x = 1"}],
        ),
    ],
)
def test_natural_patterns_are_read(
    registry: GrammarRegistry, language: str, pattern: str, code: str, expected: list[Any]
) -> None:
    got = captures(registry, language, pattern, code)
    assert [{k: re.sub(r"\n +", "\n", v) for k, v in c.items()} for c in got] == expected


@pytest.mark.parametrize(
    ("pattern", "code", "found"),
    [
        ('"name": $V', '"name": 1\n"other": 2\n', ['"name": 1']),
        ("'name': $V", "'name': 1\n'other': 2\n", ["'name': 1"]),
        ('- "a"', '- "a"\n- "b"\n', ['- "a"']),
    ],
)
def test_a_quoted_literal_is_compared_whole(
    registry: GrammarRegistry, pattern: str, code: str, found: list[str]
) -> None:
    # tree-sitter-yaml's `"name"` is two quote tokens and no child for the text: the reading
    # kept only the quotes and matched every quoted key.
    assert find(registry, "yaml", pattern, code) == found

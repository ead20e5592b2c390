"""Conditional directives where a grammar does not accept them (issue 36): a `#if` in an enum,
a parameter list, between a declaration's head and its body, in a class body; and a condition
the grammar cannot read (`__has_include(<string_view>)`). The region is re-read with the
directive lines left out (the code around is read), and the directive lines are read as an
island (the directive is found with its condition, as ast-grep finds it).

Generated over C, C++ and C# × directive kinds × places × with or without an `#else` branch;
a variant counts only where the plain parse (tree-sitter-c 0.24, -cpp 0.23.4, -c-sharp) has
an error (checked here), so the tests keep testing the recovery."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from recovery_helpers import plain_parse_fails, search, usable

from tether_astgrep.engine import FileResult, ProcessState
from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.matcher import Matcher
from tether_astgrep.pattern import compile_pattern


@pytest.fixture(scope="module")
def state(registry: GrammarRegistry) -> ProcessState:
    return ProcessState(registry, 1 << 24)


KINDS = {
    "c": ("if", "ifdef", "ifndef"),
    "cpp": ("if", "ifdef", "ifndef"),
    "csharp": ("if",),
}
PATTERNS = {"if": ("#if $C", "C"), "ifdef": ("#ifdef $X", "X"), "ifndef": ("#ifndef $X", "X")}
PLACES = ("enum body", "parameter list", "between head and body", "class body")

# Each place: the code before the directive, the governed lines, the `#else` lines, and the
# code after `#endif`. {t}: the language's type of `x`.
_C_LIKE = {
    "enum body": ("enum e {\n", "  A = 1,\n  B = 2\n", "  A = 3,\n  B = 4\n", "};\n"),
    "parameter list": ("int f(int a,\n", "  int b,\n", "  long b,\n", "  int c)\n{\n  g(a);\n}\n"),
    "between head and body": ("int f(int a)\n", "{\n  g(a);\n}\n", "  ;\n", ""),
    "class body": ("struct s {\n  int a;\n", "  int b;\n", "  long b;\n", "};\n"),
}
_CSHARP = {
    "enum body": ("enum E {\n", "  A = 1,\n  B = 2\n", "  A = 3,\n  B = 4\n", "}\n"),
    "parameter list": (
        "void F(int a,\n",
        "  ReadOnlySpan<char> b,\n",
        "  string b,\n",
        "  int c)\n{\n  G(a);\n}\n",
    ),
    "between head and body": ("int F(int a)\n", "{\n  G(a);\n}\n", "  ;\n", ""),
    "class body": ("class B : IA\n", "  , IB\n", "  , IC\n", "{\n  int b;\n}\n"),
}


def _program(language: str, kind: str, place: str, alternative: bool) -> tuple[str, int]:
    """A file with the directive at `place`, and the 1-based line the directive is on."""
    before, governed, other, after = (_CSHARP if language == "csharp" else _C_LIKE)[place]
    directive = f"#{kind} FEATURE_X\n"
    block = directive + governed + (f"#else\n{other}" if alternative else "") + "#endif\n"
    tail = "int g(int x) {\n  return 7;\n}\n"
    if language == "csharp":
        head = "class A\n{\n"
        code = head + before + block + after + tail + "}\n"
    else:
        head = ""
        code = before + block + after + tail
    return code, (head + before).count("\n") + 1


CASES = [
    (language, kind, place, alternative)
    for language, kinds in KINDS.items()
    for kind, place, alternative in itertools.product(kinds, PLACES, (False, True))
]


def test_the_directive_cases_are_errors_for_the_grammars(registry: GrammarRegistry) -> None:
    """Most generated variants fail in the plain parse, in each language."""
    for language in KINDS:
        usable(registry, language)
        failing = [
            c
            for c in CASES
            if c[0] == language and plain_parse_fails(registry, language, _program(*c)[0])
        ]
        assert len(failing) >= 3, (language, failing)


def _captures(result: FileResult) -> list[tuple[int, dict[str, Any]]]:
    return [(m[0], m[5]) for m in result.matches]


@pytest.mark.parametrize(("language", "kind", "place", "alternative"), CASES)
def test_a_misplaced_directive_is_found_and_the_code_around_it_read(
    state: ProcessState,
    registry: GrammarRegistry,
    tmp_path: Path,
    language: str,
    kind: str,
    place: str,
    alternative: bool,
) -> None:
    usable(registry, language)
    code, line = _program(language, kind, place, alternative)
    if not plain_parse_fails(registry, language, code):
        pytest.skip("the grammar reads this one")
    pattern, name = PATTERNS[kind]
    found = search(state, tmp_path, language, pattern, code)
    # found where it stands, its condition read from the file (ast-grep: the same start)
    assert _captures(found) == [(line, {name: "FEATURE_X"})], (code, found)
    # the code after the directive is read (C#: the plain parse leaves the class in an ERROR)
    returns = search(state, tmp_path, language, "return $X;", code)
    assert [c["X"] for _, c in _captures(returns)] == ["7"], (code, returns)


@pytest.mark.parametrize(("language", "kind", "place", "alternative"), CASES)
def test_a_directive_read_as_an_island_shows_no_code_it_did_not_read(
    state: ProcessState,
    registry: GrammarRegistry,
    tmp_path: Path,
    language: str,
    kind: str,
    place: str,
    alternative: bool,
) -> None:
    """The island read the directive lines alone: a match found there is shown as its own
    line(s), and a pattern that says what the directive governs is not searched there (the
    island would read it as governing nothing)."""
    usable(registry, language)
    code, _ = _program(language, kind, place, alternative)
    if not plain_parse_fails(registry, language, code):
        pytest.skip("the grammar reads this one")
    pattern, _ = PATTERNS[kind]
    found = search(state, tmp_path, language, pattern, code)
    for m in found.matches:
        shown = m[4]
        # either the whole group, read by a tree that read its body, or its line alone
        assert shown.endswith("#endif") or shown.rstrip() == f"#{kind} FEATURE_X", (code, m)
    # a group governing nothing: none in the file, so none but the plain parse's own answer
    # (C#'s reads a `#if` in an ERROR node as a group of its line alone, as before)
    empty = search(state, tmp_path, language, pattern + "\n#endif", code)
    grammar = registry.get(language)
    assert grammar is not None
    plain = Matcher(compile_pattern(pattern + "\n#endif", grammar), grammar).find(
        grammar.parser().parse(code.encode()), code.encode()
    )
    assert [m[0] for m in empty.matches] == [m.start_point[0] + 1 for m in plain], (code, empty)


HEADERS = ("string_view", "filesystem", "sys/stat.h", "optional")


@pytest.mark.parametrize(("language", "header"), list(itertools.product(("c", "cpp"), HEADERS)))
def test_an_angled_header_name_in_a_condition_is_read(
    state: ProcessState, registry: GrammarRegistry, tmp_path: Path, language: str, header: str
) -> None:
    """`__has_include(<string_view>)`: tree-sitter-c and -cpp read no header name as an
    argument; the re-read spells it as a name of its length, the match shows it as written."""
    usable(registry, language)
    code = (
        "#if defined(__has_include)\n"
        f"#if __has_include(<{header}>)\n"
        f"#include <{header}>\n"
        "#define HAVE 1\n"
        "#endif\n"
        "#endif\n"
        "int g(int x) {\n  return 7;\n}\n"
    )
    assert plain_parse_fails(registry, language, code)
    found = search(state, tmp_path, language, "#if $C", code)
    assert _captures(found) == [
        (1, {"C": "defined(__has_include)"}),
        (2, {"C": f"__has_include(<{header}>)"}),
    ], found
    returns = search(state, tmp_path, language, "return $X;", code)
    assert [c["X"] for _, c in _captures(returns)] == ["7"]


@pytest.mark.parametrize("language", sorted(KINDS))
def test_a_file_the_grammar_reads_is_searched_as_before(
    state: ProcessState, registry: GrammarRegistry, tmp_path: Path, language: str
) -> None:
    """No error, no re-read: the directive is the whole group, as in a plain parse."""
    usable(registry, language)
    code = "#if FEATURE_X\nint g(int x) {\n  return 7;\n}\n#endif\n"
    if language == "csharp":
        code = "class A\n{\n" + code + "}\n"
    assert not plain_parse_fails(registry, language, code)
    found = search(state, tmp_path, language, "#if $C", code)
    assert [m[4].splitlines()[-1] for m in found.matches] == ["#endif"]
    assert found.reread_lines == 0

"""Regions a grammar cannot parse are read again (issue 36, grammar error regions): a keyword
the language also allows as a name is read as one (Kotlin's `final = true`, `by.write(x)`,
`get(copy)`), a short run of code the grammar cannot place is left out (a primary constructor
on the line after its class, an annotated getter, `$$"…"` strings, C++'s `FMT_BEGIN_NAMESPACE`
on a line of its own), and no match that holds or borders code left out is reported.

Each construct class is generated over its variants; a variant counts only where the plain
parse of tree-sitter-kotlin 1.1.0 / tree-sitter-cpp 0.23.4 has an error (checked here), so the
tests keep testing the recovery, not a grammar that got better."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from recovery_helpers import plain_parse_fails, search, usable

from tether_astgrep.engine import FileResult, ProcessState
from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.recovery import recover


@pytest.fixture(scope="module")
def state(registry: GrammarRegistry) -> ProcessState:
    return ProcessState(registry, 1 << 24)


def texts(result: FileResult) -> list[str]:
    return [m[4] for m in result.matches]


def caps(result: FileResult) -> list[dict[str, Any]]:
    return [m[5] for m in result.matches]


# -- Kotlin: a soft or modifier keyword used as a name -----------------------------------------

NAME_WORDS = ("final", "by", "get", "open", "value", "data", "inner", "override", "field")
NAME_STATEMENTS = ("{w} = true", "{w}.write(x)", "{w} += 1", "{w}(copy)", "x = !{w}")


def _name_program(word: str, statement: str) -> str:
    stmt = statement.format(w=word)
    return (
        "class C {\n"
        f"  private var {word} = false\n\n"
        "  fun g(): Int {\n"
        "    if (ready) {\n"
        f"      {stmt}\n"
        "    }\n"
        "    return done\n"
        "  }\n"
        "}\n"
    )


NAME_CASES = [
    (w, s)
    for w, s in itertools.product(NAME_WORDS, NAME_STATEMENTS)
    if not (s == "{w}(copy)" and w in ("final", "open", "data", "inner", "override", "value"))
]


def test_the_name_cases_are_errors_for_the_grammar(registry: GrammarRegistry) -> None:
    """The generated cases still exercise the recovery: most fail in the plain parse."""
    usable(registry, "kotlin")
    failing = [c for c in NAME_CASES if plain_parse_fails(registry, "kotlin", _name_program(*c))]
    assert len(failing) >= 8, failing


@pytest.mark.parametrize(("word", "statement"), NAME_CASES)
def test_a_keyword_used_as_a_name_is_read_as_one(
    state: ProcessState, registry: GrammarRegistry, tmp_path: Path, word: str, statement: str
) -> None:
    usable(registry, "kotlin")
    code = _name_program(word, statement)
    if not plain_parse_fails(registry, "kotlin", code):
        pytest.skip("tree-sitter-kotlin reads this one")
    stmt = statement.format(w=word)
    found = search(state, tmp_path, "kotlin", "if ($C) { $$$B }", code)
    assert caps(found) == [{"C": "ready", "B": stmt}], (code, found)
    assert caps(search(state, tmp_path, "kotlin", "return $X", code)) == [{"X": "done"}]
    fun = search(state, tmp_path, "kotlin", "fun $F(): $T { $$$B }", code)
    assert [c["F"] for c in caps(fun)] == ["g"]
    assert found.unsearchable_lines == 0


@pytest.mark.parametrize("word", ["final", "by", "open", "override", "inline"])
def test_a_respelled_word_never_equals_another_name(
    state: ProcessState, registry: GrammarRegistry, tmp_path: Path, word: str
) -> None:
    """The parse reads the word as another name of its length, one no token of the file
    spells: a capture compared with another (`$A.write($A)`) never equals a name spelled like
    a replacement the recovery could have chosen."""
    usable(registry, "kotlin")
    fills = [c + d * (len(word) - 1) for c in "qzjxkvwy" for d in "qzjxkvwy"][:3]
    lines = "\n".join(f"      {word}.write({fill})" for fill in fills)
    code = (
        "class C {\n"
        f"  private var {word} = false\n\n"
        "  fun g() {\n"
        "    if (ready) {\n"
        f"{lines}\n"
        "      other.write(other)\n"
        "    }\n"
        "  }\n"
        "}\n"
    )
    assert plain_parse_fails(registry, "kotlin", code)
    found = search(state, tmp_path, "kotlin", "$A.write($A)", code)
    assert texts(found) == ["other.write(other)"], found
    assert found.reread_lines > 0


# -- Kotlin: a primary constructor on the line after its class ---------------------------------

CONSTRUCTOR_MODIFIERS = ("internal", "private", "actual", "internal actual", "public", "protected")


def _constructor_program(modifiers: str, nested: bool) -> str:
    body = (
        "class A\n"
        f"{modifiers} constructor(\n"
        "  internal val d: Int,\n"
        ") : Base() {\n"
        "  fun f(): Int {\n"
        "    return d\n"
        "  }\n"
        "}\n"
    )
    if nested:
        body = "class O {\n" + "".join(f"  {line}\n" for line in body.splitlines()) + "}\n"
    return body


CONSTRUCTOR_CASES = list(itertools.product(CONSTRUCTOR_MODIFIERS, (False, True)))


@pytest.mark.parametrize(("modifiers", "nested"), CONSTRUCTOR_CASES)
def test_a_constructor_on_the_next_line_is_left_out_not_its_class(
    state: ProcessState, registry: GrammarRegistry, tmp_path: Path, modifiers: str, nested: bool
) -> None:
    usable(registry, "kotlin")
    code = _constructor_program(modifiers, nested)
    if not plain_parse_fails(registry, "kotlin", code):
        pytest.skip("tree-sitter-kotlin reads this one")
    found = search(state, tmp_path, "kotlin", "fun $F(): $T { $$$B }", code)
    assert caps(found) == [{"F": "f", "T": "Int", "B": "return d"}], (code, found)
    assert found.reread_lines > 0
    # The class's own match would read it without the constructor left out: never reported.
    assert search(state, tmp_path, "kotlin", "class A : Base() { $$$B }", code).count == 0
    assert search(state, tmp_path, "kotlin", "class A { $$$B }", code).count == 0


def test_the_constructor_cases_are_errors_for_the_grammar(registry: GrammarRegistry) -> None:
    usable(registry, "kotlin")
    failing = [
        c
        for c in CONSTRUCTOR_CASES
        if plain_parse_fails(registry, "kotlin", _constructor_program(*c))
    ]
    assert len(failing) >= 6, failing


# -- Kotlin: an annotated getter, a multi-dollar string ----------------------------------------

ANNOTATIONS = ('@JvmName("size")', "@Synchronized", '@Suppress("x")')


@pytest.mark.parametrize("annotation", ANNOTATIONS)
def test_an_annotated_getter_on_its_own_line(
    state: ProcessState, registry: GrammarRegistry, tmp_path: Path, annotation: str
) -> None:
    usable(registry, "kotlin")
    code = (
        "class A {\n"
        "  val size: Int\n"
        f"    {annotation}\n"
        "    get() = count()\n\n"
        "  fun f(): Int {\n"
        "    return size\n"
        "  }\n"
        "}\n"
    )
    if not plain_parse_fails(registry, "kotlin", code):
        pytest.skip("tree-sitter-kotlin reads this one")
    found = search(state, tmp_path, "kotlin", "fun $F(): $T { $$$B }", code)
    assert caps(found) == [{"F": "f", "T": "Int", "B": "return size"}], found
    # the property with the annotation left out is not reported
    assert search(state, tmp_path, "kotlin", "val $X: $T", code).count == 0


@pytest.mark.parametrize("text", ['$$"{\\"$foo\\": 1}"', '$$"$a $$b"', '$$$"$$x"'])
def test_a_multi_dollar_string_is_left_out_with_its_statement(
    state: ProcessState, registry: GrammarRegistry, tmp_path: Path, text: str
) -> None:
    usable(registry, "kotlin")
    code = f"fun g() {{\n  val json = {text}\n\n  val other = parse(json)\n  return other\n}}\n"
    if not plain_parse_fails(registry, "kotlin", code):
        pytest.skip("tree-sitter-kotlin reads this one")
    found = search(state, tmp_path, "kotlin", "val $X = $Y", code)
    assert caps(found) == [{"X": "other", "Y": "parse(json)"}], found
    assert caps(search(state, tmp_path, "kotlin", "return $X", code)) == [{"X": "other"}]


# -- C++: an unknown macro on a line of its own ------------------------------------------------

MACROS = (("FMT_BEGIN_NAMESPACE", "FMT_END_NAMESPACE"), ("SPDLOG_BEGIN", "SPDLOG_END"))


def _macro_program(begin: str, end: str, gap: str) -> str:
    return (
        f"{begin}\n\n"
        "template <typename T> struct is_x : std::true_type {};\n\n"
        "namespace detail {\n"
        "int f() { return 1; }\n"
        "}  // namespace detail\n"
        f"{gap}"
        "namespace other {\n"
        "int g() { return 2; }\n"
        "}\n\n"
        f"{end}\n"
    )


@pytest.mark.parametrize(("begin", "end"), MACROS)
def test_a_macro_line_is_left_out_and_what_follows_read(
    state: ProcessState, registry: GrammarRegistry, tmp_path: Path, begin: str, end: str
) -> None:
    usable(registry, "cpp")
    code = _macro_program(begin, end, "\n")
    assert plain_parse_fails(registry, "cpp", code)
    found = search(state, tmp_path, "cpp", "namespace $N { $$$B }", code)
    assert [c["N"] for c in caps(found)] == ["detail", "other"], (code, found)
    returns = search(state, tmp_path, "cpp", "return $X;", code)
    assert [c["X"] for c in caps(returns)] == ["1", "2"]


@pytest.mark.parametrize(("begin", "end"), MACROS)
def test_code_right_beside_a_left_out_macro_is_not_reported(
    state: ProcessState, registry: GrammarRegistry, tmp_path: Path, begin: str, end: str
) -> None:
    """`FMT_EXPORT` then `class X` on the next line may be one declaration: with no empty line
    between, a match that starts or ends right beside code left out is not reported."""
    usable(registry, "cpp")
    code = f"{begin}\nnamespace detail {{\nint f() {{ return 1; }}\n}}\n{end}\n"
    assert plain_parse_fails(registry, "cpp", code)
    found = search(state, tmp_path, "cpp", "namespace $N { $$$B }", code)
    assert found.count == 0, found
    assert [c["X"] for c in caps(search(state, tmp_path, "cpp", "return $X;", code))] == ["1"]


PREFIXES = ("MY", "FMT", "SPDLOG")


def _header_program(prefix: str) -> str:
    """A header in the shape of fmt's `format.h`: a `#if` on an `<include>` the grammar cannot
    read, a namespace macro on its own line, attribute macros before declarations."""
    return (
        f"#ifndef {prefix}_H_\n"
        f"#define {prefix}_H_\n"
        f"#if {prefix}_HAS_INCLUDE(<string_view>) && \\\n"
        f"    ({prefix}_CPLUSPLUS >= 201703L)\n"
        f"#  define {prefix}_USE_STRING_VIEW\n"
        "#endif\n\n"
        f"{prefix}_BEGIN_NAMESPACE\n\n"
        "namespace detail {\n"
        f"{prefix}_CONSTEXPR inline void assume(bool condition) {{\n"
        "  (void)condition;\n"
        "}\n"
        f"{prefix}_CONSTEXPR20 inline auto count(int n) -> int {{\n"
        "  return n;\n"
        "}\n"
        "}  // namespace detail\n\n"
        f"{prefix}_END_NAMESPACE\n"
        f"#endif  // {prefix}_H_\n"
    )


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_namespace_among_attribute_macros_is_read_with_its_whole_body(
    state: ProcessState, registry: GrammarRegistry, tmp_path: Path, prefix: str
) -> None:
    usable(registry, "cpp")
    code = _header_program(prefix)
    assert plain_parse_fails(registry, "cpp", code)
    found = search(state, tmp_path, "cpp", "namespace $N { $$$B }", code)
    assert [c["N"] for c in caps(found)] == ["detail"], found
    body = caps(found)[0]["B"]
    assert body.startswith(f"{prefix}_CONSTEXPR inline void assume") and body.endswith("}")
    returns = search(state, tmp_path, "cpp", "return $X;", code)
    assert [c["X"] for c in caps(returns)] == ["n"]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_class_with_an_export_macro_holds_declarations_not_calls(
    state: ProcessState, registry: GrammarRegistry, tmp_path: Path, prefix: str
) -> None:
    """`class GTEST_API_ AssertHelper {` reads as a function whose body holds calls: with
    the macro left out, a constructor's declaration is no call statement."""
    usable(registry, "cpp")
    code = (
        f"{prefix}_BEGIN_NAMESPACE\n\n"
        f"class {prefix}_API Helper {{\n"
        " public:\n"
        "  Helper(int type,\n"
        "         const char* file);\n"
        "  void f();\n"
        "};\n\n"
        f"{prefix}_CONSTEXPR inline void g(int x) {{\n"
        "  h(x);\n"
        "}\n\n"
        f"{prefix}_END_NAMESPACE\n"
    )
    assert plain_parse_fails(registry, "cpp", code)
    found = search(state, tmp_path, "cpp", "$F($$$A);", code)
    assert texts(found) == ["h(x);"], found
    # a single metavariable is one node: never widened over the macro left out beside it
    classes = search(state, tmp_path, "cpp", "class $C { $$$B };", code)
    assert all(" " not in c["C"] for c in caps(classes)), classes


# -- the mechanism, on every grammar --------------------------------------------------------------

GARBAGE = ")))}}}]]] @@@ ((( ;"


def test_a_recovery_never_moves_a_byte_and_says_what_it_left_out(
    registry: GrammarRegistry,
) -> None:
    """On every installed grammar, a file with a line of garbage between two copies of a
    scaffold's code: if the garbage is left out, each blanked run is spaces in the re-read
    parse and the same bytes everywhere else, and its lines are counted as unread."""
    checked = 0
    for grammar in registry:
        if grammar.missing() is not None:
            continue
        scaffold = grammar.scaffolds[0]
        piece = f"{scaffold.prefix}{scaffold.indent}x{scaffold.terminators[0]}{scaffold.suffix}"
        source = f"{piece}\n\n{GARBAGE}\n\n{piece}\n".encode()
        parser = grammar.parser()
        tree = parser.parse(source)
        got = recover(parser, source, tree, grammar, 1.0)
        if got is None:
            continue
        checked += 1
        reread = got.text
        assert len(reread) == len(source), grammar.id
        assert (
            got.tree.root_node.text
            == reread[got.tree.root_node.start_byte : got.tree.root_node.end_byte]
        )
        for a, b in got.blanked:
            assert reread[a:b].strip() == b"", grammar.id
            assert reread[a:b].count(b"\n") == source[a:b].count(b"\n"), grammar.id
        left = bytearray(reread)
        for a, b in got.respelled:
            left[a:b] = source[a:b]
        for a, b in got.blanked:
            left[a:b] = source[a:b]
        assert bytes(left) == source, grammar.id
        assert got.unread_after < got.unread_before, grammar.id
        assert got.unread_after >= 1, grammar.id  # the garbage line itself
    assert checked >= 3


@pytest.mark.anyio
async def test_the_search_says_it_re_read_a_region(astgrep_run: Any) -> None:
    code = _name_program("final", "{w} = true")
    async with astgrep_run({"a.kt": code}) as run:
        grammar = await run.call("ast_grep", {"pattern": "if ($C) { $$$B }"})
        assert not grammar.is_error, grammar.text_content
        assert grammar.meta["total"] == 1, grammar.text_content
        reread = grammar.meta["unsearchable"]["reread"]
        assert reread["files"] == 1 and reread["lines"] >= 1, grammar.meta
        assert "searched by reading a keyword as a name" in grammar.text_content

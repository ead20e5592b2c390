"""Bugs that misled an agent on real code (issue 14), each pinned by a test that failed before.

The shapes come from real repositories (pallets/click, colinhacks/zod, expressjs/express,
BurntSushi/ripgrep, Go and C projects); the code here is written for the tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tether_astgrep.engine import ProcessState, has_word
from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.pattern import PatternError, compile_pattern
from tether_astgrep.testing import captures, find


async def edit(
    astgrep_run: Any, workdir: Path, name: str, source: str, args: dict[str, Any]
) -> tuple[str, Any]:
    """Stage and accept one rewrite of one file; the new content and the staging result."""
    async with astgrep_run({name: source}) as run:
        staged = await run.call("ast_edit", {"path": name, **args})
        assert not staged.is_error, staged.text_content
        done = await run.call("resolve", {"edit_id": staged.meta["edit_id"], "action": "accept"})
        assert not done.is_error, done.text_content
        return (workdir / name).read_text(), staged


# -- 1. multi-line captures keep their shape where they land ---------------------------------

PY_WITH = """\
import warnings


def t():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        if x:
            run()
    done()
"""


@pytest.mark.anyio
async def test_unwrapping_a_python_block_keeps_valid_indentation(
    astgrep_run: Any, tether_workdir: Path
) -> None:
    new, _ = await edit(
        astgrep_run,
        tether_workdir,
        "t.py",
        PY_WITH,
        {"pattern": "with warnings.catch_warnings():\n    $$$B", "rewrite": "$$$B"},
    )
    assert new == (
        "import warnings\n\n\ndef t():\n"
        '    warnings.simplefilter("ignore")\n'
        "\n"  # the blank line inside the captured block is kept (item 8)
        "    if x:\n"
        "        run()\n"
        "    done()\n"
    )
    compile(new, "t.py", "exec")


ZOD = """\
function f() {
  const A = z.object({
    a: z.string(),
    b: z.object({
      c: z.number(),
    }),
  });
}
"""


@pytest.mark.anyio
async def test_an_inline_capture_keeps_its_lines_where_they_were(
    astgrep_run: Any, tether_workdir: Path
) -> None:
    new, _ = await edit(
        astgrep_run,
        tether_workdir,
        "s.js",
        ZOD,
        {"pattern": "z.object({ $$$P })", "rewrite": "z.strictObject({ $$$P })"},
    )
    assert new == (
        "function f() {\n"
        "  const A = z.strictObject({ a: z.string(),\n"
        "    b: z.object({\n"
        "      c: z.number(),\n"
        "    }), });\n"  # the run keeps its trailing comma, as ast-grep's does
        "}\n"
    )


RUST_IF = """\
fn f(o: Option<u8>) {
    if let Some(x) = o {
        a(x);
        b(x);
    }
    unsafe {
        c();

        d();
    }
}
"""


@pytest.mark.anyio
async def test_rust_blocks_keep_their_shape(astgrep_run: Any, tether_workdir: Path) -> None:
    new, _ = await edit(
        astgrep_run,
        tether_workdir,
        "m.rs",
        RUST_IF,
        {
            "pattern": "if let Some($X) = $Y { $$$B }",
            "rewrite": "if let Some($X) = $Y.take() { $$$B }",
        },
    )
    assert new == RUST_IF.replace(
        "= o {\n        a(x);\n        b(x);\n    }", "= o.take() { a(x);\n        b(x); }"
    )
    new, _ = await edit(
        astgrep_run,
        tether_workdir,
        "m.rs",
        RUST_IF,
        {"pattern": "unsafe { $$$B }", "rewrite": "$$$B"},
    )
    assert new.endswith("    }\n    c();\n\n    d();\n}\n")


# -- 2. the syntax check says what it checked ------------------------------------------------


@pytest.mark.anyio
async def test_python_rewrites_are_checked_with_compile(
    astgrep_run: Any, tether_workdir: Path
) -> None:
    source = "def f(xs):\n    for x in xs:\n        if x:\n            break\n"
    async with astgrep_run({"a.py": source}) as run:
        # tree-sitter sees nothing wrong with a `break` outside a loop; compile() does.
        result = await run.call(
            "ast_edit", {"pattern": "for $X in $Y: $$$B", "rewrite": "$$$B", "path": "a.py"}
        )
        assert not result.is_error, result.text_content
        text = result.text_content
        assert "warning: a.py has new syntax errors after the rewrite" in text
        assert "python compile(): line 3: 'break' outside loop" in text
        assert result.meta["syntax_checks"]["a.py"]["check"] == "python compile()"
        assert result.meta["new_syntax_errors"] == {"a.py": [3]}
        ok = await run.call(
            "ast_edit",
            {"pattern": "for $X in $Y: $$$B", "rewrite": "for $X in list($Y):\n    $$$B"},
        )
        assert "syntax check: python compile() on 1 file (a.py): no new errors" in ok.text_content


@pytest.mark.anyio
async def test_a_tree_sitter_only_check_says_what_it_cannot_see(astgrep_run: Any) -> None:
    source = "#define isinf(d) (__builtin_isinf(d))\nint x;\n"
    async with astgrep_run({"m.h": source}) as run:
        result = await run.call(
            "ast_edit", {"pattern": "int $X;", "rewrite": "long $X;", "language": "c"}
        )
        assert not result.is_error, result.text_content
        text = result.text_content
        assert "no new syntax errors" not in text
        assert "syntax check: tree-sitter only on 1 file (m.h): no new ERROR nodes" in text
        assert "cannot see" in text and "macro" in text
        assert result.meta["syntax_checks"]["m.h"]["check"] == "tree-sitter"


# -- 3. keyword-led patterns -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "code", "count"),
    [
        ("javascript", "switch (a) { case 1: b(); break; default: c() }\n", 1),
        ("typescript", "function f(a: number) { switch (a) { case 1: return 2 } }\n", 1),
        ("dart", "void f() { switch (a) { case 1: b(); break; default: c(); } }\n", 1),
    ],
)
def test_switch_is_a_switch_statement(
    registry: GrammarRegistry, language: str, code: str, count: int
) -> None:
    grammar = registry.get(language)
    assert grammar is not None
    compiled = compile_pattern("switch ($X) { $$$C }", grammar)
    assert compiled.interpretation.startswith("switch statement"), compiled.interpretation
    assert len(find(registry, language, "switch ($X) { $$$C }", code)) == count


def test_a_keyword_is_never_read_as_a_name(registry: GrammarRegistry) -> None:
    js = registry.get("javascript")
    assert js is not None
    # The class-member rung would read `switch` as a method's name: refused.
    with pytest.raises(PatternError):
        compile_pattern("switch ($X) { $$$C }", js, rungs=["class member"])


def test_c_case_labels(registry: GrammarRegistry) -> None:
    code = "void f(int a) { switch (a) { case 1: b(); break; case 2: c(); default: d(); } }\n"
    caps = captures(registry, "c", "case $V: $$$B", code)
    assert [(c["V"], c["B"]) for c in caps] == [("1", "b(); break;"), ("2", "c();")]


@pytest.mark.anyio
async def test_an_empty_reading_names_a_reading_that_finds_matches(astgrep_run: Any) -> None:
    async with astgrep_run({"a.ts": "class A {\n  name: string;\n}\n"}) as run:
        result = await run.call("ast_grep", {"pattern": "$X: $Y"})
        assert not result.is_error, result.text_content
        text = result.text_content
        assert text.startswith("0 matches")
        assert "interpreted as: labeled statement (as a statement)" in text
        assert "note: read as public field definition (as a class member) it finds 1 match" in text
        readings = result.meta["other_readings"]
        assert {"interpreted_as": "public field definition (as a class member)", "matches": 1} in (
            readings
        )


@pytest.mark.anyio
async def test_other_readings_are_read_only_for_a_search_that_finds_nothing(
    astgrep_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Reading a pattern in every rung of its grammar costs milliseconds: a search that finds
    # something needs only the reading it searches with.
    from tether_astgrep import pattern

    asked: list[int] = []
    real = pattern.compile_readings

    def counted(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs.get("most", 1))
        return real(*args, **kwargs)

    monkeypatch.setattr(pattern, "compile_readings", counted)
    files = {"a.ts": "class A {\n  name: string;\n}\n", "b.py": "print(a)\n"}
    async with astgrep_run(files) as run:
        found = await run.call("ast_grep", {"pattern": "print($X)", "path": "b.py"})
        assert found.meta["total"] == 1
        assert asked == [1]
        empty = await run.call("ast_grep", {"pattern": "$X: $Y", "path": "a.ts"})
        assert "note: read as public field definition (as a class member)" in empty.text_content
        assert asked[1] == 1 and max(asked[2:]) > 1


# -- 4. `$` inside an identifier is code -------------------------------------------------------

ZOD_TS = "const a: core.$ZodType = core.$ZodAsyncError();\nconst $Z = 1;\n"


def test_dollar_identifiers_are_literal(registry: GrammarRegistry) -> None:
    assert find(registry, "typescript", "core.$ZodAsyncError()", ZOD_TS) == [
        "core.$ZodAsyncError()"
    ]
    caps = captures(registry, "typescript", "$X.$ZodAsyncError()", ZOD_TS)
    assert caps == [{"X": "core"}]
    # `$Z` standing alone is still a metavariable.
    assert captures(registry, "typescript", "const $Z = 1", ZOD_TS) == [{"Z": "$Z"}]


@pytest.mark.anyio
async def test_dollar_identifiers_in_a_rewrite(astgrep_run: Any, tether_workdir: Path) -> None:
    new, _ = await edit(
        astgrep_run,
        tether_workdir,
        "a.ts",
        ZOD_TS,
        {"pattern": "core.$ZodAsyncError()", "rewrite": "new core.$ZodAsyncError($ZodType)"},
    )
    assert new.startswith("const a: core.$ZodType = new core.$ZodAsyncError($ZodType);\n")


# -- 5. `$$$` for items, arms, fields, enumerators and cases -------------------------------

RUST_ITEMS = """
struct Point {
    x: i32,
    y: i32,
}
impl Display for Point {
    fn fmt(&self) {}
}
impl Point {
    fn new() -> Self { todo!() }
    const ZERO: i32 = 0;
}
fn main() {
    match p {
        Some(x) => x,
        None => 0,
    };
}
"""


@pytest.mark.parametrize(
    ("pattern", "var", "expected"),
    [
        ("impl $T for $U { $$$B }", "B", ["fn fmt(&self) {}"]),
        ("impl $T { $$$B }", "B", ["fn new() -> Self { todo!() }\n    const ZERO: i32 = 0;"]),
        ("struct $S { $$$F }", "F", ["x: i32,\n    y: i32,"]),  # its trailing comma, as ast-grep
        ("match $X { $$$A }", "A", ["Some(x) => x,\n        None => 0,"]),
    ],
)
def test_rust_item_runs(
    registry: GrammarRegistry, pattern: str, var: str, expected: list[str]
) -> None:
    assert [c[var] for c in captures(registry, "rust", pattern, RUST_ITEMS)] == expected


GO_CODE = """
package m

import (
\t"fmt"
\t"os"
)

func f(c chan int, x int) {
\tswitch x {
\tcase 1:
\t\tfmt.Println(1)
\tdefault:
\t}
\tselect {
\tcase v := <-c:
\t\tos.Exit(v)
\t}
}
"""


@pytest.mark.parametrize(
    ("pattern", "var", "expected"),
    [
        ("switch $X { $$$C }", "C", "case 1:\n\t\tfmt.Println(1)\n\tdefault:"),
        ("select { $$$C }", "C", "case v := <-c:\n\t\tos.Exit(v)\n"),
        ("import ( $$$I )", "I", '"fmt"\n\t"os"'),
    ],
)
def test_go_runs(registry: GrammarRegistry, pattern: str, var: str, expected: str) -> None:
    assert [c[var] for c in captures(registry, "go", pattern, GO_CODE)] == [expected]


DART_CLASS = """
class Point {
  final String name;
  final int x;
  final String label;
  Point(this.name, this.x, this.label);
}
"""


def test_dart_class_bodies_and_fields(registry: GrammarRegistry) -> None:
    caps = captures(registry, "dart", "class $C { $$$B }", DART_CLASS)
    assert [c["C"] for c in caps] == ["Point"]
    assert caps[0]["B"].startswith("final String name;")
    caps = captures(registry, "dart", "final String $N;", DART_CLASS)
    assert [c["N"] for c in caps] == ["name", "label"]
    code = "class B extends A {\n  int f() {\n    return super.build();\n  }\n}\n"
    assert captures(registry, "dart", "return $X;", code) == [{"X": "super.build()"}]


def test_c_enum_and_python_match(registry: GrammarRegistry) -> None:
    code = "enum color { RED, GREEN = 2 };\ntypedef enum T { A, B } T_t;\n"
    caps = captures(registry, "c", "enum $E { $$$V }", code)
    # The `;` the statement rung adds is not part of the pattern: the typedef's enum counts.
    assert caps == [{"E": "color", "V": "RED, GREEN = 2"}, {"E": "T", "V": "A, B"}]
    code = "match cmd:\n    case 'a':\n        run()\n    case _:\n        pass\n"
    caps = captures(registry, "python", "match $X: $$$C", code)
    assert [c["X"] for c in caps] == ["cmd"]
    assert caps[0]["C"].startswith("case 'a':") and caps[0]["C"].endswith("pass")


# -- 6. `#define $N $V` is one object-like macro ----------------------------------------------

C_MACROS = "#define A 1\n#define F(x) ((x) + 1)\n#define isinf(d) (__builtin_isinf(d))\n"


def test_define_is_one_macro_definition(registry: GrammarRegistry) -> None:
    grammar = registry.get("c")
    assert grammar is not None
    assert compile_pattern("#define $N $V", grammar).interpretation.startswith("preproc def")
    caps = captures(registry, "c", "#define $N $V", C_MACROS)
    assert caps == [{"N": "A", "V": "1"}]
    # `#  define` is the same directive (unnamed tokens compare by kind, as in ast-grep).
    indented = "#ifdef X\n#   define W __attribute__((weak))\n#endif\n"
    assert captures(registry, "c", "#define $N $V", indented) == [
        {"N": "W", "V": "__attribute__((weak))"}
    ]


@pytest.mark.anyio
async def test_define_rewrite_leaves_function_like_macros_alone(
    astgrep_run: Any, tether_workdir: Path
) -> None:
    new, _ = await edit(
        astgrep_run,
        tether_workdir,
        "m.h",
        C_MACROS,
        {"pattern": "#define $N $V", "rewrite": "#define $N ($V)", "language": "c"},
    )
    assert new == C_MACROS.replace("#define A 1", "#define A (1)")


# -- 7. trailing clauses and modifiers the pattern does not mention ---------------------------

PY_IFS = """
if a:
    x()
if b:
    x()
elif c:
    y()
else:
    z()
"""


def test_if_matches_ifs_with_elif_and_else(registry: GrammarRegistry) -> None:
    assert len(find(registry, "python", "if $C: $$$B", PY_IFS)) == 2


PY_TRY = """
try:
    run()
except KeyError:
    pass
except OSError as e:
    log(e)
finally:
    done()
"""


def test_try_with_several_handlers(registry: GrammarRegistry) -> None:
    caps = captures(registry, "python", "try:\n    $$$B\nexcept $E as $V:\n    $$$H", PY_TRY)
    assert caps == [{"B": "run()", "E": "OSError", "V": "e", "H": "log(e)"}]


def test_modifiers_and_chains(registry: GrammarRegistry) -> None:
    code = "async function f(a) { await a; }\nfunction g() {}\n"
    assert [
        c["F"] for c in captures(registry, "javascript", "function $F($$$P) { $$$B }", code)
    ] == [
        "f",
        "g",
    ]
    assert find(registry, "python", "$X == $X", 'a == a == "x"\n') == ['a == a == "x"']
    rust = "fn a() {}\npub fn b() {}\npub(crate) fn c() {}\n"
    assert [c["F"] for c in captures(registry, "rust", "fn $F() {}", rust)] == ["a", "b", "c"]
    assert find(registry, "rust", "fn $F() {}", rust, strictness="cst") == ["fn a() {}"]
    dart = "abstract class A { }\nsealed class B { }\nclass C { }\n"
    assert [c["C"] for c in captures(registry, "dart", "class $C { $$$B }", dart)] == [
        "A",
        "B",
        "C",
    ]


@pytest.mark.anyio
async def test_rewrite_keeps_unmentioned_elif_and_else(
    astgrep_run: Any, tether_workdir: Path
) -> None:
    new, _ = await edit(
        astgrep_run,
        tether_workdir,
        "a.py",
        PY_IFS.lstrip("\n"),
        {"pattern": "if $C: $$$B", "rewrite": "if check($C):\n    $$$B"},
    )
    assert new == (
        "if check(a):\n    x()\nif check(b):\n    x()\nelif c:\n    y()\nelse:\n    z()\n"
    )


@pytest.mark.anyio
async def test_rewrite_keeps_further_handlers(astgrep_run: Any, tether_workdir: Path) -> None:
    new, _ = await edit(
        astgrep_run,
        tether_workdir,
        "a.py",
        PY_TRY.lstrip("\n"),
        {
            "pattern": "try:\n    $$$B\nexcept $E:\n    $$$H",
            "rewrite": "try:\n    $$$B\nexcept $E:\n    note()\n    $$$H",
        },
    )
    assert new == PY_TRY.lstrip("\n").replace("KeyError:\n", "KeyError:\n    note()\n")
    compile(new, "a.py", "exec")


@pytest.mark.anyio
async def test_rewrite_keeps_a_leading_modifier(astgrep_run: Any, tether_workdir: Path) -> None:
    new, _ = await edit(
        astgrep_run,
        tether_workdir,
        "a.js",
        "async function f(a) { await a; }\n",
        {"pattern": "function $F($A) { $$$B }", "rewrite": "function $F($A, b) { $$$B }"},
    )
    assert new == "async function f(a, b) { await a; }\n"


def test_strictness_levels(registry: GrammarRegistry) -> None:
    js = registry.get("javascript")
    assert js is not None
    code = "if (a) b(); else c();\nlet x = 1;\nconst y = 1;\nfoo(1, 'a');\nbar(2, 'b');\n"

    def count(pattern: str, strictness: str) -> list[str]:
        return find(registry, "javascript", pattern, code, strictness=strictness)

    assert count("if ($C) $S", "smart") == ["if (a) b(); else c();"]
    assert count("if ($C) $S", "cst") == []
    assert count("const $X = 1", "smart") == ["const y = 1;"]
    assert count("const $X = 1", "ast") == ["let x = 1;", "const y = 1;"]
    assert count("foo(1, 'a')", "signature") == ["foo(1, 'a')", "bar(2, 'b')"]
    with pytest.raises(PatternError, match="strictness"):
        compile_pattern("f()", js, strictness="loose")


# -- 8. JavaScript statement rewrites keep their `;` -----------------------------------------


@pytest.mark.anyio
async def test_js_statement_rewrite_keeps_the_semicolon(
    astgrep_run: Any, tether_workdir: Path
) -> None:
    source = "var a = require('x');\nvar b = require('y')\nif (c) c.dispose();\n"
    new, _ = await edit(
        astgrep_run,
        tether_workdir,
        "a.js",
        source,
        {"pattern": "var $A = require($B)", "rewrite": "const $A = require($B)"},
    )
    assert new == source.replace("var ", "const ")
    new, _ = await edit(
        astgrep_run,
        tether_workdir,
        "a.js",
        source,
        {"pattern": "var $A = require($B);", "rewrite": "const $A = require($B);"},
    )
    # Never `;;`; the template's `;` is added where the source had none.
    assert new == source.replace("var ", "const ").replace("('y')", "('y');")
    new, _ = await edit(
        astgrep_run,
        tether_workdir,
        "a.js",
        source,
        {"pattern": "if ($X) $X.dispose()", "rewrite": "$X?.dispose()"},
    )
    assert new.endswith("\nc?.dispose();\n")


@pytest.mark.anyio
async def test_unmentioned_code_is_kept_or_the_match_left_alone(
    astgrep_run: Any, tether_workdir: Path
) -> None:
    source = "if f is not None:\n    f.close()\n    other()\nif g is not None:\n    g.close()\n"
    async with astgrep_run({"a.py": source, "b.py": PY_TRY.lstrip("\n")}) as run:
        result = await run.call(
            "ast_edit",
            {"pattern": "if $X is not None: $X.close()", "rewrite": "$X.close()", "path": "a.py"},
        )
        assert not result.is_error, result.text_content
        text = result.text_content
        # `other()` is kept verbatim after the rewritten part, never dropped; here it no
        # longer fits, and compile() says so.
        assert (
            "code the pattern does not mention is kept verbatim before or after 1 rewritten "
            "match (a.py:3)"
        ) in text
        assert (
            "warning: a.py has new syntax errors after the rewrite (python compile(): line 2:"
            in text
        )
        # Code the pattern does not mention *between* its parts (an earlier handler) would be
        # dropped: that match is left alone and reported.
        result = await run.call(
            "ast_edit",
            {
                "pattern": "try:\n    $$$B\nexcept $E as $V:\n    $$$H",
                "rewrite": "with guard($E) as $V:\n    $$$B",
                "path": "b.py",
            },
        )
        assert result.is_error
        assert "1 match not rewritten (b.py:3)" in result.text_content


@pytest.mark.anyio
async def test_a_captured_block_keeps_its_edge_comments(
    astgrep_run: Any, tether_workdir: Path
) -> None:
    source = "function f() {\n  // first\n  a();\n\n  b();\n  // last\n}\n"
    new, _ = await edit(
        astgrep_run,
        tether_workdir,
        "a.js",
        source,
        {"pattern": "function $F() { $$$B }", "rewrite": "async function $F() { $$$B }"},
    )
    # The comments at the block's edges stay, and a line comment last does not swallow `}`.
    assert new == "async function f() { // first\n  a();\n\n  b();\n  // last\n}\n"


@pytest.mark.anyio
async def test_strictness_through_the_tools(astgrep_run: Any) -> None:
    async with astgrep_run({"a.py": PY_IFS.lstrip("\n")}) as run:
        smart = await run.call("ast_grep", {"pattern": "if $C: $$$B"})
        assert smart.text_content.startswith("2 matches"), smart.text_content
        cst = await run.call("ast_grep", {"pattern": "if $C: $$$B", "strictness": "cst"})
        assert cst.text_content.startswith("1 match "), cst.text_content
        bad = await run.call("ast_grep", {"pattern": "if $C: $$$B", "strictness": "loose"})
        assert bad.is_error and "strictness: expected one of" in bad.text_content
        edit = await run.call(
            "ast_edit",
            {"pattern": "if $C: $$$B", "rewrite": "if ($C):\n    $$$B", "strictness": "cst"},
        )
        assert edit.meta["replacements"] == 1, edit.text_content


PREFILTER_CASES = [
    ("python", "if $X is None: $$$B", "if x is None :\n    pass\n"),
    ("python", "super().__init__($$$A)", "super( ).__init__( # c\n  a)\n"),
    ("python", "len($X) == 0", "if len(a) == 0 == b:\n    pass\n"),
    ("python", "$X == $X", 'a == a == "x"\n'),
    ("javascript", "var $A = require($B)", "var a = require('x');\n"),
    ("javascript", "async function $F() {}", "export default async function f() {}\n"),
    ("rust", "fn $F() {}", "pub(crate) fn f() {}\n"),
    ("c", "#define $N $V", "#  define A 1\n"),
    ("python", "f(a == b)", "f(a == b == c)\n"),
]


@pytest.mark.parametrize(("language", "pattern", "code"), PREFILTER_CASES)
def test_prefilter_keeps_every_file_smart_matches(
    registry: GrammarRegistry, language: str, pattern: str, code: str
) -> None:
    """Whatever smart lets through (code between the pattern's parts), the file passes the
    prefilter that runs before parsing: its tokens and its runs of adjacent tokens."""
    import re

    grammar = registry.get(language)
    assert grammar is not None
    assert find(registry, language, pattern, code), "the case must match"
    compiled = compile_pattern(pattern, grammar)
    source = code.encode()
    assert all(literal in source for literal in compiled.literals)
    assert all(re.search(chain, source) for chain in compiled.chains)
    words = ProcessState(registry, 0).words(compiled)
    assert all(has_word(source, word) for word in words)


def test_smart_skips_no_keyword_between_adjacent_tokens(registry: GrammarRegistry) -> None:
    code = "async function f() { for (const x of y) {} for await (const x of y) {} }\n"
    found = find(registry, "javascript", "for (const $X of $Y) {}", code)
    assert found == ["for (const x of y) {}"]
    # A keyword the pattern does not mention may still lead (`async`) or follow a part.
    assert len(find(registry, "javascript", "function $F() { $$$B }", code)) == 1

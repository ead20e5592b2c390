"""Matches a person expects and tether used to miss (issue 23, item 6), each across every
language with the shape: code inside string interpolations, clauses the pattern does not
mention before the one it does, a metavariable where the grammar wants a string literal, and
a pattern whose first reading is not the one a person means."""

from __future__ import annotations

from typing import Any

import pytest

from tether.testing import require_real
from tether_astgrep.grammars import GrammarRegistry, all_grammars
from tether_astgrep.pattern import compile_pattern
from tether_astgrep.testing import captures, find

INSTALLED = {g.id for g in all_grammars() if g.missing() is None}


def _installed(cases: dict[str, tuple[str, ...]]) -> list[tuple[str, tuple[str, ...]]]:
    return [(lang, case) for lang, case in sorted(cases.items()) if lang in INSTALLED]


# language -> (pattern, code with the call inside an interpolation, what the match is)
INTERPOLATED_CALLS: dict[str, tuple[str, str, str]] = {
    "php": ("$O->f($$$A)", '<?php\n$s = "x {$this->f($x)} y";\n', "$this->f($x)"),
    "javascript": ("$O.f($$$A)", "const s = `a ${o.f(1)} b`;\n", "o.f(1)"),
    "typescript": ("$O.f($$$A)", "const s: string = `a ${o.f(1)} b`;\n", "o.f(1)"),
    "tsx": ("$O.f($$$A)", "const s = `a ${o.f(1)} b`;\n", "o.f(1)"),
    "kotlin": ("$O.f($$$A)", 'val s = "a ${o.f(1)} b"\n', "o.f(1)"),
    "ruby": ("$O.f($$$A)", 's = "a #{o.f(1)} b"\n', "o.f(1)"),
    "swift": ("$O.f($$$A)", 'let s = "a \\(o.f(1)) b"\n', "o.f(1)"),
    "dart": ("$O.f($$$A)", 'var s = "a ${o.f(1)} b";\n', "o.f(1)"),
    "csharp": ("$O.f($$$A)", 'class C { void M() { var s = $"a {o.f(1)} b"; } }\n', "o.f(1)"),
    "python": ("$O.f($$$A)", 's = f"a {o.f(1)} b"\n', "o.f(1)"),
    "bash": ("f $$$A", 'echo "a $(f 1) b"\n', "f 1"),
    "scala": ("$O.f($$$A)", 'val s = s"a ${o.f(1)} b"\n', "o.f(1)"),
    "elixir": ("$O.f($$$A)", 's = "a #{o.f(1)} b"\n', "o.f(1)"),
}

# PHP's interpolations have no wrapper node: every expression that may follow `{$` is code.
PHP_INTERPOLATIONS = [
    ('"{$this->f($x)}"', "$O->f($$$A)", "$this->f($x)"),
    ('"{$this?->f($x)}"', "$O?->f($$$A)", "$this?->f($x)"),
    ("\"{$a['k']->f($x)}\"", "$O->f($$$A)", "$a['k']->f($x)"),
    ('"{$a->b->c}"', "$O->c", "$a->b->c"),
    ('"{$a::f()}"', "$A::f()", "$a::f()"),
    ('"{$f()}"', "$F()", "$f()"),
    ('"$a->b"', "$O->b", "$a->b"),
    ('"x $a[1] y"', "$A[1]", "$a[1]"),
    ("<<<EOT\n  a {$this->f($x)}\n  EOT", "$O->f($$$A)", "$this->f($x)"),
    ('"{$a->f(g($x))}"', "g($X)", "g($x)"),
]


@pytest.mark.parametrize(("language", "case"), _installed(INTERPOLATED_CALLS))
def test_a_call_inside_a_string_interpolation_is_found(
    registry: GrammarRegistry, language: str, case: tuple[str, str, str]
) -> None:
    pattern, code, expected = case
    assert find(registry, language, pattern, code) == [expected]


@pytest.mark.parametrize(("literal", "pattern", "expected"), PHP_INTERPOLATIONS)
def test_php_every_interpolated_expression_is_code(
    registry: GrammarRegistry, literal: str, pattern: str, expected: str
) -> None:
    require_real("php" in INSTALLED, "the php grammar (tether-astgrep's test extra)")
    assert find(registry, "php", pattern, f"<?php\n$s = {literal};\n") == [expected]


@pytest.mark.parametrize("language", sorted(set(INTERPOLATED_CALLS) & INSTALLED))
def test_text_of_a_string_is_still_never_code(registry: GrammarRegistry, language: str) -> None:
    """The other side of the rule: the literal text around an interpolation is not searched."""
    pattern, code, expected = INTERPOLATED_CALLS[language]
    # the same call spelled in the string's text, outside the interpolation
    code = code.replace(" b", f" {expected} b", 1)
    assert find(registry, language, pattern, code) == [expected]


# language -> (pattern naming the last clause, code with an unmentioned clause before it,
#              the text of the clause the pattern's last block captures)
EARLIER_CLAUSES: dict[str, tuple[str, str, str]] = {
    "python": (
        "if $C:\n    $$$A\nelse:\n    $$$B",
        "if a:\n    x()\nelif b:\n    y()\nelse:\n    z()\n",
        "z()",
    ),
    "ruby": (
        "if $C\n  $$$A\nelse\n  $$$B\nend",
        "if a\n  x\nelsif b\n  y\nelse\n  z\nend\n",
        "z",
    ),
    "swift": (
        "do { $$$A } catch { $$$B }",
        "func f() {\n  do { try g() } catch let e as E { h() } catch { k() }\n}\n",
        "k()",
    ),
    "java": (
        "try { $$$A } catch (B $V) { $$$B }",
        "class C { void m() { try { x(); } catch (A a) { y(); } catch (B b) { z(); } } }\n",
        "z();",
    ),
    "csharp": (
        "try { $$$A } catch (B $V) { $$$B }",
        "class C { void M() { try { x(); } catch (A a) { y(); } catch (B b) { z(); } } }\n",
        "z();",
    ),
    "kotlin": (
        "try { $$$A } catch ($E: B) { $$$B }",
        "fun m() { try { x() } catch (a: A) { y() } catch (b: B) { z() } }\n",
        "z()",
    ),
    "php": (
        "try { $$$A } catch (B $e) { $$$B }",
        "<?php\ntry { x(); } catch (A $e) { y(); } catch (B $e) { z(); }\n",
        "z();",
    ),
    "python ": (
        "try:\n    $$$A\nfinally:\n    $$$B",
        "try:\n    x()\nexcept A:\n    y()\nelse:\n    w()\nfinally:\n    z()\n",
        "z()",
    ),
    "javascript": (
        "try { $$$A } finally { $$$B }",
        "try { x() } catch (e) { y() } finally { z() }\n",
        "z()",
    ),
    "typescript": (
        "try { $$$A } finally { $$$B }",
        "try { x() } catch (e) { y() } finally { z() }\n",
        "z()",
    ),
    "ruby ": (
        "begin\n  $$$A\nensure\n  $$$B\nend",
        "begin\n  x\nrescue A => e\n  y\nelse\n  w\nensure\n  z\nend\n",
        "z",
    ),
    "swift ": (
        "do { $$$A } catch MyErr.b { $$$B }",
        "func f() {\n  do { try g() } catch MyErr.a { h() } catch MyErr.b { k() }\n}\n",
        "k()",
    ),
    "dart": (
        "try { $$$A } finally { $$$B }",
        "void f() { try { x(); } catch (e) { y(); } finally { z(); } }\n",
        "z();",
    ),
    "php  ": (
        "if ($C) { $$$A } else { $$$B }",
        "<?php\nif ($a) { x(); } elseif ($b) { y(); } else { z(); }\n",
        "z();",
    ),
    "elixir": (
        "try do\n  $$$A\nafter\n  $$$B\nend",
        "try do\n  x()\nrescue\n  e -> y()\nafter\n  z()\nend\n",
        "z()",
    ),
    "rust": (
        "if $C { $$$A } else { $$$B }",
        "fn m() { if a { x() } else if b { y() } else { z() } }\n",
        "z()",
    ),
}


@pytest.mark.parametrize(
    ("language", "case"),
    [
        (lang.strip(), case)
        for lang, case in sorted(EARLIER_CLAUSES.items())
        if lang.strip() in INSTALLED
    ],
)
def test_clauses_the_pattern_does_not_mention_do_not_prevent_a_match(
    registry: GrammarRegistry, language: str, case: tuple[str, str, str]
) -> None:
    pattern, code, last = case
    found = captures(registry, language, pattern, code)
    assert len(found) == 1, found
    assert found[0]["B"] == last


# Where `else if` is an `if` inside an `else`, a chain holds one `if … else`: the innermost.
ELSE_IF_CHAINS: dict[str, tuple[str, str]] = {
    "javascript": (
        "if ($C) { $$$A } else { $$$B }",
        "if (a) { x() } else if (b) { y() } else { z() }",
    ),
    "typescript": (
        "if ($C) { $$$A } else { $$$B }",
        "if (a) { x() } else if (b) { y() } else { z() }",
    ),
    "java": (
        "if ($C) { $$$A } else { $$$B }",
        "class C { void m() { if (a) { x(); } else if (b) { y(); } else { z(); } } }",
    ),
    "csharp": (
        "if ($C) { $$$A } else { $$$B }",
        "class C { void M() { if (a) { x(); } else if (b) { y(); } else { z(); } } }",
    ),
    "kotlin": (
        "if ($C) { $$$A } else { $$$B }",
        "fun m() { if (a) { x() } else if (b) { y() } else { z() } }",
    ),
    "swift": (
        "if $C { $$$A } else { $$$B }",
        "func m() { if a { x() } else if b { y() } else { z() } }",
    ),
    "go": (
        "if $C { $$$A } else { $$$B }",
        "package p\nfunc m() { if a { x() } else if b { y() } else { z() } }",
    ),
    "c": (
        "if ($C) { $$$A } else { $$$B }",
        "void m() { if (a) { x(); } else if (b) { y(); } else { z(); } }",
    ),
    "cpp": (
        "if ($C) { $$$A } else { $$$B }",
        "void m() { if (a) { x(); } else if (b) { y(); } else { z(); } }",
    ),
    "php": (
        "if ($C) { $$$A } else { $$$B }",
        "<?php\nif ($a) { x(); } else if ($b) { y(); } else { z(); }",
    ),
}


@pytest.mark.parametrize(("language", "case"), _installed(ELSE_IF_CHAINS))
def test_an_else_if_chain_holds_one_if_else(
    registry: GrammarRegistry, language: str, case: tuple[str, str]
) -> None:
    pattern, code = case
    found = captures(registry, language, pattern, code)
    assert [c["C"].strip("$") for c in found] == ["b"]


# language -> (pattern with a metavariable where the grammar wants a string, code, capture)
STRING_SLOTS: dict[str, tuple[str, str, str]] = {
    "typescript": ("import { $$$I } from $M", 'import { a, b } from "x";\n', '"x"'),
    "tsx": ("import { $$$I } from $M", "import { a } from 'x';\n", "'x'"),
    "javascript": ("import $X from $M", 'import a from "x";\n', '"x"'),
    "javascript ": ("export { $$$I } from $M", 'export { a } from "x";\n', '"x"'),
    "typescript ": ("import $X = require($M)", 'import a = require("x");\n', '"x"'),
    "go": ("import $M", 'package p\n\nimport "fmt"\n', '"fmt"'),
}


@pytest.mark.parametrize(
    ("language", "case"),
    [
        (lang.strip(), case)
        for lang, case in sorted(STRING_SLOTS.items())
        if lang.strip() in INSTALLED
    ],
)
def test_a_metavariable_where_a_string_literal_stands_matches_the_literal(
    registry: GrammarRegistry, language: str, case: tuple[str, str, str]
) -> None:
    pattern, code, literal = case
    found = captures(registry, language, pattern, code)
    assert [c["M"] for c in found] == [literal]
    if not literal.startswith('"'):
        return  # (`"$M"` is a double-quoted literal)
    # and `"$M"` still captures the text inside the quotes
    quoted = captures(registry, language, pattern.replace("$M", '"$M"'), code)
    assert [c["M"] for c in quoted] == [literal.strip("\"'")]


CSHARP_USINGS = """\
using System;
using System.IO;
using static System.Math;
namespace N {
    using System.Text;
    class C {
        void M() {
            using var r = Open();
            using (var w = Open()) { }
        }
    }
}
"""


def test_csharp_using_finds_the_directives(registry: GrammarRegistry) -> None:
    require_real("csharp" in INSTALLED, "the csharp grammar (tether-astgrep's test extra)")
    grammar = registry.get("csharp")
    assert grammar is not None
    compiled = compile_pattern("using $N;", grammar)
    assert "using directive" in compiled.interpretation
    # the other reading is named
    assert "also readable as local declaration statement" in compiled.interpretation
    assert find(registry, "csharp", "using $N;", CSHARP_USINGS) == [
        "using System;",
        "using System.IO;",
        "using System.Text;",
    ]
    assert find(registry, "csharp", "using static $N;", CSHARP_USINGS) == [
        "using static System.Math;"
    ]
    # the statement is still there for a pattern only it reads
    assert find(registry, "csharp", "using var $N = $V;", CSHARP_USINGS) == [
        "using var r = Open();"
    ]


# language -> (a function pattern without a return type, code whose functions have one)
RETURN_TYPES: dict[str, tuple[str, str, int]] = {
    "swift": (
        "func $F($$$P) { $$$B }",
        "func f() throws -> Double { x() }\nfunc g(a: Int) -> Int { 1 }\nfunc h() { }\n",
        3,
    ),
    "rust": ("fn $F($$$P) { $$$B }", "fn f() -> i32 { 1 }\nfn g() {}\n", 2),
    "kotlin": ("fun $F($$$P) { $$$B }", "fun f(): Int { return 1 }\nfun g() { }\n", 2),
}


@pytest.mark.parametrize(("language", "case"), _installed(RETURN_TYPES))
def test_a_return_type_the_pattern_does_not_mention_does_not_prevent_a_match(
    registry: GrammarRegistry, language: str, case: tuple[str, str, int]
) -> None:
    pattern, code, count = case
    assert len(find(registry, language, pattern, code)) == count


def test_tokens_written_side_by_side_still_admit_nothing_between(
    registry: GrammarRegistry,
) -> None:
    """The other side: an unmentioned token and its node are skipped only before a node the
    pattern names, never between two tokens the pattern writes side by side. (Python's
    `def $F($$$P): $$$B` finds `def f() -> int:`: the return type is an optional part in a field
    the pattern leaves empty, after the parameters node, test_optional_parts.)"""
    assert find(registry, "javascript", "f($X)", "f(this, y)") == []
    assert find(registry, "javascript", "f(x)", "f(null, x)") == []


@pytest.mark.anyio
async def test_csharp_using_through_the_tool_names_both_readings_and_how_to_choose(
    astgrep_run: Any,
) -> None:
    require_real("csharp" in INSTALLED, "the csharp grammar (tether-astgrep's test extra)")
    async with astgrep_run({"src/a.cs": CSHARP_USINGS}) as run:
        result = await run.call("ast_grep", {"pattern": "using $N;"})
        assert not result.is_error, result.text_content
        text = result.text_content
        assert "using directive (as a top level): finds using directives" in text
        assert "also readable as local declaration statement" in text
        assert "selector: local_declaration_statement" in text
        assert [m["line"] for m in result.meta["matches"]] == [1, 2, 5]
        # the way the result names: the other reading, chosen with a rule
        rule = {
            "pattern": {
                "context": "class C { void M() { using $N; } }",
                "selector": "local_declaration_statement",
            }
        }
        chosen = await run.call("ast_grep", {"rule": rule, "language": "csharp"})
        assert not chosen.is_error, chosen.text_content
        assert [m["line"] for m in chosen.meta["matches"]] == [8]

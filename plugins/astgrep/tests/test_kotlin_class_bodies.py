"""Kotlin's `class $C { $$$B }` is any class (issue 36, side by side on okio and moshi):
tree-sitter-kotlin 1.1.0 reads the pattern's `{ B }` as an `enum_class_body` (a lone name is an
enum entry), which found enum classes only; a body of nothing but metavariables also matches a
`class_body` (`Grammar.body_aliases`), and one that names entries still does not."""

from __future__ import annotations

import itertools

import pytest

from tether.testing import require_real
from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.testing import captures, find

HEADERS = (
    ("class A", ""),
    ("open class A", ""),
    ("class A(val a: Int)", "val a: Int"),
    ("data class A(val a: Int, val b: String)", "val a: Int, val b: String"),
    ("internal class A(a: Int)", "a: Int"),
)
BODIES = ("val x = 1", "fun f() = 1", "private var y: Int = 0\n  fun g() {}")


@pytest.fixture(autouse=True)
def _kotlin(registry: GrammarRegistry) -> None:
    grammar = registry.get("kotlin")
    assert grammar is not None
    missing = grammar.missing()
    if missing:
        require_real(missing)
        pytest.skip(missing)


@pytest.mark.parametrize(("header", "body"), list(itertools.product(HEADERS, BODIES)))
def test_a_class_pattern_finds_every_class(
    registry: GrammarRegistry, header: tuple[str, str], body: str
) -> None:
    head, params = header
    code = f"{head} {{\n  {body}\n}}\n"
    if params:  # a primary constructor the pattern does not mention is not skipped
        assert captures(registry, "kotlin", "class $C($$$P) { $$$B }", code) == [
            {"C": "A", "P": params, "B": body}
        ]
    else:
        assert captures(registry, "kotlin", "class $C { $$$B }", code) == [{"C": "A", "B": body}]


def test_enum_classes_are_still_found_and_entries_still_count(registry: GrammarRegistry) -> None:
    code = "class A {\n  val x = 1\n}\nenum class K {\n  A, B\n}\n"
    assert find(registry, "kotlin", "class $C { $$$B }", code) == [
        "class A {\n  val x = 1\n}",
        "enum class K {\n  A, B\n}",
    ]
    # a body that names entries is an enum's: never a class whose body differs
    assert find(registry, "kotlin", "enum class $C { A, B }", code) == ["enum class K {\n  A, B\n}"]
    assert find(registry, "kotlin", "class $C { A, B }", code) == ["enum class K {\n  A, B\n}"]

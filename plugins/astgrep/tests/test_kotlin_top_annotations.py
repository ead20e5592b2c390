"""A top-level Kotlin annotation with arguments is found wherever it stands (issue 36, side by
side on okio): tree-sitter-kotlin 1.1.0 reads `@Throws(IOException::class)` before `fun`, after a
`package` line, an import or a class, as an annotated `(IOException::class)` with no error; the
pattern `@Throws($$$A)` is also read that way (`Grammar.also_read`), so both spellings count.
The misreading depends on what follows (16 of the 40 generated files show it); the others guard
that the reading as an annotation still finds them."""

from __future__ import annotations

import itertools

import pytest

from tether.testing import require_real
from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.testing import captures

BEFORE = ("package okio\n\n", "import a.B\n\n", "class K {\n}\n\n", "fun z() {\n}\n\n", "")
ANNOTATIONS = (
    ("Throws", "IOException::class"),
    ("Throws", "IOException::class, EOFException::class"),
    ("Deprecated", '"use b"'),
    ("Suppress", '"NOTHING_TO_INLINE"'),
)
DECLARATIONS = (
    "fun Socket.sink(): Sink {\n  return x\n}\n",
    "inline fun <S : B> S.f(b: UByte): S = this\n",
)


@pytest.fixture(autouse=True)
def _kotlin(registry: GrammarRegistry) -> None:
    grammar = registry.get("kotlin")
    assert grammar is not None
    missing = grammar.missing()
    if missing:
        require_real(missing)
        pytest.skip(missing)


@pytest.mark.parametrize(
    ("before", "annotation", "declaration"),
    list(itertools.product(BEFORE, ANNOTATIONS, DECLARATIONS)),
)
def test_a_top_level_annotation_is_found_after_anything(
    registry: GrammarRegistry, before: str, annotation: tuple[str, str], declaration: str
) -> None:
    name, args = annotation
    # the misreading needs a second annotated declaration after the first
    code = f"{before}@{name}({args})\n{declaration}\n@{name}(Other)\nfun other() {{\n}}\n"
    found = captures(registry, "kotlin", f"@{name}($$$A)", code)
    assert found == [{"A": args}, {"A": "Other"}], code


def test_another_annotation_or_arguments_are_no_match(registry: GrammarRegistry) -> None:
    code = "package okio\n\n@Throws(IOException)\nfun a() {\n}\n\n@Throws(B)\nfun b() {\n}\n"
    assert captures(registry, "kotlin", "@Deprecated($$$A)", code) == []
    assert captures(registry, "kotlin", "@Throws(EOFException)", code) == []
    assert captures(registry, "kotlin", "@Throws(IOException)", code) == [{}]

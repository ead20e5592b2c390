"""Where a multi-line capture lands (issue 36 §4, the decision the README's limits state): a
metavariable after other code on its line keeps the capture's lines where they were relative
to the match's line, in every brace grammar, so a nested line stays inside what it belongs to.
ast-grep 0.51.1 moves those lines to the match line's indentation (its catalog's indentation
page), which puts `b: z.object({` of the zod case at the `const`'s column; tether keeps the
difference."""

from __future__ import annotations

import pytest

from tether.testing import require_real
from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.matcher import Matcher
from tether_astgrep.pattern import compile_pattern
from tether_astgrep.rewrite import apply_matches

# grammar -> (the code around a statement, indented one level in a function, and its end)
AROUND: dict[str, tuple[str, str]] = {
    "javascript": ("function w() {\n", ";\n}\n"),
    "typescript": ("function w(): void {\n", ";\n}\n"),
    "rust": ("fn w() {\n", ";\n}\n"),
    "go": ("package p\n\nfunc w() {\n", "\n}\n"),
    "java": ("class C {\n  void w() {\n", ";\n  }\n}\n"),
    "c": ("void w(void) {\n", ";\n}\n"),
    "cpp": ("void w() {\n", ";\n}\n"),
    "csharp": ("class C {\n  void W() {\n", ";\n  }\n}\n"),
    "kotlin": ("fun w() {\n", "\n}\n"),
    "swift": ("func w() {\n", "\n}\n"),
    "dart": ("void w() {\n", ";\n}\n"),
    "php": ("<?php\nfunction w() {\n", ";\n}\n"),
    "scala": ("object O {\n  def w() = {\n", "\n  }\n}\n"),
}


@pytest.mark.parametrize("lang", sorted(AROUND))
def test_an_inline_multiline_capture_keeps_its_lines(registry: GrammarRegistry, lang: str) -> None:
    grammar = registry.get(lang)
    assert grammar is not None
    if grammar.missing():
        require_real(False, grammar.missing() or "")
    head, tail = AROUND[lang]
    call = "f(1, g(\n        2,\n        3))"
    fn = "$f" if lang == "php" else "f"
    source = (head + "    " + call.replace("f(", fn + "(", 1) + tail).encode()
    tree = grammar.parser().parse(source)
    assert not tree.root_node.has_error, source.decode()
    pattern = "$f($$$A)" if lang == "php" else "f($$$A)"
    compiled = compile_pattern(pattern, grammar)
    found = Matcher(compiled, grammar, track=True).find(tree, source)
    assert len(found) == 1
    new = apply_matches("h($$$A)", found, source, tree, grammar).new
    # every line of the capture after its first stays where it was
    assert new == source.replace(f"{fn}(1".encode(), b"h(1", 1)
    assert not grammar.parser().parse(new).root_node.has_error

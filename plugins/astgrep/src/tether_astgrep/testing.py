"""Helpers for tests of this plugin and of plugins that contribute grammars to it."""

from __future__ import annotations

import textwrap

from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.matcher import Matcher
from tether_astgrep.pattern import compile_pattern


def find(
    registry: GrammarRegistry, language: str, pattern: str, code: str, strictness: str = ""
) -> list[str]:
    """The text of every match of `pattern` in `code` (dedented), checking that the literal
    anchors and the kind query find the same matches."""
    grammar = registry.get(language)
    assert grammar is not None
    source = textwrap.dedent(code).encode()
    tree = grammar.parser().parse(source)
    compiled = compile_pattern(pattern, grammar, strictness=strictness or "smart")
    matcher = Matcher(compiled, grammar)
    # Both candidate strategies (literal anchors and the kind query) must agree.
    with_anchors = matcher.find(tree, source)
    without = matcher.find(tree)
    assert with_anchors == without
    return [source[m.start_byte : m.end_byte].decode() for m in with_anchors]


def captures(
    registry: GrammarRegistry, language: str, pattern: str, code: str
) -> list[dict[str, str]]:
    """Each match's captures as text (an empty `$$$` run is "")."""
    grammar = registry.get(language)
    assert grammar is not None
    source = textwrap.dedent(code).encode()
    tree = grammar.parser().parse(source)
    matcher = Matcher(compile_pattern(pattern, grammar), grammar)
    return [
        {k: "" if a < 0 else source[a:b].decode() for k, (a, b) in m.captures.items()}
        for m in matcher.find(tree, source)
    ]

"""The rule language, to ast-grep's catalog (issue 36 §5): metavariables glued to text in a
`fix`, a rewriter's `language`, and an unknown key's error."""

from __future__ import annotations

import pytest

from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.matcher import Matcher
from tether_astgrep.pattern import compile_pattern
from tether_astgrep.rewrite import render
from tether_astgrep.rules import RuleError, compile_rule


@pytest.mark.parametrize(
    ("pattern", "template", "expected"),
    [
        ("class X($COMP): pass", "class Y(Base$COMP): pass", b"class Y(BaseComp): pass"),
        ("f($R, $$$ARGS)", "g($R$R$$$ARGS)", b"g(aab, c)"),
        # glued and unbound: literal code (`$ZodType` is a JavaScript name, not a variable)
        ("f($R, $$$ARGS)", "g($R, $ZodType)", b"g(a, $ZodType)"),
    ],
)
def test_a_metavariable_glued_to_text_is_replaced_when_bound(
    registry: GrammarRegistry, pattern: str, template: str, expected: bytes
) -> None:
    grammar = registry.get("python")
    assert grammar is not None
    source = b"class X(Comp): pass\nf(a, b, c)\n"
    tree = grammar.parser().parse(source)
    matches = Matcher(compile_pattern(pattern, grammar), grammar).find(tree, source)
    assert [render(template, m, source, tree, grammar) for m in matches] == [expected]


def _config(language: str) -> dict[str, object]:
    return {
        "rule": {"pattern": "f($$$A)"},
        "transform": {"B": {"rewrite": {"source": "$$$A", "rewriters": ["r"]}}},
        "rewriters": [{"id": "r", "language": language, "rule": {"pattern": "$X"}, "fix": "$X"}],
        "fix": "g($B)",
    }


def test_a_rewriter_may_name_the_language_searched(registry: GrammarRegistry) -> None:
    grammar = registry.get("python")
    assert grammar is not None
    compile_rule(_config("python"), grammar, edit=True)
    compile_rule(_config("Python"), grammar, edit=True)
    with pytest.raises(RuleError) as err:
        compile_rule(_config("rust"), grammar, edit=True)
    assert err.value.path == "rule.rewriters[0].language"
    assert "not the language searched (python)" in err.value.message


def test_an_unknown_key_says_where_and_that_ast_grep_would_ignore_it(
    registry: GrammarRegistry,
) -> None:
    grammar = registry.get("python")
    assert grammar is not None
    with pytest.raises(RuleError) as err:
        compile_rule({"inside": {"kind": "call", "parent": {"kind": "module"}}}, grammar)
    assert err.value.path == "rule.inside.parent"
    assert "unknown key" in err.value.message
    assert "ast-grep ignores a key it does not know" in err.value.message


def test_a_selector_may_name_the_wrapper_the_reading_drops(registry: GrammarRegistry) -> None:
    # the catalog's Python walrus rule: `$A = $B` selected as the statement around it
    grammar = registry.get("python")
    assert grammar is not None
    rule = compile_rule(
        {"pattern": {"context": "$A = $B", "selector": "expression_statement"}}, grammar
    )
    source = b"x = 1\nf(y=2)\n"
    tree = grammar.parser().parse(source)
    from tether_astgrep.rules import RuleMatcher

    found = RuleMatcher(rule, grammar).find(tree, source)
    assert [source[m.start_byte : m.end_byte] for m in found] == [b"x = 1"]
    # a selector the context has is still the node inside it
    inner = compile_rule({"pattern": {"context": "f($X)", "selector": "call"}}, grammar)
    assert "call in" in inner.rule.pattern.interpretation  # type: ignore[union-attr]

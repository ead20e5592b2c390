"""A pattern node's plan (plans.py) answers as `Matcher._node` does, node for node: generated
over Python functions, calls and assignments of many shapes (parameters with defaults,
comments, trailing commas, `*`, `/`, a lone parameter, return types, decorators, repeated
metavariables) at every strictness, and over every language's typical pattern; the comparison
is shown to fail on a wrong plan; no run is bound to a kept children list itself.
`Grammar.listed_at` is `Grammar.listed` read from a list."""

from __future__ import annotations

import itertools
import textwrap
from typing import Any

import pytest
import tree_sitter as ts
from test_languages import SHAPES

from tether_astgrep.grammars import Grammar, GrammarRegistry
from tether_astgrep.matcher import Matcher
from tether_astgrep.pattern import STRICTNESS, PatternError, compile_pattern
from tether_astgrep.plans import Plans

PATTERNS = [
    "def $F($$$A): $$$B",
    "def $F($A, $B): $$$C",
    "def $F($A): $$$B",
    "def $F(a, $$$A): $$$B",
    "def $F($$$A, b=1): $$$B",
    "def $F($_, $$$A): $$$B",
    "def $F($$$A) -> $R: $$$B",
    "def $F($$$A):\n    $X = $Y\n    return $Z",
    "def $F($$$A): return $X",
    "$X = $A + $B",
    "$X = $X + $B",
    "$A + $A",
    "x = $A + b",
    "return $X * $Y",
    "$F($$$A)",
    "$F($A, $$$B)",
    "print($$$A, sep=$S)",
    "[$$$A]",
    "($A, $B)",
    "if $C: $$$B",
    "class $C($$$B): $$$D",
    "lambda $$$A: $B",
]

PARAMS = ["", "a", "a, b=1", "a, b", "self, /, a, *, b", "*args, **kw", "a,  # note\n b,", "a,"]
BODIES = ["pass", "x = a + b\n    return x * 2", "return a", "x = x + b\n    return f(a, b)"]
HEADS = ["def f({p}):", "async def f({p}):", "def f({p}) -> int:", "@d\ndef f({p}):"]


def sources() -> list[str]:
    out = []
    for head, params, body in itertools.product(HEADS, PARAMS, BODIES):
        out.append(head.format(p=params) + "\n    " + body + "\n")
    out.append("print(a, b, sep='')\nprint()\ny = [1, 2,]\nz = (a, b)\nq = lambda a, b: a + a\n")
    out.append("class C(B, metaclass=M):\n    x = 1\n\nif a: b\nelif c: d\nelse: e\n")
    return out


def named_nodes(tree: ts.Tree) -> list[ts.Node]:
    out, stack = [], [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_named:
            out.append(node)
        stack.extend(node.children)
    return out


def differences(matcher: Matcher, tree: ts.Tree, memo: dict[int, Any] | None) -> list[str]:
    """The nodes where the plan's answer is not `_node`'s."""
    plan = matcher._top_plan
    assert plan is not None
    top = matcher.items[0]
    out = []
    for node in named_nodes(tree):
        matcher.sig_memo = memo
        planned = plan(node, {})
        matcher.sig_memo = None
        general = matcher._node(top, node, {})
        if planned != general:
            out.append(f"{node.type} {node.text!r}: plan {planned}, _node {general}")
        kept = {id(kids) for kids in (memo or {}).values()}
        if any(id(value) in kept for value in (planned or {}).values()):
            out.append(f"{node.type} {node.text!r}: a run bound to the kept children list")
    return out


def compare(grammar: Grammar, pattern: str, source: str, strictness: str) -> list[str]:
    try:
        compiled = compile_pattern(pattern, grammar, strictness=strictness)
    except PatternError:
        return []
    matcher = Matcher(compiled, grammar)
    if matcher._top_plan is None:
        return []
    tree = grammar.parser().parse(source.encode())
    # with and without the tree's children kept (a cached tree, a fresh one)
    return differences(matcher, tree, {}) + differences(matcher, tree, None)


@pytest.mark.parametrize("strictness", STRICTNESS)
def test_plans_answer_as_node_does_over_generated_python(
    registry: GrammarRegistry, strictness: str
) -> None:
    python = registry.get("python")
    assert python is not None
    found = [
        f"{pattern!r} in {source!r}: {d}"
        for pattern in PATTERNS
        for source in sources()
        for d in compare(python, pattern, source, strictness)
    ]
    assert found == []


@pytest.mark.parametrize("language", sorted(SHAPES))
def test_plans_answer_as_node_does_for_every_language(
    registry: GrammarRegistry, language: str
) -> None:
    grammar = registry.get(language)
    assert grammar is not None
    pattern, source, _ = SHAPES[language]
    source = textwrap.dedent(source)
    found = [d for s in STRICTNESS for d in compare(grammar, pattern, source, s)]
    assert found == []


def test_the_all_matching_pattern_has_a_plan_that_finds_every_function(
    registry: GrammarRegistry,
) -> None:
    python = registry.get("python")
    assert python is not None
    matcher = Matcher(compile_pattern("def $F($$$A): $$$B", python), python)
    assert matcher._top_plan is not None
    source = "".join(sources())
    tree = python.parser().parse(source.encode())
    found = matcher.find(tree, source.encode())
    assert len(found) == source.count("def f(")
    # edit mode records each step: it never uses a plan
    assert Matcher(matcher.pattern, python, track=True)._top_plan is None


def test_the_comparison_fails_on_a_wrong_plan(
    registry: GrammarRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = registry.get("python")
    assert python is not None

    def careless(self: Plans, var: Any) -> Any:  # binds a repeated metavariable anew
        return lambda n, env: {**env, var.name: n} if n.is_named else None

    assert compare(python, "$A + $A", "q = a + b\n", "smart") == []
    monkeypatch.setattr(Plans, "_var_plan", careless)
    assert compare(python, "$A + $A", "q = a + b\n", "smart") != []


def test_listed_at_is_listed(registry: GrammarRegistry) -> None:
    checked = 0
    shapes = [(language, textwrap.dedent(source)) for language, (_, source, _) in SHAPES.items()]
    for language, text in [*sorted(shapes), ("python", "".join(sources()))]:
        grammar = registry.get(language)
        assert grammar is not None
        tree = grammar.parser().parse(text.encode())
        for parent in named_nodes(tree):
            kids = parent.children
            for k, kid in enumerate(kids):
                assert grammar.listed_at(parent, kids, k) == grammar.listed(kid), (language, kid)
                checked += 1
    assert checked > 3000


def run_then_token(items: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The first children tuple in a prepared pattern with a `$$$` run right before a token."""
    for item in items:
        kids = getattr(item, "children", ())
        for i, q in enumerate(kids[:-1]):
            nxt = kids[i + 1]
            if getattr(q, "multi", False) and getattr(nxt, "text", None) is not None:
                return tuple(kids[: i + 2])
        found = run_then_token(kids)
        if found is not None:
            return found
    return None


@pytest.mark.parametrize("language", ["python", *sorted(SHAPES)])
def test_a_node_refused_after_a_run_is_one_skip_refuses(
    registry: GrammarRegistry, language: str
) -> None:
    grammar = registry.get(language)
    assert grammar is not None
    try:
        matcher = Matcher(compile_pattern("f($$$A)", grammar), grammar)
    except PatternError:
        pytest.skip("no call pattern")
    ps = run_then_token(matcher.items)
    if ps is None or not ps[-1].ids.isdisjoint(matcher.clause_ids):
        pytest.skip("no run before a token")
    text = "".join(sources()) if language == "python" else textwrap.dedent(SHAPES[language][1])
    refused, refusal = 0, matcher._after_run_refusal()
    for node in named_nodes(grammar.parser().parse(text.encode())):
        if node.kind_id in matcher.wrapper_ids or not refusal(node):
            continue
        assert matcher._skip(ps, len(ps) - 1, [node], 0, {}) is None, node
        refused += 1
    assert refused > 10

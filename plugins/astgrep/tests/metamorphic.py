"""Metamorphic checks of the matcher, over any code in any grammar (test_metamorphic uses them on
small samples of every grammar, benchmarks/metamorphic.py on fetched public repositories).

For every list in the code (a node with commas between its items: arguments, parameters,
elements, type arguments), the node around it is made a pattern, verbatim and with each item
a metavariable, and must find that node; then

- one more item in the list: neither pattern may find the node any more (a pattern without
  `$$$` there names every item);
- a literal of the node replaced by another literal: the verbatim pattern may not find it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import attrs
import tree_sitter as ts

from tether_astgrep.grammars import Grammar
from tether_astgrep.matcher import Matcher
from tether_astgrep.pattern import METAVAR_RE, PatternError, compile_pattern


@attrs.frozen
class Finding:
    grammar: str
    check: str  # "finds itself", "one more item", "another literal"
    pattern: str
    code: str  # the (mutated) node's text

    def __str__(self) -> str:
        return f"{self.grammar}: {self.check}: pattern {self.pattern!r} on {self.code!r}"


@attrs.define
class Tally:
    lists: int = 0  # lists whose node a pattern finds
    mutations: int = 0  # mutated variants checked
    findings: list[Finding] = attrs.Factory(list)


def _items(node: ts.Node, commas: frozenset[int]) -> list[ts.Node]:
    return [c for c in node.children if not c.is_extra and c.kind_id not in commas and c.is_named]


def lists(root: ts.Node, grammar: Grammar) -> Iterator[tuple[ts.Node, list[ts.Node], bytes]]:
    """Every list: a node whose children include a comma, with its named items, or whose
    children repeat a field (bash's words, each an `argument`), with those; and what separates
    two items."""
    commas = grammar.list_comma_ids
    stack = [root]
    while stack:
        node = stack.pop()
        if node.kind_id in grammar.string_ids:
            continue
        kids = node.children
        if any(c.kind_id in commas for c in kids):
            items = _items(node, commas)
            if items:
                yield node, items, b", "
        else:
            fields = [node.field_name_for_child(i) for i in range(len(kids))]
            repeated = {f for f, g in itertools.pairwise(fields) if f and f == g}
            for field in sorted(repeated):
                yield node, [k for k, f in zip(kids, fields, strict=True) if f == field], b" "
        stack.extend(reversed(kids))


_COMPILED: dict[tuple[str, str, str], Matcher | PatternError] = {}


def _matches(
    grammar: Grammar, pattern: str, source: bytes, strictness: str
) -> set[tuple[int, int]]:
    key = (grammar.id, pattern, strictness)
    matcher = _COMPILED.get(key)
    if matcher is None:
        try:
            matcher = Matcher(compile_pattern(pattern, grammar, strictness=strictness), grammar)
        except PatternError as exc:
            matcher = exc
        _COMPILED[key] = matcher
    if isinstance(matcher, PatternError):
        raise matcher
    tree = grammar.parser().parse(source)
    return {(m.start_byte, m.end_byte) for m in matcher.find(tree, source)}


def _captures(
    grammar: Grammar, pattern: str, source: bytes, strictness: str
) -> dict[tuple[int, int], dict[str, tuple[int, int]]]:
    _matches(grammar, pattern, b"", strictness)  # compiles it (or raises)
    matcher = _COMPILED[(grammar.id, pattern, strictness)]
    assert isinstance(matcher, Matcher)
    tree = grammar.parser().parse(source)
    return {(m.start_byte, m.end_byte): m.captures for m in matcher.find(tree, source)}


def _value_leaves(node: ts.Node, grammar: Grammar) -> list[ts.Node]:
    """Leaves that are values by themselves (a number, `true`, `nil`, a string)."""
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.kind_id in grammar.string_ids and n.child_count:
            out.append(n)
            continue
        if n.child_count == 0 and n.is_named and not n.is_extra:
            if grammar.is_value_kind(n.type) or any(
                ch.isdigit() for ch in n.type + (n.text or b"x").decode("latin-1")[:1]
            ):
                out.append(n)
        stack.extend(n.children)
    return out


def _pattern_node(
    list_node: ts.Node, grammar: Grammar, source: bytes, strictness: str
) -> tuple[ts.Node, str] | None:
    """The smallest node around the list (itself, its parent, …) whose text, as a pattern, finds
    it; None when none within three levels does (a fragment no rung reads)."""
    node: ts.Node | None = list_node
    for _ in range(3):
        if node is None or node.parent is None:
            return None
        text = source[node.start_byte : node.end_byte].decode("utf-8", "replace")
        if "\n" not in text.strip() and METAVAR_RE.search(text) is None and len(text) < 300:
            try:
                found = _matches(grammar, text, source, strictness)
            except PatternError:
                found = set()
            if (node.start_byte, node.end_byte) in found:
                return node, text
        node = node.parent
    return None


def check(
    grammar: Grammar, source: bytes, tally: Tally, strictness: str = "smart", most: int = 200
) -> None:
    """Run the checks on every list of `source` (at most `most`), adding to `tally`."""
    tree = grammar.parser().parse(source)
    literals = list({v.text: v for v in _value_leaves(tree.root_node, grammar)}.values())[:6]
    seen: set[tuple[int, int]] = set()
    for list_node, items, separator in lists(tree.root_node, grammar):
        if tally.lists >= most:
            return
        if list_node.has_error or (list_node.start_byte, list_node.end_byte) in seen:
            continue
        picked = _pattern_node(list_node, grammar, source, strictness)
        if picked is None:
            continue
        node, text = picked
        seen.add((list_node.start_byte, list_node.end_byte))
        tally.lists += 1
        base = node.start_byte
        # Each item a metavariable (`f($I1, $I2)`), from the last so offsets stay valid.
        with_vars = text
        for k, item in reversed(list(enumerate(items))):
            a, b = item.start_byte - base, item.end_byte - base
            with_vars = with_vars[:a] + f"$I{k}" + with_vars[b:]
        patterns = [text]
        try:
            found = _captures(grammar, with_vars, source, strictness)
        except PatternError:
            found = {}
        caps = found.get((node.start_byte, node.end_byte))
        if caps is not None:
            patterns.append(with_vars)
            # Each metavariable captured its whole item.
            want = {f"I{k}": (item.start_byte, item.end_byte) for k, item in enumerate(items)}
            tally.mutations += 1
            if caps != want:
                got = {k: source[a:b].decode("utf-8", "replace") for k, (a, b) in caps.items()}
                tally.findings.append(Finding(grammar.id, f"captures {got}", with_vars, text))
        # One more item: the last one again, or one of the code's literals (`true`, `nil`).
        last = items[-1]
        extras = [source[last.start_byte : last.end_byte]]
        extras += [source[v.start_byte : v.end_byte] for v in literals]
        for extra in dict.fromkeys(extras):
            mutated = source[: last.end_byte] + separator + extra + source[last.end_byte :]
            if grammar.parser().parse(mutated).root_node.has_error:
                continue
            for pattern in patterns:
                tally.mutations += 1
                hits = _matches(grammar, pattern, mutated, strictness)
                if any(s == node.start_byte and e > last.end_byte for s, e in hits):
                    code = mutated[node.start_byte : node.end_byte + len(extra) + len(separator)]
                    tally.findings.append(
                        Finding(
                            grammar.id, "one more item", pattern, code.decode("utf-8", "replace")
                        )
                    )
        # Another literal: each value leaf replaced by one of a different text from the node.
        leaves = _value_leaves(node, grammar)
        for leaf in leaves:
            other = next((o for o in leaves if o.text != leaf.text and o.type != leaf.type), None)
            if other is None:
                continue
            new = source[other.start_byte : other.end_byte]
            mutated = source[: leaf.start_byte] + new + source[leaf.end_byte :]
            if grammar.parser().parse(mutated).root_node.has_error:
                continue
            tally.mutations += 1
            end = node.end_byte + len(new) - (leaf.end_byte - leaf.start_byte)
            if (node.start_byte, end) in _matches(grammar, text, mutated, strictness):
                tally.findings.append(
                    Finding(
                        grammar.id,
                        "another literal",
                        text,
                        mutated[node.start_byte : end].decode("utf-8", "replace"),
                    )
                )

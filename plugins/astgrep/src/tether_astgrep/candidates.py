"""Where a pattern may match: the candidate nodes a `Matcher` tries.

Three ways, cheapest first: the literal anchors (a leaf the pattern spells out, found in the
source bytes, then the right number of parents up), a tree-sitter query built from the
pattern (it prunes in C; the matcher still decides), and a walk of every named node. Nothing
inside a string literal or a comment is a candidate (except the code a string holds).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import tree_sitter as ts

from tether_astgrep.pattern import CompiledPattern, MetaVar, PItem, PNode, whole_literal

if TYPE_CHECKING:
    from tether_astgrep.grammars import Grammar

# What keeping a node's significant children costs (`Matcher.sig_memo`), in bytes: the list and
# its dict slot, and per child its Node object with the children list py-tree-sitter caches in
# it. Measured as resident-memory growth over 222 files of CPython's stdlib and tether's core
# searched with nine patterns (137,734 lists, 419,131 children: 53 MB): ~126 per child.
SIG_LIST_BYTES = 120
SIG_NODE_BYTES = 128


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def query_source(
    root: PNode,
    budget: int = 48,
    *,
    tokens: bool = True,
    texts: bool = True,
    loose: frozenset[str] = frozenset(),
) -> str:
    """A tree-sitter query that every match of `root` satisfies (and most non-matches fail).

    Children are listed in order without anchors, so comments and other extras in the
    candidate do not matter; `$$$` runs are left out; leaves with text get an `#eq?`
    predicate (`tokens`/`texts` False leave out unnamed leaves / the predicates, for
    strictness levels that skip or do not compare them). It only prunes candidates in C: the
    matcher still decides.
    """
    counter = 0

    def render(node: PNode | MetaVar, depth: int) -> str:
        nonlocal counter, budget
        budget -= 1
        if isinstance(node, MetaVar):
            return "(_)"
        if not node.named:
            return _quote(node.kind)
        if node.kind in loose:  # it may match another kind too (`Grammar.body_aliases`)
            return "(_)"
        if node.text is not None and not texts:
            return f"({node.kind})"
        if node.text is not None:
            counter += 1
            name = f"@t{counter}"
            text = node.text.decode("utf-8", "replace")
            return f"(({node.kind}) {name} (#eq? {name} {_quote(text)}))"
        parts = []
        if depth < 6 and budget > 0:
            for child in node.children:
                if child.multi if isinstance(child, MetaVar) else child.optional:
                    continue
                if not tokens and isinstance(child, PNode) and not child.named:
                    continue
                if budget <= 0:
                    break
                parts.append(render(child, depth + 1))
        return "(" + " ".join([node.kind, *parts]) + ")"

    return render(root, 0)


def _anchors(pattern: CompiledPattern) -> list[tuple[bytes, tuple[int, ...]]]:
    """Anchors: each literal leaf of a single-node pattern with its depth(s) below the root.
    A match contains that leaf verbatim, and its root is exactly that many parents up."""
    first = pattern.items[0]
    anchors: dict[bytes, set[int]] = {}
    exact_leaves = pattern.strictness in ("cst", "smart")  # every pattern leaf is in the match
    if len(pattern.items) == 1 and isinstance(first, PNode) and exact_leaves:
        stack: list[tuple[PItem, int]] = [(first, 0)]
        while stack:
            node, depth = stack.pop()
            if isinstance(node, MetaVar):
                continue
            if node.text is not None:
                if node.optional:
                    continue
                # A token that is whitespace (the C preprocessor's `\n` after `#if X`) is no
                # anchor: the code's may run on (`\n\n` before a blank line).
                if node.text.strip() and (node.named or not node.text.startswith(b"#")):
                    anchors.setdefault(node.text, set()).add(depth)
            else:
                stack.extend((c, depth + 1) for c in node.children)
    return [(lit, tuple(sorted(d))) for lit, d in anchors.items()]


class Candidates:
    """The part of `Matcher` that finds candidate nodes (a mixin: `Matcher` sets the state)."""

    pattern: CompiledPattern
    grammar: Grammar
    skip_goal_tokens: bool
    kind_only: bool
    string_ids: frozenset[int]
    code_ids: frozenset[int]
    _anchors: list[tuple[bytes, tuple[int, ...]]]
    _root_ids: frozenset[int]
    # The anchored candidates of one cached tree, by what decides them (`_anchored_key`), kept
    # with it (`engine.FileCache.memo`): a later search with the same anchors (a pattern whose
    # metavariables only are renamed) takes them from here, not from the source and the tree
    # again. Set by the engine around the search of such a tree, as `sig_memo`; what it grows
    # by is added to `sig_added`.
    cand_memo: dict[tuple[Any, ...], list[ts.Node]] | None
    sig_added: int
    _query: ts.Query | None
    _query_pending: bool

    def _anchored(self, root: ts.Node, source: bytes) -> list[ts.Node]:
        anchors = self._anchors
        # Counting costs a pass over the source: only worth it when there is a choice.
        literal, depths = (
            anchors[0] if len(anchors) == 1 else min(anchors, key=lambda a: source.count(a[0]))
        )
        size = len(literal)
        root_ids = self._root_ids
        found: dict[int, ts.Node] = {}
        pos = source.find(literal)
        while pos >= 0:
            leaf = root.descendant_for_byte_range(pos, pos + size)
            if (
                leaf is not None
                and leaf.start_byte == pos
                and leaf.end_byte == pos + size
                and (leaf.child_count == 0 or whole_literal(leaf))
            ):
                for depth in depths:
                    node: ts.Node | None = leaf
                    for _ in range(depth):
                        node = node.parent if node is not None else None
                    if node is not None and node.kind_id in root_ids:
                        found[node.id] = node
            pos = source.find(literal, pos + 1)
        return list(found.values())

    def _anchored_key(self) -> tuple[Any, ...]:
        """What the anchored candidates of a tree depend on, beside the tree and its source."""
        return (tuple(self._anchors), self._root_ids, self.string_ids, self.code_ids)

    def _candidates(self, root: ts.Node, source: bytes | None = None) -> list[ts.Node]:
        """The nodes where a match may start (a list the caller must not change: it may be
        the one a cached tree keeps)."""
        if self._anchors and source is not None:
            memo = self.cand_memo
            if memo is None:
                return self._unquoted(self._anchored(root, source))
            key = self._anchored_key()
            found = memo.get(key)
            if found is None:
                found = memo[key] = self._unquoted(self._anchored(root, source))
                self.sig_added += SIG_LIST_BYTES + SIG_NODE_BYTES * len(found)
            return found
        if self._kind_query() is not None:
            assert self._query is not None
            return self._unquoted(ts.QueryCursor(self._query).captures(root).get("c", []))
        return list(self._walk(root))

    def _unquoted(self, found: list[ts.Node]) -> list[ts.Node]:
        """`found` without the nodes inside a string literal (but for the code it holds)."""
        string_ids, code_ids = self.string_ids, self.code_ids
        if not string_ids:
            return found
        out = []
        for node in found:
            parent = node.parent
            if parent is not None and parent.kind_id in string_ids and node.kind_id not in code_ids:
                continue
            out.append(node)
        return out

    def _kind_query(self) -> ts.Query | None:
        if self._query_pending:
            self._query_pending = False
            first = self.pattern.items[0]
            assert isinstance(first, PNode)
            try:
                source = query_source(
                    first,
                    tokens=not self.skip_goal_tokens,
                    texts=not self.kind_only,
                    loose=frozenset(self.grammar.body_aliases)
                    | frozenset(self.grammar.kind_aliases),
                )
                self._query = ts.Query(self.grammar.ts_language, source + " @c")
            except Exception:  # a kind the query language cannot name: fall back to a walk
                self._query = None
        return self._query

    def _walk(self, root: ts.Node) -> Any:
        stack = [root]
        string_ids, code_ids = self.string_ids, self.code_ids
        while stack:
            node = stack.pop()
            if node.is_extra:
                continue
            if node.is_named and node != root:
                yield node
            if node.kind_id in string_ids:
                # the string's code, and its parts that hold code (PHP's `heredoc_body`)
                stack.extend(
                    reversed(
                        [
                            c
                            for c in node.children
                            if c.kind_id in code_ids or c.kind_id in string_ids
                        ]
                    )
                )
            else:
                stack.extend(reversed(node.children))

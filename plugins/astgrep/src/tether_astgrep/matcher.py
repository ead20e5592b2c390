"""Match a compiled pattern against a parsed file.

Semantics (documented in plugins/astgrep/docs/patterns.md): kinds must be equal, leaves
compare by exact text, comments and commas never count (so a trailing comma is insignificant),
`$X` matches one named node, `$$$X` a lazy, possibly empty run of siblings, a repeated
metavariable must capture the same tokens, and nothing inside a string literal or a comment
is ever a candidate. How much of the candidate the pattern must account for is its
strictness (`STRICTNESS`): by default ("smart", as in ast-grep) keywords and punctuation the
pattern does not mention (`async`) and trailing children (an `else`, more `except` clauses)
do not prevent a match.

The work is shared out by what it does: `Candidates` (candidates.py) finds the nodes to try,
`Sequences` (sequences.py) matches children lists with their `$$$` runs, `Unmentioned`
(unmentioned.py) skips what the pattern leaves out; `Matcher` compares one node, binds
metavariables and builds the matches. They are mixins of one class, so a call between them
is an ordinary method call (the hot loop has no added indirection). `Plans` (plans.py)
compiles a one-node pattern's nodes into functions that do the common case of `_node` sooner.
"""

from __future__ import annotations

from typing import Any

import attrs
import tree_sitter as ts

from tether_astgrep.candidates import SIG_LIST_BYTES, SIG_NODE_BYTES, Candidates, _anchors
from tether_astgrep.grammars import Grammar
from tether_astgrep.pattern import (
    STRICTNESS,
    CompiledPattern,
    MetaVar,
    PItem,
    PNode,
    whole_literal,
)
from tether_astgrep.plans import Plan, Plans
from tether_astgrep.sequences import _N, Env, Sequences
from tether_astgrep.unmentioned import Unmentioned

_Raw = tuple[int, int, list[ts.Node], Env]  # a match not built yet: start, end, nodes, env


@attrs.frozen
class Match:
    start_byte: int
    end_byte: int
    start_point: tuple[int, int]
    end_point: tuple[int, int]
    captures: dict[str, tuple[int, int]]  # name -> byte range (multi: first..last, may be empty)
    # What a rewrite replaces (edit mode): from the first to the last candidate token the
    # pattern accounts for, so an unmentioned leading `async` or trailing `else` stays as is.
    edit_start: int = -1
    edit_end: int = -1
    # 1-based line of code the pattern does not mention *between* the parts it does (a rewrite
    # would drop it), or None.
    lossy_line: int | None = None
    # 1-based line of code the pattern does not mention before or after the parts it does
    # (kept verbatim by a rewrite), or None.
    kept_line: int | None = None


def _run_span(
    nodes: list[ts.Node], commas: frozenset[int] = frozenset(), within: tuple[int, int] = (0, -1)
) -> tuple[int, int]:
    """A `$$$` run's bytes, with the comments at its edges when it reaches its container's
    opening or closing token: `{ $$$B }` keeps a block's last `// note`; with the trailing
    comma of a list it ends (`f(a, b,)`: `a, b,`, as ast-grep captures it); and with the code
    the grammar could not read next to it, inside the match (`within`)."""
    start, end = nodes[0].start_byte, nodes[-1].end_byte
    after = nodes[-1].next_sibling
    while after is not None and after.is_extra:
        after = after.next_sibling
    if after is not None and after.kind_id in commas:
        beyond = after.next_sibling
        while beyond is not None and beyond.is_extra:
            beyond = beyond.next_sibling
        if beyond is None or not beyond.is_named:
            nodes = [*nodes, after]
            end = after.end_byte
    edge = nodes[0].prev_sibling
    first = None
    while edge is not None and edge.is_extra:
        first, edge = edge, edge.prev_sibling
    if first is not None and (edge is None or not edge.is_named):
        start = first.start_byte
    edge = nodes[-1].next_sibling
    last = None
    while edge is not None and edge.is_extra:
        last, edge = edge, edge.next_sibling
    if (
        last is not None
        and (edge is None or not edge.is_named)
        and (edge is None or edge.type != ",")
    ):
        end = last.end_byte
    # Code the grammar could not read (an ERROR node, which tree-sitter makes an extra) right
    # before or after the run is code in the run's place: `template <typename $T> $$$D` takes
    # the attribute macros tree-sitter-cpp leaves in an ERROR before the function.
    lo, hi = within
    edge = nodes[0].prev_sibling
    while edge is not None and edge.is_extra and edge.start_byte >= lo:
        if edge.is_error:
            start = min(start, edge.start_byte)
        edge = edge.prev_sibling
    edge = nodes[-1].next_sibling
    while edge is not None and edge.is_extra and (hi < 0 or edge.end_byte <= hi):
        if edge.is_error:
            end = max(end, edge.end_byte)
        edge = edge.next_sibling
    return start, end


class Matcher(Sequences, Plans, Unmentioned, Candidates):
    """A pattern prepared for one grammar (kind names resolved to kind ids)."""

    def __init__(self, pattern: CompiledPattern, grammar: Grammar, *, track: bool = False) -> None:
        self.pattern = pattern
        self.grammar = grammar
        strictness = pattern.strictness
        assert strictness in STRICTNESS, strictness
        self.strict = strictness == "cst"
        # ast and signature: the pattern's own keywords and punctuation may be missing too.
        self.skip_goal_tokens = strictness in ("ast", "signature")
        self.any_trailing = strictness == "smart"  # ast/signature: only unnamed trailing tokens
        self.kind_only = strictness == "signature"  # named leaves compare by kind, not text
        # Edit mode records what the match consumed, so a rewrite keeps what it skipped.
        self.track = track
        self._also = [Matcher(a, grammar, track=track) for a in pattern.also]
        self._kind_ids(grammar)
        # The fields each pattern node fills, by its children tuple (`_seq`'s `ps`).
        self._fields: dict[int, tuple[tuple[Any, ...], frozenset[str]]] = {}
        self._run_plans = {}
        # The significant children of the nodes of one cached tree, by node id, kept with it
        # (`engine.FileCache.memo`): a later search over the same tree takes them from here,
        # not from tree-sitter again (a fifth of matching a pattern that matches everywhere).
        # Set by the engine around the search of such a tree; `sig_added` is what it grew by.
        self.sig_memo: dict[int, list[ts.Node]] | None = None
        self.cand_memo: dict[tuple[Any, ...], list[ts.Node]] | None = None  # (`Candidates`)
        self.sig_added = 0
        self.items = tuple(self._prep(i) for i in pattern.items)
        self.comma_ids = grammar.comma_ids
        self.string_ids = grammar.string_ids
        self.code_ids = grammar.code_in_string_ids
        self.cont_ids = grammar.continuation_ids
        self.wrapper_ids = grammar.wrapper_ids
        self._query: ts.Query | None = None
        first = pattern.items[0]
        self._anchors = _anchors(pattern)
        self._root_ids = self.items[0].ids if isinstance(self.items[0], _N) else frozenset()
        # Built on first use: a pattern with literal anchors never needs it, and compiling a
        # query can take long in a large grammar (Swift: 90 s for one `guard` pattern).
        self._query_pending = isinstance(first, PNode) and grammar.query_candidates
        # A one-node pattern's candidates go to its plan (`_node`'s answer, sooner).
        top = self.items[0]
        self._top_plan: Plan | None = (
            self._plan(top) if not track and len(self.items) == 1 and isinstance(top, _N) else None
        )

    def _kind_ids(self, grammar: Grammar) -> None:
        """The grammar's kind ids the matching looks up: by (name, named), the clauses, the
        modifiers."""
        lang = grammar.ts_language
        self._ids: dict[tuple[str, bool], frozenset[int]] = {}
        for i, name in enumerate(grammar.kind_names):
            key = (name, lang.node_kind_is_named(i))
            self._ids[key] = self._ids.get(key, frozenset()) | {i}
        # Clauses (`except_clause`, `elif_clause`, `else_clause`…) the pattern does not mention
        # may come before the one it does, as trailing ones may come after.
        self.clause_ids = frozenset(
            i
            for i, n in enumerate(grammar.kind_names)
            if n.endswith("_clause") or n in grammar.clause_kinds
        )
        # Leading modifiers the pattern does not mention (`pub`, Dart's `abstract`): named
        # kinds called `…modifier…`, and those the grammar lists in `modifier_kinds`.
        self.modifier_ids = frozenset(
            i
            for i, n in enumerate(grammar.kind_names)
            if lang.node_kind_is_named(i) and ("modifier" in n or n in grammar.modifier_kinds)
        )

    def _prep(self, item: PItem) -> Any:
        if isinstance(item, MetaVar):
            return item
        ids = self._ids.get((item.kind, item.named), frozenset())
        if item.kind in self.grammar.body_aliases and all(
            isinstance(c, MetaVar) or not c.named for c in item.children
        ):
            for alias in self.grammar.body_aliases[item.kind]:
                ids |= self._ids.get((alias, True), frozenset())
        for alias in self.grammar.kind_aliases.get(item.kind, ()) if item.named else ():
            ids |= self._ids.get((alias, True), frozenset())
        children = tuple(self._prep(c) for c in item.children)
        if item.text is None:
            self._fields[id(children)] = (children, item.fields)
        # A statement terminator the grammar supplied (MISSING: a macro call with a body has
        # no `;`) is no written one, and the reverse; other tokens either way (a `}`
        # tree-sitter supplies in a region it misread may stand for one the code has).
        terminator = not item.named and item.kind == self.grammar.statement_terminator
        supplied = True if item.missing else (False if terminator else None)
        return _N(ids, item.text, children, item.named, item.optional, supplied)

    # -- matching ---------------------------------------------------------------------

    def _sig(self, node: ts.Node) -> list[ts.Node]:
        memo = self.sig_memo
        if memo is None:
            return self.grammar.significant(node)
        kids = memo.get(node.id)  # (a node's id is unique in its tree)
        if kids is None:
            kids = memo[node.id] = self.grammar.significant(node)
            self.sig_added += SIG_LIST_BYTES + SIG_NODE_BYTES * len(kids)
        return kids

    def _tokens(self, nodes: list[ts.Node]) -> tuple[bytes, ...]:
        comma = self.comma_ids
        if len(nodes) == 1:  # the common case, a lone token (`$X == $X` on names)
            only = nodes[0]
            if only.child_count == 0 and not only.is_extra and only.kind_id not in comma:
                return (only.text or b"",)
        out: list[bytes] = []
        stack = list(reversed(nodes))
        while stack:
            node = stack.pop()
            if node.is_extra or node.kind_id in comma:
                continue
            if node.child_count == 0:
                out.append(node.text or b"")
            else:
                stack.extend(reversed(node.children))
        return tuple(out)

    def _bind(self, var: MetaVar, value: Any, env: Env) -> Env | None:
        if self.track:
            nodes = value if isinstance(value, list) else [value]
            if nodes:
                env = self._took(env, nodes[0].start_byte, nodes[-1].end_byte)
        if var.name is None:
            return env
        old = env.get(var.name)
        if old is None:
            new = dict(env)
            new[var.name] = value
            return new
        as_list_old = old if isinstance(old, list) else [old]
        as_list_new = value if isinstance(value, list) else [value]
        if self._tokens(as_list_old) != self._tokens(as_list_new):
            return None
        return env

    @staticmethod
    def _took(env: Env, start: int, end: int) -> Env:
        new = dict(env)
        new.setdefault("\0s", start)
        new["\0e"] = end
        return new

    @staticmethod
    def _skipped(env: Env, start: int, end: int, line: int) -> Env:
        new = dict(env)
        new["\0skips"] = (*env.get("\0skips", ()), (start, end, line))
        return new

    def _node(self, p: Any, n: ts.Node, env: Env) -> Env | None:
        if isinstance(p, MetaVar):
            if not n.is_named:
                return None
            if (
                p.container is not None
                and n.type == p.container
                and self.grammar.is_list(n)
                and not self.grammar.is_compound(n)
            ):
                return None
            return self._bind(p, n, env)
        if n.kind_id not in p.ids:
            inner = self._unwrapped(n)
            return None if inner is None else self._node(p, inner, env)
        if p.text is not None:
            if p.supplied is not None and n.is_missing != p.supplied:
                return None  # a supplied `;` against a written one (`_prep`)
            # Unnamed tokens compare by kind, as in ast-grep (`#  define` is a `#define`).
            if (n.child_count == 0 or whole_literal(n)) and (
                not p.named or n.text == p.text or (self.kind_only and n.is_named)
            ):
                return self._took(env, n.start_byte, n.end_byte) if self.track else env
            return None
        return self._seq(p.children, 0, self._sig(n), 0, env, whole=True)

    def _unwrapped(self, n: ts.Node) -> ts.Node | None:
        """The one node a wrapper (Dart's `method_signature`) holds, if `n` is such a wrapper."""
        if n.kind_id not in self.wrapper_ids:
            return None
        kids = self._sig(n)
        return kids[0] if len(kids) == 1 else None

    def _lifted(self, node: ts.Node) -> ts.Node:
        """`node`, or the wrapper around it whose only significant node it is."""
        parent = node.parent
        while parent is not None and self._unwrapped(parent) == node:
            node, parent = parent, parent.parent
        return node

    def find(self, tree: ts.Tree, source: bytes | None = None) -> list[Match]:
        """Every match in `tree`; `source` (the parsed bytes) enables the literal anchors."""
        return self.find_counted(tree, source)[0]

    def find_counted(
        self, tree: ts.Tree, source: bytes | None = None, keep: int | None = None
    ) -> tuple[list[Match], int]:
        """The first `keep` matches in `tree` (all if None) and how many there are in all:
        matches past `keep` are counted, never built."""
        found = self._raw(tree, source)
        found.sort(key=lambda r: (r[0], -r[1]))
        unique: list[_Raw] = []
        last = (-1, -1)
        for r in found:  # one node wrapping another of the same span is one match
            if (r[0], r[1]) != last:
                unique.append(r)
                last = (r[0], r[1])
        built = unique if keep is None else unique[:keep]
        return [self._match(nodes, env) for _, _, nodes, env in built], len(unique)

    def _raw(self, tree: ts.Tree, source: bytes | None) -> list[_Raw]:
        root = tree.root_node
        out: list[_Raw] = []
        if len(self.items) == 1:
            p = self.items[0]
            plan = self._top_plan
            for cand in self._candidates(root, source):
                env = self._node(p, cand, {}) if plan is None else plan(cand, {})
                if env is not None:
                    out.append((cand.start_byte, cand.end_byte, [cand], env))
        else:
            first = self.items[0]
            seen: set[tuple[int, int]] = set()
            for found in self._candidates(root):
                cand = self._lifted(found) if self.wrapper_ids else found
                parent = cand.parent
                if parent is None:
                    continue
                kids = self._sig(parent)
                idx = next((k for k, c in enumerate(kids) if c == cand), None)
                if idx is not None and kids[idx].kind_id in self.cont_ids:
                    continue  # `.b` in `a.b.c()` does not start an expression
                if idx is None or (isinstance(first, MetaVar) and (parent.id, idx) in seen):
                    continue
                seen.add((parent.id, idx))
                env = self._seq(self.items, 0, kids, idx, {}, whole=False)
                if env is None:
                    continue
                end = env.pop("\0end")
                matched = kids[idx:end]
                if matched:
                    out.append((matched[0].start_byte, matched[-1].end_byte, matched, env))
        for other in self._also:
            out.extend(other._raw(tree, source))
        return out

    def _match(self, nodes: list[ts.Node], env: Env) -> Match:
        caps: dict[str, tuple[int, int]] = {}
        start, end = nodes[0].start_byte, nodes[-1].end_byte
        edit_start = env.get("\0s", start)
        edit_end = env.get("\0e", end)
        lossy: int | None = None
        kept: int | None = None
        for a, b, line in env.get("\0skips", ()):
            if a < edit_end and b > edit_start:
                lossy = line if lossy is None else lossy
            elif kept is None:
                kept = line
        for name, value in env.items():
            if name.startswith("\0"):
                continue
            if isinstance(value, list):
                caps[name] = (
                    _run_span(value, self.grammar.list_comma_ids, (start, end))
                    if value
                    else (-1, -1)
                )
            else:
                caps[name] = (value.start_byte, value.end_byte)
        return Match(
            start,
            end,
            tuple(nodes[0].start_point),  # type: ignore[arg-type]
            tuple(nodes[-1].end_point),  # type: ignore[arg-type]
            caps,
            edit_start,
            edit_end,
            lossy,
            kept,
        )

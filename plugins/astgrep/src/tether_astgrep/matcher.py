"""Match a compiled pattern against a parsed file.

Semantics (documented in the README): kinds must be equal, leaves compare by exact text,
comments and commas never count (so a trailing comma is insignificant), `$X` matches one named
node, `$$$X` a lazy, possibly empty run of siblings, a repeated metavariable must capture the
same tokens, and nothing inside a string literal or a comment is ever a candidate.
How much of the candidate the pattern must account for is its strictness (`STRICTNESS`):
by default ("smart", as in ast-grep) keywords and punctuation the pattern does not mention
(`async`) and trailing children (an `else`, more `except` clauses) do not prevent a match.
"""

from __future__ import annotations

from typing import Any

import attrs
import tree_sitter as ts

from tether_astgrep.grammars import Grammar
from tether_astgrep.pattern import (
    STRICTNESS,
    CompiledPattern,
    MetaVar,
    PItem,
    PNode,
    whole_literal,
)

Env = dict[str, Any]  # name -> ts.Node (single) or list[ts.Node] (multi)
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


class _N:
    __slots__ = ("children", "ids", "named", "optional", "text")

    def __init__(
        self,
        ids: frozenset[int],
        text: bytes | None,
        children: tuple[Any, ...],
        named: bool,
        optional: bool = False,
    ):
        self.ids = ids
        self.text = text
        self.children = children
        self.named = named
        self.optional = optional


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def query_source(root: PNode, budget: int = 48, *, tokens: bool = True, texts: bool = True) -> str:
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


def _run_span(nodes: list[ts.Node], commas: frozenset[int] = frozenset()) -> tuple[int, int]:
    """A `$$$` run's bytes, with the comments at its edges when it reaches its container's
    opening or closing token: `{ $$$B }` keeps a block's last `// note`; and with the trailing
    comma of a list it ends (`f(a, b,)`: `a, b,`, as ast-grep captures it)."""
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
    return start, end


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
                if node.text and (node.named or not node.text.startswith(b"#")):
                    anchors.setdefault(node.text, set()).add(depth)
            else:
                stack.extend((c, depth + 1) for c in node.children)
    return [(lit, tuple(sorted(d))) for lit, d in anchors.items()]


class Matcher:
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
        lang = grammar.ts_language
        self._ids: dict[tuple[str, bool], frozenset[int]] = {}
        for i, name in enumerate(grammar.kind_names):
            key = (name, lang.node_kind_is_named(i))
            self._ids[key] = self._ids.get(key, frozenset()) | {i}
        # The fields each pattern node fills, by its children tuple (`_seq`'s `ps`).
        self._fields: dict[int, tuple[tuple[Any, ...], frozenset[str]]] = {}
        self.items = tuple(self._prep(i) for i in pattern.items)
        self.comma_ids = grammar.comma_ids
        self.string_ids = grammar.string_ids
        self.code_ids = grammar.code_in_string_ids
        self.cont_ids = grammar.continuation_ids
        self.wrapper_ids = grammar.wrapper_ids
        # Clauses (`except_clause`, `elif_clause`, `else_clause`…) the pattern does not mention
        # may come before the one it does, as trailing ones may come after.
        self.clause_ids = frozenset(
            i
            for i, n in enumerate(grammar.kind_names)
            if n.endswith("_clause") or n in grammar.clause_kinds
        )
        # Leading modifiers the pattern does not mention (`pub`, Dart's `abstract`): named
        # kinds called `…modifier…`, and those the grammar lists in `modifier_kinds`.
        lang = grammar.ts_language
        self.modifier_ids = frozenset(
            i
            for i, n in enumerate(grammar.kind_names)
            if lang.node_kind_is_named(i) and ("modifier" in n or n in grammar.modifier_kinds)
        )
        self._query: ts.Query | None = None
        first = pattern.items[0]
        self._anchors = _anchors(pattern)
        self._root_ids = self.items[0].ids if isinstance(self.items[0], _N) else frozenset()
        # Built on first use: a pattern with literal anchors never needs it, and compiling a
        # query can take long in a large grammar (Swift: 90 s for one `guard` pattern).
        self._query_pending = isinstance(first, PNode) and grammar.query_candidates

    def _prep(self, item: PItem) -> Any:
        if isinstance(item, MetaVar):
            return item
        ids = self._ids.get((item.kind, item.named), frozenset())
        children = tuple(self._prep(c) for c in item.children)
        if item.text is None:
            self._fields[id(children)] = (children, item.fields)
        return _N(ids, item.text, children, item.named, item.optional)

    # -- candidates -----------------------------------------------------------------

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

    def _candidates(self, root: ts.Node, source: bytes | None = None) -> list[ts.Node]:
        found: list[ts.Node] | None = None
        if self._anchors and source is not None:
            found = self._anchored(root, source)
        elif self._kind_query() is not None:
            assert self._query is not None
            found = ts.QueryCursor(self._query).captures(root).get("c", [])
        if found is not None:
            string_ids, code_ids = self.string_ids, self.code_ids
            if not string_ids:
                return found
            out = []
            for node in found:
                parent = node.parent
                if (
                    parent is not None
                    and parent.kind_id in string_ids
                    and node.kind_id not in code_ids
                ):
                    continue
                out.append(node)
            return out
        return list(self._walk(root))

    def _kind_query(self) -> ts.Query | None:
        if self._query_pending:
            self._query_pending = False
            first = self.pattern.items[0]
            assert isinstance(first, PNode)
            try:
                source = query_source(
                    first, tokens=not self.skip_goal_tokens, texts=not self.kind_only
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

    # -- matching ---------------------------------------------------------------------

    def _sig(self, node: ts.Node) -> list[ts.Node]:
        return self.grammar.significant(node)

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
            if p.container is not None and n.type == p.container and self.grammar.is_list(n):
                return None
            return self._bind(p, n, env)
        if n.kind_id not in p.ids:
            inner = self._unwrapped(n)
            return None if inner is None else self._node(p, inner, env)
        if p.text is not None:
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

    def _seq(
        self, ps: tuple[Any, ...], i: int, cs: list[ts.Node], j: int, env: Env, *, whole: bool
    ) -> Env | None:
        while True:
            if i == len(ps):
                return self._seq_end(cs, j, env, whole=whole)
            p = ps[i]
            if isinstance(p, MetaVar) and p.multi:
                return self._seq_run(ps, i, cs, j, env, whole=whole)
            if isinstance(p, _N) and p.optional:
                if j < len(cs) and (e2 := self._node(p, cs[j], env)) is not None:
                    env, j = e2, j + 1
                i += 1
                continue
            if j == len(cs):
                if self.skip_goal_tokens and isinstance(p, _N) and p.text is not None:
                    if not p.named:
                        i += 1
                        continue
                return None
            if isinstance(p, MetaVar) and self.cont_ids:
                return self._absorbing(p, ps, i, cs, j, env, whole=whole)
            e2 = self._node(p, cs[j], env)
            if e2 is not None:
                env, i, j = e2, i + 1, j + 1
                continue
            if self.strict or isinstance(p, MetaVar):
                return None
            state = self._skip(ps, i, cs, j, env)
            if state is None:
                return None
            env, i, j = state

    def _seq_end(self, cs: list[ts.Node], j: int, env: Env, *, whole: bool) -> Env | None:
        """The pattern's children are all matched: what the candidate's left (`cs[j:]`) allows."""
        if whole and j != len(cs):
            # Trailing children the pattern does not mention: smart accepts any,
            # ast/signature only keywords and punctuation, cst none; never one more item
            # of a list (an argument, an element).
            if self.strict or not (self.any_trailing or all(not c.is_named for c in cs[j:])):
                return None
            if self.grammar.listed(cs[j]):
                return None
            if self.track:
                env = self._skipped(
                    env, cs[j].start_byte, cs[-1].end_byte, cs[j].start_point[0] + 1
                )
        if not whole:
            env = dict(env)
            env["\0end"] = j
        return env

    def _seq_run(
        self, ps: tuple[Any, ...], i: int, cs: list[ts.Node], j: int, env: Env, *, whole: bool
    ) -> Env | None:
        """`ps[i]` is a `$$$` run: the first length of it after which the rest matches."""
        p = ps[i]
        rest = ps[i + 1 :]
        last = all(isinstance(q, _N) and q.optional for q in rest)
        ks: Any = [len(cs)] if last and whole else range(j, len(cs) + 1)
        if rest and last and whole and len(cs) > j and self._node(rest[0], cs[-1], env) is not None:
            ks = [len(cs) - 1]  # the run ends before the token it may end with
        # Before the pattern's next token (`}` in `{ $$$M }`), a token that is not it belongs
        # to the run (a member's `;`), not to code the pattern leaves unmentioned.
        nxt = rest[0] if rest else None
        closing: frozenset[int] | None = (
            nxt.ids
            if isinstance(nxt, _N)
            and not nxt.named
            and nxt.text is not None
            and not nxt.optional
            and not self.skip_goal_tokens
            else None
        )
        for k in ks:
            if (
                closing is not None
                and k < len(cs)
                and not cs[k].is_named
                and cs[k].kind_id not in closing
            ):
                continue
            e2 = self._bind(p, cs[j:k], env)
            if e2 is None:
                continue
            r = self._seq(ps, i + 1, cs, k, e2, whole=whole)
            if r is not None:
                return r
        return None

    def _skip(
        self, ps: tuple[Any, ...], i: int, cs: list[ts.Node], j: int, env: Env
    ) -> tuple[Env, int, int] | None:
        """`ps[i]` does not match `cs[j]`: the state after skipping what the pattern may leave
        unmentioned (`env, i, j`), or None when `cs[j]` cannot be skipped."""
        p = ps[i]
        c = cs[j]
        goal_token = self.skip_goal_tokens and p.text is not None and not p.named
        if self.grammar.listed(c):
            # An argument, parameter or element is never unmentioned code: `f($X)` does not
            # find `f(x, true)`.
            return (env, i + 1, j) if goal_token else None
        token = self._is_token(c)
        if self.any_trailing and c.is_named and self._unmentioned_part(p, ps, i, c):
            # An optional part in a field the pattern leaves empty (a return type, type
            # parameters), or a clause of a kind the pattern has none of (Rust's `where`):
            # unmentioned, like a leading modifier.
            if self.track:
                env = self._skipped(env, c.start_byte, c.end_byte, c.start_point[0] + 1)
            return env, i, j + 1
        clause = c.kind_id in self.clause_ids and not p.ids.isdisjoint(self.clause_ids)
        if clause:
            # A chain that nests its last clause (Ruby's `elsif … else`): the clause the
            # pattern names may end the one it does not.
            nested = self._chained_clause(p, c, env)
            if nested is not None:
                return nested, i + 1, j + 1
        inner = self._inner_token(c)
        if (
            (token and not self._between_tokens(p, ps, i))
            or inner
            or clause
            or (i == 0 and c.kind_id in self.modifier_ids)
        ):
            # A keyword or punctuation the pattern does not have (`async`), a clause
            # before the one the pattern names (an earlier `except`), or a modifier
            # before anything the pattern names (`pub`, `abstract`): skip it.
            return self._skip_unmentioned(p, ps, i, cs, j, env, goal_token, clause, token)
        if goal_token:
            return env, i + 1, j
        return None

    def _is_token(self, c: ts.Node) -> bool:
        """Whether `c` is a token: unnamed, or a keyword the grammar makes a named leaf
        (Swift's `throws`); a value leaf (`true`, `nil`, `this`, a name) never is
        (`Grammar.is_value_kind`)."""
        return (
            not c.is_named
            or (
                c.end_byte - c.start_byte == len(c.type)  # (cheap; reading text copies it)
                and c.child_count == 0
                and c.text == c.type.encode()
                and not self.grammar.is_value_kind(c.type)
            )
            or (c.child_count == 0 and c.type in self.grammar.keyword_kinds)
        )

    def _between_tokens(self, p: Any, ps: tuple[Any, ...], i: int) -> bool:
        """Whether `p` (`ps[i]`) is a token right after another token of the pattern: smart
        never skips code between two tokens the pattern writes side by side (`for (` does
        not match `for await (`), which keeps its prefilter sound."""
        return (
            not self.skip_goal_tokens
            and p.text is not None
            and i > 0
            and isinstance(ps[i - 1], _N)
            and ps[i - 1].text is not None
        )

    def _inner_token(self, c: ts.Node) -> bool:
        """Whether `c` is a token its definition may carry between two tokens a pattern
        writes side by side (`Grammar.inner_tokens`: Swift's `init?`, and `init!` whose `!`
        the grammar names `bang`)."""
        parent = c.parent
        return (
            self.any_trailing
            and parent is not None
            and c.type in self.grammar.inner_tokens.get(parent.type, ())
        )

    def _unmentioned_part(self, p: Any, ps: tuple[Any, ...], i: int, c: ts.Node) -> bool:
        """Whether the named node `c` is an optional part the pattern (`ps`, at `p = ps[i]`)
        leaves out: in a field it leaves empty, or a clause of a kind it has none of — never
        one a `$$$` run right before `p` may take (Scala's `{ $$$C }` holds `case` clauses,
        Swift's parameters end with a default value)."""
        if i > 0 and isinstance(ps[i - 1], MetaVar) and ps[i - 1].multi:
            return False  # the run takes it (Swift's last default value `= [:]`)
        return self._unfilled(ps, i, c) or (
            c.kind_id in self.clause_ids
            and p.ids.isdisjoint(self.clause_ids)
            and all(c.kind_id not in q.ids for q in ps if isinstance(q, _N))
        )

    def _skip_unmentioned(
        self,
        p: Any,
        ps: tuple[Any, ...],
        i: int,
        cs: list[ts.Node],
        j: int,
        env: Env,
        goal_token: bool,
        clause: bool,
        token: bool,
    ) -> tuple[Env, int, int]:
        """Skip `cs[j]` (a token, clause or modifier the pattern leaves out) and what goes
        with it: a clause's body, or the node a punctuation token introduces."""
        c = cs[j]
        if self.track:
            env = self._skipped(env, c.start_byte, c.end_byte, c.start_point[0] + 1)
        if goal_token:
            i += 1
        j += 1
        if clause:
            env, j = self._skip_clause_body(p, cs, j, env)
        elif token:
            env, j = self._skip_introduced(p, ps, i, cs, j, c, env)
        return env, i, j

    def _unfilled(self, ps: tuple[Any, ...], i: int, c: ts.Node) -> bool:
        """Whether `c` fills a field of its parent that the pattern node (children `ps`)
        leaves empty, after a name or a node the pattern names (`ps[i - 1]`), not right after
        a keyword (Swift's `catch { … }` is the untyped catch)."""
        if i == 0 or (isinstance(ps[i - 1], _N) and ps[i - 1].text is not None):
            return False
        entry = self._fields.get(id(ps))
        parent = c.parent
        # Only in a definition (the pattern's node fills a `body`): `$A = $B` does not find
        # Python's `x: int = 1`, nor Rust's `let $X = $Y;` a `let x: T = y;`, as in ast-grep.
        if entry is None or entry[0] is not ps or parent is None or "body" not in entry[1]:
            return False
        for k, child in enumerate(parent.children):
            if child == c:
                field = parent.field_name_for_child(k)
                return field is not None and field not in entry[1]
        return False

    def _skip_clause_body(self, p: Any, cs: list[ts.Node], j: int, env: Env) -> tuple[Env, int]:
        """A clause whose body the grammar puts after it (Dart's `catch (e)` then its
        block): the body goes with the unmentioned clause."""
        while (
            j < len(cs)
            and cs[j].is_named
            and cs[j].kind_id not in self.clause_ids
            and self._node(p, cs[j], env) is None
            and not self.grammar.listed(cs[j])
        ):
            if self.track:
                env = self._skipped(env, cs[j].start_byte, cs[j].end_byte, cs[j].start_point[0] + 1)
            j += 1
        return env, j

    def _skip_introduced(
        self,
        p: Any,
        ps: tuple[Any, ...],
        i: int,
        cs: list[ts.Node],
        j: int,
        c: ts.Node,
        env: Env,
    ) -> tuple[Env, int]:
        """After skipping the token `c` (`cs[j]` is next, `ps[i]` still to match, `p` the
        item `c` was tried against): the node `c` introduces, when unmentioned too."""
        if (
            self.any_trailing
            and (p.text is None or not p.named)
            and i > 0
            and not isinstance(ps[i - 1], MetaVar)
            and j < len(cs)
            and cs[j].is_named
            and not any(ch.isalnum() for ch in (c.text or b"x").decode("latin-1"))
            and self._node(p, cs[j], env) is None
            and not self.grammar.listed(cs[j])
        ):
            # The node an unmentioned punctuation token introduces, before a node
            # the pattern names (Swift's `-> Double` before a function body, `: P`
            # before a struct's body): unmentioned too. Not after a word: Rust's
            # `impl $T {…}` does not find `impl T for U {…}`; nor right after a
            # metavariable, which could then bind the wrong part (Kotlin's
            # `fun A.f()`: `$F` would be the receiver type).
            if self.track:
                env = self._skipped(env, cs[j].start_byte, cs[j].end_byte, cs[j].start_point[0] + 1)
            j += 1
        return env, j

    def _chained_clause(self, p: Any, c: ts.Node, env: Env) -> Env | None:
        """`p` matched against the clause that ends clause `c`, nested as deep as it goes."""
        node = c
        while True:
            kids = self._sig(node)
            if not kids or kids[-1].kind_id not in self.clause_ids:
                return None
            node = kids[-1]
            if node.kind_id in p.ids:
                found = self._node(p, node, env)
                if found is not None and self.track:
                    found = self._skipped(
                        found, c.start_byte, node.start_byte, c.start_point[0] + 1
                    )
                return found

    def _absorbing(
        self,
        p: MetaVar,
        ps: tuple[Any, ...],
        i: int,
        cs: list[ts.Node],
        j: int,
        env: Env,
        *,
        whole: bool,
    ) -> Env | None:
        """`$X` over a node and the continuation siblings after it: longest first, so that it
        captures a whole expression (Dart's `int.parse(a)` is `int`, `.parse`, `(a)`), and
        shorter only where the pattern goes on (`$X.dispose()` binds `a.b` in
        `a.b.dispose()`)."""
        cont = self.cont_ids
        if not cs[j].is_named or cs[j].kind_id in cont:
            return None
        ends = [j + 1]
        tokens = self.grammar.continuation_token_ids
        while (k := ends[-1]) < len(cs):
            if cs[k].kind_id in cont:
                ends.append(k + 1)
            elif cs[k].kind_id in tokens and k + 1 < len(cs) and cs[k + 1].is_named:
                ends.append(k + 2)  # `.` and the name after it (`p.Q`)
            else:
                break
        for k in reversed(ends):
            e2 = self._bind(p, cs[j] if k == j + 1 else cs[j:k], env)
            if e2 is not None:
                r = self._seq(ps, i + 1, cs, k, e2, whole=whole)
                if r is not None:
                    return r
        return None

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
            node_match = self._node
            for cand in self._candidates(root, source):
                env = node_match(p, cand, {})
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
                caps[name] = _run_span(value, self.grammar.list_comma_ids) if value else (-1, -1)
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

"""What the pattern leaves unmentioned: the candidate's parts a match may skip.

By default ("smart", as in ast-grep) a keyword or punctuation the pattern does not write
(`async`), a clause before the one it names (an earlier `except`), a leading modifier (`pub`),
an optional part in a field the pattern leaves empty (a return type) and what such a token or
clause brings with it do not prevent a match; an argument, parameter or element never is
unmentioned. In edit mode every skip is recorded, so a rewrite keeps it or reports it lost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import tree_sitter as ts

from tether_astgrep.pattern import MetaVar
from tether_astgrep.sequences import _N, Env

if TYPE_CHECKING:
    from tether_astgrep.grammars import Grammar


class Unmentioned:
    """The part of `Matcher` that skips unmentioned code (a mixin: `Matcher` sets the state)."""

    grammar: Grammar
    skip_goal_tokens: bool
    any_trailing: bool
    track: bool
    clause_ids: frozenset[int]
    modifier_ids: frozenset[int]
    _fields: dict[int, tuple[tuple[Any, ...], frozenset[str]]]

    if TYPE_CHECKING:  # defined by `Matcher`

        def _node(self, p: Any, n: ts.Node, env: Env) -> Env | None: ...

        def _sig(self, node: ts.Node) -> list[ts.Node]: ...

        @staticmethod
        def _skipped(env: Env, start: int, end: int, line: int) -> Env: ...

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

    def _after_run_refusal(self) -> Callable[[ts.Node], bool]:
        """A function of a named node `c`: whether `_skip` surely refuses it at `ps[i]`, a token
        right after a `$$$` run (`ps[i - 1]`), when goal tokens are not skipped and the token is
        no clause. There it skips only a token (`_is_token`: a leaf, never one of a value kind
        that is no keyword kind) or an inner token; an unmentioned part never comes right after
        a run (`_unmentioned_part`). A plan then knows a run does not end before `c` without
        asking whether `c` is an item of a list (plans.py)."""
        inner, keywords = self.grammar.inner_token_ids, self.grammar.keyword_kinds
        values: dict[int, bool] = {}  # by kind: a value kind, no keyword kind

        def refused(c: ts.Node) -> bool:
            kind = c.kind_id
            if kind in inner:
                return False
            if c.child_count:
                return True
            value = values.get(kind)
            if value is None:
                name = c.type
                value = values[kind] = name not in keywords and self.grammar.is_value_kind(name)
            return value or not self._is_token(c)

        return refused

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

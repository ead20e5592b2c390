"""Matching a pattern node's children against a candidate's: the sequence walk.

`_seq` goes along both lists: a `$$$` run (`_seq_run`) takes the shortest run of siblings
after which the rest matches, `$X` in a grammar with continuation siblings (`_absorbing`)
takes the longest expression, optional pattern parts may be absent, and what the candidate
has that the pattern does not mention is left to `Unmentioned._skip` (strictness permitting)
and, at the end, to `_seq_end`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import tree_sitter as ts

from tether_astgrep.pattern import MetaVar

if TYPE_CHECKING:
    from tether_astgrep.grammars import Grammar

Env = dict[str, Any]  # name -> ts.Node (single) or list[ts.Node] (multi)


class _N:
    __slots__ = ("children", "ids", "named", "optional", "supplied", "text")

    def __init__(
        self,
        ids: frozenset[int],
        text: bytes | None,
        children: tuple[Any, ...],
        named: bool,
        optional: bool = False,
        supplied: bool | None = None,
    ):
        self.ids = ids
        self.text = text
        self.children = children
        self.named = named
        self.optional = optional
        # True: only a token the grammar supplied (MISSING); False: only a written one.
        self.supplied = supplied


class Sequences:
    """The part of `Matcher` that matches sibling lists (a mixin: `Matcher` sets the state)."""

    grammar: Grammar
    strict: bool
    skip_goal_tokens: bool
    any_trailing: bool
    track: bool
    cont_ids: frozenset[int]
    wrapper_ids: frozenset[int]
    # `_run_plan`'s, by the id of the children tuple and the run's index (with the tuple)
    _run_plans: dict[tuple[int, int], tuple[tuple[Any, ...], Any]]

    if TYPE_CHECKING:  # defined by `Matcher` and `Unmentioned`

        def _node(self, p: Any, n: ts.Node, env: Env) -> Env | None: ...

        def _bind(self, var: MetaVar, value: Any, env: Env) -> Env | None: ...

        @staticmethod
        def _skipped(env: Env, start: int, end: int, line: int) -> Env: ...

        def _skip(
            self, ps: tuple[Any, ...], i: int, cs: list[ts.Node], j: int, env: Env
        ) -> tuple[Env, int, int] | None: ...

    def _seq(
        self,
        ps: tuple[Any, ...],
        i: int,
        cs: list[ts.Node],
        j: int,
        env: Env,
        *,
        whole: bool,
        tried: bool = False,
    ) -> Env | None:
        """`ps[i:]` against `cs[j:]`; `tried`: a plan (plans.py) has found that `ps[i]`, a
        plain part, does not match `cs[j]`."""
        # (each item is a MetaVar or an `_N`: one type check per item)
        end_ps, end_cs = len(ps), len(cs)
        while True:
            if i == end_ps:
                return self._seq_end(cs, j, env, whole=whole)
            p = ps[i]
            var = isinstance(p, MetaVar)
            if var:
                if p.multi:
                    return self._seq_run(ps, i, cs, j, env, whole=whole)
            elif p.optional:
                if j < end_cs and (e2 := self._node(p, cs[j], env)) is not None:
                    env, j = e2, j + 1
                i += 1
                continue
            if j == end_cs:
                if self.skip_goal_tokens and not var and p.text is not None:
                    if not p.named:
                        i += 1
                        continue
                return None
            if var and self.cont_ids:
                return self._absorbing(p, ps, i, cs, j, env, whole=whole)
            e2 = None if tried else self._node(p, cs[j], env)
            if e2 is not None:
                env, i, j = e2, i + 1, j + 1
                continue
            tried = False
            if var:
                return None if cs[j].is_named else self._bracketed(p, ps, i, cs, j, env, whole)
            if self.strict:
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
        self,
        ps: tuple[Any, ...],
        i: int,
        cs: list[ts.Node],
        j: int,
        env: Env,
        *,
        whole: bool,
    ) -> Env | None:
        """`ps[i]` is a `$$$` run: the first length of it after which the rest matches."""
        p, rest, last, closing = self._run_plan(ps, i)
        ks: Any = [len(cs)] if last and whole else range(j, len(cs) + 1)
        if rest and last and whole and len(cs) > j and self._node(rest[0], cs[-1], env) is not None:
            ks = [len(cs) - 1]  # the run ends before the token it may end with
        for k in ks:
            if closing is not None and k < len(cs):
                c = cs[k]
                if c.kind_id not in closing and (
                    not c.is_named
                    # what `_seq` would find at `k`: a named node that is not the token, no
                    # wrapper of it, and not skippable (an item of a list never is)
                    or (
                        c.kind_id not in self.wrapper_ids
                        and (self.strict or self.grammar.listed(c))
                    )
                ):
                    continue
            e2 = self._bind(p, cs[j:k], env)
            if e2 is None:
                continue
            r = self._seq(ps, i + 1, cs, k, e2, whole=whole)
            if r is not None:
                return r
        return None

    def _run_plan(
        self, ps: tuple[Any, ...], i: int
    ) -> tuple[MetaVar, tuple[Any, ...], bool, frozenset[int] | None]:
        """What `_seq_run` needs of the pattern at `ps[i]`, worked out once per pattern node:
        the run, the items after it, whether those are all optional, and the ids of the token
        that must come right after it (`}` in `{ $$$M }`): before it, a token that is not it
        belongs to the run (a member's `;`), not to code the pattern leaves unmentioned."""
        key = (id(ps), i)
        plan = self._run_plans.get(key)
        if plan is None or plan[0] is not ps:
            rest = ps[i + 1 :]
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
            last = all(isinstance(q, _N) and q.optional for q in rest)
            plan = self._run_plans[key] = (ps, (ps[i], rest, last, closing))
        return plan[1]

    def _bracketed(
        self,
        p: MetaVar,
        ps: tuple[Any, ...],
        i: int,
        cs: list[ts.Node],
        j: int,
        env: Env,
        whole: bool,
    ) -> Env | None:
        """`$X` over a list between two tokens that the grammar spells as siblings of the node
        around it (Swift's `case let (a, b)`: `(`, pattern, `,`, pattern, `)` in the `if`): the
        whole bracketed list, as it binds a tuple the grammar makes one node. Only items a
        list comma separates count; `$X` never binds a lone token."""
        k = j + 1
        while k < len(cs) and cs[k].is_named:
            k += 1
        if p.multi or k - j < 3 or k == len(cs):
            return None
        if not all(self.grammar.listed(c) for c in cs[j + 1 : k]):
            return None
        e2 = self._bind(p, cs[j : k + 1], env)
        return None if e2 is None else self._seq(ps, i + 1, cs, k + 1, e2, whole=whole)

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

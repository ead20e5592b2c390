"""Each pattern node compiled once into a function that matches it as `Matcher._node` does.

A plan does the common case with what it needs of the pattern looked up once: the candidate's
children in the places the pattern's parts take, in order (tokens, `$X`, inner nodes, at most
one `$$$` run, which then takes what lies between the parts before and after it). Anything
else (a part that does not match there, an optional part, `$X` in a grammar with
continuation siblings, a run end the walk would try earlier) goes to `Sequences._seq` or
`_seq_run`, in the state the walk would have reached there: so a plan's answer is always
`_node`'s (`test_plans`). Edit mode (`track`) never uses plans: it records each step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import tree_sitter as ts

from tether_astgrep.pattern import MetaVar, whole_literal
from tether_astgrep.sequences import _N, Env

if TYPE_CHECKING:
    from tether_astgrep.grammars import Grammar

Plan = Callable[[ts.Node, Env], "Env | None"]  # a node against one pattern node


class Plans:
    """The part of `Matcher` that compiles plans (a mixin: `Matcher` sets the state)."""

    grammar: Grammar
    strict: bool
    skip_goal_tokens: bool
    kind_only: bool
    cont_ids: frozenset[int]
    wrapper_ids: frozenset[int]
    clause_ids: frozenset[int]
    sig_memo: dict[int, list[ts.Node]] | None

    if TYPE_CHECKING:  # defined by `Matcher` and `Sequences`

        def _node(self, p: Any, n: ts.Node, env: Env) -> Env | None: ...

        def _sig(self, node: ts.Node) -> list[ts.Node]: ...

        def _bind(self, var: MetaVar, value: Any, env: Env) -> Env | None: ...

        def _after_run_refusal(self) -> Callable[[ts.Node], bool]: ...

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
        ) -> Env | None: ...

        def _seq_run(
            self, ps: tuple[Any, ...], i: int, cs: list[ts.Node], j: int, env: Env, *, whole: bool
        ) -> Env | None: ...

    def _plan(self, p: _N) -> Plan:
        """A function of (node, env) whose answer is `self._node(p, node, env)`'s."""
        if p.text is not None:
            return self._leaf_plan(p)
        general, seq, ids, ps = self._node, self._seq, p.ids, p.children
        parts = self._parts(ps)
        if parts is None:  # `_seq` does all of this node's parts

            def walked(n: ts.Node, env: Env) -> Env | None:
                if n.kind_id in ids:
                    return seq(ps, 0, self._sig(n), 0, env, whole=True)
                return general(p, n, env)

            return walked
        tokens, steps, run = parts
        count = len(ps)
        if run is None:

            def fixed(n: ts.Node, env: Env) -> Env | None:
                if n.kind_id not in ids:
                    return general(p, n, env)
                memo = self.sig_memo
                cs = memo.get(n.id) if memo is not None else None
                if cs is None:
                    cs = self._sig(n)
                if len(cs) < count:
                    return seq(ps, 0, cs, 0, env, whole=True)
                for i, token_ids in tokens:
                    c = cs[i]
                    if c.kind_id not in token_ids or (c.child_count and not whole_literal(c)):
                        return seq(ps, 0, cs, 0, env, whole=True)
                for i, step in steps:
                    found = step(cs[i], env)
                    if found is None:
                        return seq(ps, i, cs, i, env, whole=True, tried=True)
                    env = found
                # all parts matched: `_seq_end` says what the children left over allow
                return env if len(cs) == count else seq(ps, count, cs, count, env, whole=True)

            return fixed
        return self._run_plan_of(p, tokens, steps, run)

    def _run_plan_of(
        self,
        p: _N,
        tokens: list[tuple[int, frozenset[int]]],
        steps: list[tuple[int, Plan]],
        r: int,
    ) -> Plan:
        """The plan of a node with the run `p.children[r]`, when no earlier end of it would do
        (`_early_ends`): the parts before it in place, those after it at the end."""
        general, seq, run, ids, ps = self._node, self._seq, self._seq_run, p.ids, p.children
        var, count, after = ps[r], len(ps), len(ps) - r - 1
        before_tokens = [(i, t) for i, t in tokens if i < r]
        after_tokens = [(i - count, t) for i, t in tokens if i > r]  # from the end
        before_steps = [(i, s) for i, s in steps if i < r]
        after_steps = [(i - count, s) for i, s in steps if i > r]
        closing = ps[r + 1].ids if after else frozenset()
        ends_early = self._early_ends(r, closing)
        bind_run = self._run_binder(var)
        if count == 1:
            return self._lone_run_plan(p, bind_run)

        def with_run(n: ts.Node, env: Env) -> Env | None:
            if n.kind_id not in ids:
                return general(p, n, env)
            memo = self.sig_memo
            cs = memo.get(n.id) if memo is not None else None
            if cs is None:
                cs = self._sig(n)
            size = len(cs)
            if size < count - 1:
                return seq(ps, 0, cs, 0, env, whole=True)
            for i, token_ids in before_tokens:
                c = cs[i]
                if c.kind_id not in token_ids or (c.child_count and not whole_literal(c)):
                    return seq(ps, 0, cs, 0, env, whole=True)
            for i, step in before_steps:
                found = step(cs[i], env)
                if found is None:
                    return seq(ps, i, cs, i, env, whole=True, tried=True)
                env = found
            # from here on, anything unusual is `_seq_run`'s to do from the run's start
            end = size - after
            if after and ends_early(n, cs, end):
                return run(ps, r, cs, r, env, whole=True)
            bound = bind_run(cs[r:end], env)
            if bound is None:
                return run(ps, r, cs, r, env, whole=True)
            for i, token_ids in after_tokens:
                c = cs[size + i]
                if c.kind_id not in token_ids or (c.child_count and not whole_literal(c)):
                    return run(ps, r, cs, r, env, whole=True)
            for i, step in after_steps:
                found = step(cs[size + i], bound)
                if found is None:
                    return run(ps, r, cs, r, env, whole=True)
                bound = found
            return bound

        return with_run

    def _lone_run_plan(self, p: _N, bind_run: Callable[[list[ts.Node], Env], Env | None]) -> Plan:
        """The plan of a node whose one part is a run (a body, `{ $$$B }`): it takes every
        child (`_seq_run` with nothing after the run)."""
        general, ids = self._node, p.ids

        def lone(n: ts.Node, env: Env) -> Env | None:
            if n.kind_id not in ids:
                return general(p, n, env)
            memo = self.sig_memo
            cs = memo.get(n.id) if memo is not None else None
            # a copy, as `_seq_run` binds: the kept list never goes into a match
            return bind_run((self._sig(n) if cs is None else cs)[:], env)

        return lone

    def _early_ends(self, r: int, closing: frozenset[int]) -> Callable[..., bool]:
        """Whether `_seq_run`, its run at `r`, would try to end it before `end` in `cs`, the
        children of `n` (a token of the kind after it, a wrapper, a named node that is not
        an item of a list): its closing-token filter, with `listed` read from `n.children`."""
        wrappers, strict, listed_at = self.wrapper_ids, self.strict, self.grammar.listed_at
        commas = self.grammar.list_comma_ids
        # `_seq_run` tries an end before a named node unless it is an item of a list; there
        # `_skip` refuses most nodes anyway, and then that end fails: no need to ask.
        refused = (
            self._after_run_refusal() if closing.isdisjoint(self.clause_ids) else lambda c: False
        )

        def ends_early(n: ts.Node, cs: list[ts.Node], end: int) -> bool:
            kids: list[ts.Node] = []
            at = 0
            for k in range(r, end):
                c = cs[k]
                kind = c.kind_id
                if kind in closing:
                    return True
                if not c.is_named:
                    continue
                if kind in wrappers:
                    return True
                if strict or refused(c):
                    continue
                if not kids:
                    kids = n.children
                # `cs` is taken from `n.children`, whose nodes py-tree-sitter keeps: the same
                # objects (else the run is left to `_seq_run`)
                while at < len(kids) and kids[at] is not c:
                    at += 1
                if at == len(kids):
                    return True
                # a comma right before or after it (what `listed_at` looks at first)
                near = kids[at - 1] if at else None
                if near is not None and near.kind_id in commas and not near.is_extra:
                    continue
                near = kids[at + 1] if at + 1 < len(kids) else None
                if near is not None and near.kind_id in commas and not near.is_extra:
                    continue
                if not listed_at(n, kids, at):
                    return True
            return False

        return ends_early

    def _run_binder(self, var: MetaVar) -> Callable[[list[ts.Node], Env], Env | None]:
        """`self._bind(var, nodes, env)` for a `$$$` run, a new name bound inline."""
        name, bind = var.name, self._bind

        def bind_run(nodes: list[ts.Node], env: Env) -> Env | None:
            if name is None:
                return env
            if name in env:
                return bind(var, nodes, env)
            new = dict(env)
            new[name] = nodes
            return new

        return bind_run

    def _parts(
        self, ps: tuple[Any, ...]
    ) -> tuple[list[tuple[int, frozenset[int]]], list[tuple[int, Plan]], int | None] | None:
        """`ps` sorted for a plan: plain tokens (checked by kind), the other parts' plans in
        order, and the run's index; None when a part is one only `_seq` does."""
        tokens: list[tuple[int, frozenset[int]]] = []
        steps: list[tuple[int, Plan]] = []
        run: int | None = None
        for i, q in enumerate(ps):
            if isinstance(q, MetaVar):
                if q.multi:
                    if run is not None:
                        return None
                    run = i
                elif q.container is None and not self.cont_ids:
                    steps.append((i, self._var_plan(q)))
                else:
                    return None
            elif q.optional:
                return None
            elif q.text is not None and not q.named and q.supplied is None:
                tokens.append((i, q.ids))
            else:
                steps.append((i, self._plan(q)))
        if run is not None and run + 1 < len(ps):
            # the run's end is found by the token right after it (`_run_plan`'s `closing`)
            nxt = ps[run + 1]
            if (
                not (
                    isinstance(nxt, _N)
                    and nxt.text is not None
                    and not nxt.named
                    and nxt.supplied is None
                )
                or self.skip_goal_tokens
            ):
                return None
        return tokens, steps, run

    def _leaf_plan(self, p: _N) -> Plan:
        general, ids = self._node, p.ids
        text, named, supplied, kind_only = p.text, p.named, p.supplied, self.kind_only

        def leaf(n: ts.Node, env: Env) -> Env | None:
            if (
                n.kind_id in ids
                and (supplied is None or n.is_missing == supplied)
                and (n.child_count == 0 or whole_literal(n))
                and (not named or n.text == text or (kind_only and n.is_named))
            ):
                return env
            return general(p, n, env)

        return leaf

    def _var_plan(self, var: MetaVar) -> Plan:
        """`$X` (no container, no continuation siblings to absorb): `_node`'s answer."""
        name, bind = var.name, self._bind

        def single(n: ts.Node, env: Env) -> Env | None:
            if not n.is_named:
                return None
            if name is None:
                return env
            if name in env:  # a repeated metavariable: compare what it captured
                return bind(var, n, env)
            new = dict(env)
            new[name] = n
            return new

        return single

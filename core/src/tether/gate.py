"""The approval gate: per tier, a call runs (auto), is refused (deny) or waits for the person
(ask), through the run's :data:`~tether.person.APPROVER`. Fails closed: no approver, nobody
there, a timeout — refused, with the reason."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

import anyio
import attrs

from tether.approval import ApprovalRequest, Approver, Decision, render_args
from tether.config import HARNESS_ORIGIN, ApprovalPolicy
from tether.errors import NoPerson
from tether.preview import describe_call
from tether.tiers import Tier
from tether.tools import CallContext


class ApprovalGate:
    """Decides whether one call may run. ``approver()`` returns the run's approver, or None."""

    def __init__(
        self,
        policy: ApprovalPolicy,
        approver: Callable[[], Approver | None],
        sources: ApprovalSources | None = None,
    ) -> None:
        self.policy = policy
        self.sources = sources if sources is not None else ApprovalSources()
        self._approver = approver
        self._allowed_for_run: set[str] = set()
        # approvals of the same tool waiting at once: "allow for the run" on one answers them all
        self._waiting: dict[str, set[anyio.CancelScope]] = {}

    async def check(self, ctx: CallContext) -> str | None:
        """None when the call may run, else the refusal the caller gets as an error."""
        tier = ctx.spec.tier
        action = _action_of(ctx)
        policy, key = self.policy.policy_for(ctx.tool, tier.value, action)
        if policy == "auto" or ctx.tool in self._allowed_for_run:
            return None
        if policy == "deny":
            out = self._way_out(ctx, action, person=False)
            return f'{ctx.tool!r} refused: denied by policy ({key} = "deny").' + (
                f" {out}" if out else ""
            )
        approver = self._approver()
        if approver is None:
            return (
                f'{ctx.tool!r} refused: it needs approval ({tier.value} tier, {key} = "ask") and '
                f"this run has no approver attached (fail closed). "
                f"{self._way_out(ctx, action)}"
            )
        request = ApprovalRequest(
            tool=ctx.tool,
            tier=tier,
            args_summary=render_args(ctx.raw_args),
            call_id=ctx.call_id,
            surface=ctx.surface,
            args=dict(ctx.raw_args),
            change=await describe_call(ctx),
        )
        waiting = self._waiting.setdefault(ctx.tool, set())
        decision: Decision | None = None
        with anyio.CancelScope() as scope:
            waiting.add(scope)
            try:
                decision = await approver.approve(request)
            except NoPerson as exc:
                return (
                    f"{ctx.tool!r} refused: it needs approval ({tier.value} tier, {key} = "
                    f'"ask") and got none (fail closed): {exc}. '
                    f"{self._way_out(ctx, action)}"
                )
            except TimeoutError:
                return (
                    f"{ctx.tool!r} refused: the approval question timed out (fail closed). "
                    f"{self._way_out(ctx, action)}"
                )
            finally:
                waiting.discard(scope)
        if decision is None:  # withdrawn: another card allowed this tool for the rest of the run
            return None
        if decision is Decision.ALLOW_FOR_RUN:
            self._allowed_for_run.add(ctx.tool)
            for other in list(waiting):
                other.cancel()
            return None
        if decision is Decision.ALLOW:
            return None
        return f"{ctx.tool!r} refused: the person denied this call"

    def _way_out(self, ctx: CallContext, action: str | None, *, person: bool = True) -> str:
        return way_out(
            ctx.tool,
            ctx.spec.tier.value,
            action,
            policy=self.policy,
            sources=self.sources,
            person=person,
        )


def _action_of(ctx: CallContext) -> str | None:
    """The call's action (``debug``'s ``op``, ``lsp``'s ``action``), for per-action policy."""
    actions = ctx.spec.actions
    value = ctx.raw_args.get(actions.selector) if actions is not None else None
    return value if isinstance(value, str) else None


# ---------------------------------------------------------------------------------------------
# the way out of a refusal, computed from the entry that decided

EntryPath = tuple[str, ...]  # ("write",), ("tools", "write"), ("actions", "debug", "evaluate")
TIER_DEFAULTS = {t.value: attrs.fields_dict(ApprovalPolicy)[t.value].default for t in Tier}


@attrs.frozen
class ApprovalSources:
    """Where the approval entries came from: the two layers' raw ``[core.approval]`` tables,
    how the harness's is named (``--config /etc/h.toml``), the keys set another way
    (``core.approval.write`` → ``--approve exec``), and the workdir's file."""

    harness: Mapping[str, Any] = attrs.field(factory=dict)
    workdir: Mapping[str, Any] = attrs.field(factory=dict)
    harness_origin: str = HARNESS_ORIGIN
    set_by: Mapping[str, str] = attrs.field(factory=dict)
    workdir_origin: str | None = None


@attrs.frozen
class Step:
    """One change: ``approve`` (``--approve TIER``), ``harness`` (the entry = "auto" in the
    harness's configuration), ``workdir`` (the workdir's file drops the entry)."""

    kind: Literal["approve", "harness", "workdir"]
    path: EntryPath


def entry_name(path: EntryPath) -> str:
    if len(path) == 1:
        return f"[core.approval] {path[0]}"
    if path[0] == "tools":
        return f"[core.approval.tools] {path[1]}"
    return f"[core.approval.actions.{path[1]}] {path[2]}"


def _lookup(table: Mapping[str, Any], path: EntryPath) -> Any:
    value: Any = table
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def deciding_path(tool: str, tier: str, action: str | None, policy: ApprovalPolicy) -> EntryPath:
    """The entry that decides a call (as :meth:`ApprovalPolicy.policy_for` picks it)."""
    if action is not None and action in policy.actions.get(tool, {}):
        return ("actions", tool, action)
    if tool in policy.tools:
        return ("tools", tool)
    return (tier,)


def fixes(
    tool: str, tier: str, action: str | None, policy: ApprovalPolicy, sources: ApprovalSources
) -> list[tuple[Step, ...]]:
    """Every way the harness (with the workdir's owner, when the workdir's file tightened the
    entry) lets such a call run without asking: each a set of changes made together. Only
    changes that would decide are offered: an entry more specific than the deciding one wins
    over it, so ``--approve`` never helps a call a tool's or action's entry decides."""
    decided = deciding_path(tool, tier, action, policy)
    candidates = [decided]
    if len(decided) == 1:
        candidates.append(("tools", tool))
    if len(decided) < 3 and action is not None:
        candidates.append(("actions", tool, action))
    found: list[tuple[Step, ...]] = []
    for path in candidates:
        workdir = _lookup(sources.workdir, path)
        # what the workdir's file tightens stays tight whatever the harness says
        bound = (Step("workdir", path),) if workdir in ("ask", "deny") else ()
        harness = _lookup(sources.harness, path)
        if len(path) == 1:
            flag = sources.set_by.get(f"core.approval.{path[0]}")
            current = harness if harness is not None else TIER_DEFAULTS[path[0]]
            if current == "auto":
                ways: list[tuple[Step, ...]] = [()]
            elif flag is not None:  # --approve wrote the tier entries over the file's
                ways = [(Step("approve", path),)]
            else:
                ways = [(Step("approve", path),), (Step("harness", path),)]
        else:
            ways = [()] if harness == "auto" else [(Step("harness", path),)]
        found += [bound + way for way in ways if bound + way]
    return found


def _render_step(step: Step, decided: EntryPath, sources: ApprovalSources) -> str:
    name = entry_name(step.path)
    if step.kind == "approve":
        tier = step.path[0]
        flag = sources.set_by.get(f"core.approval.{tier}")
        instead = f" (instead of its `{flag}`)" if flag else ""
        return (
            f"`--approve {tier}` on `tether call`, `tether session` or `tether mcp`{instead}, "
            f"which lets every tool up to the {tier} tier run"
        )
    if step.kind == "harness":
        where = sources.harness_origin
        what = ""
        if step.path != decided:  # a more specific entry, which would decide instead
            what = "for this action alone " if step.path[0] == "actions" else "for this tool alone "
        return f'{what}`{name} = "auto"` in {where}'
    value = _lookup(sources.workdir, step.path)
    origin = sources.workdir_origin or "the workdir's configuration file"
    return (
        f'the workdir\'s file {origin} drops its `{name} = "{value}"` (a workdir file may make '
        "approval stricter and a harness cannot loosen it)"
    )


def way_out(
    tool: str,
    tier: str,
    action: str | None = None,
    *,
    policy: ApprovalPolicy | None = None,
    sources: ApprovalSources | None = None,
    person: bool = True,
) -> str:
    """How the harness lets such a call run without a person, computed from the entry that
    decided and where it was set: said with every refusal a person could not answer (and with a
    denial by policy), in every transport. ``person``: whether a person could answer it (the
    policy asks rather than denies)."""
    policy = policy if policy is not None else ApprovalPolicy()
    sources = sources if sources is not None else ApprovalSources()
    decided = deciding_path(tool, tier, action, policy)
    parts = []
    if len(decided) > 1:
        parts.append(
            f"`{entry_name(decided)}` decided: it outranks the {tier} tier's entry, so "
            f"`--approve` and `[core.approval] {tier}` do not change it."
        )
    ways = [
        " and ".join(_render_step(s, decided, sources) for s in fix)
        for fix in fixes(tool, tier, action, policy, sources)
    ]
    if person:
        ways.append(
            "it attaches a person who can answer (`tether session --interactive`, an MCP client "
            "that shows elicitations)"
        )
    if ways:
        parts.append("To let it run without asking: " + "; or ".join(ways) + ".")
    return " ".join(parts)


__all__ = ["ApprovalGate", "ApprovalSources", "Step", "fixes", "way_out"]

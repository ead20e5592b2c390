"""The approval gate: per tier, a call runs (auto), is refused (deny) or waits for the person
(ask), through the run's :data:`~tether.person.APPROVER`. Fails closed: no approver, nobody
there, a timeout — refused, with the reason."""

from __future__ import annotations

from collections.abc import Callable

import anyio

from tether.approval import ApprovalRequest, Approver, Decision, render_args
from tether.config import ApprovalPolicy
from tether.errors import NoPerson
from tether.preview import describe_call
from tether.tools import CallContext


class ApprovalGate:
    """Decides whether one call may run. ``approver()`` returns the run's approver, or None."""

    def __init__(self, policy: ApprovalPolicy, approver: Callable[[], Approver | None]) -> None:
        self.policy = policy
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
            return f'{ctx.tool!r} refused: denied by policy ({key} = "deny")'
        approver = self._approver()
        if approver is None:
            return (
                f'{ctx.tool!r} refused: it needs approval ({tier.value} tier, {key} = "ask") and '
                f"this run has no approver attached (fail closed). "
                f"{way_out(ctx.tool, tier.value, action)}"
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
                    f"{way_out(ctx.tool, tier.value, action)}"
                )
            except TimeoutError:
                return (
                    f"{ctx.tool!r} refused: the approval question timed out (fail closed). "
                    f"{way_out(ctx.tool, tier.value, action)}"
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


def _action_of(ctx: CallContext) -> str | None:
    """The call's action (``debug``'s ``op``, ``lsp``'s ``action``), for per-action policy."""
    actions = ctx.spec.actions
    value = ctx.raw_args.get(actions.selector) if actions is not None else None
    return value if isinstance(value, str) else None


def way_out(tool: str, tier: str, action: str | None = None) -> str:
    """How the harness lets such a call run without a person: said with every refusal that a
    person could not answer, in every transport."""
    entries = f'`[core.approval.tools] {tool} = "auto"`'
    if action is not None:
        entries += f' or only this action: `[core.approval.actions.{tool}] {action} = "auto"`'
    return (
        f"To let it run without asking, the harness approves it: `--approve {tier}` on "
        f"`tether call`, `tether session` or `tether mcp` (every tool up to the {tier} tier), "
        f'or in its configuration (--config FILE, open_run(config=…)) `[core.approval] {tier} = "auto"`, '
        f"or for this tool alone {entries}; or it attaches a person who can answer "
        f"(`tether session --interactive`, an MCP client that shows elicitations)."
    )


__all__ = ["ApprovalGate", "way_out"]

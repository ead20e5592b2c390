"""The approval gate: per tier, a call runs (auto), is refused (deny) or waits for the person
(ask), through the run's :data:`~tether.person.APPROVER`. Fails closed: no approver, nobody
there, a timeout — refused, with the reason."""

from __future__ import annotations

from collections.abc import Callable

import anyio

from tether.approval import ApprovalRequest, Approver, Decision, render_args
from tether.config import ApprovalPolicy
from tether.errors import NoPerson
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
        policy = getattr(self.policy, tier.value)
        if policy == "auto" or ctx.tool in self._allowed_for_run:
            return None
        if policy == "deny":
            return f'{ctx.tool!r} refused: {tier.value}-tier calls are denied by policy ([core.approval] {tier.value} = "deny")'
        approver = self._approver()
        if approver is None:
            return (
                f'{ctx.tool!r} refused: it needs approval ({tier.value} tier, policy "ask") and this run has no '
                f'approver attached (fail closed). Auto-approve the tier ([core.approval] {tier.value} = "auto"; '
                f"`tether call/session --approve {tier.value}` on the command line) or attach an approver."
            )
        request = ApprovalRequest(
            tool=ctx.tool,
            tier=tier,
            args_summary=render_args(ctx.raw_args),
            call_id=ctx.call_id,
            surface=ctx.surface,
            args=dict(ctx.raw_args),
        )
        waiting = self._waiting.setdefault(ctx.tool, set())
        decision: Decision | None = None
        with anyio.CancelScope() as scope:
            waiting.add(scope)
            try:
                decision = await approver.approve(request)
            except NoPerson as exc:
                return f"{ctx.tool!r} refused: it needs approval and no person is attached to give it ({exc}) (fail closed)"
            except TimeoutError:
                return f"{ctx.tool!r} refused: the approval question timed out (fail closed)"
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


__all__ = ["ApprovalGate"]

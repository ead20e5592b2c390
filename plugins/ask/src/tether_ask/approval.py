"""The approval gate's person: an approval card on the run's question port.

The card has the same format as an `ask_user` question, so a permission request looks the same
to the person; it is still a separate gate (the core calls `approve`, not `ask_user`).
"""

from __future__ import annotations

import tether
from tether_ask.asking import InvalidAnswer, ask_person, port_timeout
from tether_ask.cards import Card, Option
from tether_ask.config import AskConfig
from tether_ask.ports import QuestionPort

ALLOW = "allow"
DENY = "deny"
ALLOW_FOR_RUN = "allow for this run"

_DECISIONS = {
    ALLOW: tether.Decision.ALLOW,
    DENY: tether.Decision.DENY,
    ALLOW_FOR_RUN: tether.Decision.ALLOW_FOR_RUN,
}


def approval_card(request: tether.ApprovalRequest, timeout_s: float) -> Card:
    return Card(
        kind="approval",
        question=f"May I run {request.tool} ({request.tier.value} tier)?",
        context=request.args_summary,
        options=(
            Option(ALLOW, "run this call once"),
            Option(DENY, "do not run it"),
            Option(
                ALLOW_FOR_RUN,
                f"run it, and every later {request.tool} call in this run without asking",
            ),
        ),
        timeout_s=timeout_s,
        call_id=request.call_id,
        arguments=dict(request.args),
    )


class PortApprover:
    """The `approver` resource: asks the run's `question_port` through an approval card.

    Fails closed: no person, a skip, a timeout (TimeoutError, refused by the core's gate) or an
    unusable answer never allow.
    """

    def __init__(self, port: QuestionPort, config: AskConfig) -> None:
        self._port = port
        self._config = config

    async def approve(self, request: tether.ApprovalRequest) -> tether.Decision:
        timeout_s = port_timeout(self._config, self._port)
        card = approval_card(request, timeout_s)
        try:
            answer = await ask_person(self._port, card)
        except InvalidAnswer as exc:
            raise tether.NoPerson(str(exc)) from None
        if answer.skipped:
            return tether.Decision.DENY
        return _DECISIONS[answer.choices[0]]

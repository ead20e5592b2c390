"""The approval gate's person: the core's approval card on the run's question port.

The card has the same format as an `ask_user` question, so a permission request looks the same
to the person; it is still a separate gate (the core calls `approve`, not `ask_user`).
"""

from __future__ import annotations

import tether
from tether.person import QuestionPort, approval_card, decision
from tether_ask.asking import InvalidAnswer, ask_person, port_timeout
from tether_ask.config import AskConfig


class PortApprover:
    """The `approver` resource: asks the run's `question_port` through an approval card.

    Fails closed: no person, a skip, a timeout (TimeoutError, refused by the core's gate) or an
    unusable answer never allow.
    """

    def __init__(self, port: QuestionPort, config: AskConfig) -> None:
        self._port = port
        self._config = config

    async def approve(self, request: tether.ApprovalRequest) -> tether.Decision:
        card = approval_card(request, port_timeout(self._config, self._port))
        try:
            answer = await ask_person(self._port, card)
        except InvalidAnswer as exc:
            raise tether.NoPerson(str(exc)) from None
        return decision(answer)

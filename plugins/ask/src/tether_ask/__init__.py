"""tether-ask: `ask_user`, question ports and approval cards through the same port."""

from tether_ask.approval import PortApprover
from tether_ask.cards import Answer, Card, Option, check_answer
from tether_ask.config import AskConfig
from tether_ask.ports import CallbackPort, QuestionPort, SessionPort
from tether_ask.terminal import TerminalPort

__all__ = [
    "Answer",
    "AskConfig",
    "CallbackPort",
    "Card",
    "Option",
    "PortApprover",
    "QuestionPort",
    "SessionPort",
    "TerminalPort",
    "check_answer",
]

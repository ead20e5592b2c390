"""Asking a port one card, with the bound and the checks every port shares."""

from __future__ import annotations

import math

import anyio

import tether
from tether_ask.cards import Answer, Card, check_answer
from tether_ask.config import AskConfig
from tether_ask.ports import QuestionPort


class InvalidAnswer(Exception):
    """A port returned an answer that does not fit its card."""


def port_timeout(config: AskConfig, port: QuestionPort) -> float:
    """How long a card on `port` waits: the port's own bound, else `[ask]`'s."""
    if port.timeout_s is not None:
        return _positive(port.timeout_s, f"{port.name} port timeout_s")
    if port.name in config.port_timeout_s:
        return _positive(config.port_timeout_s[port.name], f"ask.port_timeout_s.{port.name}")
    return _positive(config.timeout_s, "ask.timeout_s")


def check_timeouts(config: AskConfig) -> None:
    """Refuse a timeout that is not a positive number of seconds, naming its key."""
    _positive(config.timeout_s, "ask.timeout_s")
    for name, value in config.port_timeout_s.items():
        _positive(value, f"ask.port_timeout_s.{name}")


def _positive(value: float, field: str) -> float:
    if isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise tether.ConfigError(f"{field}: expected a positive number of seconds, got {value!r}")
    return float(value)


async def ask_person(port: QuestionPort, card: Card) -> Answer:
    """Show `card` on `port` and return the person's answer.

    Raises `tether.NoPerson` at once when nobody is attached, `TimeoutError` after
    `card.timeout_s`, `InvalidAnswer` when the port hands back an answer that does not fit.
    """
    if not port.person_attached:
        why = getattr(port, "why_no_person", "") or f"nobody answers the {port.name} port"
        raise tether.NoPerson(f"no person attached: {why}")
    with anyio.fail_after(card.timeout_s):
        answer = await port.ask(card)
    problem = check_answer(card, answer)
    if problem is not None:
        raise InvalidAnswer(f"the {port.name} port returned an answer that does not fit: {problem}")
    return answer

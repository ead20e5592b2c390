"""Question ports: the one way a run asks its person something.

A port shows a card and returns the person's `Answer`. Ports shipped here: `CallbackPort`
(an async function the harness supplies) and `SessionPort` (the `tether session` card stream);
`TerminalPort` lives in `tether_ask.terminal`. A harness adds its own by providing any object
satisfying `tether.person.QuestionPort` as the run resource `tether.person.QUESTION_PORT`.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from tether.person import Answer, Card, CardStream, QuestionPort, check_answer

AnswerCallback = Callable[[Card], Awaitable[Answer]]


class CallbackPort:
    """A port backed by an async function of the harness: `async def fn(card) -> Answer`.

    The function may raise `tether.NoPerson` to say that nobody is there right now. Each card
    it receives carries a number (`card.id`) counted per port.
    """

    def __init__(
        self, fn: AnswerCallback, *, timeout_s: float | None = None, name: str = "callback"
    ) -> None:
        if not callable(fn):
            raise TypeError(f"CallbackPort: expected an async function, got {fn!r}")
        self._fn = fn
        self.timeout_s = timeout_s
        self.name = name
        self._numbers = itertools.count(1)

    @property
    def person_attached(self) -> bool:
        return True

    async def ask(self, card: Card) -> Answer:
        number = str(next(self._numbers))
        pending = self._fn(card.numbered(number))
        if not inspect.isawaitable(pending):
            raise TypeError(
                f"{self.name} port: the callback must be an async function returning an Answer, "
                f"it returned {type(pending).__name__}"
            )
        answer = await pending
        if not isinstance(answer, Answer):
            raise TypeError(
                f"{self.name} port: the callback must return tether_ask.Answer, "
                f"got {type(answer).__name__}"
            )
        return answer if answer.card is not None else attrs.evolve(answer, card=number)


class SessionPort:
    """A port over the `tether session` stdio stream: card lines out, answer lines in.

    A person is attached only when the client started the session with `--interactive`. An
    answer that does not fit the card gets an error line from the session and the card stays
    answerable.
    """

    name = "session"

    def __init__(self, stream: CardStream, *, timeout_s: float | None = None) -> None:
        self._stream = stream
        self.timeout_s = timeout_s

    @property
    def person_attached(self) -> bool:
        return bool(self._stream.interactive)

    @property
    def why_no_person(self) -> str:
        return "the session was started without --interactive"

    async def ask(self, card: Card) -> Answer:
        # Without --interactive the stream itself raises tether.NoPerson.

        def validate(message: dict[str, Any]) -> str | None:
            try:
                answer = Answer.from_json(message)
            except ValueError as exc:
                return str(exc)
            return check_answer(card, answer)

        reply = await self._stream.ask(card.to_json(), timeout_s=card.timeout_s, validate=validate)
        return Answer.from_json(reply)


__all__ = ["AnswerCallback", "CallbackPort", "CardStream", "QuestionPort", "SessionPort"]

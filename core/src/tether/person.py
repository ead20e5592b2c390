"""The person: the one interface through which a run asks someone something.

Everything that reaches a person implements it: tether-ask's question ports, and every transport
(``tether session``'s card stream, ``tether call``'s terminal, the MCP bridge's elicitations).

- A :class:`Card` is what the person sees (a question or an approval request); an
  :class:`Answer` is what comes back; :meth:`Answer.from_json` reads the session protocol's
  answer shape, the one place it is validated, and :func:`check_answer` says whether an answer
  fits its card.
- A :class:`QuestionPort` shows a card and returns the answer (resource :data:`QUESTION_PORT`).
- The approval gate asks through the :data:`APPROVER` resource; :func:`approval_card` is the card
  it shows and :func:`decision` reads the answer, so an approval looks the same on every port.
- :data:`CARD_STREAM` and :data:`TERMINAL` are the transports' own resources, from which a port
  is made.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol, TextIO, runtime_checkable

import attrs

from tether.approval import ApprovalRequest, Approver, Decision
from tether.resources import ResourceKey
from tether.text import LISTED_NAME_CHARS, listing, truncate

CardKind = Literal["question", "approval"]


@attrs.frozen
class Option:
    """One choice on a card."""

    label: str
    description: str = ""

    def to_json(self) -> dict[str, str]:
        return {"label": self.label, "description": self.description}


@attrs.frozen
class Card:
    """What a port shows: a question or an approval request, with its options."""

    kind: CardKind
    question: str
    context: str = ""
    options: tuple[Option, ...] = ()
    allow_free_text: bool = False
    multi_select: bool = False
    timeout_s: float = 600.0
    call_id: str | None = None
    id: str | None = None
    #: an approval card's call arguments, complete (``context`` renders them whole)
    arguments: Mapping[str, Any] | None = None

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(option.label for option in self.options)

    def numbered(self, card_id: str) -> Card:
        return attrs.evolve(self, id=card_id)

    def to_json(self) -> dict[str, Any]:
        """The card body of the session protocol (without the card id, which the sender assigns).
        An approval card also carries ``arguments``: the call's arguments, complete, as JSON."""
        extra = {} if self.arguments is None else {"arguments": dict(self.arguments)}
        return {
            "kind": self.kind,
            "call_id": self.call_id,
            "question": self.question,
            "context": self.context,
            "options": [option.to_json() for option in self.options],
            "allow_free_text": self.allow_free_text,
            "multi_select": self.multi_select,
            "timeout_s": self.timeout_s,
            **extra,
        }


ANSWER_KEYS = ("card", "choices", "text", "skip")


@attrs.frozen
class Answer:
    """What the person gave: chosen labels and/or typed text, or a skip.

    `card` is the id of the card answered, as the port numbered it (informational).
    """

    choices: tuple[str, ...] = ()
    text: str | None = None
    skipped: bool = False
    card: str | None = None

    @classmethod
    def skip(cls, card: str | None = None) -> Answer:
        return cls(skipped=True, card=card)

    @classmethod
    def from_json(cls, message: Mapping[str, Any]) -> Answer:
        """Read a session-protocol answer (``{"card", "choices", "text"}`` or
        ``{"card", "skip": true}``; ``"choices": null`` and ``"text": null`` mean left out).

        Raises ValueError naming the field when the shape is wrong. Whether the answer fits its
        card is :func:`check_answer`'s question.
        """
        card = message.get("card")
        card_id = None if card is None else str(card)
        unknown = sorted(set(message) - set(ANSWER_KEYS))
        if unknown:
            expected = ", ".join(ANSWER_KEYS)
            raise ValueError(f"{unknown[0]}: unknown key in an answer (expected {expected})")
        skip = message.get("skip", False)
        if not isinstance(skip, bool):
            raise ValueError(f"skip: expected true or false, got {skip!r}")
        choices = message.get("choices")
        text = message.get("text")
        if skip:
            if choices or text:
                raise ValueError("skip: a skip cannot also carry choices or text")
            return cls.skip(card_id)
        choices = [] if choices is None else choices
        if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
            raise ValueError(f"choices: expected a list of option labels, got {choices!r}")
        if text is not None and not isinstance(text, str):
            raise ValueError(f"text: expected a string or null, got {text!r}")
        if not choices and not (text or "").strip():
            raise ValueError("choices: an answer needs choices, text, or skip: true")
        return cls(choices=tuple(choices), text=text, card=card_id)


def check_answer(card: Card, answer: Answer) -> str | None:
    """Why `answer` does not answer `card`, or None when it does.

    The same rules hold on every port, so an empty "success" can never come back.
    """
    if answer.skipped:
        return None
    seen: set[str] = set()
    for choice in answer.choices:
        if choice not in card.labels:
            offered = listing((f'"{label}"' for label in card.labels), quote=False)
            shown = truncate(choice, LISTED_NAME_CHARS)
            return f'choices: "{shown}" is not an option of this card (options: {offered})'
        if choice in seen:
            return f'choices: "{choice}" chosen twice'
        seen.add(choice)
    if len(answer.choices) > 1 and not card.multi_select:
        return f"choices: {len(answer.choices)} chosen but this card takes one"
    text = answer.text.strip() if answer.text is not None else ""
    if text and not card.allow_free_text:
        return "text: this card does not accept free text; choose one of its options"
    if not answer.choices and not text:
        return (
            "answer is empty: choose an option"
            + (", type an answer" if card.allow_free_text else "")
            + " or skip"
        )
    return None


@runtime_checkable
class QuestionPort(Protocol):
    """What ``ask_user`` and the approval gate need from a port.

    A port may also define ``why_no_person`` (str): the reason shown when ``person_attached`` is
    false. ``ask`` shows ``card`` and returns once the person answered or skipped. It raises
    :class:`tether.NoPerson` when nobody can answer, and may raise ``TimeoutError``; the caller
    also bounds the whole wait by ``card.timeout_s``. A port that can re-ask on an invalid answer
    should do so (see :func:`check_answer`); an invalid answer that still comes back fails the
    call.
    """

    name: str
    timeout_s: float | None

    @property
    def person_attached(self) -> bool: ...

    async def ask(self, card: Card) -> Answer: ...


@runtime_checkable
class CardStream(Protocol):
    """A transport that shows card JSON and returns answer JSON (``tether session``, MCP).

    ``ask`` raises :class:`tether.NoPerson` when nobody can answer and ``TimeoutError`` after
    ``timeout_s``; ``validate(answer)`` returns an error text for an answer that does not fit, and
    the transport then lets the person answer again.
    """

    @property
    def interactive(self) -> bool: ...

    async def ask(
        self,
        card: dict[str, Any],
        *,
        timeout_s: float,
        validate: Callable[[dict[str, Any]], str | None] | None = None,
    ) -> dict[str, Any]: ...


@runtime_checkable
class TerminalIO(Protocol):
    """``tether call``'s terminal: cards are written to ``stdout``, answers read from ``stdin``."""

    @property
    def interactive(self) -> bool: ...

    @property
    def stdin(self) -> TextIO: ...

    @property
    def stdout(self) -> TextIO: ...


#: the port the run asks its person through (tether-ask wires one from a transport or a callback)
QUESTION_PORT: ResourceKey[QuestionPort] = ResourceKey("question_port", QuestionPort)
#: what the approval gate asks (tether-ask wires one over the question port)
APPROVER: ResourceKey[Approver] = ResourceKey("approver", Approver)
#: ``tether session``'s and the MCP bridge's card transport
CARD_STREAM: ResourceKey[CardStream] = ResourceKey("card_stream", CardStream)
#: ``tether call``'s terminal
TERMINAL: ResourceKey[TerminalIO] = ResourceKey("terminal", TerminalIO)
#: the run's conversation (``open_run(conversation_id=)``), wired by the core when the run has
#: one: a tool that shows something in the conversation requires it (``ask_user``)
CONVERSATION: ResourceKey[str] = ResourceKey("conversation", str)

ALLOW = "allow"
DENY = "deny"
ALLOW_FOR_RUN = "allow for this run"
_DECISIONS = {ALLOW: Decision.ALLOW, DENY: Decision.DENY, ALLOW_FOR_RUN: Decision.ALLOW_FOR_RUN}


#: the line of an approval card's context after which comes what the call will change
CHANGE_HEADING = "── what it will change ──"


def approval_card(request: ApprovalRequest, timeout_s: float) -> Card:
    """The card the approval gate shows for ``request``: allow once, deny, or allow the tool for
    the rest of the run; the call's arguments complete, then what it will change (the staged
    diff, or the file and its new text, bounded) when its tool says."""
    context = request.args_summary
    if request.change:
        context += f"\n{CHANGE_HEADING}\n{request.change}"
    return Card(
        kind="approval",
        question=f"May I run {request.tool} ({request.tier.value} tier)?",
        context=context,
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


def decision(answer: Answer) -> Decision:
    """The gate's decision from an answer to an :func:`approval_card` (checked with
    :func:`check_answer` first); a skip denies."""
    if answer.skipped or not answer.choices:
        return Decision.DENY
    return _DECISIONS[answer.choices[0]]


__all__ = [
    "APPROVER",
    "CARD_STREAM",
    "QUESTION_PORT",
    "TERMINAL",
    "Answer",
    "Card",
    "CardKind",
    "CardStream",
    "Option",
    "QuestionPort",
    "TerminalIO",
    "approval_card",
    "check_answer",
    "decision",
]

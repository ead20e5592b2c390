"""The card a person sees and the answer they give, shared by every port.

A card's JSON shape is the one DESIGN.md's `tether session` protocol defines, so a harness can
forward `card.to_json()` to its own UI and build an `Answer` from what comes back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

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
        """Read a session-protocol answer (`{"card", "choices", "text"}` or `{"card", "skip": true}`).

        Raises ValueError naming the field when the shape is wrong.
        """
        card = message.get("card")
        card_id = None if card is None else str(card)
        unknown = sorted(set(message) - {"card", "choices", "text", "skip"})
        if unknown:
            raise ValueError(
                f"{unknown[0]}: unknown key in an answer (expected card, choices, text, skip)"
            )
        skip = message.get("skip", False)
        if not isinstance(skip, bool):
            raise ValueError(f"skip: expected true or false, got {skip!r}")
        if skip:
            if message.get("choices") or message.get("text"):
                raise ValueError("skip: a skip cannot also carry choices or text")
            return cls.skip(card_id)
        choices = message.get("choices", [])
        if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
            raise ValueError(f"choices: expected a list of option labels, got {choices!r}")
        text = message.get("text")
        if text is not None and not isinstance(text, str):
            raise ValueError(f"text: expected a string or null, got {text!r}")
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
            offered = ", ".join(f'"{label}"' for label in card.labels) or "none"
            return f'choices: "{choice}" is not an option of this card (options: {offered})'
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


def check_question(
    question: str,
    options: Sequence[Option],
    *,
    allow_free_text: bool,
    multi_select: bool,
) -> tuple[str, str] | None:
    """Why these arguments cannot make a card, as (field, expected), or None when they can."""
    if not question.strip():
        return ("question", "must not be empty")
    if not options and not allow_free_text:
        return ("options", "at least one option is required when allow_free_text is false")
    if multi_select and not options:
        return ("multi_select", "needs options to select from (none given)")
    first_index: dict[str, int] = {}
    for index, option in enumerate(options):
        label = option.label.strip()
        if not label:
            return (f"options[{index}].label", "must not be empty")
        if label in first_index:
            return (
                f"options[{index}].label",
                f'duplicate of options[{first_index[label]}].label "{label}"',
            )
        first_index[label] = index
    return None

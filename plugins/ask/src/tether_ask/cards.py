"""The card a person sees and the answer they give: defined once in the core
(`tether.person`) and re-exported here; `check_question` is `ask_user`'s own rule.

A card's JSON shape is the one the `tether session` protocol defines (docs/session-protocol.md),
so a harness can forward `card.to_json()` to its own UI and build an `Answer` from what comes
back.
"""

from __future__ import annotations

from collections.abc import Sequence

from tether.person import Answer, Card, CardKind, Option, check_answer


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


__all__ = ["Answer", "Card", "CardKind", "Option", "check_answer", "check_question"]

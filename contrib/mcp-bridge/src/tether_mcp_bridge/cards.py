"""Cards (the session protocol's questions and approvals) as MCP form elicitations.

Pure mapping, no ``mcp`` import: a card becomes a message plus a flat ``requestedSchema`` the
2025-11-25 elicitation schema allows (titled single-select ``oneOf``, multi-select ``array`` of
``anyOf``, a free-text ``string``), and the elicitation's result becomes an answer line
(``{"choices", "text"}`` or ``{"skip": true}``).
"""

from __future__ import annotations

import json
from typing import Any

from tether.person import CHANGE_HEADING
from tether.terminal import for_terminal

CHOICE = "choice"
CHOICES = "choices"
TEXT = "text"


def card_message(card: dict[str, Any], arguments: dict[str, Any] | None = None) -> str:
    """What the person reads: the question, then the card's context, and for an approval of a
    call whose ``arguments`` are known, those arguments complete (never shortened)."""
    parts = [str(card.get("question") or "")]
    context = str(card.get("context") or "")
    if arguments is not None and card.get("kind") == "approval":
        parts.append(
            "arguments:\n" + json.dumps(arguments, indent=2, ensure_ascii=False, sort_keys=True)
        )
        if CHANGE_HEADING in context:  # what the call will write (a bounded diff)
            parts.append(CHANGE_HEADING + context.split(CHANGE_HEADING, 1)[1])
    elif context:
        parts.append(context)
    # a client may show it on a terminal: controls and bidi characters as escapes
    return for_terminal("\n\n".join(parts), newlines=True)


def card_schema(card: dict[str, Any]) -> dict[str, Any]:
    """The elicitation's ``requestedSchema`` for ``card``."""
    options = card.get("options") or []
    free = bool(card.get("allow_free_text"))
    properties: dict[str, Any] = {}
    required: list[str] = []
    titled = [{"const": o["label"], "title": _title(o)} for o in options if isinstance(o, dict)]
    if titled and card.get("multi_select"):
        properties[CHOICES] = {
            "type": "array",
            "title": "Choices",
            "description": "pick one or more",
            "items": {"anyOf": titled},
        }
        if not free:
            required.append(CHOICES)
            properties[CHOICES]["minItems"] = 1
    elif titled:
        properties[CHOICE] = {"type": "string", "title": "Choice", "oneOf": titled}
        if not free:
            required.append(CHOICE)
    if free or not titled:
        properties[TEXT] = {
            "type": "string",
            "title": "Answer" if not titled else "Or type an answer",
        }
        if not titled:
            required.append(TEXT)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _title(option: dict[str, Any]) -> str:
    label = str(option.get("label", ""))
    description = option.get("description")
    return for_terminal(f"{label} — {description}" if description else label)


def answer_from_elicitation(action: str, content: dict[str, Any] | None) -> dict[str, Any]:
    """An answer line from an elicitation result: decline/cancel are a skip."""
    if action != "accept":
        return {"skip": True}
    content = content or {}
    choices: list[Any] = []
    if CHOICES in content and content[CHOICES] is not None:
        value = content[CHOICES]
        choices = list(value) if isinstance(value, list) else [value]
    elif content.get(CHOICE) not in (None, ""):
        choices = [content[CHOICE]]
    answer: dict[str, Any] = {"choices": choices}
    text = content.get(TEXT)
    if text not in (None, ""):
        answer["text"] = text if isinstance(text, str) else json.dumps(text)
    return answer

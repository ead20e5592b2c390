"""The `ask_user` tool: one card to the person, one explicit outcome back.

Outcomes: `answered` (labels and/or text), `skipped` (success), `timed_out` (error) and
`no_person` (error, at once). Never an empty success.
"""

from __future__ import annotations

import json
from typing import Literal

import attrs

import tether
from tether.person import CONVERSATION, QUESTION_PORT
from tether_ask.asking import InvalidAnswer, ask_person, port_timeout
from tether_ask.cards import Card, Option, check_question
from tether_ask.config import AskConfig

#: the run resource the tool needs: the core's question port (this plugin wires a default one)
RESOURCE = QUESTION_PORT

Outcome = Literal["answered", "skipped", "timed_out", "no_person", "invalid_answer"]

MAX_OPTIONS = 20
MAX_LABEL_CHARS = 120

PROCEED = (
    "Proceed on a stated assumption: say which assumption you make, "
    "and do not ask this question again."
)

DESCRIPTION = (
    "Ask the person running this session a question and wait for the answer. Shows a numbered "
    "card with your options; blocks until they answer, skip or the question times out. Use it "
    "instead of writing the question as a chat message (that ends your turn). Give options when "
    "the answer is one of a few choices; set allow_free_text for an open answer. A skip or a "
    "timeout means: proceed on a stated assumption and do not ask again."
)


@attrs.frozen
class OptionArgs:
    label: str = tether.arg(
        description="Short text the person picks; unique on the card", max_length=MAX_LABEL_CHARS
    )
    description: str | None = tether.arg(None, description="What choosing it means")


@attrs.frozen
class AskUserArgs:
    question: str = tether.arg(description="What to ask, as one clear question", max_length=4000)
    context: str | None = tether.arg(None, description="Why you ask and what depends on the answer")
    options: list[OptionArgs] = tether.arg(
        description="The choices, each {label, description?}",
        factory=list,
        max_length=MAX_OPTIONS,
    )
    allow_free_text: bool = tether.arg(False, description="Whether a typed answer is accepted")
    multi_select: bool = tether.arg(False, description="Whether several options may be chosen")


def build_card(args: AskUserArgs, *, timeout_s: float, call_id: str | None) -> Card:
    """The question card for these arguments; `tether.ArgumentError` naming the field if none can be made."""
    options = tuple(
        Option(option.label.strip(), (option.description or "").strip()) for option in args.options
    )
    problem = check_question(
        args.question,
        options,
        allow_free_text=args.allow_free_text,
        multi_select=args.multi_select,
    )
    if problem is not None:
        raise tether.ArgumentError(*problem)
    return Card(
        kind="question",
        question=args.question.strip(),
        context=(args.context or "").strip(),
        options=options,
        allow_free_text=args.allow_free_text,
        multi_select=args.multi_select,
        timeout_s=timeout_s,
        call_id=call_id,
    )


async def handle_ask_user(call: tether.CallContext, args: AskUserArgs) -> tether.ToolResult:
    port = call.run.resource(RESOURCE)
    timeout_s = port_timeout(call.run.config("ask", AskConfig), port)
    card = build_card(args, timeout_s=timeout_s, call_id=call.call_id)
    try:
        answer = await ask_person(port, card)
    except tether.NoPerson as exc:
        return _result(
            "no_person",
            f"{exc}. Nobody can answer questions in this run: do not ask again; proceed on a "
            "stated assumption, or stop and report what you need to know.",
            is_error=True,
        )
    except TimeoutError:
        return _result("timed_out", f"No answer within {timeout_s:g} s. {PROCEED}", is_error=True)
    except InvalidAnswer as exc:
        return _result("invalid_answer", f"{exc}. {PROCEED}", is_error=True)
    if answer.skipped:
        return _result("skipped", f"The person skipped this question. {PROCEED}", card=answer.card)
    text = (answer.text or "").strip() or None
    lines = []
    if answer.choices:
        lines.append("choices: " + json.dumps(list(answer.choices), ensure_ascii=False))
    if text is not None:
        lines.append("text: " + json.dumps(text, ensure_ascii=False))
    return _result(
        "answered", "\n".join(lines), card=answer.card, choices=list(answer.choices), text=text
    )


def _result(
    outcome: Outcome, body: str, *, is_error: bool = False, **meta: object
) -> tether.ToolResult:
    return tether.ToolResult(
        content=[tether.Text(f"outcome: {outcome}\n{body}")],
        is_error=is_error,
        meta={"outcome": outcome, **meta},
    )


def tool_specs(run: tether.Run) -> list[tether.ToolSpec]:
    spec = tether.ToolSpec(
        name="ask_user",
        tier=tether.Tier.READ,
        args=AskUserArgs,
        handler=handle_ask_user,
        description=DESCRIPTION,
        # a port to ask through, and a conversation to show the card in
        requires=(RESOURCE, CONVERSATION),
        parallel_safe=True,
        # The wait is bounded by [ask] timeout_s, not by the core's call timeout.
        timeout_s=0,
        # an answer is not asked for twice: the rest is a narrower question
        continuation=tether.Continuation(
            next="ask the person a narrower question about the part you still need (their "
            "whole answer is in the result's meta for the harness)"
        ),
    )
    return [spec]

"""What the approval gate asks and hears: the request, the decision, the approver interface, and
arguments rendered whole for a card. The gate itself is `tether.gate`."""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping
from typing import Any, Literal, Protocol, runtime_checkable

import attrs

from tether.terminal import escape as _escape
from tether.terminal import is_hidden
from tether.tiers import Tier

Policy = Literal["auto", "ask", "deny"]


class Decision(enum.Enum):
    """An approver's answer."""

    ALLOW = "allow"
    DENY = "deny"
    ALLOW_FOR_RUN = "allow_for_run"  # allow this tool for the rest of the run


@attrs.frozen
class ApprovalRequest:
    """What the approver is asked about: the tool, its tier and its arguments, complete.

    ``args`` are the call's arguments exactly as they will run; ``args_summary`` renders every
    one of them whole (:func:`render_args`) — a card never cuts what it asks about.
    """

    tool: str
    tier: Tier
    args_summary: str
    call_id: str
    surface: str = "default"
    args: Mapping[str, Any] = attrs.field(factory=dict)
    #: what the call will change (a bounded diff, visible), from its tool's
    #: ``ToolSpec.describe_change``; empty when the tool says nothing
    change: str = ""


@runtime_checkable
class Approver(Protocol):
    """The ``approver`` resource. Raise :class:`tether.NoPerson` when nobody can answer."""

    async def approve(self, request: ApprovalRequest) -> Decision: ...


# 3 spaces or more after text, or any at a line's end: a run that could push a payload out of sight
_SPACE_RUN = re.compile(r"(?<=\S) {3,}| +$", re.MULTILINE)
_SHOWN_AS_IS = {"\n", " "}


def visible(text: str) -> str:
    """``text`` with nothing hidden in it: runs of spaces after text (and trailing spaces)
    become ``⟨N spaces⟩``, tabs ``⟨tab⟩``, and control, format (bidi overrides, zero-width),
    separator and surrogate characters their escapes (``\\x1b``, ``\\u202e``). Leading
    indentation and line breaks stay as they are."""
    out = []
    for char in text:
        if char in "⟨⟩":  # a literal marker cannot pose as one
            out.append(_escape(char))
        elif char == "\t":
            out.append("⟨tab⟩")
        elif char not in _SHOWN_AS_IS and (is_hidden(char) or char.isspace()):
            out.append(_escape(char))
        else:
            out.append(char)
    shown = "".join(out)
    return _SPACE_RUN.sub(lambda m: f"⟨{len(m.group())} spaces⟩", shown)


def render_args(args: Mapping[str, Any]) -> str:
    """Every argument of a call, whole, one per line, for an approval card: ``key: value``
    (JSON, made :func:`visible`); a string of several lines is shown as a block under its key,
    each line prefixed with ``│``. Nothing is cut: what runs is what the card shows."""
    lines = []
    for key, value in args.items():
        if isinstance(value, str) and "\n" in value.rstrip("\n"):
            body = value.split("\n")
            lines.append(f"{visible(key)}: ({len(body)} lines)")
            lines += [f"  │ {visible(line)}" for line in body]
        else:
            try:
                text = json.dumps(value, ensure_ascii=False)
            except (TypeError, ValueError):
                text = repr(value)
            lines.append(f"{visible(key)}: {visible(text)}")
    return "\n".join(lines)


def policy_for_auto_up_to(tier: Tier) -> dict[str, Policy]:
    """The policy of ``--approve TIER``: every tier up to ``tier`` is auto, the rest ask."""
    return {t.value: ("auto" if t <= tier else "ask") for t in Tier}

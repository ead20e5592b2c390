"""The approval gate: per-tier policy (auto / ask / deny) and the approver interface."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import Any, Literal, Protocol, runtime_checkable

import attrs

from tether.tiers import Tier

Policy = Literal["auto", "ask", "deny"]


class Decision(enum.Enum):
    """An approver's answer."""

    ALLOW = "allow"
    DENY = "deny"
    ALLOW_FOR_RUN = "allow_for_run"  # allow this tool for the rest of the run


@attrs.frozen
class ApprovalRequest:
    """What the approver is asked about: the tool, its tier and a short rendering of its args."""

    tool: str
    tier: Tier
    args_summary: str
    call_id: str
    surface: str = "default"


@runtime_checkable
class Approver(Protocol):
    """The ``approver`` resource. Raise :class:`tether.NoPerson` when nobody can answer."""

    async def approve(self, request: ApprovalRequest) -> Decision: ...


def summarize_args(args: Mapping[str, Any], limit: int = 300) -> str:
    """A short one-line rendering of a call's arguments for an approval card."""
    parts = []
    for key, value in args.items():
        text = json.dumps(value, ensure_ascii=False)
        if len(text) > 80:
            text = text[:79] + "…"
        parts.append(f"{key}={text}")
    summary = ", ".join(parts)
    return summary if len(summary) <= limit else summary[: limit - 1] + "…"


def policy_for_auto_up_to(tier: Tier) -> dict[str, Policy]:
    """The policy of ``--approve TIER``: every tier up to ``tier`` is auto, the rest ask."""
    return {t.value: ("auto" if t <= tier else "ask") for t in Tier}

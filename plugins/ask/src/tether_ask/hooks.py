"""Hook implementations of tether-ask."""

from __future__ import annotations

from typing import Any

import tether
from tether_ask.tool import ask_user_spec
from tether_ask.wiring import wire_ask_resources


@tether.hookimpl
def tether_resources(run: tether.Run) -> dict[Any, Any] | None:
    # defaults, made after the transports' resources whatever the hook order
    return wire_ask_resources(run)


@tether.hookimpl
def tether_tools(run: tether.Run) -> list[tether.ToolSpec] | None:
    # The card needs a destination: the conversation it is shown in.
    if run.conversation_id is None:
        return None
    return [ask_user_spec()]

"""Hook implementations of tether-ask."""

from __future__ import annotations

from typing import Any

import tether
from tether_ask.tools import tool_specs
from tether_ask.wiring import wire_ask_resources


@tether.hookimpl
def tether_resources(run: tether.Run) -> dict[Any, Any] | None:
    # defaults, made after the transports' resources whatever the hook order
    return wire_ask_resources(run)


@tether.hookimpl
def tether_tools(run: tether.Run) -> list[tether.ToolSpec]:
    return tool_specs(run)

"""Hook implementations of tether-echo."""

from __future__ import annotations

import tether
from tether_echo.tools import echo_tools


@tether.hookimpl
def tether_tools(run: tether.Run) -> list[tether.ToolSpec]:
    return echo_tools()

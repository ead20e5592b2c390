"""Hook implementations only: what this plugin adds to a run (see tether's docs/plugin-api.md);
the tool lives in ``tools.py``, the configuration table in ``config.py``."""

from __future__ import annotations

import tether
from tether_myplugin.tools import tool_specs


@tether.hookimpl
def tether_tools(run: tether.Run) -> list[tether.ToolSpec]:
    return tool_specs(run)


@tether.hookimpl
def tether_process_result(call: tether.CallContext, result: tether.ToolResult) -> str | None:
    """A post-processor returns what to add (a text, a ``tether.ResultNote``, or an awaitable of
    one), never a new result: here every answer of this plugin's tool says who counted."""
    if call.tool != "count_lines" or result.is_error:
        return None
    return "(counted by tether-myplugin)"

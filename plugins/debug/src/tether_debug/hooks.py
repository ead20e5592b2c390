"""The debug family's hook implementations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

import tether
from tether.resources import PerConversation
from tether_debug import hookspecs
from tether_debug.adapters import BUILTIN_ADAPTERS, DebugAdapter
from tether_debug.tools import RESOURCE, tool_specs

if TYPE_CHECKING:
    from tether import Run


@tether.hookimpl
def tether_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


@tether.hookimpl
def tether_debug_adapters() -> list[DebugAdapter]:
    return [cls() for cls in BUILTIN_ADAPTERS]


@tether.hookimpl
def tether_resources(run: Run) -> dict[Any, Any] | None:
    # one session per conversation: without a conversation id there is nothing to bind it to
    if run.conversation_id is None:
        return None
    # the session machinery (DAP client, sockets) is imported by the run that wires it
    from tether_debug.supervisor import DebugSupervisor

    # one debug session per conversation (a served run has several: tether serve)
    per_conversation = PerConversation(DebugSupervisor, run)
    # collected now, so a broken contribution is reported from the start
    per_conversation.get().adapters()
    return {RESOURCE: per_conversation}


@tether.hookimpl
def tether_tools(run: Run) -> list[tether.ToolSpec]:
    return tool_specs(run)


@tether.hookimpl
def tether_process_result(call: tether.CallContext, result: tether.ToolResult) -> None:
    """A live session keeps what each file tether writes held before (the text its program
    loaded, when the session had not taken it yet); it adds nothing to the result."""
    if not result.before:
        return
    # every conversation's session: a file one conversation wrote is the one another's loaded
    for supervisor in call.run.resources.every(RESOURCE):
        supervisor.saw_writes(result.before)

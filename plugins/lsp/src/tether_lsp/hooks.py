"""tether hook implementations of the lsp family (logic lives in the named modules)."""

from __future__ import annotations

from typing import Any

import pluggy

import tether
from tether_lsp import hookspecs
from tether_lsp.servers import BUILTIN_SERVERS, ServerSpec
from tether_lsp.tools import RESOURCE, tool_specs

# Registering the hooks imports only the specs and the argument classes; the supervisor when a
# run wires it, the diagnostics machinery when a call has written files.


@tether.hookimpl
def tether_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


@tether.hookimpl
def tether_lsp_servers() -> list[ServerSpec]:
    return list(BUILTIN_SERVERS)


@tether.hookimpl
def tether_resources(run: tether.Run) -> dict[Any, object]:
    from tether_lsp.supervisor import LspSupervisor

    return {RESOURCE: LspSupervisor(run)}


@tether.hookimpl
def tether_tools(run: tether.Run) -> list[tether.ToolSpec]:
    return tool_specs(run)


@tether.hookimpl
def tether_process_result(call: tether.CallContext, result: tether.ToolResult) -> Any:
    """Diagnostics on write: any call whose result says it wrote files (``result.written``)."""
    supervisor = call.run.resource(RESOURCE, None)
    if supervisor is None or result.is_error or not result.written:
        return None
    from tether_lsp.after_write import new_diagnostics_note

    return new_diagnostics_note(supervisor, result)


@tether.hookimpl
def tether_preview_diagnostics(run: tether.Run, change: tether.StagedChange) -> Any:
    """A staged change's diagnostics, from the running servers, before it is written."""
    supervisor = run.resource(RESOURCE, None)
    if supervisor is None:
        return None
    from tether_lsp.preview import preview_note

    return preview_note(supervisor, change)

"""tether hook implementations of the lsp family (logic lives in the named modules)."""

from __future__ import annotations

from typing import Any

import tether
from tether_lsp import hookspecs
from tether_lsp.after_write import add_new_diagnostics
from tether_lsp.servers import BUILTIN_SERVERS, ServerSpec
from tether_lsp.supervisor import LspSupervisor
from tether_lsp.tools import tool_specs


@tether.hookimpl
def tether_addhooks(pluginmanager: Any) -> None:
    pluginmanager.add_hookspecs(hookspecs)


@tether.hookimpl
def tether_lsp_servers() -> list[ServerSpec]:
    return list(BUILTIN_SERVERS)


@tether.hookimpl
def tether_resources(run: Any) -> dict[str, object]:
    return {"lsp_supervisor": LspSupervisor(run)}


@tether.hookimpl
def tether_tools(run: Any) -> list[tether.ToolSpec]:
    return tool_specs()


@tether.hookimpl
def tether_process_result(call: tether.CallContext, result: tether.ToolResult) -> Any:
    """Diagnostics on write: any call whose result says it wrote files (``result.written``)."""
    supervisor = call.run.resources.get("lsp_supervisor")
    if not isinstance(supervisor, LspSupervisor) or result.is_error or not result.written:
        return None
    return _diagnostics_note(supervisor, call, result)


async def _diagnostics_note(
    supervisor: LspSupervisor, call: tether.CallContext, result: tether.ToolResult
) -> str | None:
    added = await add_new_diagnostics(supervisor, call, result)
    extra = [block.text for block in added.content[len(result.content) :] if hasattr(block, "text")]
    return "\n".join(extra) or None

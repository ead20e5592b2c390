"""tether hook implementations of the lsp family (logic lives in the named modules)."""

from __future__ import annotations

from collections.abc import Generator
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


@tether.hookimpl(wrapper=True)
def tether_process_result(call: tether.CallContext, result: Any) -> Generator[None, Any, Any]:
    inner = yield
    supervisor = call.run.resources.get("lsp_supervisor")
    if not isinstance(supervisor, LspSupervisor) or call.tool not in supervisor.config.write_tools:
        return inner
    return add_new_diagnostics(supervisor, call, inner)

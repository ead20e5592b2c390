"""Hook implementations of tether-astgrep."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

import tether

if TYPE_CHECKING:
    from tether_astgrep.grammars import Grammar


@tether.hookimpl
def tether_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    from tether_astgrep import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@tether.hookimpl
def tether_astgrep_grammars() -> list[Grammar]:
    from tether_astgrep.grammars import all_grammars

    return all_grammars()


@tether.hookimpl
def tether_resources(run: tether.Run) -> dict[Any, Any] | None:
    from tether_astgrep.tools import RESOURCE, make_service

    return {RESOURCE: make_service(run)}


@tether.hookimpl
def tether_tools(run: tether.Run) -> list[tether.ToolSpec]:
    from tether_astgrep.tools import tool_specs

    return tool_specs(run)

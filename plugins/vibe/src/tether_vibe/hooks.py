"""tether hook implementations of the vibe family."""

from __future__ import annotations

from typing import Any

import pluggy

import tether
from tether.contributions import Contribution, collect
from tether_vibe import hookspecs
from tether_vibe.config import TIERS, VibeConfig, validate
from tether_vibe.tools import RESOURCE, tool_specs


@tether.hookimpl
def tether_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


@tether.hookimpl
def tether_resources(run: tether.Run) -> dict[Any, object] | None:
    if not run.options.get("vibe"):
        return None
    # the roster and its runners: only a run in vibe mode imports them
    from tether_vibe.roster import Roster, resolve_runners
    from tether_vibe.runners import Runner

    config = validate(run.config("vibe", VibeConfig))
    runner_kind: type = Runner  # a runtime-checkable Protocol: isinstance works, mypy objects
    contributed: dict[str, Contribution[Runner]] = collect(
        run.pm, "tether_vibe_runners", runner_kind, None, label="vibe runner", keys=TIERS
    )
    runners = resolve_runners(config, contributed)
    return {RESOURCE: Roster(run, config, runners)}


@tether.hookimpl
def tether_tools(run: tether.Run) -> list[tether.ToolSpec]:
    return tool_specs(run)

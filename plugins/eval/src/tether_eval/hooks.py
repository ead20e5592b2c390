"""The eval family's hook implementations (logic lives in the modules named for it)."""

from __future__ import annotations

from typing import Any

import pluggy

import tether
from tether.resources import PerConversation
from tether_eval.config import EvalConfig
from tether_eval.interpreters import Interpreters, check_prestart, collect_kernels
from tether_eval.kernels import KernelSpec
from tether_eval.tools import RESOURCE, tool_specs


@tether.hookimpl
def tether_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    from tether_eval import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@tether.hookimpl
def tether_eval_kernels() -> list[KernelSpec]:
    from tether_eval.builtin import builtin_kernels

    return builtin_kernels()


@tether.hookimpl
def tether_resources(run: tether.Run) -> dict[Any, Any] | None:
    config = run.config("eval", EvalConfig)
    specs = collect_kernels(run.pm)
    check_prestart(config, list(specs))
    if not specs:
        return None
    # one set of interpreters per conversation (a served run has several); the run's own
    # conversation's is made now, so its prestart begins with the run
    per_conversation = PerConversation(lambda run: Interpreters(run, config, specs), run)
    per_conversation.get().prestart(config.prestart)
    return {RESOURCE: per_conversation}


@tether.hookimpl
def tether_tools(run: tether.Run) -> list[tether.ToolSpec]:
    return tool_specs(run)

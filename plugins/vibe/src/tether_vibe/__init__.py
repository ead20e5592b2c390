"""tether-vibe: background workers the agent directs while vibe mode is on.

Five read-tier tools (``vibe_spawn``, ``vibe_send``, ``vibe_wait``, ``vibe_kill``,
``vibe_list``) over a roster of workers. A worker runs through a *runner*: the built-in
:class:`CommandRunner` (an agent CLI from ``[vibe.runners.<tier>]``) or a
:class:`CallableRunner` (an async function the harness contributes). Third parties add runners
with the ``tether_vibe_runners()`` hook::

    import tether
    from tether_vibe import CallableRunner

    class MyHarness:
        @tether.hookimpl
        def tether_vibe_runners(self):
            return {"fast": CallableRunner(run_subagent), "good": CallableRunner(run_reviewer)}
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tether_vibe.config import CommandRunnerConfig, VibeConfig

if TYPE_CHECKING:
    from tether_vibe.roster import Roster, Worker
    from tether_vibe.runners import (
        CallableRunner,
        CommandRunner,
        Job,
        Outcome,
        ResultExtractor,
        Runner,
    )

# The roster and the runners are imported on first use: loading the plugin (every start, vibe
# mode or not) registers its hooks without them.
_LAZY = {
    "Roster": "tether_vibe.roster",
    "Worker": "tether_vibe.roster",
    **dict.fromkeys(
        ("CallableRunner", "CommandRunner", "Job", "Outcome", "ResultExtractor", "Runner"),
        "tether_vibe.runners",
    ),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'tether_vibe' has no attribute {name!r}")


__all__ = [
    "CallableRunner",
    "CommandRunner",
    "CommandRunnerConfig",
    "Job",
    "Outcome",
    "ResultExtractor",
    "Roster",
    "Runner",
    "VibeConfig",
    "Worker",
]

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

from tether_vibe.config import CommandRunnerConfig, VibeConfig
from tether_vibe.roster import Roster, Worker
from tether_vibe.runners import CallableRunner, CommandRunner, Job, Outcome, ResultExtractor, Runner

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

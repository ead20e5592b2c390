"""The callable runner: a harness runs workers in-process through tether_vibe_runners()."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from vibe_testlib import AGENT_COMMAND

import tether
import tether_vibe.hooks
from tether_vibe import CallableRunner, CommandRunner, Job, Outcome

pytestmark = pytest.mark.anyio


class Harness:
    """What a harness passes to open_run: its own sub-agents as vibe runners."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.cancelled = 0
        self.release = anyio.Event()

    async def subagent(self, brief: str, tier: str) -> str:
        self.calls.append((brief, tier))
        if "wait for release" in brief:
            try:
                await self.release.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled += 1
                raise
        if "refuse" in brief:
            raise tether.ToolError("the sub-agent refused: missing spec")
        if "crash" in brief:
            raise RuntimeError("model endpoint unreachable")
        return f"{tier} worker finished: {brief.splitlines()[-1]}"

    @tether.hookimpl
    def tether_vibe_runners(self) -> dict[str, Any]:
        return {
            "fast": CallableRunner(self.subagent),
            "good": CallableRunner(self.subagent, name="reviewer"),
        }


async def test_callable_runner(vibe_run: Any) -> None:
    harness = Harness()
    async with vibe_run(config={}, plugins=(harness,)) as run:
        spawned = await run.call(
            "vibe_spawn", {"brief": "rename foo\nwait for release", "label": "r"}
        )
        worker = spawned.meta["worker_id"]
        listing = await run.call("vibe_list", {})
        assert "running" in listing.text_content
        harness.release.set()
        waited = await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": 5})
        assert waited.meta["status"] == "done"
        assert "fast worker finished: wait for release" in waited.text_content

        review = await run.call(
            "vibe_spawn", {"brief": "review w1", "label": "rev", "tier": "good"}
        )
        await run.call("vibe_wait", {"worker_id": review.meta["worker_id"], "timeout_seconds": 5})
        assert harness.calls[-1] == ("review w1", "good")

        sent = await run.call("vibe_send", {"worker_id": worker, "message": "also update the docs"})
        assert not sent.is_error
        await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": 5})
        assert harness.calls[-1][0] == "rename foo\nwait for release\n\nalso update the docs"


async def test_callable_failures_and_kill(vibe_run: Any) -> None:
    harness = Harness()
    async with vibe_run(config={}, plugins=(harness,)) as run:
        refused = await run.call("vibe_spawn", {"brief": "refuse", "label": "a"})
        crashed = await run.call("vibe_spawn", {"brief": "crash", "label": "b"})
        hanging = await run.call("vibe_spawn", {"brief": "wait for release", "label": "c"})
        waited = await run.call(
            "vibe_wait", {"worker_id": refused.meta["worker_id"], "timeout_seconds": 5}
        )
        assert waited.meta["status"] == "failed" and "missing spec" in waited.text_content
        waited = await run.call(
            "vibe_wait", {"worker_id": crashed.meta["worker_id"], "timeout_seconds": 5}
        )
        assert waited.meta["status"] == "failed"
        assert "RuntimeError: model endpoint unreachable" in waited.text_content

        killed = await run.call("vibe_kill", {"worker_id": hanging.meta["worker_id"]})
        assert killed.meta["status"] == "killed"
        assert harness.cancelled == 1

        still = await run.call("vibe_spawn", {"brief": "wait for release", "label": "d"})
        roster = run.resources["vibe_roster"]
    assert harness.cancelled == 2, "closing the run cancels in-process workers too"
    assert roster.get(still.meta["worker_id"]).status == "killed"


async def test_config_overrides_plugin_runner_and_duplicates_clash(vibe_run: Any) -> None:
    harness = Harness()
    config = {"vibe": {"runners": {"fast": {"command": AGENT_COMMAND}}}}
    async with vibe_run(config=config, plugins=(harness,)) as run:
        listing = await run.call("vibe_list", {})
        assert (
            "fast (command" in listing.text_content
            and "good (callable reviewer)" in listing.text_content
        )

    async with vibe_run(config={}, plugins=(harness, Harness())) as run:
        failed = {i.name: i.reason for i in run.pm.report if i.status == "failed"}
        assert list(failed.values()) == [
            "tether_vibe_runners: vibe runner 'fast' dropped: already contributed by 'Harness-2'; "
            "tether_vibe_runners: vibe runner 'good' dropped: already contributed by 'Harness-2'"
        ]
        assert "fast (callable" in (await run.call("vibe_list", {})).text_content


class BadRunners:
    def __init__(self, value: object) -> None:
        self.value = value

    @tether.hookimpl
    def tether_vibe_runners(self) -> object:
        return self.value


async def test_bad_runner_contributions(vibe_run: Any) -> None:
    harness = Harness()
    for value, message in [
        (
            [CallableRunner(harness.subagent)],
            "tether_vibe_runners: must return a mapping of key to vibe runner, got list",
        ),
        (
            {"medium": CallableRunner(harness.subagent)},
            "tether_vibe_runners: vibe runner 'medium' dropped: unknown key 'medium'; "
            "expected one of fast, good",
        ),
        (
            {"fast": object()},
            "tether_vibe_runners: vibe runner 'fast' dropped: expected a Runner, got object",
        ),
    ]:
        # the bad contribution is dropped and its plugin reported; vibe itself keeps working
        async with vibe_run(config={}, plugins=(BadRunners(value), harness)) as run:
            failed = {i.name: i.reason for i in run.pm.report if i.status == "failed"}
            [reason] = failed.values()
            assert reason.startswith(message), reason
            assert "vibe_spawn" in run.tools


async def test_list_is_capped_and_says_so(vibe_run: Any) -> None:
    harness = Harness()
    async with vibe_run(config={}, plugins=(harness,)) as run:
        for i in range(55):
            await run.call("vibe_spawn", {"brief": f"job {i}", "label": f"j{i}"})
        roster = run.resources["vibe_roster"]
        for worker_id in list(roster.workers):
            await run.call("vibe_wait", {"worker_id": worker_id, "timeout_seconds": 5})
        listing = await run.call("vibe_list", {})
        assert listing.text_content.startswith("55 workers (55 done); 50 of 55 workers")
        assert "w55 'j54'" in listing.text_content and "w5 'j4'" not in listing.text_content
        assert len(listing.meta["workers"]) == 50


class CommandRunnerPlugin:
    """A third-party plugin contributing a command runner in code rather than configuration."""

    @tether.hookimpl
    def tether_vibe_runners(self) -> dict[str, Any]:
        return {"fast": CommandRunner(command=(*AGENT_COMMAND,), result="last-line")}


class BrokenRunner:
    """A runner with a bug: the worker fails, the run goes on."""

    watch_idle = False

    def describe(self) -> str:
        return "broken"

    def check(self, cwd: Path) -> str | None:
        return None

    async def run(self, job: Job) -> Outcome:
        raise KeyError("oops")


class BrokenPlugin:
    @tether.hookimpl
    def tether_vibe_runners(self) -> dict[str, Any]:
        return {"good": BrokenRunner()}


async def test_runners_from_plugins(vibe_run: Any) -> None:
    async with vibe_run(config={}, plugins=(CommandRunnerPlugin(), BrokenPlugin())) as run:
        ok = await run.call("vibe_spawn", {"brief": "say: from a plugin's command", "label": "a"})
        waited = await run.call(
            "vibe_wait", {"worker_id": ok.meta["worker_id"], "timeout_seconds": 10}
        )
        assert waited.meta["status"] == "done" and "from a plugin's command" in waited.text_content

        bad = await run.call("vibe_spawn", {"brief": "anything", "label": "b", "tier": "good"})
        waited = await run.call(
            "vibe_wait", {"worker_id": bad.meta["worker_id"], "timeout_seconds": 10}
        )
        assert waited.meta["status"] == "failed"
        assert "runner crashed: KeyError: 'oops'" in waited.text_content
        listing = await run.call("vibe_list", {})  # the run still answers
        assert "2 workers" in listing.text_content


def test_sync_facade(tether_workdir: Path) -> None:
    config = {"vibe": {"runners": {"fast": {"command": AGENT_COMMAND}}}}
    with tether.open_run_sync(
        tether_workdir, plugins=[tether_vibe.hooks], config=config, vibe=True, entry_points=False
    ) as run:
        spawned = run.call("vibe_spawn", {"brief": "say: from sync code", "label": "s"})
        waited = run.call(
            "vibe_wait", {"worker_id": spawned.meta["worker_id"], "timeout_seconds": 10}
        )
        assert waited.meta["status"] == "done" and "from sync code" in waited.text_content
        hanging = run.call("vibe_spawn", {"brief": "hang", "label": "h"})
        assert hanging.meta["status"] == "running"
    # closing the sync run killed it: the autouse no_stray_processes check verifies that

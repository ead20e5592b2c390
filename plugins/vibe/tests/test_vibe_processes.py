"""Process trees, the idle watchdog and the concurrency cap, checked against /proc."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from vibe_testlib import (
    alive,
    command_config,
    pids_in,
    stray_processes,
    survivors,
    wait_for_file,
    wait_until,
)

from tether_vibe.runners import Job, Outcome, Runner

pytestmark = pytest.mark.anyio


async def spawn(run: Any, brief: str, label: str = "job") -> str:
    result = await run.call("vibe_spawn", {"brief": brief, "label": label})
    assert not result.is_error, result.text_content
    return str(result.meta["worker_id"])


async def test_kill_takes_the_whole_tree(vibe_run: Any, tmp_path: Path) -> None:
    async with vibe_run() as run:
        pidfile = tmp_path / "pids"
        worker = await spawn(run, f"say: forking\ngrandchildren: {pidfile}\nhang")
        await wait_for_file(pidfile)
        pids = pids_in(pidfile)
        assert len(pids) == 4 and all(alive(pid) for pid in pids)

        killed = await run.call("vibe_kill", {"worker_id": worker})
        assert not killed.is_error
        assert killed.meta["status"] == "killed"
        assert "process tree is gone" in killed.text_content
        # vibe_kill returns once the tree is dead — including the grandchild that setsid'd away
        assert survivors(pids) == []

        listing = await run.call("vibe_list", {})
        assert "killed" in listing.text_content and "killed by vibe_kill" in listing.text_content
        again = await run.call("vibe_kill", {"worker_id": worker})
        assert "already settled" in again.text_content


async def test_run_close_kills_every_worker(vibe_run: Any, tmp_path: Path) -> None:
    async with vibe_run() as run:
        roster = run.resources["vibe_roster"]
        files = [tmp_path / f"pids{i}" for i in range(2)]
        for pidfile in files:
            await spawn(run, f"grandchildren: {pidfile}\nhang")
        queued_ok = await spawn(run, "say: quick")
        await run.call("vibe_wait", {"worker_id": queued_ok, "timeout_seconds": 10})
        pids: list[int] = []
        for pidfile in files:
            await wait_for_file(pidfile)
            pids += pids_in(pidfile)
        assert len(pids) == 8
    assert survivors(pids) == []
    statuses = {worker.id: (worker.status, worker.reason) for worker in roster.workers.values()}
    assert statuses == {
        "w1": ("killed", "run closed"),
        "w2": ("killed", "run closed"),
        "w3": ("done", None),
    }


async def test_leftovers_die_when_the_worker_exits(vibe_run: Any, tmp_path: Path) -> None:
    """A worker that exits 0 but leaves background processes behind: they go with it."""
    async with vibe_run() as run:
        pidfile = tmp_path / "pids"
        worker = await spawn(run, f"grandchildren: {pidfile}\nsay: done, bye")
        waited = await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": 15})
        assert waited.meta["status"] == "done"
        assert "result:\ndone, bye" in waited.text_content
        assert survivors(pids_in(pidfile)) == []


async def test_double_forked_daemons_die_too(vibe_run: Any, tmp_path: Path) -> None:
    """A daemon reparented away from the worker is found by the worker's env marker."""
    async with vibe_run() as run:
        killed_daemon, exited_daemon = tmp_path / "d1", tmp_path / "d2"
        running = await spawn(run, f"daemon: {killed_daemon}\nsay: daemon started\nhang")
        exiting = await spawn(run, f"daemon: {exited_daemon}\nsay: bye")
        first = int(await wait_for_file(killed_daemon))
        assert alive(first)
        await run.call("vibe_kill", {"worker_id": running})
        assert not alive(first), "the daemon of a killed worker is gone"

        started = time.monotonic()
        waited = await run.call("vibe_wait", {"worker_id": exiting, "timeout_seconds": 15})
        assert waited.meta["status"] == "done" and "result:\nbye" in waited.text_content
        assert not alive(int(exited_daemon.read_text())), "the daemon of an exited worker is gone"
        # the daemon holds stdout open for 300 s: the worker settled long before that
        assert time.monotonic() - started < 10, "its open stdout did not hold the worker up"


async def test_idle_watchdog(vibe_run: Any, tmp_path: Path) -> None:
    async with vibe_run(config=command_config(idle_timeout_s=1.0)) as run:
        pidfile = tmp_path / "pid"
        silent = await spawn(run, f"pidfile: {pidfile}\nsay: thinking\nhang", "silent")
        chatty = await spawn(run, "busy: 2.5\nsay: survived", "chatty")
        on_stderr = await spawn(run, "busy-stderr: 2.5\nsay: survived too", "stderr")
        on_events = await spawn(run, "busy-events: 2.5\nsay: survived as well", "events")
        pid = int(await wait_for_file(pidfile))
        started = time.monotonic()
        waited = await run.call("vibe_wait", {"worker_id": silent, "timeout_seconds": 10})
        assert time.monotonic() - started < 5
        assert waited.meta["status"] == "failed"
        assert "idle watchdog: no output for 1 s" in waited.text_content
        assert not alive(pid)

        waited = await run.call("vibe_wait", {"worker_id": chatty, "timeout_seconds": 10})
        assert waited.meta["status"] == "done", "output keeps the watchdog away"
        assert "result:\nsurvived" in waited.text_content
        waited = await run.call("vibe_wait", {"worker_id": on_stderr, "timeout_seconds": 10})
        assert waited.meta["status"] == "done", "progress on stderr counts as life too"
        waited = await run.call("vibe_wait", {"worker_id": on_events, "timeout_seconds": 10})
        assert waited.meta["status"] == "done", "so do events the tail does not show"


async def test_concurrency_cap_queues(vibe_run: Any, tmp_path: Path) -> None:
    async with vibe_run(config=command_config(max_concurrent=1)) as run:
        roster = run.resources["vibe_roster"]
        first = await spawn(run, "sleep: 0.8\nsay: one")
        second = await spawn(run, "say: two")
        third = await spawn(run, "say: three")
        await wait_until(lambda: roster.get(first).status == "running")
        listing = await run.call("vibe_list", {})
        assert "1 running" in listing.text_content and "2 queued" in listing.text_content
        assert "waiting for a slot" in listing.text_content

        killed = await run.call("vibe_kill", {"worker_id": third})
        assert killed.meta["status"] == "killed"
        assert "Killed w3" in killed.text_content

        for worker in (first, second):
            waited = await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": 10})
            assert waited.meta["status"] == "done"
        one, two = roster.get(first), roster.get(second)
        assert two.started_mono >= one.finished_mono, (
            "the second ran only after the first freed the slot"
        )
        assert roster.get(third).attempts == 1 and roster.get(third).exit_code is None


async def test_running_is_truthful_while_the_process_lives(vibe_run: Any, tmp_path: Path) -> None:
    async with vibe_run() as run:
        roster = run.resources["vibe_roster"]
        pidfile = tmp_path / "pid"
        worker = await spawn(run, f"pidfile: {pidfile}\nsleep: 0.5\nsay: ok")
        pid = int(await wait_for_file(pidfile))
        assert roster.get(worker).status == "running" and alive(pid)
        with anyio.fail_after(10):
            while alive(pid):
                await anyio.sleep(0.01)
        await wait_until(lambda: roster.get(worker).status != "running", timeout=3)
        assert roster.get(worker).status == "done"


class CountingRunner:
    """Wraps a runner and counts the attempts inside its ``run`` at once: an attempt enters
    ``run`` before its task lets the call that started it go on, so the count is exact the
    moment that call returns."""

    def __init__(self, inner: Runner) -> None:
        self.inner = inner
        self.watch_idle = inner.watch_idle
        self.inside = 0
        self.most = 0

    def describe(self) -> str:
        return self.inner.describe()

    def check(self, cwd: Path) -> str | None:
        return self.inner.check(cwd)

    async def run(self, job: Job) -> Outcome:
        self.inside += 1
        self.most = max(self.most, self.inside)
        try:
            return await self.inner.run(job)
        finally:
            self.inside -= 1


async def test_concurrent_sends_leave_one_attempt(vibe_run: Any, tmp_path: Path) -> None:
    async with vibe_run() as run:
        roster = run.resources["vibe_roster"]
        tier = roster.config.default_tier
        counting = CountingRunner(roster.runner_for(tier))
        roster.runners[tier] = (counting, "this test")
        log = tmp_path / "pids"
        worker = await spawn(run, f"pidlog: {log}\nhang")
        await wait_until(lambda: log.exists() and len(log.read_text().split()) == 1)
        results = []

        async def send(message: str) -> None:
            results.append(await run.call("vibe_send", {"worker_id": worker, "message": message}))

        async with anyio.create_task_group() as tg:
            for message in ("say: a", "say: b", "say: c"):
                tg.start_soon(send, message)
        assert not any(r.is_error for r in results), [r.text_content for r in results]
        assert roster.get(worker).attempts == 4 and roster.get(worker).status == "running"
        # every attempt started has entered the runner by now: exactly one is inside, and
        # never more than one was
        assert (counting.inside, counting.most) == (1, 1), "one attempt runs at a time"

        def logged() -> list[int]:
            return [int(p) for p in log.read_text().split()]

        # an attempt stopped before its python started never logs; the last one always does
        await wait_until(lambda: any(alive(pid) for pid in logged()[1:]))
        live = [pid for pid in logged() if alive(pid)]
        assert len(live) == 1, f"one attempt's process lives, found {live}"
        killed = await run.call("vibe_kill", {"worker_id": worker})
        assert killed.meta["status"] == "killed"
        assert not alive(live[0])
        assert counting.inside == 0


async def test_kill_right_after_spawn_leaves_nothing(vibe_run: Any) -> None:
    """A kill landing while the process is being started must still find and kill it."""
    async with vibe_run() as run:
        for _ in range(10):
            worker = await spawn(run, "hang")
            killed = await run.call("vibe_kill", {"worker_id": worker})
            assert killed.meta["status"] == "killed"
            assert stray_processes() == []

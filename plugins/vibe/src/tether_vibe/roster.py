"""The roster: every worker of one run, its status, and the tasks that run it.

Status is only ever set by the task that owns an attempt, in a ``finally``: a worker shows
``running`` exactly while its attempt task is alive, and every attempt task kills its process
tree before it ends. Closing the roster (the run closing) kills every worker.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import anyio
import anyio.abc
import attrs

import tether
import tether.text
from tether.contributions import Contribution
from tether.text import TailBuffer, duration
from tether_vibe import worktree
from tether_vibe.config import VibeConfig
from tether_vibe.runners import CommandRunner, Job, Outcome, Runner

Status = Literal["queued", "running", "done", "failed", "killed"]
ACTIVE: frozenset[str] = frozenset({"queued", "running"})
CLOSE_TIMEOUT_S = 10.0


@attrs.define(eq=False)
class Worker:
    id: str
    label: str
    tier: str
    brief: str
    runner: Runner
    output: TailBuffer
    status: Status = "queued"
    queued_mono: float = attrs.field(factory=time.monotonic)
    started_mono: float | None = None
    started_at: float | None = None
    finished_mono: float | None = None
    attempts: int = 0
    result: str | None = None
    result_attempt: int = 0
    reason: str | None = None
    exit_code: int | None = None
    stderr_tail: str = ""
    tree: worktree.Worktree | None = None
    #: the worktree's removal: the branch it left (if any) and the changes saved on it
    released: worktree.Released | None = None
    #: "head" (the last commit) or "worktree" (the main checkout's current state)
    start_from: str = "head"
    last_output_mono: float = attrs.field(factory=time.monotonic)
    # The live attempt: its cancel scope, why it is being stopped, and when it has ended.
    scope: anyio.CancelScope | None = None
    stop_reason: tuple[Status, str] | None = None
    ended: anyio.Event = attrs.field(factory=anyio.Event)
    # held by vibe_send / vibe_kill while they stop and restart attempts: one at a time
    transition: anyio.Lock = attrs.field(factory=anyio.Lock)

    @property
    def settled(self) -> bool:
        return self.status not in ACTIVE

    def elapsed(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        if self.started_mono is None:
            return now - self.queued_mono
        return (self.finished_mono or now) - self.started_mono

    def cwd(self, workdir: Path) -> Path:
        return self.tree.cwd if self.tree is not None else workdir


def resolve_runners(
    config: VibeConfig, contributed: Mapping[str, Contribution[Runner]]
) -> dict[str, tuple[Runner, str]]:
    """tier -> (runner, where it came from): the plugins' runners (collected by the core, so a
    malformed one or a second one for a tier is dropped and its plugin reported), then
    ``[vibe.runners.<tier>]``, which overrides them."""
    runners = {tier: (c.item, c.plugin) for tier, c in contributed.items()}
    for tier, cfg in config.runners.items():
        runners[tier] = (CommandRunner.from_config(cfg), f"[vibe.runners.{tier}]")
    return runners


class Roster:
    """The workers of one run. Wired as the ``vibe_roster`` resource when vibe mode is on."""

    def __init__(
        self, run: tether.Run, config: VibeConfig, runners: dict[str, tuple[Runner, str]]
    ) -> None:
        self.run = run
        self.config = config
        self.runners = runners
        self.workers: dict[str, Worker] = {}
        self._limiter = anyio.CapacityLimiter(config.max_concurrent)
        self._next_id = 1
        self._closing = False

    # -- lookups ------------------------------------------------------------------------------

    def get(self, worker_id: str) -> Worker:
        worker = self.workers.get(worker_id)
        if worker is None:
            known = tether.text.listing(self.workers, empty="none yet", quote=False)
            shown = tether.text.truncate(worker_id, tether.text.LISTED_NAME_CHARS)
            raise tether.ArgumentError("worker_id", f"no worker {shown!r} (known: {known})")
        return worker

    def runner_for(self, tier: str) -> Runner:
        entry = self.runners.get(tier)
        if entry is None:
            configured = ", ".join(sorted(self.runners)) or "none"
            raise tether.ArgumentError(
                "tier",
                f"no runner for tier {tier!r} (configured: {configured}); "
                f"set [vibe.runners.{tier}] command = [...] or install a plugin that provides one",
            )
        return entry[0]

    # -- lifecycle ----------------------------------------------------------------------------

    async def spawn(self, brief: str, label: str, tier: str, *, start_from: str = "head") -> Worker:
        if self._closing:
            raise tether.ToolError("the run is closing; no new workers")
        runner = self.runner_for(tier)
        problem = runner.check(self.run.workdir)
        if problem is not None:
            raise tether.ToolError(f"the {tier} runner cannot start: {problem}")
        worker_id = f"w{self._next_id}"
        check_job = getattr(runner, "check_job", None)  # a command runner's argv substitution
        if check_job is not None:
            job = Job(worker_id, label, tier, brief, self.run.workdir, self.run, lambda _: None)
            if (problem := check_job(job)) is not None:
                raise tether.ToolError(problem)
        self._next_id += 1
        tree = None
        if self.config.isolation == "worktree":
            root = self.config.worktree_root
            tree = await worktree.create(
                self.run,
                self.run.workdir,
                None if root is None else (self.run.workdir / root).resolve(),
                self._worktree_name(worker_id),
                from_worktree=start_from == "worktree",
            )
        worker = Worker(
            id=worker_id,
            label=label,
            tier=tier,
            brief=brief,
            runner=runner,
            output=TailBuffer(self.config.output_tail_bytes),
            tree=tree,
            start_from=start_from,
        )
        self.workers[worker_id] = worker
        await self._start_attempt(worker)
        return worker

    async def send(self, worker_id: str, message: str) -> Worker:
        worker = self.get(worker_id)
        async with worker.transition:
            if worker.status == "killed":
                raise tether.ToolError(
                    f"worker {worker_id} was killed ({worker.reason}); a killed worker is not "
                    "restarted — use vibe_spawn with the full brief"
                )
            if self._closing:
                raise tether.ToolError("the run is closing; no new attempts")
            if not worker.settled:
                await self._stop(worker, ("killed", "restarted by vibe_send"))
                if self._closing:
                    raise tether.ToolError("the run closed while the worker was being restarted")
            worker.brief = f"{worker.brief}\n\n{message}"
            await self._start_attempt(worker)
        return worker

    async def kill(self, worker_id: str) -> tuple[Worker, bool]:
        """Stop the worker; True when it was queued or running (False: already settled)."""
        worker = self.get(worker_id)
        async with worker.transition:
            was_live = not worker.settled
            if was_live:
                await self._stop(worker, ("killed", "killed by vibe_kill"))
            await self._release_tree(worker)
        return worker, was_live

    async def wait(self, worker_id: str, timeout_s: float) -> bool:
        """Wait until the worker settles; False when the timeout passed first."""
        worker = self.get(worker_id)
        with anyio.move_on_after(timeout_s):
            while True:
                async with worker.transition:  # a re-run being set up is not "settled"
                    pass
                if worker.settled:
                    return True
                await worker.ended.wait()
        return worker.settled

    async def aclose(self) -> None:
        """Kill every worker (shielded, bounded) and remove worktrees that hold no commits."""
        self._closing = True
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT_S):
            live = [worker for worker in self.workers.values() if not worker.settled]
            for worker in live:
                self._cancel(worker, ("killed", "run closed"))
            for worker in live:
                await self._settle(worker)
            for worker in list(self.workers.values()):
                await self._release_tree(worker)

    # -- internals ----------------------------------------------------------------------------

    def _worktree_name(self, worker_id: str) -> str:
        run_name = self.run.conversation_id or f"run-{id(self):x}"
        return f"{run_name}/{worker_id}"

    async def _release_tree(self, worker: Worker) -> None:
        if worker.tree is None or worker.released is not None or not worker.settled:
            return
        try:
            worker.released = await worktree.release(
                self.run, self.run.workdir, worker.tree, self.branch_for(worker)
            )
        except tether.ToolError as exc:
            worker.reason = f"{worker.reason or ''}; worktree not removed: {exc}".lstrip("; ")

    def branch_for(self, worker: Worker) -> str:
        """The branch a worktree holding commits leaves behind when it is removed."""
        run_name = self.run.conversation_id or f"run-{id(self):x}"
        # a ref name git accepts whatever the conversation id holds
        run_name = re.sub(r"[^A-Za-z0-9_-]+", "-", run_name).strip("-") or "run"
        return f"tether-vibe/{run_name}/{worker.id}"

    async def tree_state(self, worker: Worker) -> worktree.TreeState | None:
        """What the worker left in its worktree so far (None: no worktree, or it is gone)."""
        if worker.tree is None or worker.released is not None:
            return None
        try:
            return await worktree.state(self.run, worker.tree)
        except tether.ToolError:
            return None

    def _cancel(self, worker: Worker, why: tuple[Status, str]) -> None:
        worker.stop_reason = why
        if worker.scope is not None:
            worker.scope.cancel()

    async def _settle(self, worker: Worker) -> bool:
        with anyio.move_on_after(CLOSE_TIMEOUT_S + self.config.kill_grace_s):
            while not worker.settled:
                await worker.ended.wait()
        return worker.settled

    async def _stop(self, worker: Worker, why: tuple[Status, str]) -> None:
        self._cancel(worker, why)
        if not await self._settle(worker):
            raise tether.ToolError(
                f"worker {worker.id} did not stop within {duration(CLOSE_TIMEOUT_S)}; it is still {worker.status}"
            )

    async def _start_attempt(self, worker: Worker) -> None:
        """Start an attempt task; returns once it is running or known to be queued."""
        worker.status = "queued"
        worker.queued_mono = time.monotonic()
        worker.started_mono = worker.finished_mono = None
        worker.stop_reason = None
        worker.ended = anyio.Event()
        worker.scope = anyio.CancelScope()
        worker.attempts += 1
        await self.run.task_group.start(self._attempt, worker, worker.scope, worker.ended)

    async def _attempt(
        self,
        worker: Worker,
        scope: anyio.CancelScope,
        ended: anyio.Event,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        outcome: Outcome | None = None
        started = holds_slot = False
        try:
            with scope:
                try:
                    self._limiter.acquire_nowait()
                except anyio.WouldBlock:
                    started = True
                    task_status.started()  # vibe_spawn reports "queued"
                    await self._limiter.acquire()
                holds_slot = True
                worker.status = "running"
                worker.started_mono = worker.last_output_mono = time.monotonic()
                worker.started_at = time.time()
                # the previous attempt's result stays visible (as such) until this one ends
                worker.reason = worker.exit_code = None
                worker.stderr_tail = ""
                if worker.attempts > 1:
                    worker.output.write(f"--- attempt {worker.attempts} ---\n")
                if not started:
                    started = True
                    task_status.started()
                outcome = await self._execute(worker, scope)
        except Exception as exc:  # a runner bug must fail one worker, not the whole run
            outcome = Outcome(ok=False, reason=f"runner crashed: {type(exc).__name__}: {exc}")
        finally:
            if holds_slot:
                self._limiter.release()
            worker.finished_mono = time.monotonic()
            if worker.started_mono is None:
                worker.started_mono = worker.finished_mono
            if outcome is None:
                status, reason = worker.stop_reason or ("killed", "run closed")
                worker.status, worker.reason = status, reason
            else:
                worker.status = "done" if outcome.ok else "failed"
                worker.result = tether.text.truncate(outcome.result, self.config.result_chars)
                worker.result_attempt = worker.attempts
                worker.reason = outcome.reason
                worker.exit_code = outcome.exit_code
                worker.stderr_tail = outcome.stderr_tail
            worker.scope = None
            ended.set()
            if not started:
                task_status.started()

    async def _execute(self, worker: Worker, scope: anyio.CancelScope) -> Outcome:
        def on_activity() -> None:
            worker.last_output_mono = time.monotonic()

        def on_output(line: str) -> None:
            on_activity()
            worker.output.write(line + "\n")

        job = Job(
            worker_id=worker.id,
            label=worker.label,
            tier=worker.tier,
            brief=worker.brief,
            cwd=worker.cwd(self.run.workdir),
            run=self.run,
            output=on_output,
            activity=on_activity,
            kill_grace_s=self.config.kill_grace_s,
        )
        if not worker.runner.watch_idle:
            return await worker.runner.run(job)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._watchdog, worker, scope)
            outcome = await worker.runner.run(job)
            tg.cancel_scope.cancel()
        return outcome

    async def _watchdog(self, worker: Worker, scope: anyio.CancelScope) -> None:
        idle = self.config.idle_timeout_s
        while True:
            remaining = worker.last_output_mono + idle - time.monotonic()
            if remaining <= 0:
                worker.stop_reason = (
                    "failed",
                    f"idle watchdog: no output for {duration(idle)}; process tree killed",
                )
                scope.cancel()
                return
            await anyio.sleep(min(remaining, 1.0) + 0.01)

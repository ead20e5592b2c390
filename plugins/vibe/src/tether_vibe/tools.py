"""The five vibe tools: argument classes, handlers, and how workers are shown to the model."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Literal

import attrs

import tether
import tether.text
from tether.resources import ResourceKey
from tether.text import clock, duration

if TYPE_CHECKING:
    from tether_vibe.roster import Roster, Worker
    from tether_vibe.worktree import TreeState

#: the run resource this plugin wires (the roster is imported by a run in vibe mode only)
RESOURCE: ResourceKey[Roster] = ResourceKey("vibe_roster", "tether_vibe.roster:Roster")
LIST_LIMIT = 50
LIST_RESULT_CHARS = 200
TAIL_LINES = 5
FULL_TAIL_LINES = 20
LINE_CHARS = 300


def _roster(call: tether.CallContext) -> Roster:
    roster = call.run.resource(RESOURCE)
    return roster


def _nonblank(field: str, value: str) -> str:
    if not value.strip():
        raise tether.ArgumentError(field, "expected a non-empty string")
    if "\x00" in value:
        raise tether.ArgumentError(field, "must not contain NUL characters")
    return value


# ---------------------------------------------------------------------------------------------
# rendering


def last_lines(text: str, count: int) -> str:
    """The last ``count`` non-blank lines, each cut to LINE_CHARS, saying what was left out."""
    kept = [line for line in text.splitlines() if line.strip()]
    shown = [tether.text.truncate(line, LINE_CHARS) for line in kept[-count:]]
    if len(kept) > count:
        shown.insert(0, f"[{len(kept) - count} earlier lines not shown]")
    if kept and kept[0].startswith("[… ") and len(kept) > count:
        shown.insert(0, kept[0])  # the buffer's own "N earlier bytes dropped" note
    return "\n".join(shown)


def _headline(worker: Worker) -> str:
    parts = [f"{worker.id} {worker.label!r} [{worker.tier}] {worker.status}"]
    if worker.status == "queued":
        parts.append(f"waiting for a slot for {duration(worker.elapsed())}")
    elif worker.status == "running":
        parts.append(f"for {duration(worker.elapsed())}")
    else:
        parts.append(f"after {duration(worker.elapsed())}")
    if worker.exit_code is not None and worker.status != "running":
        parts.append(f"exit code {worker.exit_code}")
    if worker.started_at is not None:
        parts.append(f"started {clock(worker.started_at)}")
    return ", ".join(parts)


def describe_tree(worker: Worker, state: TreeState | None, branch: str) -> str | None:
    """Where the worker works and what becomes of it: said in every answer about it."""
    if worker.tree is None:
        return None
    if worker.released is not None:
        return f"worktree: {worker.released.describe()}"
    start = (
        "the main checkout's state when it was spawned (its uncommitted edits included)"
        if worker.start_from == "worktree"
        else f"commit {worker.tree.base_commit[:10]} (HEAD; the main checkout's uncommitted "
        'edits are not there: start_from="worktree" starts from them)'
    )
    text = f"worktree: {worker.tree.path}, from {start}"
    if state is not None:
        text += f"\nin it now: {state.describe()}"
    return (
        text + f"\nwhen it is removed (vibe_kill, run close) nothing is dropped: uncommitted "
        f"changes are committed there and its commits stay on branch {branch}"
    )


def describe_worker(
    worker: Worker, *, full: bool, state: TreeState | None = None, branch: str = ""
) -> str:
    lines = [_headline(worker)]
    if worker.reason:
        lines.append(f"reason: {worker.reason}")
    tree = describe_tree(worker, state, branch)
    if tree is not None:
        lines.append(tree)
    current = worker.result is not None and worker.result_attempt == worker.attempts
    if worker.status in ("queued", "running"):
        tail = last_lines(worker.output.render(), FULL_TAIL_LINES if full else TAIL_LINES)
        lines.append("last output:\n" + tail if tail else "no output yet")
    elif worker.result and current:
        result = worker.result if full else tether.text.truncate(worker.result, LIST_RESULT_CHARS)
        # a failed worker's text is what it last said, not a result to rely on
        label = "result" if worker.status == "done" else "last output"
        lines.append(f"{label}:\n{result}" if full else f"{label}: {result}")
    if worker.result and not current:
        previous = tether.text.truncate(worker.result, LIST_RESULT_CHARS)
        lines.append(f"previous result (attempt {worker.result_attempt}): {previous}")
    if worker.status == "failed" and worker.stderr_tail.strip():
        stderr = worker.stderr_tail.strip()
        if full:
            stderr = last_lines(stderr, FULL_TAIL_LINES)
        else:
            stderr = tether.text.truncate(stderr.splitlines()[-1], LIST_RESULT_CHARS)
        lines.append("stderr tail:\n" + stderr if full else f"stderr: {stderr}")
    return "\n".join(lines)


def _meta(worker: Worker) -> dict[str, object]:
    return {
        "worker_id": worker.id,
        "label": worker.label,
        "tier": worker.tier,
        "status": worker.status,
        "elapsed_s": round(worker.elapsed(), 3),
        "exit_code": worker.exit_code,
        "attempts": worker.attempts,
        "started_at": (
            None if worker.started_at is None else tether.text.timestamp(worker.started_at)
        ),
        "worktree": (
            str(worker.tree.path) if worker.tree is not None and worker.released is None else None
        ),
        "branch": worker.released.branch if worker.released is not None else None,
    }


# ---------------------------------------------------------------------------------------------
# vibe_spawn


@attrs.frozen
class SpawnArgs:
    brief: str = tether.arg(
        description="The complete task for the worker: what to do, where, and what to report",
        min_length=1,
    )
    label: str = tether.arg(
        description="A short name for the worker, shown in vibe_list", min_length=1
    )
    tier: Literal["fast", "good"] | None = tether.arg(
        None,
        description=(
            "fast: mechanical work with a clear spec; good: design, judgement, or review of a fast "
            "worker's output. Default from [vibe] default_tier"
        ),
    )
    start_from: Literal["head", "worktree"] = tether.arg(
        "head",
        description=(
            'With worktree isolation: "head" starts the worker at the last commit; "worktree" '
            "at the main checkout's current state, its uncommitted edits and untracked files "
            "included"
        ),
    )


async def handle_spawn(call: tether.CallContext, args: SpawnArgs) -> tether.ToolResult:
    roster = _roster(call)
    brief = _nonblank("brief", args.brief)
    label = _nonblank("label", args.label)
    tier = args.tier or roster.config.default_tier
    worker = await roster.spawn(brief, label, tier, start_from=args.start_from)
    text = (
        f"Spawned {worker.id} {label!r} [{tier}]: {worker.status}. It keeps running in the background; "
        f'vibe_wait(worker_id="{worker.id}") blocks until it settles, vibe_list shows every worker.'
    )
    tree = describe_tree(worker, None, roster.branch_for(worker))
    if tree is not None:
        text += "\n" + tree
    return tether.ToolResult.text(text, **_meta(worker))


# ---------------------------------------------------------------------------------------------
# vibe_send


@attrs.frozen
class SendArgs:
    worker_id: str = tether.arg(description="The id vibe_spawn returned (w1, w2, …)")
    message: str = tether.arg(
        description="Appended to the worker's brief; the worker is re-run with the extended brief "
        "(a running attempt is stopped first)",
        min_length=1,
    )


async def handle_send(call: tether.CallContext, args: SendArgs) -> tether.ToolResult:
    message = _nonblank("message", args.message)
    worker = await _roster(call).send(args.worker_id, message)
    text = (
        f"{worker.id} {worker.label!r} re-run (attempt {worker.attempts}) with the message appended "
        f"to its brief: {worker.status}."
    )
    return tether.ToolResult.text(text, **_meta(worker))


# ---------------------------------------------------------------------------------------------
# vibe_wait


@attrs.frozen
class WaitArgs:
    worker_id: str = tether.arg(description="The id vibe_spawn returned (w1, w2, …)")
    timeout_seconds: float | None = tether.arg(
        None,
        description="Stop waiting after this many seconds (default from [vibe] default_wait_s)",
        minimum=0,
    )


async def handle_wait(call: tether.CallContext, args: WaitArgs) -> tether.ToolResult:
    roster = _roster(call)
    cap = roster.config.max_wait_s
    timeout = roster.config.default_wait_s if args.timeout_seconds is None else args.timeout_seconds
    if not 0 <= timeout <= cap:
        raise tether.ArgumentError(
            "timeout_seconds", f"expected a number from 0 to {cap:g}, got {timeout:g}"
        )
    start = time.monotonic()
    settled = await roster.wait(args.worker_id, timeout)
    worker = roster.get(args.worker_id)
    state = await roster.tree_state(worker)
    text = describe_worker(worker, full=True, state=state, branch=roster.branch_for(worker))
    if not settled:
        waited = duration(time.monotonic() - start)
        text = (
            f"Still {worker.status} after waiting {waited}; call vibe_wait again or vibe_kill it.\n"
            + text
        )
    result = tether.ToolResult.text(text, timed_out=not settled, **_meta(worker))
    return result


# ---------------------------------------------------------------------------------------------
# vibe_kill


@attrs.frozen
class KillArgs:
    worker_id: str = tether.arg(description="The id vibe_spawn returned (w1, w2, …)")


async def handle_kill(call: tether.CallContext, args: KillArgs) -> tether.ToolResult:
    roster = _roster(call)
    had_tree = roster.get(args.worker_id).tree is not None
    worker, was_live = await roster.kill(args.worker_id)
    if was_live:
        text = f"Killed {worker.id} {worker.label!r}; its whole process tree is gone."
    else:
        text = (
            f"{worker.id} {worker.label!r} had already settled ({worker.status}); nothing to kill."
        )
    if had_tree and worker.released is not None:
        text += f"\n{worker.released.describe().capitalize()}."
    return tether.ToolResult.text(text, **_meta(worker))


# ---------------------------------------------------------------------------------------------
# vibe_list


@attrs.frozen
class ListArgs:
    pass


async def handle_list(call: tether.CallContext, args: ListArgs) -> tether.ToolResult:
    roster = _roster(call)
    workers = list(roster.workers.values())
    if not workers:
        tiers = ", ".join(
            f"{tier} ({runner.describe()})" for tier, (runner, _) in sorted(roster.runners.items())
        )
        return tether.ToolResult.text(
            f"No workers yet. Runners: {tiers or 'none configured'}.", workers=[]
        )
    counts: dict[str, int] = {}
    for worker in workers:
        counts[worker.status] = counts.get(worker.status, 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in counts.items())
    # Newest first: the ones the agent is most likely asking about.
    shown, note = tether.text.cap(list(reversed(workers)), LIST_LIMIT, "workers")
    blocks = [
        describe_worker(
            worker,
            full=False,
            state=await roster.tree_state(worker) if worker.settled else None,
            branch=roster.branch_for(worker),
        )
        for worker in shown
    ]
    header = f"{len(workers)} workers ({summary})" + (f"; {note}" if note else "")
    return tether.ToolResult.text(
        header + "\n\n" + "\n\n".join(blocks), workers=[_meta(worker) for worker in shown]
    )


#: a worker's answer cut by the core's result budget: the worker is asked, not waited on again
WORKER_CONTINUATION = tether.Continuation(
    next="vibe_send the worker a request for the part you need (or to write its answer to a "
    "file you then read a window at a time)"
)


def tool_specs(run: tether.Run) -> list[tether.ToolSpec]:
    read = tether.Tier.READ
    requires = (RESOURCE,)
    return [
        tether.ToolSpec(
            name="vibe_spawn",
            tier=read,
            args=SpawnArgs,
            handler=handle_spawn,
            description=(
                "Start a background worker on a brief. Returns at once with its id; the worker keeps "
                "running. The worker does not see this conversation: the brief must say everything "
                "it needs. tier fast: mechanical work with a clear spec; good: design, judgement, or "
                "review of a fast worker's output."
            ),
            requires=requires,
        ),
        tether.ToolSpec(
            name="vibe_send",
            tier=read,
            args=SendArgs,
            handler=handle_send,
            description="Append a message to a worker's brief and re-run it (a running attempt is stopped first).",
            requires=requires,
        ),
        tether.ToolSpec(
            name="vibe_wait",
            tier=read,
            args=WaitArgs,
            handler=handle_wait,
            description="Block until a worker settles (done, failed, killed) or the timeout passes; returns its status and result.",
            requires=requires,
            timeout_s=0,
            continuation=WORKER_CONTINUATION,
        ),
        tether.ToolSpec(
            name="vibe_kill",
            tier=read,
            args=KillArgs,
            handler=handle_kill,
            description="Stop a worker and its whole process tree. A killed worker cannot be re-run.",
            requires=requires,
        ),
        tether.ToolSpec(
            name="vibe_list",
            tier=read,
            args=ListArgs,
            handler=handle_list,
            description="Every worker: tier, status, elapsed time and last result (or live output).",
            requires=requires,
        ),
    ]

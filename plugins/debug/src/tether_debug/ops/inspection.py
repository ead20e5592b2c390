"""The ops that look at a stopped program: threads, stack, scopes, variables, evaluate and
set_variable (ids checked against the current stop; each list bounded)."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from tether import ArgumentError, ToolError
from tether.text import cap, show_path, truncate
from tether_debug import dap_requests as dap
from tether_debug.render import location
from tether_debug.state import Phase

if TYPE_CHECKING:
    from tether_debug.supervisor import DebugSupervisor

MAX_FRAMES = 30
MAX_VARIABLES = 50
MAX_VALUE_CHARS = 400
MAX_EVALUATE_CHARS = 4000
MAX_THREADS = 100


async def op_threads(supervisor: DebugSupervisor) -> str:
    session = supervisor.live_session()
    threads = await dap.threads(session)
    shown, note = cap(threads, MAX_THREADS, "threads shown")
    lines = [f"thread_id {t.get('id')}: {t.get('name', '')}" for t in shown]
    if note:
        lines.append(f"({note})")
    return "\n".join(lines) or "The program reports no threads."


async def op_stack(supervisor: DebugSupervisor, thread_id: int | None) -> str:
    session = supervisor.live_session()
    frames, total = await dap.stack(session, thread_id, MAX_FRAMES + 1)
    shown = frames[:MAX_FRAMES]
    lines = []
    for index, frame in enumerate(shown):
        source = frame.get("source") or {}
        line = frame.get("line")
        if source.get("path"):
            where = location(session, source["path"], line)
        else:
            where = f"{show_path(source.get('name') or '?')}:{line}"
        lines.append(f"frame_id {frame['id']}: {frame.get('name', '?')} at {where}")
        if index == 0:
            text = await dap.line_text(session, source.get("path"), line)
            if text is not None:
                lines.append(f"    {line} | {text.strip()}")
    if len(frames) > MAX_FRAMES:
        if total is not None and total > MAX_FRAMES:
            # the spec lets totalFrames overstate (delve answers levels + 50): believe it
            # only when its last frame exists
            last, _ = await dap.stack(session, thread_id, 1, start=total - 1)
            if not last:
                total = None
        count = total if total is not None and total > MAX_FRAMES else f"more than {MAX_FRAMES}"
        lines.append(f"({MAX_FRAMES} of {count} frames shown)")
    return "\n".join(lines) or "The thread has no frames."


async def op_scopes(supervisor: DebugSupervisor, frame_id: int) -> str:
    session = supervisor.live_session()
    session.require_stopped("scopes")
    _check_id(frame_id, "frame_id", session.frames, session.seen_frames, "frame", "stack")
    scopes = await dap.scopes(session, frame_id)
    lines = []
    for scope in scopes:
        extra = ", expensive" if scope.get("expensive") else ""
        count = (
            f", {scope['namedVariables']} variables"
            if scope.get("namedVariables") is not None
            else ""
        )
        lines.append(
            f"{scope.get('name', '?')}: reference {scope.get('variablesReference')}{count}{extra}"
        )
    return "\n".join(lines) or "This frame has no scopes."


async def op_variables(supervisor: DebugSupervisor, reference: int) -> str:
    session = supervisor.live_session()
    session.require_stopped("variables")
    _check_id(
        reference,
        "reference",
        session.references,
        session.seen_references,
        "reference",
        "scopes",
    )
    variables = await dap.variables(session, reference)
    shown, note = cap(variables, MAX_VARIABLES, "variables shown")
    lines = []
    cut = 0
    for var in shown:
        value = str(var.get("value", ""))
        if len(value) > MAX_VALUE_CHARS:
            cut += 1
            value = truncate(value, MAX_VALUE_CHARS)
        kind = f" ({var['type']})" if var.get("type") else ""
        child = (
            f"  [reference {var['variablesReference']}]" if var.get("variablesReference") else ""
        )
        lines.append(f"{var.get('name', '?')}{kind} = {value}{child}")
    if note:
        lines.append(f"({note})")
    if cut:
        lines.append(f"({cut} values cut to {MAX_VALUE_CHARS} characters)")
    return "\n".join(lines) or "No variables under this reference."


async def op_evaluate(supervisor: DebugSupervisor, expression: str, frame_id: int | None) -> str:
    session = supervisor.live_session()
    if frame_id is not None:
        session.require_stopped("evaluate with frame_id")
        _check_id(frame_id, "frame_id", session.frames, session.seen_frames, "frame", "stack")
    elif session.phase is Phase.STOPPED:
        stop = await dap.describe_stop(session)
        frame_id = stop.frame_id if stop else None
    else:
        raise ToolError(
            f"evaluate needs a stopped program (it is {session.describe_phase()}): pause it first"
        )
    body = await dap.evaluate(session, expression, frame_id)
    value = truncate(str(body.get("result", "")), MAX_EVALUATE_CHARS) or "(no value)"
    kind = f" ({body['type']})" if body.get("type") else ""
    child = (
        f"\n[reference {body['variablesReference']}: call variables for its members]"
        if body.get("variablesReference")
        else ""
    )
    where = (
        f" in frame_id {frame_id} ({session.frames.get(frame_id, '')})"
        if frame_id is not None
        else ""
    )
    return f"{value}{kind}{child}\n(evaluated{where})"


async def op_set_variable(
    supervisor: DebugSupervisor, name: str, value: str, reference: int | None, frame_id: int | None
) -> str:
    session = supervisor.live_session()
    session.require_stopped("set_variable")
    if reference is not None:
        _check_id(
            reference,
            "reference",
            session.references,
            session.seen_references,
            "reference",
            "scopes",
        )
    if frame_id is not None:
        _check_id(frame_id, "frame_id", session.frames, session.seen_frames, "frame", "stack")
    elif reference is None:
        stop = await dap.describe_stop(session)
        frame_id = stop.frame_id if stop else None
        if frame_id is None:
            raise ToolError("set_variable: the stop has no frame; call stack and give frame_id")
    body, how = await dap.set_variable(session, name, value, reference, frame_id)
    shown = truncate(str(body.get("value", "")), MAX_VALUE_CHARS) or "(no value)"
    kind = f" ({body['type']})" if body.get("type") else ""
    where = (
        f"a member of reference {reference}"
        if reference is not None
        else f"frame_id {frame_id} ({session.frames.get(frame_id or 0, '')})"
    )
    return f"{name} = {shown}{kind}\n(set in {where} through {how})"


def _check_id(
    value: int, field: str, current: Collection[int], seen: Collection[int], noun: str, how: str
) -> None:
    """Accept only ids handed out during the current stop; say when one is stale."""
    if value in current:
        return
    if value in seen:
        raise ArgumentError(
            field,
            f"{noun} {value} is stale: it belongs to an earlier stop and the program has moved "
            f"since; call {how} again",
        )
    raise ArgumentError(
        field, f"{value} is not a {noun} of the current stop; call {how} for valid ids"
    )

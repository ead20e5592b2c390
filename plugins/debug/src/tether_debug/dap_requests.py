"""The DAP requests a session makes once it runs: threads, stack frames, scopes, variables,
evaluate and set_variable, breakpoints (with the nearest-valid-line probe), and resume/pause.
Each is a function taking the :class:`~tether_debug.session.DebugSession`; a failed request is a
``ToolError`` that names it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from tether import ArgumentError, ToolError
from tether_debug import breakpoints as bp
from tether_debug import features
from tether_debug.breakpoints import BreakpointSpec, BreakpointState
from tether_debug.client import AdapterGone, DapError, DapTimeout, failure_reason
from tether_debug.loaded import Placed
from tether_debug.render import exception_text, frame_label, source_line, traceback_tail
from tether_debug.state import Phase, StopPoint

if TYPE_CHECKING:
    from tether_debug.session import DebugSession

#: how many lines on each side of a breakpoint the adapter did not verify are tried for the
#: nearest one it would (see nearest_valid_lines)
_PROBE_SPAN = 12
_PAUSE_RETRY_S = 2.0
_OWN_FRAME_SEARCH = 30
_OP_NAMES = {"next": "step_over", "stepIn": "step_in", "stepOut": "step_out"}


async def set_breakpoints(
    session: DebugSession,
    path: Path,
    lines: Mapping[int, BreakpointSpec],
    symbols: Mapping[int, str] | None = None,
) -> list[BreakpointState]:
    """Send one file's breakpoints, given as lines of the file now: each goes to its line in
    the text the program loaded (``symbols`` help find an edited line), or is refused when
    that text has none; keep what the adapter says about each (one whose settings the
    adapter's capabilities lack is not sent, and says so)."""

    def place(line: int) -> Placed:
        return session.loaded.to_loaded(path, line, (symbols or {}).get(line))

    states, sent = bp.source_breakpoints(lines, session.capabilities, session.adapter, place)
    try:
        await changed_source(session, path)
        body = await session.client.request(
            "setBreakpoints",
            {
                "source": {"path": str(path), "name": path.name},
                "breakpoints": sent,
                "lines": [b["line"] for b in sent],
                "sourceModified": False,
            },
        )
    except (DapError, DapTimeout, AdapterGone) as exc:
        raise ToolError(
            f"setting the breakpoints of {path} failed: {failure_reason(exc)}"
        ) from None
    bp.take_answer(states, body.get("breakpoints") or [])
    if session.phase is not Phase.RUNNING:
        await nearest_valid_lines(session, path, states, sent)
    for state in states:
        session.line_now(path, state)
    if lines:
        session.breakpoints[path] = states
    else:
        session.breakpoints.pop(path, None)
    return states


async def nearest_valid_lines(
    session: DebugSession, path: Path, states: Sequence[BreakpointState], sent: list[dict[str, Any]]
) -> None:
    """For each line the adapter did not verify, the nearest line it would: the lines around
    it are sent once beside the file's breakpoints, then the breakpoints alone again. Only
    while the program is not running (before configurationDone, or stopped), so that no
    probe can be hit."""
    lost = [s for s in states if s.refused is None and s.verified is False and s.function is None]
    if not lost:
        return
    taken = {b["line"] for b in sent}
    near: dict[int, list[int]] = {}
    for state in lost:
        at = state.loaded or state.requested
        around = sorted(
            range(max(1, at - _PROBE_SPAN), at + _PROBE_SPAN + 1), key=lambda n: abs(n - at)
        )
        near[at] = [n for n in around if n not in taken]
    probes = sorted({n for lines in near.values() for n in lines})
    source = {"path": str(path), "name": path.name}
    try:
        body = await session.client.request(
            "setBreakpoints",
            {"source": source, "breakpoints": [*sent, *({"line": n} for n in probes)]},
        )
        valid = {
            probe: info.get("line") or probe
            for probe, info in zip(
                probes, (body.get("breakpoints") or [])[len(sent) :], strict=False
            )
            if isinstance(info, Mapping) and info.get("verified")
        }
        restored = await session.client.request(
            "setBreakpoints", {"source": source, "breakpoints": sent}
        )
    except (DapError, DapTimeout, AdapterGone):
        return  # the answer then says only what the adapter said
    bp.take_answer(states, restored.get("breakpoints") or [])
    for state in lost:
        at = state.loaded or state.requested
        found = next((valid[n] for n in near[at] if n in valid), None)
        if found is not None:
            state.nearest = (
                found if state.loaded is None else session.loaded.to_now(path, found).line
            )


async def changed_source(session: DebugSession, path: Path) -> None:
    """Once per file that changed since the program loaded it: what the adapter needs to
    place lines by the program's code (see ``DebugAdapter.changed_source_requests``)."""
    if path in session.changed_sources or not session.loaded.changed(path):
        return
    loaded = session.loaded.loaded(path)
    if loaded is None:
        return  # nothing is sent to this file (its lines are refused)
    session.changed_sources.add(path)
    for command, arguments in session.adapter.changed_source_requests(
        path, len(loaded.splitlines())
    ):
        await session.client.request(command, arguments)


async def set_function_breakpoints(
    session: DebugSession, functions: Mapping[str, BreakpointSpec]
) -> list[BreakpointState]:
    """Send the whole set of function breakpoints (DAP replaces it at each request)."""
    states, sent = bp.function_breakpoints(functions, session.capabilities, session.adapter)
    body: dict[str, Any] = {}
    if sent or session.function_breakpoints:
        try:
            body = await session.client.request("setFunctionBreakpoints", {"breakpoints": sent})
        except (DapError, DapTimeout, AdapterGone) as exc:
            raise ToolError(
                f"setting the function breakpoints failed: {failure_reason(exc)}"
            ) from None
    bp.take_answer(states, body.get("breakpoints") or [])
    session.function_breakpoints = states
    return states


async def set_exception_filters(session: DebugSession, filters: Sequence[str]) -> None:
    try:
        await session.client.request("setExceptionBreakpoints", {"filters": list(filters)})
    except (DapError, DapTimeout, AdapterGone) as exc:
        raise ToolError(f"setting the exception filters failed: {failure_reason(exc)}") from None


async def resume(session: DebugSession, command: str, thread_id: int | None) -> bool:
    """continue / next / stepIn / stepOut, then wait (bounded) for the next stop or the end."""
    if session.phase is not Phase.STOPPED and command != "continue":
        raise ToolError(
            f"{_OP_NAMES.get(command, command)} needs a stopped program; it is {session.describe_phase()}"
        )
    if session.phase is Phase.RUNNING:
        # already running (attached, or still running after the last answer): continue
        # means wait for the next stop; a continue request here is refused by some
        # adapters ("debuggee is running")
        return await session.wait_settled(session.config.stop_timeout_s)
    tid = thread_id if thread_id is not None else await default_thread(session)
    previous_phase, previous_stop = session.phase, session.stop
    session.phase = Phase.RUNNING
    session.stop = None
    session.forget_ids()
    session.notify()
    try:
        await session.client.request(command, {"threadId": tid})
    except (DapError, DapTimeout, AdapterGone) as exc:
        if session.phase is Phase.RUNNING:
            session.phase, session.stop = previous_phase, previous_stop
        raise ToolError(
            f"{_OP_NAMES.get(command, command)} failed: {failure_reason(exc)}"
        ) from None
    return await session.wait_settled(session.config.stop_timeout_s)


async def pause(session: DebugSession, thread_id: int | None) -> bool:
    if session.phase is Phase.STOPPED:
        return True
    tid = thread_id if thread_id is not None else await default_thread(session)
    deadline = anyio.current_time() + session.config.stop_timeout_s
    for attempt in range(2):
        try:
            await session.client.request("pause", {"threadId": tid})
        except (DapError, DapTimeout, AdapterGone) as exc:
            raise ToolError(f"pause failed: {failure_reason(exc)}") from None
        # lldb-vscode resumes asynchronously after configurationDone: a pause that lands
        # before the resume took effect stops nothing, yet is answered with success; so
        # one more pause once the first has produced no stop for a while
        wait = max(0.0, deadline - anyio.current_time())
        if attempt == 0:
            wait = min(wait, _PAUSE_RETRY_S)
        if await session.wait_settled(wait):
            return True
    return False


async def default_thread(session: DebugSession) -> int:
    if session.stop is not None and session.stop.thread_id is not None:
        return session.stop.thread_id
    listed = await threads(session)
    if not listed:
        raise ToolError("the program has no threads to act on")
    return int(listed[0]["id"])


async def threads(session: DebugSession) -> list[dict[str, Any]]:
    try:
        body = await session.client.request("threads")
    except (DapError, DapTimeout, AdapterGone) as exc:
        raise ToolError(f"threads failed: {failure_reason(exc)}") from None
    return [t for t in body.get("threads") or [] if isinstance(t, dict)]


async def stack(
    session: DebugSession, thread_id: int | None, levels: int, *, start: int = 0
) -> tuple[list[dict[str, Any]], int | None]:
    """Up to ``levels`` frames of a thread from ``start``, and the total the adapter reports
    (if it does)."""
    session.require_stopped("stack")
    tid = thread_id if thread_id is not None else await default_thread(session)
    try:
        body = await session.client.request(
            "stackTrace", {"threadId": tid, "startFrame": start, "levels": levels}
        )
    except (DapError, DapTimeout, AdapterGone) as exc:
        raise ToolError(f"stack failed: {failure_reason(exc)}") from None
    frames = [f for f in body.get("stackFrames") or [] if isinstance(f, dict)]
    for frame in frames:
        if isinstance(frame.get("name"), str):
            frame["name"] = session.adapter.frame_name(frame["name"])
    known = session.stop_frames.setdefault(tid, {})
    for position, frame in enumerate(frames, start):
        first = known.get(position)
        if first is not None and frame_label(first) == frame_label(frame):
            frame["id"] = first["id"]
        else:
            known[position] = frame
        session.frames[int(frame["id"])] = frame_label(frame)
    total = body.get("totalFrames")
    return frames, total if isinstance(total, int) else None


async def describe_stop(session: DebugSession) -> StopPoint | None:
    """Fill in the current stop's top frame, source line and exception (once per stop)."""
    stop = session.stop
    if stop is None or session.phase is not Phase.STOPPED or stop.frame_id is not None:
        return stop
    if stop.thread_id is None:  # delve's stop after pause names no thread
        try:
            stop.thread_id = await default_thread(session)
        except ToolError:
            pass
    try:
        frames, _ = await stack(session, stop.thread_id, 1)
    except ToolError:
        frames = []
    if frames:
        top = frames[0]
        stop.frame_id = int(top["id"])
        stop.frame_name = str(top.get("name", "?"))
        stop.path = (top.get("source") or {}).get("path")
        stop.line = top.get("line")
        stop.source_line = await line_text(session, stop.path, stop.line)
    if frames and not in_workdir(session, stop.path):
        # stopped inside the runtime or a library (delve stops a panic in
        # runtime.fatalpanic, a pause in runtime.gopark or libc): the nearest frame of the
        # program's own code says more
        try:
            deeper, _ = await stack(session, stop.thread_id, _OWN_FRAME_SEARCH)
        except ToolError:
            deeper = []
        for frame in deeper[1:]:
            path = (frame.get("source") or {}).get("path")
            if in_workdir(session, path):
                stop.own_frame = (
                    int(frame["id"]),
                    str(frame.get("name", "?")),
                    str(path),
                    int(frame.get("line") or 0),
                )
                break
    if stop.reason == "exception" and session.capabilities.get("supportsExceptionInfoRequest"):
        try:
            info = await session.client.request("exceptionInfo", {"threadId": stop.thread_id})
        except (DapError, DapTimeout, AdapterGone):
            info = {}
        stop.exception = exception_text(info)
    return stop


async def line_text(session: DebugSession, path: str | None, line: int | None) -> str | None:
    """Line ``line`` of ``path`` as the program runs it: from the text it loaded when the
    file changed since (None when that text is unknown), else read from the file."""
    if path and line and session.loaded.changed(path):
        return session.loaded.line_text(path, line)
    return await source_line(path, line)


def in_workdir(session: DebugSession, path: str | None) -> bool:
    if not path:
        return False
    try:
        Path(path).resolve().relative_to(session.run.workdir.resolve())
    except ValueError:
        return False
    return True


async def scopes(session: DebugSession, frame_id: int) -> list[dict[str, Any]]:
    try:
        body = await session.client.request("scopes", {"frameId": frame_id})
    except (DapError, DapTimeout, AdapterGone) as exc:
        raise ToolError(f"scopes failed: {failure_reason(exc)}") from None
    scopes = [s for s in body.get("scopes") or [] if isinstance(s, dict)]
    session.references.update(
        int(s["variablesReference"]) for s in scopes if s.get("variablesReference")
    )
    return scopes


async def variables(session: DebugSession, reference: int) -> list[dict[str, Any]]:
    try:
        body = await session.client.request("variables", {"variablesReference": reference})
    except (DapError, DapTimeout, AdapterGone) as exc:
        raise ToolError(f"variables failed: {failure_reason(exc)}") from None
    variables = [v for v in body.get("variables") or [] if isinstance(v, dict)]
    session.references.update(
        int(v["variablesReference"]) for v in variables if v.get("variablesReference")
    )
    return variables


async def evaluate(session: DebugSession, expression: str, frame_id: int | None) -> dict[str, Any]:
    arguments: dict[str, Any] = {"expression": expression, "context": "repl"}
    if frame_id is not None:
        arguments["frameId"] = frame_id
    try:
        body = await session.client.request("evaluate", arguments)
    except (DapError, DapTimeout, AdapterGone) as exc:
        why = traceback_tail(failure_reason(exc))
        sep = "\n" if "\n" in why else " "
        raise ToolError(f"evaluate failed:{sep}{why}") from None
    if body.get("variablesReference"):
        session.references.add(int(body["variablesReference"]))
    return body


async def set_variable(
    session: DebugSession, name: str, value: str, reference: int | None, frame_id: int | None
) -> tuple[dict[str, Any], str]:
    """Assign ``name``: a child of ``reference`` (setVariable), else in the frame's scope —
    through setExpression where the adapter offers it, else setVariable in the first of the
    frame's scopes that holds ``name``. Returns the adapter's answer and how it was set."""
    caps, adapter_id = session.capabilities, session.adapter.id
    try:
        if reference is None and features.supports(caps, "set_expression"):
            assert frame_id is not None
            # assigning a name that does not exist would make a new variable (Python):
            # only what already evaluates is set
            await must_exist(session, name, frame_id)
            arguments: dict[str, Any] = {"expression": name, "value": value}
            if frame_id is not None:
                arguments["frameId"] = frame_id
            body = await session.client.request("setExpression", arguments)
            return body, "setExpression"
        features.require(caps, adapter_id, "set_variable", "set_variable")
        if reference is None:
            assert frame_id is not None
            reference = await scope_holding(session, name, frame_id)
        body = await session.client.request(
            "setVariable", {"variablesReference": reference, "name": name, "value": value}
        )
    except (DapError, DapTimeout, AdapterGone) as exc:
        raise ToolError(f"set_variable failed: {traceback_tail(failure_reason(exc))}") from None
    return body, "setVariable"


async def must_exist(session: DebugSession, name: str, frame_id: int) -> None:
    try:
        await session.client.request(
            "evaluate", {"expression": name, "frameId": frame_id, "context": "watch"}
        )
    except DapError as exc:
        why = traceback_tail(exc.message).strip().splitlines()[-1:]
        raise ArgumentError(
            "name",
            f"no variable {name!r} in frame_id {frame_id} ({' '.join(why)}); set_variable "
            "changes an existing variable",
        ) from None


async def scope_holding(session: DebugSession, name: str, frame_id: int) -> int:
    """The reference of the first (cheap) scope of the frame that has a variable ``name``."""
    looked = []
    for scope in await scopes(session, frame_id):
        reference = int(scope.get("variablesReference") or 0)
        if not reference or scope.get("expensive"):
            continue
        looked.append(str(scope.get("name", "?")))
        if any(v.get("name") == name for v in await variables(session, reference)):
            return reference
    where = f" (looked in {', '.join(looked)})" if looked else ""
    raise ArgumentError(
        "name",
        f"no variable {name!r} in frame_id {frame_id}{where}; give the reference of its "
        "container to set a member",
    )

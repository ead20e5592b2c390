"""The ops that move the program: continue and the steps, pause, run_to (a one-shot
breakpoint), and those that read or end it: output, terminate."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from tether import ArgumentError, ToolError
from tether_debug import breakpoints as bp
from tether_debug import dap_requests as dap
from tether_debug.breakpoints import BreakpointSpec
from tether_debug.report import where
from tether_debug.state import Phase

if TYPE_CHECKING:
    from tether_debug.supervisor import DebugSupervisor

_OPS = {"next": "step_over", "stepIn": "step_in", "stepOut": "step_out"}


async def op_resume(supervisor: DebugSupervisor, command: str, thread_id: int | None) -> str:
    session = supervisor.live_session()
    if session.phase is Phase.STOPPED and not supervisor.stop_reported(session):
        # it stopped after the last answer said it was running: moving on now would pass a
        # stop the agent never saw
        said = await where(session, True)
        return f"The program stopped since the last answer; nothing was resumed (call {_OPS.get(command, command)} again to go on):\n{said}"
    settled = await dap.resume(session, command, thread_id)
    return await where(session, settled)


async def op_pause(supervisor: DebugSupervisor, thread_id: int | None) -> str:
    session = supervisor.live_session()
    settled = await dap.pause(session, thread_id)
    return await where(session, settled)


async def op_run_to(
    supervisor: DebugSupervisor, file: str, line: int, thread_id: int | None
) -> str:
    """A one-shot breakpoint on ``file:line``, continue, then the file's own breakpoints
    back as they were (the one-shot one removed whatever happened)."""
    session = supervisor.live_session()
    path, _ = await supervisor.source_file(file)
    if session.phase is not Phase.STOPPED and session.phase is not Phase.RUNNING:
        raise ToolError(f"run_to needs a started program; it is {session.describe_phase()}")
    own = supervisor.requested.files.get(path, {})
    known = supervisor.requested.anchors.get(path)
    symbols = known.symbols if known is not None else None
    # the line stops unconditionally this once, whatever breakpoint it has of its own
    states = await dap.set_breakpoints(session, path, {**own, line: BreakpointSpec()}, symbols)
    target = next(s for s in states if s.requested == line)
    name = supervisor.rel(path)
    try:
        if target.refused is not None:
            raise ArgumentError("line", f"line {line} of {name}: {target.refused}")
        if target.verified is False:
            raise ArgumentError(
                "line",
                f"line {line} of {name} is not a line the {session.adapter.id} adapter can "
                "stop at:\n" + bp.render([target], name),
            )
        settled = await dap.resume(session, "continue", thread_id)
    finally:
        if session.live:
            with anyio.CancelScope(shield=True):
                await dap.set_breakpoints(session, path, own, symbols)
    said = await where(session, settled)
    stop = session.stop
    aimed = target.line or line
    if session.phase is Phase.STOPPED and stop is not None:
        reached = stop.path is not None and Path(stop.path).resolve() == path.resolve()
        # the stop is a line of the text the program runs; ``aimed`` one of the file now
        if reached and stop.line and session.loaded.to_now(path, stop.line).line == aimed:
            return f"Ran to {name}:{aimed}.\n{said}"
        return (
            f"Stopped before reaching {name}:{aimed} (the one-shot breakpoint is removed).\n{said}"
        )
    return f"Did not reach {name}:{aimed} (the one-shot breakpoint is removed).\n{said}"


async def op_output(supervisor: DebugSupervisor) -> str:
    session = supervisor.session
    if session is None:
        raise ToolError("no debug session has run in this conversation, so there is no output")
    text, notes = session.output.read_new(supervisor.config.output_chunk_chars)
    state = "live" if session.live else f"ended: {session.end_reason}"
    parts = [text if text else "(no new output since the last call)"]
    parts.extend(f"({note})" for note in notes)
    parts.append(f"[session {state}]")
    return "\n".join(parts)


async def op_terminate(supervisor: DebugSupervisor) -> str:
    session = supervisor.live_session()
    await session.close("terminated on request")
    leftover = ""
    if session.output.unread:
        leftover = f" {session.output.unread} bytes of output are still unread (call output)."
    if session.left_alive:
        gone = "still alive after SIGKILL: " + ", ".join(session.left_alive)
    elif session.mode == "launch":
        gone = "the debuggee and adapter are gone"
    else:
        gone = "detached; the program keeps running"
    if session.strays_ended:
        gone += (
            " (also ended, having left the debuggee's process tree: "
            + ", ".join(session.strays_ended)
            + ")"
        )
    return f"Terminated the {session.adapter.id} session of {session.target}: {gone}.{leftover}"

"""The answers about where the program is: a stop report (asking the adapter for the top
frame, its source line and the exception, once per stop), the end of a session with its last
output, and the threads of what was just attached to."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether import ToolError
from tether.text import cap
from tether_debug import dap_requests as dap
from tether_debug.render import location
from tether_debug.state import Phase

if TYPE_CHECKING:
    from tether_debug.session import DebugSession

#: the output shown with the report of a session's end
END_OUTPUT_CHARS = 2000
_ATTACH_THREADS = 20


async def where(session: DebugSession, settled: bool, brief: bool = False) -> str:
    if session.phase is Phase.ENDED:
        text = f"The session ended: {session.end_reason}."
        if not brief and session.output.unread:
            out, _ = session.output.read_new(END_OUTPUT_CHARS)
            more = (
                f"\n({session.output.unread} more bytes: call output)"
                if session.output.unread
                else ""
            )
            text += f"\nOutput:\n{out.rstrip()}{more}"
        return text
    if session.phase is Phase.STOPPED:
        # a status of an unresponsive adapter asks it nothing more: what is known is shown
        hung = brief and session.hang.unresponsive
        stop = session.stop if hung else await dap.describe_stop(session)
        assert stop is not None
        why = stop.reason + (
            f": {stop.description}" if stop.description and stop.description != stop.reason else ""
        )
        lines = []
        if stop.line is None:
            where = "an unknown location"
        else:
            where = location(session, stop.path, stop.line)
            if stop.line == 0:
                where += " (before its first line)"
        in_frame = f" in {stop.frame_name}" if stop.frame_name else ""
        lines.append(f"Stopped ({why}) at {where}{in_frame} (thread_id {stop.thread_id}).")
        if stop.source_line is not None:
            lines.append(f"    {stop.line} | {stop.source_line.strip()}")
        if stop.exception:
            lines.append(f"Exception: {stop.exception}")
        if stop.own_frame is not None:
            frame_id, name, path, line = stop.own_frame
            lines.append(
                f"In the program's own code: {location(session, path, line)} in {name} "
                f"(frame_id {frame_id})."
            )
            own_line = await dap.line_text(session, path, line)
            if own_line is not None:
                lines.append(f"    {line} | {own_line.strip()}")
        if stop.frame_id is not None:
            lines.append(f"Top frame_id {stop.frame_id}.")
        if not hung:
            session.reported_stop = stop
        return "\n".join(lines)
    if not settled and not brief:
        return (
            f"Still running after {session.config.stop_timeout_s:g} s without stopping: use pause, "
            "or status/continue later."
        )
    return "The program is running."


async def thread_report(session: DebugSession) -> str:
    """The threads of what was just attached to, on one line each (bounded)."""
    threads = session.attach_threads
    if not threads:
        try:
            threads = await dap.threads(session)
        except ToolError as exc:
            return f"Threads: unknown ({exc})."
    shown, note = cap(threads, _ATTACH_THREADS, "threads shown")
    head = f"Threads ({len(threads)}):" if threads else "Threads: none reported yet."
    lines = [head, *(f"  thread_id {t.get('id')}: {t.get('name', '')}" for t in shown)]
    if note:
        lines.append(f"  ({note}; call threads for all)")
    return "\n".join(lines)

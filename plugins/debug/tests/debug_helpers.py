"""Helpers shared by the debug family's tests."""

from __future__ import annotations

from typing import Any

import tether


async def debug(run: tether.Run, **args: Any) -> str:
    """Call the debug tool; fail the test on an error result."""
    result = await run.call("debug", args)
    assert not result.is_error, f"{args} -> {result.text_content}"
    return result.text_content


async def debug_error(run: tether.Run, **args: Any) -> str:
    """Call the debug tool; fail the test unless the result is an error."""
    result = await run.call("debug", args)
    assert result.is_error, f"{args} should have failed, got: {result.text_content}"
    return result.text_content


def number_after(text: str, marker: str) -> int:
    """The integer that follows ``marker`` in ``text`` (e.g. "frame_id ")."""
    tail = text.split(marker, 1)[1]
    digits = ""
    for char in tail:
        if not char.isdigit():
            break
        digits += char
    return int(digits)


def session_pids(run: tether.Run) -> set[int]:
    """The adapter, the debuggee and every descendant of the current session."""
    from tether.process import descendants

    session = run.resources["debug_supervisor"].session
    pids: set[int] = set()
    if session.process is not None:
        pids |= {session.process.pid, *descendants(session.process.pid)}
    if session.debuggee_pid is not None:
        pids |= {session.debuggee_pid, *descendants(session.debuggee_pid)}
    return pids


def alive(pids: set[int]) -> set[int]:
    from tether.process import is_alive

    return {pid for pid in pids if is_alive(pid)}

"""How a debug session ends: a polite disconnect (or a hung adapter killed at once), why it
ended, and the processes it started that outlived the adapter, ended too."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

import anyio

from tether.processes.managed import describe, is_alive
from tether_debug.client import AdapterGone, DapClient, DapError, DapTimeout

if TYPE_CHECKING:
    from tether_debug.session import DebugSession

SHUTDOWN_S = 3.0


async def shutdown(session: DebugSession, client: DapClient) -> None:
    remember_tree(session)
    hung = session.hang_note is not None
    await let_go(session, client, hung)
    if session.end_cause is None:
        session.end_cause = await unexpected_end(session, client)
    session.end_reason = session.end_cause
    await client.aclose()  # debugpy's adapter exits when its stdin closes, not on disconnect
    if session.process is not None:
        if not hung:
            with anyio.move_on_after(SHUTDOWN_S / 2):
                await session.process.wait()
        await session.process.terminate(grace_s=0.5)
    await end_leftovers(session)
    if session.scratch_dir is not None:
        shutil.rmtree(session.scratch_dir, ignore_errors=True)


async def let_go(session: DebugSession, client: DapClient, hung: bool) -> None:
    """Disconnect politely, or kill a hung adapter's processes at once."""
    if hung:
        # a hung adapter gets no polite disconnect and no grace: a stopped process cannot
        # act on SIGTERM, and closing pipes it does not read could wait on it
        if session.process is not None:
            session.process.kill()
        for pid in session.tree:
            session.run.process_owner.kill_tree(pid)
    elif not client.closed.is_set():
        # first: an adapter may say how the program ended only now (delve's exit status)
        with anyio.move_on_after(SHUTDOWN_S / 2):
            try:
                await client.request(
                    "disconnect",
                    {"terminateDebuggee": session.mode == "launch", "restart": False},
                    timeout_s=SHUTDOWN_S / 2,
                )
            except (DapError, DapTimeout, AdapterGone):
                pass


async def unexpected_end(session: DebugSession, client: DapClient) -> str:
    """Why the session ended when nobody ended it: the program, or the adapter going."""
    if session.program_ended:
        return (
            f"the program exited with code {session.exit_code}"
            if session.exit_code is not None
            else "the program ended"
        )
    code = None
    if session.process is not None:
        with anyio.move_on_after(1.0):
            code = await session.process.wait()
    status = f" (exit code {code})" if code is not None else ""
    return (
        f"the {session.adapter.id} adapter stopped unexpectedly{status}: {client.closed_reason}"
        + session.transport.stderr_note()
    )


async def end_leftovers(session: DebugSession) -> None:
    """End what the session started that outlived its adapter.

    An adapter that exits by itself orphans its children (debugpy's launcher, the
    debuggee). terminate() finds re-parented ones by process group and owner marker; a
    debuggee that changed both (its own session, a scrubbed environment) would still
    escape, so the pids seen while it ran are checked as well."""
    owner = session.run.process_owner
    leftovers = {pid for pid in session.tree if is_alive(pid)}
    # A debuggee that double-forked, left its session and emptied its environment is in
    # none of those: where this process is a subreaper it was re-parented here, and the
    # run's orphans that started after the adapter are this session's
    if session.process is not None:
        since = session.process.lineage.roots.get(session.process.pid)
        if since is not None:
            strays = owner.strays(since, session.process.marker) - leftovers
            session.strays_ended = [describe(pid) for pid in sorted(strays)]
            leftovers |= strays
    for pid in leftovers:
        owner.kill_tree(pid)
    with anyio.move_on_after(1.0):
        while any(is_alive(pid) for pid in leftovers):  # reaped by whoever adopted them
            await anyio.sleep(0.02)
    session.left_alive = [describe(pid) for pid in sorted(leftovers) if is_alive(pid)]


def remember_tree(session: DebugSession) -> None:
    # only what the run owns: the adapter's ``systemProcessId`` is its word, not proof —
    # a pid of someone else's is never remembered, so never killed
    seen = session.run.process_owner.lineage.observe(session.session_pids())
    session.tree |= seen - ({session.process.pid} if session.process else set())

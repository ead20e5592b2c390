"""The ops that start and describe a session: adapters, launch, attach (by port or pid) and
status; a start that fails ends the session it began and says why."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio

from tether import ArgumentError, ToolError, waiting
from tether.processes.managed import is_alive
from tether.text import clock, duration
from tether_debug.adapters import Availability, DebugAdapter, availability
from tether_debug.render import breakpoint_report, what
from tether_debug.report import END_OUTPUT_CHARS, thread_report, where
from tether_debug.session import DebugSession
from tether_debug.state import Phase

if TYPE_CHECKING:
    from tether_debug.supervisor import DebugSupervisor


async def op_adapters(supervisor: DebugSupervisor) -> str:
    lines = [f"Debug adapters for {supervisor.run.workdir}:"]
    for adapter in supervisor.adapters().values():
        found = await availability(
            adapter, supervisor.run.workdir, supervisor.run.workdir, supervisor.probe
        )
        attach = _attach_kinds(adapter)
        lines.append(
            f"- {adapter.id} [{adapter.kind or 'programs'}; {attach}]: {found.explain(supervisor.run.workdir)}"
        )
    lines.append(
        "Availability is checked from the workdir; launch checks again from the program's directory "
        "(the nearest root marker between it and the workdir)."
    )
    return "\n".join(lines)


async def op_status(supervisor: DebugSupervisor) -> str:
    session = supervisor.session
    lines = []
    if session is None:
        lines.append("No debug session in this conversation yet.")
    elif session.live:
        remaining = max(0.0, session.deadline - anyio.current_time())
        lines.append(
            f"Session: {what(session)}, started at {clock(session.started_at)} "
            f"({duration(time.time() - session.started_at)} ago); TTL ends in {duration(remaining)}."
        )
        if session.hang.unresponsive:
            who = (
                f"pid {session.process.pid}"
                if session.process is not None
                else f"connected to {session.target}"
            )
            lines.append(
                f"Adapter: {session.adapter.id} ({who}): {session.hang.describe()}; after "
                f"{supervisor.config.restart_after_timeouts} timeouts in a row the session is ended."
            )
        lines.append(
            await where(session, session.phase in (Phase.STOPPED, Phase.ENDED), brief=True)
        )
        if session.output.unread:
            lines.append(f"{session.output.unread} bytes of unread output (call output).")
    else:
        ended = clock(session.ended_at) if session.ended_at else "?"
        lines.append(
            f"No live session. The last one ({what(session)}, {clock(session.started_at)}–{ended}) "
            f"ended: {session.end_reason}."
        )
        if session.output.unread:
            lines.append(f"{session.output.unread} bytes of its output are unread (call output).")
    requested = supervisor.requested
    if requested.files or requested.functions:
        listed = [
            f"{supervisor.rel(p)}: {', '.join(f'{n}{s.describe()}' for n, s in specs.items())}"
            for p, specs in requested.files.items()
        ]
        listed += [f"function {n}{s.describe()}" for n, s in requested.functions.items()]
        lines.append(f"Breakpoints: {'; '.join(listed)}.")
    else:
        lines.append("Breakpoints: none.")
    return "\n".join(lines)


async def op_launch(
    supervisor: DebugSupervisor, program: str, args: Sequence[str], adapter_name: str | None
) -> str:
    _refuse_second(supervisor)
    path = supervisor.run.confine(program, field="program")
    if not path.exists():
        raise ArgumentError("program", f"no such file in the workdir: {program!r}")
    if path.is_dir():
        raise ArgumentError("program", f"{program!r} is a directory, not a program")
    if adapter_name is not None:
        adapter = supervisor.adapter_named(adapter_name)
    else:
        matching = [a for a in supervisor.adapters().values() if a.matches_program(path)]
        if not matching:
            kinds = "; ".join(f"{a.id}: {a.kind}" for a in supervisor.adapters().values())
            raise ArgumentError(
                "program",
                f"no debug adapter recognises {program!r} ({kinds}); name one in 'adapter'",
            )
        adapter = matching[0]
    found = await availability(adapter, supervisor.run.workdir, path, supervisor.probe)
    if not found.usable:
        raise ToolError(
            f"the {adapter.id} adapter cannot debug {program!r} here: {found.explain(supervisor.run.workdir)}"
        )
    session = DebugSession(
        run=supervisor.run,
        availability=found,
        adapter=adapter,
        mode="launch",
        target=supervisor.rel(path),
        config=supervisor.config,
    )
    supervisor.session = session
    cwd = found.root or supervisor.run.workdir
    arguments = adapter.launch_arguments(
        path, list(args), cwd, found.resolution, list(supervisor.requested.files)
    )
    if adapter.build_output_argument:
        arguments[adapter.build_output_argument] = str(session.scratch / "debuggee")
    await _start(supervisor, session, "launch", arguments, None)
    settled = await session.wait_settled(supervisor.config.stop_timeout_s)
    pid = f", pid {session.debuggee_pid}" if session.debuggee_pid else ""
    head = f"Launched {session.target} with {adapter.id}{pid}."
    return "\n".join([head, breakpoint_report(session), await where(session, settled)])


async def op_attach(
    supervisor: DebugSupervisor, port: int | None, pid: int | None, adapter_name: str | None
) -> str:
    assert (port is None) != (pid is None), "the core's per-op check lets exactly one through"
    _refuse_second(supervisor)
    adapter = await _attach_adapter(supervisor, port is not None, adapter_name)
    if pid is not None and not is_alive(pid):
        raise ArgumentError("pid", f"no process with pid {pid} is running")
    if pid is not None and (refusal := await adapter.pid_attach_refusal(supervisor.run)):
        raise ToolError(f"attach by pid refused before pid {pid} was touched: {refusal}")
    found = await _attach_availability(supervisor, adapter, pid)
    session = DebugSession(
        run=supervisor.run,
        availability=found,
        adapter=adapter,
        mode="attach",
        target=f"127.0.0.1:{port}" if port is not None else f"pid {pid}",
        config=supervisor.config,
    )
    supervisor.session = session
    arguments = _attach_arguments(adapter, port, pid, found)
    await _start_attach(supervisor, session, adapter, arguments, port, pid)
    return await _attach_answer(supervisor, session, adapter)


def _refuse_second(supervisor: DebugSupervisor) -> None:
    session = supervisor.session
    if session is not None and session.live:
        raise ToolError(
            f"a debug session is already running in this conversation: {what(session)}, "
            f"started at {clock(session.started_at)} ({duration(time.time() - session.started_at)} ago), "
            f"{session.describe_phase()}. It is not replaced: call terminate first to start another."
        )


async def _attach_adapter(
    supervisor: DebugSupervisor, by_port: bool, adapter_name: str | None
) -> DebugAdapter:
    """The adapter named, checked to attach this way; else the one usable adapter that does."""
    field = "port" if by_port else "pid"
    if adapter_name is None:
        return await _only_attach_adapter(supervisor, by_port)
    adapter = supervisor.adapter_named(adapter_name)
    can_any = adapter.attach_mode != "none" or adapter.attach_pid
    if not _can_attach(adapter, by_port):
        raise ArgumentError(
            "adapter",
            f"the {adapter.id} adapter cannot attach by {field} "
            f"({_attach_kinds(adapter).replace('attach', 'it attaches', 1) if can_any else 'it does not attach at all'})",
        )
    return adapter


async def _only_attach_adapter(supervisor: DebugSupervisor, by_port: bool) -> DebugAdapter:
    """The one adapter usable here that attaches this way, or an error naming the choice."""
    field = "port" if by_port else "pid"
    candidates = [a for a in supervisor.adapters().values() if _can_attach(a, by_port)]
    usable, marked = [], []
    for candidate in candidates:
        known = await availability(
            candidate, supervisor.run.workdir, supervisor.run.workdir, supervisor.probe
        )
        if known.usable:
            usable.append(candidate)
            if not known.unmarked:
                marked.append(candidate)
    # an adapter whose root marker is here is the checkout's own (lldb, which needs no
    # marker, is usable everywhere)
    if len(marked) == 1:
        usable = marked
    if len(usable) != 1:
        names = ", ".join(a.id for a in (usable or candidates))
        raise ArgumentError(
            "adapter",
            f"required for attach here: {len(usable)} usable adapters attach by {field} "
            f"({names}); name one",
        )
    return usable[0]


async def _attach_availability(
    supervisor: DebugSupervisor, adapter: DebugAdapter, pid: int | None
) -> Availability | None:
    """The adapter's command, checked when attaching starts one (None: connecting to a
    debug server needs none)."""
    if adapter.attach_mode != "adapter" and pid is None:
        return None
    found = await availability(
        adapter, supervisor.run.workdir, supervisor.run.workdir, supervisor.probe
    )
    if not found.usable:
        raise ToolError(
            f"the {adapter.id} adapter cannot start here: {found.explain(supervisor.run.workdir)}"
        )
    return found


async def _start_attach(
    supervisor: DebugSupervisor,
    session: DebugSession,
    adapter: DebugAdapter,
    arguments: dict[str, Any],
    port: int | None,
    pid: int | None,
) -> None:
    """Start the attach; a failure says what the target needs (a debug server on the port,
    the right to trace the pid)."""
    try:
        await _start(supervisor, session, "attach", arguments, port)
    except ArgumentError:
        raise
    except ToolError as exc:
        if pid is not None and adapter.pid_attach_needs():
            raise ToolError(f"{exc}\n{adapter.pid_attach_needs()}") from None
        hint = adapter.attach_hint.format(port=port) if port is not None else ""
        if not hint:
            raise
        raise ToolError(
            f"{exc}\nIs a debug server listening on 127.0.0.1:{port}? Start the program under "
            f"one first, e.g. {hint}"
        ) from None


async def _attach_answer(
    supervisor: DebugSupervisor, session: DebugSession, adapter: DebugAdapter
) -> str:
    lines = [
        f"Attached to {session.target} with {adapter.id}.",
        breakpoint_report(session),
    ]
    if session.phase is not Phase.ENDED:
        lines.append(await thread_report(session))
    if session.phase in (Phase.STOPPED, Phase.ENDED):
        lines.append(await where(session, True))
    else:
        lines.append(
            "Attaching does not pause it: call pause to stop it where it is (then stack, "
            "scopes, evaluate), or continue to run on to a breakpoint."
        )
    return "\n".join(lines)


async def _start(
    supervisor: DebugSupervisor,
    session: DebugSession,
    command: str,
    arguments: dict[str, Any],
    port: int | None,
) -> None:
    filters = supervisor.requested.exceptions
    if filters is None:
        filters = supervisor.config.exception_filters.get(
            session.adapter.id, list(session.adapter.exception_filters)
        )
    session.start_arguments = arguments
    try:
        # a long wait an observer (tether-otel) shows as a child span of the call
        with waiting("debugger " + command, adapter=session.adapter.id):
            await session.open(attach_port=port)
            await session.configure(
                command,
                arguments,
                supervisor.requested.files,
                supervisor.requested.functions,
                filters,
            )
    except Exception as exc:
        text = str(exc)
        reason = text if text.startswith(f"{command} failed") else f"{command} failed: {text}"
        with anyio.CancelScope(shield=True):
            await session.close(reason)
        if isinstance(exc, ToolError) and not isinstance(exc, ArgumentError):
            # what the adapter printed says why (delve's build errors: "check the debug
            # console for details" is all its launch error says)
            out, _ = session.output.read_new(END_OUTPUT_CHARS)
            if out.strip():
                raise ToolError(f"{text}\nOutput:\n{out.rstrip()}") from None
        raise
    except BaseException:
        with anyio.CancelScope(shield=True):
            await session.close(f"{command} was cancelled")
        raise


def _can_attach(adapter: DebugAdapter, by_port: bool) -> bool:
    return adapter.attach_mode != "none" if by_port else adapter.attach_pid


def _attach_arguments(
    adapter: DebugAdapter, port: int | None, pid: int | None, found: Availability | None
) -> dict[str, Any]:
    """The ``attach`` request's arguments: for the pid, or for the debug server on the port."""
    if pid is not None:
        assert found is not None
        return adapter.pid_attach_arguments(pid, found.resolution)
    assert port is not None
    return adapter.attach_arguments("127.0.0.1", port, found.resolution if found else None)


def _attach_kinds(adapter: DebugAdapter) -> str:
    port = {"connect": "port", "adapter": "port (gdb-remote)"}.get(adapter.attach_mode)
    pid = "pid" if adapter.attach_pid else None
    kinds = [k for k in (port, pid) if k]
    return "attach by " + " or ".join(kinds) if kinds else "no attach"

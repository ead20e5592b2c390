"""The debug supervisor of one run (one conversation): the adapters contributed by plugins,
the breakpoints set so far, and at most one live session, with its TTL. Each ``debug`` op is a
method here that returns the text the model reads."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from tether import ArgumentError, ToolError
from tether.availability import CommandProbe
from tether.contributions import collect
from tether.paths import relative
from tether.process import is_alive
from tether.text import cap, clock, duration, truncate
from tether_debug.adapters import DebugAdapter, availability
from tether_debug.config import DebugConfig
from tether_debug.session import BreakpointState, DebugSession, Phase, source_line

if TYPE_CHECKING:
    from tether import Run

MAX_FRAMES = 30
MAX_VARIABLES = 50
MAX_VALUE_CHARS = 400
MAX_EVALUATE_CHARS = 4000
MAX_THREADS = 100
_ATTACH_THREADS = 20
_END_OUTPUT_CHARS = 2000


def _adapter_problem(adapter: DebugAdapter) -> str | None:
    if not isinstance(adapter.id, str) or not adapter.id:
        return "it has no id (set the class attribute `id`)"
    commands = adapter.commands
    if not isinstance(commands, tuple) or not all(
        isinstance(c, tuple) and all(isinstance(a, str) for a in c) for c in commands
    ):
        return f"commands: expected a tuple of argv tuples, got {commands!r:.60}"
    for name in ("root_markers", "program_suffixes"):
        value = getattr(adapter, name)
        if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
            return f"{name}: expected a tuple of strings, got {value!r:.60}"
    return None


class DebugSupervisor:
    """Resource ``debug_supervisor``: wired only when the run has a conversation id."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.config = run.config("debug", DebugConfig)
        self.breakpoints: dict[Path, list[int]] = {}
        self.session: DebugSession | None = None
        self.probe = CommandProbe(run)
        self._adapters: dict[str, DebugAdapter] | None = None

    # --- adapters ---------------------------------------------------------------------------

    def adapters(self) -> dict[str, DebugAdapter]:
        """Every adapter contributed through ``tether_debug_adapters``, by the core's collector:
        a malformed adapter or a second one with a taken id is dropped and its plugin reported
        (``tether plugins``, ``run.pm.report``); the others keep working."""
        if self._adapters is None:
            found = collect(
                self.run.pm,
                "tether_debug_adapters",
                DebugAdapter,
                key=lambda adapter: adapter.id,
                label="debug adapter",
                check=_adapter_problem,
            )
            self._adapters = {name: c.item for name, c in found.items()}
        return self._adapters

    def _adapter_named(self, name: str) -> DebugAdapter:
        adapters = self.adapters()
        if name not in adapters:
            raise ArgumentError(
                "adapter", f"unknown adapter {name!r}; known: {', '.join(sorted(adapters))}"
            )
        return adapters[name]

    async def op_adapters(self) -> str:
        lines = [f"Debug adapters for {self.run.workdir}:"]
        for adapter in self.adapters().values():
            found = await availability(adapter, self.run.workdir, self.run.workdir, self.probe)
            attach = _attach_kinds(adapter)
            lines.append(
                f"- {adapter.id} [{adapter.kind or 'programs'}; {attach}]: {found.explain(self.run.workdir)}"
            )
        lines.append(
            "Availability is checked from the workdir; launch checks again from the program's directory "
            "(the nearest root marker between it and the workdir)."
        )
        return "\n".join(lines)

    # --- breakpoints ------------------------------------------------------------------------

    async def op_breakpoints(self, file: str, lines: Sequence[int]) -> str:
        path = self.run.confine(file, field="file")
        if not path.is_file():
            raise ArgumentError("file", f"no such file in the workdir: {file!r}")
        bad = [line for line in lines if line < 1]
        if bad:
            raise ArgumentError("lines", f"line numbers start at 1, got {bad[0]}")
        wanted = sorted(set(lines))
        if wanted:
            self.breakpoints[path] = wanted
        else:
            self.breakpoints.pop(path, None)
        name = self._rel(path)
        session = self.session
        if session is not None and session.live and session.phase is not Phase.STARTING:
            states = await session.set_breakpoints(path, wanted)
            if not wanted:
                return f"Cleared every breakpoint in {name} (sent to the running {session.adapter.id} session)."
            return f"Breakpoints in {name} (sent to the running session):\n" + _render_states(
                states
            )
        if not wanted:
            return f"Cleared every breakpoint in {name}."
        listed = ", ".join(str(line) for line in wanted)
        noun = "line" if len(wanted) == 1 else "lines"
        return (
            f"Breakpoints in {name}: {noun} {listed}. "
            "No session is running: they are sent at launch/attach."
        )

    def _breakpoint_report(self, session: DebugSession) -> str:
        if not session.breakpoints:
            return "Breakpoints: none."
        parts = ["Breakpoints:"]
        for path, states in session.breakpoints.items():
            parts.append(f"{self._rel(path)}:\n{_render_states(states)}")
        return "\n".join(parts)

    # --- starting a session -----------------------------------------------------------------

    def _refuse_second(self) -> None:
        session = self.session
        if session is not None and session.live:
            raise ToolError(
                f"a debug session is already running in this conversation: {self._what(session)}, "
                f"started at {clock(session.started_at)} ({duration(time.time() - session.started_at)} ago), "
                f"{session.describe_phase()}. It is not replaced: call terminate first to start another."
            )

    async def op_launch(self, program: str, args: Sequence[str], adapter_name: str | None) -> str:
        self._refuse_second()
        path = self.run.confine(program, field="program")
        if not path.exists():
            raise ArgumentError("program", f"no such file in the workdir: {program!r}")
        if path.is_dir():
            raise ArgumentError("program", f"{program!r} is a directory, not a program")
        if adapter_name is not None:
            adapter = self._adapter_named(adapter_name)
        else:
            matching = [a for a in self.adapters().values() if a.matches_program(path)]
            if not matching:
                kinds = "; ".join(f"{a.id}: {a.kind}" for a in self.adapters().values())
                raise ArgumentError(
                    "program",
                    f"no debug adapter recognises {program!r} ({kinds}); name one in 'adapter'",
                )
            adapter = matching[0]
        found = await availability(adapter, self.run.workdir, path, self.probe)
        if not found.usable:
            raise ToolError(
                f"the {adapter.id} adapter cannot debug {program!r} here: {found.explain(self.run.workdir)}"
            )
        session = DebugSession(
            run=self.run,
            availability=found,
            adapter=adapter,
            mode="launch",
            target=self._rel(path),
            config=self.config,
        )
        self.session = session
        cwd = found.root or self.run.workdir
        arguments = adapter.launch_arguments(
            path, list(args), cwd, found.resolution, list(self.breakpoints)
        )
        if adapter.build_output_argument:
            arguments[adapter.build_output_argument] = str(session.scratch / "debuggee")
        await self._start(session, "launch", arguments, None)
        settled = await session.wait_settled(self.config.stop_timeout_s)
        pid = f", pid {session.debuggee_pid}" if session.debuggee_pid else ""
        head = f"Launched {session.target} with {adapter.id}{pid}."
        return "\n".join(
            [head, self._breakpoint_report(session), await self._where(session, settled)]
        )

    async def op_attach(self, port: int | None, pid: int | None, adapter_name: str | None) -> str:
        assert (port is None) != (pid is None), "the core's per-op check lets exactly one through"
        self._refuse_second()
        field = "port" if port is not None else "pid"

        def can(adapter: DebugAdapter) -> bool:
            return adapter.attach_mode != "none" if port is not None else adapter.attach_pid

        if adapter_name is not None:
            adapter = self._adapter_named(adapter_name)
            if not can(adapter):
                raise ArgumentError(
                    "adapter",
                    f"the {adapter.id} adapter cannot attach by {field} "
                    f"({_attach_kinds(adapter).replace('attach', 'it attaches', 1)})",
                )
        else:
            candidates = [a for a in self.adapters().values() if can(a)]
            usable = []
            for candidate in candidates:
                if (
                    await availability(candidate, self.run.workdir, self.run.workdir, self.probe)
                ).usable:
                    usable.append(candidate)
            if len(usable) != 1:
                names = ", ".join(a.id for a in (usable or candidates))
                raise ArgumentError(
                    "adapter",
                    f"required for attach here: {len(usable)} usable adapters attach by {field} "
                    f"({names}); name one",
                )
            adapter = usable[0]
        if pid is not None and not is_alive(pid):
            raise ArgumentError("pid", f"no process with pid {pid} is running")
        found = None
        if adapter.attach_mode == "adapter" or pid is not None:
            found = await availability(adapter, self.run.workdir, self.run.workdir, self.probe)
            if not found.usable:
                raise ToolError(
                    f"the {adapter.id} adapter cannot start here: {found.explain(self.run.workdir)}"
                )
        session = DebugSession(
            run=self.run,
            availability=found,
            adapter=adapter,
            mode="attach",
            target=f"127.0.0.1:{port}" if port is not None else f"pid {pid}",
            config=self.config,
        )
        self.session = session
        if pid is not None:
            assert found is not None
            arguments = adapter.pid_attach_arguments(pid, found.resolution)
        else:
            assert port is not None
            arguments = adapter.attach_arguments(
                "127.0.0.1", port, found.resolution if found else None
            )
        try:
            await self._start(session, "attach", arguments, port)
        except ArgumentError:
            raise
        except ToolError as exc:
            hint = adapter.attach_hint.format(port=port) if port is not None else ""
            if not hint:
                raise
            raise ToolError(
                f"{exc}\nIs a debug server listening on 127.0.0.1:{port}? Start the program under "
                f"one first, e.g. {hint}"
            ) from None
        lines = [
            f"Attached to {session.target} with {adapter.id}.",
            self._breakpoint_report(session),
        ]
        if session.phase is not Phase.ENDED:
            lines.append(await self._thread_report(session))
        if session.phase in (Phase.STOPPED, Phase.ENDED):
            lines.append(await self._where(session, True))
        else:
            lines.append(
                "Attaching does not pause it: call pause to stop it where it is (then stack, "
                "scopes, evaluate), or continue to run on to a breakpoint."
            )
        return "\n".join(lines)

    async def _thread_report(self, session: DebugSession) -> str:
        """The threads of what was just attached to, on one line each (bounded)."""
        threads = session.attach_threads
        if not threads:
            try:
                threads = await session.threads()
            except ToolError as exc:
                return f"Threads: unknown ({exc})."
        shown, note = cap(threads, _ATTACH_THREADS, "threads shown")
        head = f"Threads ({len(threads)}):" if threads else "Threads: none reported yet."
        lines = [head, *(f"  thread_id {t.get('id')}: {t.get('name', '')}" for t in shown)]
        if note:
            lines.append(f"  ({note}; call threads for all)")
        return "\n".join(lines)

    async def _start(
        self, session: DebugSession, command: str, arguments: dict[str, Any], port: int | None
    ) -> None:
        filters = self.config.exception_filters.get(
            session.adapter.id, list(session.adapter.exception_filters)
        )
        try:
            await session.open(attach_port=port)
            await session.configure(command, arguments, self.breakpoints, filters)
        except Exception as exc:
            text = str(exc)
            reason = text if text.startswith(f"{command} failed") else f"{command} failed: {text}"
            with anyio.CancelScope(shield=True):
                await session.close(reason)
            if isinstance(exc, ToolError) and not isinstance(exc, ArgumentError):
                # what the adapter printed says why (delve's build errors: "check the debug
                # console for details" is all its launch error says)
                out, _ = session.output.read_new(_END_OUTPUT_CHARS)
                if out.strip():
                    raise ToolError(f"{text}\nOutput:\n{out.rstrip()}") from None
            raise
        except BaseException:
            with anyio.CancelScope(shield=True):
                await session.close(f"{command} was cancelled")
            raise

    # --- driving ----------------------------------------------------------------------------

    async def guarded(self, op: Awaitable[str]) -> str:
        """Run one op; when the session was ended during it for an adapter that stopped
        answering, its result is an error that says so (whatever the op had to say before)."""
        try:
            text = await op
        except ToolError as exc:
            await self._report_hang(str(exc))
            raise
        await self._report_hang(text)
        return text

    async def _report_hang(self, said: str) -> None:
        session = self.session
        if session is None or session.hang_note is None or session.hang_reported:
            return
        session.hang_reported = True
        await session.close(session.hang_note)  # waits (bounded) until both trees are gone
        raise ToolError(f"{said}\n{session.hang_note}.")

    def _live(self) -> DebugSession:
        session = self.session
        if session is None:
            raise ToolError("no debug session in this conversation: launch or attach first")
        if not session.live:
            again = "" if session.hang_note else " Launch or attach again."  # it says so itself
            raise ToolError(f"the debug session has ended: {session.end_reason}.{again}")
        return session

    async def op_resume(self, command: str, thread_id: int | None) -> str:
        session = self._live()
        settled = await session.resume(command, thread_id)
        return await self._where(session, settled)

    async def op_pause(self, thread_id: int | None) -> str:
        session = self._live()
        settled = await session.pause(thread_id)
        return await self._where(session, settled)

    async def op_threads(self) -> str:
        session = self._live()
        threads = await session.threads()
        shown, note = cap(threads, MAX_THREADS, "threads shown")
        lines = [f"thread_id {t.get('id')}: {t.get('name', '')}" for t in shown]
        if note:
            lines.append(f"({note})")
        return "\n".join(lines) or "The program reports no threads."

    async def op_stack(self, thread_id: int | None) -> str:
        session = self._live()
        frames, total = await session.stack(thread_id, MAX_FRAMES + 1)
        shown = frames[:MAX_FRAMES]
        lines = []
        for index, frame in enumerate(shown):
            source = frame.get("source") or {}
            where = self._rel_str(source.get("path")) or source.get("name") or "?"
            line = frame.get("line")
            lines.append(f"frame_id {frame['id']}: {frame.get('name', '?')} at {where}:{line}")
            if index == 0:
                text = await source_line(source.get("path"), line)
                if text is not None:
                    lines.append(f"    {line} | {text.strip()}")
        if len(frames) > MAX_FRAMES:
            if total is not None and total > MAX_FRAMES:
                # the spec lets totalFrames overstate (delve answers levels + 50): believe it
                # only when its last frame exists
                last, _ = await session.stack(thread_id, 1, start=total - 1)
                if not last:
                    total = None
            count = total if total is not None and total > MAX_FRAMES else f"more than {MAX_FRAMES}"
            lines.append(f"({MAX_FRAMES} of {count} frames shown)")
        return "\n".join(lines) or "The thread has no frames."

    async def op_scopes(self, frame_id: int) -> str:
        session = self._live()
        session.require_stopped("scopes")
        _check_id(frame_id, "frame_id", session.frames, session.seen_frames, "frame", "stack")
        scopes = await session.scopes(frame_id)
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

    async def op_variables(self, reference: int) -> str:
        session = self._live()
        session.require_stopped("variables")
        _check_id(
            reference,
            "reference",
            session.references,
            session.seen_references,
            "reference",
            "scopes",
        )
        variables = await session.variables(reference)
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
                f"  [reference {var['variablesReference']}]"
                if var.get("variablesReference")
                else ""
            )
            lines.append(f"{var.get('name', '?')}{kind} = {value}{child}")
        if note:
            lines.append(f"({note})")
        if cut:
            lines.append(f"({cut} values cut to {MAX_VALUE_CHARS} characters)")
        return "\n".join(lines) or "No variables under this reference."

    async def op_evaluate(self, expression: str, frame_id: int | None) -> str:
        session = self._live()
        if frame_id is not None:
            session.require_stopped("evaluate with frame_id")
            _check_id(frame_id, "frame_id", session.frames, session.seen_frames, "frame", "stack")
        elif session.phase is Phase.STOPPED:
            stop = await session.describe_stop()
            frame_id = stop.frame_id if stop else None
        else:
            raise ToolError(
                f"evaluate needs a stopped program (it is {session.describe_phase()}): pause it first"
            )
        body = await session.evaluate(expression, frame_id)
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

    async def op_output(self) -> str:
        session = self.session
        if session is None:
            raise ToolError("no debug session has run in this conversation, so there is no output")
        text, notes = session.output.read_new(self.config.output_chunk_chars)
        state = "live" if session.live else f"ended: {session.end_reason}"
        parts = [text if text else "(no new output since the last call)"]
        parts.extend(f"({note})" for note in notes)
        parts.append(f"[session {state}]")
        return "\n".join(parts)

    async def op_terminate(self) -> str:
        session = self._live()
        await session.close("terminated on request")
        leftover = ""
        if session.output.unread:
            leftover = f" {session.output.unread} bytes of output are still unread (call output)."
        gone = (
            "the debuggee and adapter are gone"
            if session.mode == "launch"
            else "detached; the program keeps running"
        )
        return f"Terminated the {session.adapter.id} session of {session.target}: {gone}.{leftover}"

    async def op_status(self) -> str:
        session = self.session
        lines = []
        if session is None:
            lines.append("No debug session in this conversation yet.")
        elif session.live:
            remaining = max(0.0, session.deadline - anyio.current_time())
            lines.append(
                f"Session: {self._what(session)}, started at {clock(session.started_at)} "
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
                    f"{self.config.restart_after_timeouts} timeouts in a row the session is ended."
                )
            lines.append(
                await self._where(
                    session, session.phase in (Phase.STOPPED, Phase.ENDED), brief=True
                )
            )
            if session.output.unread:
                lines.append(f"{session.output.unread} bytes of unread output (call output).")
        else:
            ended = clock(session.ended_at) if session.ended_at else "?"
            lines.append(
                f"No live session. The last one ({self._what(session)}, {clock(session.started_at)}–{ended}) "
                f"ended: {session.end_reason}."
            )
            if session.output.unread:
                lines.append(
                    f"{session.output.unread} bytes of its output are unread (call output)."
                )
        if self.breakpoints:
            listed = "; ".join(
                f"{self._rel(p)}: {', '.join(map(str, lines_))}"
                for p, lines_ in self.breakpoints.items()
            )
            lines.append(f"Breakpoints: {listed}.")
        else:
            lines.append("Breakpoints: none.")
        return "\n".join(lines)

    # --- rendering --------------------------------------------------------------------------

    async def _where(self, session: DebugSession, settled: bool, brief: bool = False) -> str:
        if session.phase is Phase.ENDED:
            text = f"The session ended: {session.end_reason}."
            if not brief and session.output.unread:
                out, _ = session.output.read_new(_END_OUTPUT_CHARS)
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
            stop = session.stop if hung else await session.describe_stop()
            assert stop is not None
            why = stop.reason + (
                f": {stop.description}"
                if stop.description and stop.description != stop.reason
                else ""
            )
            lines = []
            if stop.line is None:
                where = "an unknown location"
            else:
                where = f"{self._rel_str(stop.path) or '?'}:{stop.line}"
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
                    f"In the program's own code: {self._rel_str(path)}:{line} in {name} "
                    f"(frame_id {frame_id})."
                )
                own_line = await source_line(path, line)
                if own_line is not None:
                    lines.append(f"    {line} | {own_line.strip()}")
            if stop.frame_id is not None:
                lines.append(f"Top frame_id {stop.frame_id}.")
            return "\n".join(lines)
        if not settled and not brief:
            return (
                f"Still running after {self.config.stop_timeout_s:g} s without stopping: use pause, "
                "or status/continue later."
            )
        return "The program is running."

    def _what(self, session: DebugSession) -> str:
        return f"{session.adapter.id} {session.mode} of {session.target}"

    def _rel(self, path: Path) -> str:
        return relative(self.run.workdir, path)

    def _rel_str(self, path: str | None) -> str | None:
        return relative(self.run.workdir, path) if path else None

    async def aclose(self) -> None:
        if self.session is not None and self.session.live:
            await self.session.close("the run closed")


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


def _attach_kinds(adapter: DebugAdapter) -> str:
    port = {"connect": "port", "adapter": "port (gdb-remote)"}.get(adapter.attach_mode)
    pid = "pid" if adapter.attach_pid else None
    kinds = [k for k in (port, pid) if k]
    return "attach by " + " or ".join(kinds) if kinds else "no attach"


def _render_states(states: Sequence[BreakpointState]) -> str:
    verified_lines = [s.line or s.requested for s in states if s.verified]
    out = []
    for state in states:
        if state.verified is None:
            out.append(f"  line {state.requested}: set (sent at launch)")
        elif state.verified and state.line in (None, state.requested):
            out.append(f"  line {state.requested}: verified")
        elif state.verified:
            out.append(f"  line {state.requested}: moved by the adapter to line {state.line}")
        else:
            why = f" ({state.message})" if state.message else ""
            nearest = ""
            if verified_lines:
                best = min(verified_lines, key=lambda n: abs(n - state.requested))
                nearest = f"; nearest verified line: {best}"
            out.append(f"  line {state.requested}: NOT verified{why}{nearest}")
    return "\n".join(out)

"""The debug supervisor of one run (one conversation): the adapters contributed by plugins,
the breakpoints set so far, and at most one live session, with its TTL. Each ``debug`` op is a
method here that returns the text the model reads."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from tether import ArgumentError, ToolError, waiting
from tether.availability import CommandProbe
from tether.contributions import collect
from tether.errors import PathError
from tether.paths import OUTSIDE, is_inside, relative
from tether.process import is_alive
from tether.text import cap, clock, duration, show_path, truncate
from tether_debug import breakpoints as bp
from tether_debug import features
from tether_debug.adapters import Availability, DebugAdapter, LibraryRoot, availability
from tether_debug.anchors import Anchor, follow_all, read_text
from tether_debug.breakpoints import BreakpointSpec, Requested
from tether_debug.config import DebugConfig
from tether_debug.session import DebugSession, Phase

if TYPE_CHECKING:
    from tether import Run

MAX_FRAMES = 30
MAX_VARIABLES = 50
MAX_VALUE_CHARS = 400
MAX_EVALUATE_CHARS = 4000
MAX_THREADS = 100
_ATTACH_THREADS = 20
_END_OUTPUT_CHARS = 2000
_OPS = {"next": "step_over", "stepIn": "step_in", "stepOut": "step_out"}


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
        self.requested = Requested()
        self._roots: dict[str, list[LibraryRoot]] = {}  # library roots per adapter id
        self.session: DebugSession | None = None
        self.probe = CommandProbe(run)
        self._adapters: dict[str, DebugAdapter] | None = None
        #: breakpoints moved or dropped because their file changed, for the next answer
        self._moved: list[str] = []

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

    async def op_breakpoints(
        self,
        *,
        file: str | None,
        lines: Sequence[int] | None,
        function: str | None,
        exceptions: Sequence[str] | None,
        spec: BreakpointSpec,
        remove: bool,
        symbol: str | None = None,
    ) -> str:
        _check_breakpoint_arguments(file, lines, function, exceptions, spec, remove, symbol)
        session = self._session_for_breakpoints(spec, function, exceptions, remove)
        if exceptions is not None:
            return await self._set_exceptions(session, list(exceptions))
        if function is not None:
            return await self._set_function(session, function, spec, remove)
        assert file is not None and lines is not None
        return await self._set_lines(session, file, lines, spec, remove, symbol)

    def _session_for_breakpoints(
        self,
        spec: BreakpointSpec,
        function: str | None,
        exceptions: Sequence[str] | None,
        remove: bool,
    ) -> DebugSession | None:
        """The live session the breakpoints go to now (None: they wait for launch/attach),
        once it is known to honour them."""
        session = self.session
        if session is None or not session.live or session.phase is Phase.STARTING:
            return None
        # refused by name before anything changes: the adapter would ignore the setting
        # and stop unconditionally (or never)
        capabilities, adapter_id = session.capabilities, session.adapter.id
        for name in spec.settings():
            features.require(capabilities, adapter_id, name, "breakpoints")
        if spec.hit_condition is not None:
            refused = bp.hit_refusal(session.adapter, bp.HitCondition.parse(spec.hit_condition))
            if refused is not None:
                raise ArgumentError("hit_condition", f'{refused}; op "breakpoints" cannot use it')
        if function is not None and not remove:
            features.require(capabilities, adapter_id, "function", "breakpoints")
        if exceptions is not None:
            features.check_exception_filters(capabilities, adapter_id, exceptions)
        return session

    async def _set_lines(
        self,
        session: DebugSession | None,
        file: str,
        lines: Sequence[int],
        spec: BreakpointSpec,
        remove: bool,
        symbol: str | None,
    ) -> str:
        path, library = await self._source_file(file)
        before = dict(self.requested.files.get(path, {}))
        wanted = self.requested.lines_after(path, lines, spec, remove)
        name = self._rel(path) + (f" ({library})" if library else "")
        return _with_changes(
            await self._send_lines(session, path, name, library, wanted, lines, symbol, remove),
            before,
            wanted,
            replaced=not remove and not spec.settings() and bool(lines),
        )

    async def _send_lines(
        self,
        session: DebugSession | None,
        path: Path,
        name: str,
        library: str | None,
        wanted: dict[int, BreakpointSpec],
        lines: Sequence[int],
        symbol: str | None,
        remove: bool,
    ) -> str:
        """Keep ``wanted`` as the file's breakpoints and send them to the live session, if any;
        the answer's report of each line."""
        anchor = self._anchor(path, name, wanted, lines, symbol, remove)
        ignored = session.adapter.ignores_library_code(session.start_arguments) if session else None
        if library and ignored:
            # sent now, the adapter would accept them and never stop there: kept for the next
            # launch, whose arguments then let the adapter stop in library code
            self.requested.commit_lines(path, wanted, anchor)
            return f"Breakpoints in {name}: NOT sent to the running session: {ignored}"
        if session is not None:
            symbols = anchor.symbols if anchor is not None else None
            states = await session.set_breakpoints(path, wanted, symbols)
            self.requested.commit_lines(path, wanted, anchor)
            if not wanted:
                return f"Cleared every breakpoint in {name} (sent to the running {session.adapter.id} session)."
            return f"Breakpoints in {name} (sent to the running session):\n" + bp.render(
                states, name
            )
        self.requested.commit_lines(path, wanted, anchor)
        if not wanted:
            return f"Cleared every breakpoint in {name}."
        listed = ", ".join(f"{line}{line_spec.describe()}" for line, line_spec in wanted.items())
        noun = "line" if len(wanted) == 1 else "lines"
        return (
            f"Breakpoints in {name}: {noun} {listed}. "
            "No session is running: they are sent at launch/attach."
        )

    def _anchor(
        self,
        path: Path,
        name: str,
        wanted: Collection[int],
        lines: Sequence[int],
        symbol: str | None,
        remove: bool,
    ) -> Anchor | None:
        """The text the file's breakpoints are set on now (checking ``symbol`` on each line),
        keeping the symbols of the lines this call leaves alone; None for an unreadable file."""
        text = read_text(path, self.run.workdir)
        if text is None:
            return None
        known = self.requested.anchors.get(path)
        symbols = dict(known.symbols) if known is not None else {}
        if not remove:
            for line in lines:
                symbols.pop(line, None)
        anchor = Anchor(text, symbols)
        if symbol is not None:
            anchor.check_symbol(lines, symbol, name)
            symbols.update(dict.fromkeys(lines, symbol))
        return Anchor(text, {n: s for n, s in symbols.items() if n in wanted})

    def follow_edits(self) -> None:
        """Move the breakpoints of every file that changed since they were set (a tether
        write or another process: the text is compared, so both count) to where their lines
        went, or drop them as lost or ambiguous; the next answer says which.

        A live session keeps what it was sent: its program loaded the earlier text (a built
        binary, an imported module), so the moved lines would mean something else to it."""
        for path, specs in list(self.requested.files.items()):
            anchor = self.requested.anchors.get(path)
            if anchor is None:
                continue
            text = read_text(path, self.run.workdir)
            if text == anchor.text:
                continue
            name = self._rel(path)
            if text is None:
                self.requested.commit_lines(path, {})
                self._moved.append(
                    f"{name} is gone: its breakpoints are lost (lines {', '.join(map(str, specs))})."
                )
                continue
            moved: dict[int, BreakpointSpec] = {}
            symbols: dict[int, str] = {}
            said = []
            moves = follow_all(anchor.text, text, list(specs), anchor.symbols)
            for (line, spec), move in zip(specs.items(), moves, strict=True):
                said.append(f"  {move.describe(spec.describe())}")
                if move.new is None:
                    continue
                if move.new in moved:
                    said[-1] += f"; it joins the breakpoint already on line {move.new}"
                moved[move.new] = spec
                if line in anchor.symbols:
                    symbols[move.new] = anchor.symbols[line]
            self.requested.commit_lines(path, moved, Anchor(text, symbols))
            session = self.session
            later = (
                " The running program started from the earlier text and keeps its breakpoints "
                "where they were; the moves apply from the next launch."
                if session is not None and session.live
                else ""
            )
            self._moved.append(
                f"{name} changed since its breakpoints were set:{later}\n" + "\n".join(said)
            )

    def saw_writes(self, before: Mapping[Path, bytes | None]) -> None:
        """Files a tether call wrote, with what they held before: a live session takes that as
        the text its program loaded of each file it had not seen yet (see loaded.py)."""
        session = self.session
        if session is None or not session.live:
            return
        for path, content in before.items():
            session.loaded.saw_before_write(path, content)

    async def _source_file(self, file: str) -> tuple[Path, str | None]:
        """A breakpoint's file: in the workdir, or — a breakpoint writes nothing — under one of
        the program's library roots (its interpreter's standard library and packages, the Go
        toolchain and module cache), said as the second item. Anything else is refused, naming
        the roots that are allowed."""
        try:
            path = self.run.confine(file, field="file")
        except PathError as exc:
            if not Path(file).is_absolute():
                raise
            # as the toolchain names it (GOROOT's src may be a symlink elsewhere, and the
            # adapter knows the file by the name the build used), or where it leads
            lexical = Path(os.path.normpath(file))
            resolved = lexical.resolve()
            roots = await self._library_roots(lexical)
            for root in roots:
                inside = _within(lexical, root.path) or _within(resolved, root.path.resolve())
                if inside:
                    if not resolved.is_file():
                        raise ArgumentError("file", f"no such file: {file!r}") from None
                    return lexical, f"{root.what}: {root.path}"
            allowed = "; ".join(f"{r.path} ({r.what})" for r in roots)
            raise ArgumentError(
                "file",
                f"{exc.expected}; besides the workdir, breakpoints may go only in the program's "
                + (
                    f"library roots: {allowed}"
                    if allowed
                    else "library roots, and no adapter for this file reports any"
                ),
            ) from None
        if not path.is_file():
            raise ArgumentError("file", f"no such file in the workdir: {file!r}")
        return path, None

    async def _library_roots(self, path: Path) -> list[LibraryRoot]:
        """The library roots of the adapters that debug ``path``'s kind of file (cached)."""
        roots: list[LibraryRoot] = []
        for adapter in self.adapters().values():
            if not adapter.matches_program(path):
                continue
            if adapter.id not in self._roots:
                found = await availability(adapter, self.run.workdir, self.run.workdir, self.probe)
                self._roots[adapter.id] = (
                    await adapter.library_roots(self.run, found.resolution)
                    if found.resolution.command is not None
                    else []
                )
            roots += [r for r in self._roots[adapter.id] if r not in roots]
        return roots

    async def _set_function(
        self, session: DebugSession | None, function: str, spec: BreakpointSpec, remove: bool
    ) -> str:
        wanted = self.requested.functions_after(function, spec, remove)
        if session is not None:
            states = await session.set_function_breakpoints(wanted)
            self.requested.functions = wanted
            if not wanted:
                return "Cleared every function breakpoint (sent to the running session)."
            return "Function breakpoints (sent to the running session):\n" + bp.render(states)
        self.requested.functions = wanted
        if not wanted:
            return "Cleared every function breakpoint."
        listed = ", ".join(f"{name}{s.describe()}" for name, s in wanted.items())
        return (
            f"Function breakpoints: {listed}. No session is running: they are sent at "
            "launch/attach (an adapter without function breakpoints refuses them then)."
        )

    async def _set_exceptions(self, session: DebugSession | None, filters: list[str]) -> str:
        listed = ", ".join(filters) if filters else "none (no exception stops the program)"
        if session is not None:
            await session.set_exception_filters(filters)
            session.exceptions_set, session.exceptions_refused = filters, []
            self.requested.exceptions = filters
            return f"Exception filters of the running {session.adapter.id} session: {listed}."
        self.requested.exceptions = filters
        return (
            f"Exception filters: {listed}. No session is running: they replace the adapter's "
            "defaults at launch/attach (a filter the adapter does not offer is refused then)."
        )

    def _breakpoint_report(self, session: DebugSession) -> str:
        parts = []
        for path, states in session.breakpoints.items():
            name = self._rel(path)
            parts.append(f"{name}:\n{bp.render(states, name)}")
        if session.function_breakpoints:
            parts.append(f"functions:\n{bp.render(session.function_breakpoints)}")
        if session.exceptions_refused:
            offered = [name for name, _ in features.exception_filters(session.capabilities)]
            parts.append(
                f"Exception filters NOT set: {session.adapter.id} offers no "
                f"{', '.join(session.exceptions_refused)} (it offers: {', '.join(offered) or 'none'})"
            )
        if not parts:
            return "Breakpoints: none."
        return "\n".join(["Breakpoints:", *parts])

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
            path, list(args), cwd, found.resolution, list(self.requested.files)
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
        adapter = await self._attach_adapter(port is not None, adapter_name)
        if pid is not None and not is_alive(pid):
            raise ArgumentError("pid", f"no process with pid {pid} is running")
        found = await self._attach_availability(adapter, pid)
        session = DebugSession(
            run=self.run,
            availability=found,
            adapter=adapter,
            mode="attach",
            target=f"127.0.0.1:{port}" if port is not None else f"pid {pid}",
            config=self.config,
        )
        self.session = session
        arguments = _attach_arguments(adapter, port, pid, found)
        await self._start_attach(session, adapter, arguments, port, pid)
        return await self._attach_answer(session, adapter)

    async def _attach_adapter(self, by_port: bool, adapter_name: str | None) -> DebugAdapter:
        """The adapter named, checked to attach this way; else the one usable adapter that does."""
        field = "port" if by_port else "pid"
        if adapter_name is None:
            return await self._only_attach_adapter(by_port)
        adapter = self._adapter_named(adapter_name)
        can_any = adapter.attach_mode != "none" or adapter.attach_pid
        if not _can_attach(adapter, by_port):
            raise ArgumentError(
                "adapter",
                f"the {adapter.id} adapter cannot attach by {field} "
                f"({_attach_kinds(adapter).replace('attach', 'it attaches', 1) if can_any else 'it does not attach at all'})",
            )
        return adapter

    async def _only_attach_adapter(self, by_port: bool) -> DebugAdapter:
        """The one adapter usable here that attaches this way, or an error naming the choice."""
        field = "port" if by_port else "pid"
        candidates = [a for a in self.adapters().values() if _can_attach(a, by_port)]
        usable, marked = [], []
        for candidate in candidates:
            known = await availability(candidate, self.run.workdir, self.run.workdir, self.probe)
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
        self, adapter: DebugAdapter, pid: int | None
    ) -> Availability | None:
        """The adapter's command, checked when attaching starts one (None: connecting to a
        debug server needs none)."""
        if adapter.attach_mode != "adapter" and pid is None:
            return None
        found = await availability(adapter, self.run.workdir, self.run.workdir, self.probe)
        if not found.usable:
            raise ToolError(
                f"the {adapter.id} adapter cannot start here: {found.explain(self.run.workdir)}"
            )
        return found

    async def _start_attach(
        self,
        session: DebugSession,
        adapter: DebugAdapter,
        arguments: dict[str, Any],
        port: int | None,
        pid: int | None,
    ) -> None:
        """Start the attach; a failure says what the target needs (a debug server on the port,
        the right to trace the pid)."""
        try:
            await self._start(session, "attach", arguments, port)
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

    async def _attach_answer(self, session: DebugSession, adapter: DebugAdapter) -> str:
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
        with waiting("debugger " + command, adapter=session.adapter.id):
            await self._start_unobserved(session, command, arguments, port)

    async def _start_unobserved(
        self, session: DebugSession, command: str, arguments: dict[str, Any], port: int | None
    ) -> None:
        filters = self.requested.exceptions
        if filters is None:
            filters = self.config.exception_filters.get(
                session.adapter.id, list(session.adapter.exception_filters)
            )
        session.start_arguments = arguments
        try:
            await session.open(attach_port=port)
            await session.configure(
                command, arguments, self.requested.files, self.requested.functions, filters
            )
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
        self.follow_edits()
        try:
            text = await op
        except ToolError as exc:
            await self._report_hang(str(exc))
            raise
        await self._report_hang(text)
        return await self._with_news(text)

    async def _with_news(self, text: str) -> str:
        """What happened since the last answer that this one did not say: a stop that came
        after an answer said "still running", and what log points printed."""
        if self._moved:
            text = "\n".join([*self._moved, text])
            self._moved.clear()
        session = self.session
        if session is None:
            return text
        extra = []
        if session.live and session.phase is Phase.STOPPED and not self._stop_reported(session):
            extra.append(f"Meanwhile the program stopped:\n{await self._where(session, True)}")
        logged = session.take_logged()
        if logged:
            extra.append(logged)
        return "\n".join([text, *extra])

    @staticmethod
    def _stop_reported(session: DebugSession) -> bool:
        return session.stop is not None and session.stop is session.reported_stop

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
        if session.phase is Phase.STOPPED and not self._stop_reported(session):
            # it stopped after the last answer said it was running: moving on now would pass a
            # stop the agent never saw
            where = await self._where(session, True)
            return f"The program stopped since the last answer; nothing was resumed (call {_OPS.get(command, command)} again to go on):\n{where}"
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
            line = frame.get("line")
            if source.get("path"):
                where = self._location(source["path"], line, session)
            else:
                where = f"{show_path(source.get('name') or '?')}:{line}"
            lines.append(f"frame_id {frame['id']}: {frame.get('name', '?')} at {where}")
            if index == 0:
                text = await session.line_text(source.get("path"), line)
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

    async def op_set_variable(
        self, name: str, value: str, reference: int | None, frame_id: int | None
    ) -> str:
        session = self._live()
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
            stop = await session.describe_stop()
            frame_id = stop.frame_id if stop else None
            if frame_id is None:
                raise ToolError("set_variable: the stop has no frame; call stack and give frame_id")
        body, how = await session.set_variable(name, value, reference, frame_id)
        shown = truncate(str(body.get("value", "")), MAX_VALUE_CHARS) or "(no value)"
        kind = f" ({body['type']})" if body.get("type") else ""
        where = (
            f"a member of reference {reference}"
            if reference is not None
            else f"frame_id {frame_id} ({session.frames.get(frame_id or 0, '')})"
        )
        return f"{name} = {shown}{kind}\n(set in {where} through {how})"

    async def op_run_to(self, file: str, line: int, thread_id: int | None) -> str:
        """A one-shot breakpoint on ``file:line``, continue, then the file's own breakpoints
        back as they were (the one-shot one removed whatever happened)."""
        session = self._live()
        path, _ = await self._source_file(file)
        if session.phase is not Phase.STOPPED and session.phase is not Phase.RUNNING:
            raise ToolError(f"run_to needs a started program; it is {session.describe_phase()}")
        own = self.requested.files.get(path, {})
        known = self.requested.anchors.get(path)
        symbols = known.symbols if known is not None else None
        # the line stops unconditionally this once, whatever breakpoint it has of its own
        states = await session.set_breakpoints(path, {**own, line: BreakpointSpec()}, symbols)
        target = next(s for s in states if s.requested == line)
        name = self._rel(path)
        try:
            if target.refused is not None:
                raise ArgumentError("line", f"line {line} of {name}: {target.refused}")
            if target.verified is False:
                raise ArgumentError(
                    "line",
                    f"line {line} of {name} is not a line the {session.adapter.id} adapter can "
                    "stop at:\n" + bp.render([target], name),
                )
            settled = await session.resume("continue", thread_id)
        finally:
            if session.live:
                with anyio.CancelScope(shield=True):
                    await session.set_breakpoints(path, own, symbols)
        where = await self._where(session, settled)
        stop = session.stop
        aimed = target.line or line
        if session.phase is Phase.STOPPED and stop is not None:
            reached = stop.path is not None and Path(stop.path).resolve() == path.resolve()
            # the stop is a line of the text the program runs; ``aimed`` one of the file now
            if reached and stop.line and session.loaded.to_now(path, stop.line).line == aimed:
                return f"Ran to {name}:{aimed}.\n{where}"
            return f"Stopped before reaching {name}:{aimed} (the one-shot breakpoint is removed).\n{where}"
        return f"Did not reach {name}:{aimed} (the one-shot breakpoint is removed).\n{where}"

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
        requested = self.requested
        if requested.files or requested.functions:
            listed = [
                f"{self._rel(p)}: {', '.join(f'{n}{s.describe()}' for n, s in specs.items())}"
                for p, specs in requested.files.items()
            ]
            listed += [f"function {n}{s.describe()}" for n, s in requested.functions.items()]
            lines.append(f"Breakpoints: {'; '.join(listed)}.")
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
                where = self._location(stop.path, stop.line, session)
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
                    f"In the program's own code: {self._location(path, line, session)} in {name} "
                    f"(frame_id {frame_id})."
                )
                own_line = await session.line_text(path, line)
                if own_line is not None:
                    lines.append(f"    {line} | {own_line.strip()}")
            if stop.frame_id is not None:
                lines.append(f"Top frame_id {stop.frame_id}.")
            if not hung:
                session.reported_stop = stop
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

    def _location(self, path: str | None, line: Any, session: DebugSession | None = None) -> str:
        """``file:line`` as shown: relative to the workdir, or absolute and marked as outside
        it (the interpreter's, a library's: its lines are not the checkout's). A line the
        program reports is in the text it runs: when the file changed since, ``session`` says
        where that line is now."""
        where = f"{self._rel_str(path) or '?'}:{line}"
        if path and not is_inside(self.run.workdir, path):
            where += OUTSIDE
        if session is not None and path and isinstance(line, int) and line > 0:
            where += session.loaded.note(path, line)
        return where

    async def aclose(self) -> None:
        if self.session is not None and self.session.live:
            await self.session.close("the run closed")


def _check_breakpoint_arguments(
    file: str | None,
    lines: Sequence[int] | None,
    function: str | None,
    exceptions: Sequence[str] | None,
    spec: BreakpointSpec,
    remove: bool,
    symbol: str | None,
) -> None:
    if symbol is not None and (file is None or not lines or remove):
        raise ArgumentError(
            "symbol",
            'used with file and lines in op "breakpoints" (a substring of each line, so the '
            "breakpoint follows it through edits); leave it out",
        )
    bp.check_arguments(
        file=file,
        lines=lines,
        function=function,
        exceptions=exceptions,
        spec=spec,
        remove=remove,
    )


def _with_changes(
    answer: str,
    before: Mapping[int, BreakpointSpec],
    after: Mapping[int, BreakpointSpec],
    replaced: bool,
) -> str:
    """``answer`` followed by every breakpoint of the file this call took out or changed, so
    that none goes silently (a call without a setting makes ``lines`` the file's whole list)."""
    gone = [f"line {line}{spec.describe()}" for line, spec in before.items() if line not in after]
    changed = [
        f"line {line}{spec.describe() or ' [plain]'} is now{after[line].describe() or ' plain'}"
        for line, spec in before.items()
        if line in after and after[line] != spec
    ]
    notes = []
    if gone:
        why = (
            " (a call without condition, hit_condition or log_message sets the file's whole list;"
            " pass a setting to add lines, remove: true to take some out)"
            if replaced
            else ""
        )
        notes.append(f"Removed: {', '.join(gone)}{why}.")
    if changed:
        notes.append(f"Changed: {'; '.join(changed)}.")
    return "\n".join([answer, *notes])


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


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


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

"""One live debug session: the DAP handshake, the program's state as events report it, the
requests that drive and inspect it, its output, and a bounded shutdown. Reaching the adapter
is :mod:`tether_debug.transport`, the DAP connection :mod:`tether_debug.client`, the text of
frames, errors and log points :mod:`tether_debug.render`."""

from __future__ import annotations

import enum
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import attrs

from tether import ArgumentError, ToolError
from tether.hang import HangWatch, activity
from tether.process import ManagedProcess, descendants, describe, is_alive
from tether.text import TailBuffer, clock
from tether_debug import breakpoints as bp
from tether_debug import features
from tether_debug.adapters import Availability, DebugAdapter
from tether_debug.breakpoints import BreakpointSpec, BreakpointState
from tether_debug.client import (
    AdapterGone,
    DapClient,
    DapError,
    DapTimeout,
    failure_reason,
    first_of,
)
from tether_debug.config import DebugConfig
from tether_debug.loaded import LoadedTexts, Placed
from tether_debug.render import (
    exception_text,
    frame_label,
    logged_text,
    source_line,
    traceback_tail,
)
from tether_debug.transport import AdapterTransport

if TYPE_CHECKING:
    from tether import Run

_SHUTDOWN_S = 3.0
_PAUSE_RETRY_S = 2.0


#: how many lines on each side of a breakpoint the adapter did not verify are tried for the
#: nearest one it would (see DebugSession._nearest_valid_lines)
_PROBE_SPAN = 12


class Phase(enum.Enum):
    STARTING = "starting"
    RUNNING = "running"
    STOPPED = "stopped"
    ENDED = "ended"


@attrs.define
class StopPoint:
    """Where the program stopped, as the stop event and its top frame say."""

    reason: str
    thread_id: int | None
    description: str | None = None
    frame_id: int | None = None
    frame_name: str | None = None
    path: str | None = None
    line: int | None = None
    source_line: str | None = None
    exception: str | None = None
    #: when the top frame is outside the workdir: the nearest frame inside it
    #: (frame_id, name, path, line)
    own_frame: tuple[int, str, str, int] | None = None


class OutputLog:
    """The program's stdout/stderr: a bounded tail plus a read cursor, so each ``output`` call
    returns only what is new and says what was dropped before it was read."""

    def __init__(self, max_bytes: int) -> None:
        self._tail = TailBuffer(max_bytes)
        self._cursor = 0  # absolute byte offset already returned
        self._sources: list[tuple[TailBuffer, list[int]]] = []

    def write(self, text: str) -> None:
        self._tail.write(text)

    def follow(self, source: TailBuffer) -> None:
        """Also take what is written to ``source`` (e.g. an adapter's stderr tail, where a
        debuggee that inherited it writes), pulled in whenever the log is read."""
        self._sources.append((source, [source.total]))

    def _pull(self) -> None:
        for source, cursor in self._sources:
            text, _ = source.since(cursor[0])
            cursor[0] = source.total
            if text:
                self._tail.write(text)

    @property
    def unread(self) -> int:
        """Bytes written and not yet returned (dropped ones included)."""
        self._pull()
        return self._tail.total - self._cursor

    def read_new(self, limit: int) -> tuple[str, list[str]]:
        self._pull()
        text, missed = self._tail.since(self._cursor)
        notes = []
        if missed:
            notes.append(
                f"{missed} bytes were dropped before they were read "
                f"(the session keeps the last {self._tail.max_bytes} bytes)"
            )
        if len(text) > limit:
            chunk = text[:limit]
            notes.append(
                f"{limit} of {len(text)} new characters shown; call output again for the rest"
            )
            self._cursor += missed + len(chunk.encode("utf-8"))
            return chunk, notes
        self._cursor = self._tail.total
        return text, notes


class DebugSession:
    """A debug session over one adapter connection. Created and driven by the supervisor."""

    def __init__(
        self,
        *,
        run: Run,
        availability: Availability | None,
        adapter: DebugAdapter,
        mode: str,
        target: str,
        config: DebugConfig,
    ) -> None:
        self.run = run
        self.adapter = adapter
        self.availability = availability
        self.mode = mode  # "launch" | "attach"
        self.target = target
        self.config = config
        self.started_at = time.time()
        #: what the program loaded of each source file: a live session's lines are in it
        self.loaded = LoadedTexts(run.workdir, time.time_ns())
        self.deadline = anyio.current_time() + config.ttl_s
        self.phase = Phase.STARTING
        self.stop: StopPoint | None = None
        self.exit_code: int | None = None
        self.output = OutputLog(config.output_buffer_bytes)
        self.transport = AdapterTransport(
            run=run, adapter=adapter, config=config, output=self.output
        )
        self.debuggee_pid: int | None = None
        self.capabilities: dict[str, Any] = {}
        #: the launch/attach request's arguments, once sent
        self.start_arguments: dict[str, Any] = {}
        self.breakpoints: dict[Path, list[BreakpointState]] = {}
        #: files that changed since the program loaded them, told to the adapter
        self._changed_sources: set[Path] = set()
        self.function_breakpoints: list[BreakpointState] = []
        #: the exception filters in force, and those asked for that the adapter does not offer
        self.exceptions_set: list[str] = []
        self.exceptions_refused: list[str] = []
        #: what log points printed since the last answer (they do not stop the program)
        self.logged: list[str] = []
        self.logged_dropped = 0
        self.frames: dict[int, str] = {}  # frame ids handed out during the current stop
        #: per thread, the frames handed out during the current stop by position: an adapter
        #: that gives new ids to the same frames at each stackTrace (delve) keeps the first ones,
        #: so the top frame_id of a stop report is the one ``stack`` shows
        self.stop_frames: dict[int, dict[int, dict[str, Any]]] = {}
        #: the stop the last answer reported (a stop that came after it is news to the agent)
        self.reported_stop: StopPoint | None = None
        self.references: set[int] = set()  # variable references handed out during the current stop
        self.seen_frames: set[int] = set()  # ids from earlier stops: stale now
        self.seen_references: set[int] = set()
        self._client: DapClient | None = None
        self._initialized = anyio.Event()
        self._finish = anyio.Event()
        self._ended = anyio.Event()
        self._changed = anyio.Event()
        #: the threads when attached (asked before the program was let go), or None
        self.attach_threads: list[dict[str, Any]] | None = None
        self._init_ending()

    def _init_ending(self) -> None:
        """What says how the session ended and what it left behind."""
        self.end_reason: str | None = None
        self.ended_at: float | None = None
        self._end_cause: str | None = None
        self._program_ended = False
        self._tree: set[int] = set()  # the adapter's descendants, for cleanup
        #: processes that had left the session's trees and were ended with it ("pid `argv`")
        self.strays_ended: list[str] = []
        #: the session's processes still alive after its end (a kill that did not take)
        self.left_alive: list[str] = []
        self._scratch: Path | None = None
        #: requests in a row that timed out, and since when the adapter looks hung (the core's
        #: rule, shared with tether-lsp's servers)
        self.hang = HangWatch()
        #: why the session was ended for a hung adapter (None: it was not); ``hang_reported``
        #: once a call's result has said so
        self.hang_note: str | None = None
        self.hang_reported = False

    # --- state ------------------------------------------------------------------------------

    @property
    def process(self) -> ManagedProcess | None:
        """The adapter's process when tether started it (None when connected straight to a
        program's own debug server, or before it started)."""
        return self.transport.process

    @property
    def live(self) -> bool:
        return self.phase is not Phase.ENDED

    @property
    def client(self) -> DapClient:
        if self._client is None or self.phase is Phase.ENDED:
            raise ToolError(f"the debug session has ended: {self.end_reason or 'it is gone'}")
        return self._client

    @property
    def scratch(self) -> Path:
        """A directory of this session's own (e.g. for the program an adapter builds), created
        on first use and removed when the session ends."""
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix=f"tether-debug-{self.adapter.id}-"))
        return self._scratch

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def _forget_ids(self) -> None:
        self.seen_frames.update(self.frames)
        self.seen_references.update(self.references)
        self.frames.clear()
        self.references.clear()
        self.stop_frames.clear()

    def _on_event(self, message: dict[str, Any]) -> None:
        event = message.get("event")
        body = message.get("body") or {}
        if event == "initialized":
            self._initialized.set()
        elif event == "stopped":
            self.phase = Phase.STOPPED
            self.stop = StopPoint(
                reason=str(body.get("reason", "unknown")), thread_id=body.get("threadId")
            )
            self.stop.description = body.get("description") or body.get("text")
            self._forget_ids()
            self._notify()
        elif event == "continued":
            if self.phase is Phase.STOPPED:
                self.phase = Phase.RUNNING
                self.stop = None
                self._forget_ids()
                self._notify()
        elif event == "exited":
            code = body.get("exitCode")
            self.exit_code = code if isinstance(code, int) else None
            self._notify()
        elif event == "terminated":
            self._program_ended = True
            self._finish.set()
            self._notify()
        elif event == "output":
            # "console"/"telemetry"/"important" are the adapter talking, not the program
            category = body.get("category", "console")
            if category in ("stdout", "stderr") and self.adapter.is_log_point_output(body):
                self.log_point(str(body.get("output", "")))
            elif category in ("stdout", "stderr"):
                self.output.write(str(body.get("output", "")))
            elif category == "console" and self.exit_code is None:
                self.exit_code = self.adapter.exit_code_from_console(str(body.get("output", "")))
        elif event == "process":
            pid = body.get("systemProcessId")
            if isinstance(pid, int) and self.mode == "launch":
                self.debuggee_pid = pid
        elif event == "breakpoint":
            self._update_breakpoint(body.get("breakpoint") or {})

    def log_point(self, text: str) -> None:
        self.logged.append(text.rstrip("\n"))
        if len(self.logged) > _MAX_LOGGED:
            self.logged_dropped += len(self.logged) - _MAX_LOGGED
            del self.logged[:-_MAX_LOGGED]

    def take_logged(self) -> str:
        """What log points printed since the last call, for the next answer ('' if nothing)."""
        lines, dropped = self.logged, self.logged_dropped
        self.logged, self.logged_dropped = [], 0
        return logged_text(lines, dropped, _MAX_LOGGED)

    def _update_breakpoint(self, info: Mapping[str, Any]) -> None:
        for path, states in [*self.breakpoints.items(), (None, self.function_breakpoints)]:
            for state in states:
                if state.id is not None and state.id == info.get("id"):
                    state.verified = bool(info.get("verified", state.verified))
                    if "line" in info:
                        state.line = info["line"]
                        if path is not None:
                            self._line_now(path, state)
                    state.message = info.get("message", state.message)

    def _line_now(self, path: Path, state: BreakpointState) -> None:
        """The adapter answers in the text the program runs: its line, in the file now."""
        if state.line is None or not isinstance(state.line, int):
            return
        if state.line == (state.loaded or state.requested):
            state.line = state.requested
        elif state.loaded is not None or self.loaded.changed(path):
            now = self.loaded.to_now(path, state.line).line
            if now is not None:
                state.line = now

    async def wait_settled(self, timeout_s: float) -> bool:
        """Wait until the program is stopped or the session ended; False if still running."""
        with anyio.move_on_after(timeout_s):
            while self.phase not in (Phase.STOPPED, Phase.ENDED):
                await self._changed.wait()
        return self.phase in (Phase.STOPPED, Phase.ENDED)

    # --- an adapter that stops answering ----------------------------------------------------

    def _on_timeout(self, command: str) -> None:
        """A request timed out: judge the adapter (the core's rule) and, once it has not
        answered ``restart_after_timeouts`` requests in a row while it looks hung, end the
        session. A session still starting fails its start instead; one already ending is left
        to end (a ``disconnect`` that goes unanswered)."""
        if self.phase is not Phase.RUNNING and self.phase is not Phase.STOPPED:
            return
        if self._finish.is_set() or self._end_cause is not None:
            return
        if self.process is None:
            # connected straight to the program's own adapter: none of its processes is ours
            self.hang.timed_out(False, None)
        else:
            # the adapter is the one process that reads our requests: stopped means hung; CPU
            # is counted over the whole session (a long evaluate burns it in the debuggee)
            stopped, _ = activity({self.process.pid})
            _, ticks = activity(self.session_pids())
            self.hang.timed_out(stopped, ticks, stopped_why="its process is stopped")
        if not self.hang.due(self.config.restart_after_timeouts):
            return
        if self.mode == "launch":
            killed, again = "adapter and debuggee killed", "launch"
        elif self.process is not None:
            killed, again = "adapter killed; the attached program is not ours to kill", "attach"
        else:
            killed, again = "connection closed; the attached program keeps running", "attach"
        assert self.hang.since is not None
        self.hang_note = (
            f"the {self.adapter.id} adapter did not answer {self.hang.timeouts_in_row} requests "
            f"in a row; the session was ended ({killed}). {again} again to start over "
            f"(unresponsive since {clock(self.hang.since)}: {self.hang.why})"
        )
        self._end_cause = self.hang_note
        self._finish.set()

    def session_pids(self) -> set[int]:
        """The adapter, the debuggee and their descendants, as far as they can be seen now."""
        pids: set[int] = set()
        if self.process is not None:
            pids |= {self.process.pid, *descendants(self.process.pid)}
        if self.debuggee_pid is not None:
            pids |= {self.debuggee_pid, *descendants(self.debuggee_pid)}
        return pids

    # --- starting ---------------------------------------------------------------------------

    async def open(self, *, attach_port: int | None = None) -> None:
        """Start or reach the adapter, start reading, and ``initialize``."""
        adapter = self.adapter
        if attach_port is not None and adapter.attach_mode == "connect":
            receive, send = await self.transport.connect(attach_port)
        else:
            assert self.availability is not None
            receive, send = await self.transport.start(self.availability, self.run.workdir)
        self._client = DapClient(
            receive,
            send,
            on_event=self._on_event,
            request_timeout_s=self.config.request_timeout_s,
            on_timeout=self._on_timeout,
            on_message=self.hang.heard,
        )
        await self.run.task_group.start(self._lifecycle)
        try:
            self.capabilities = await self.client.request(
                "initialize",
                {
                    "clientID": "tether",
                    "clientName": "tether",
                    "adapterID": adapter.id,
                    "locale": "en-us",
                    "linesStartAt1": True,
                    "columnsStartAt1": True,
                    "pathFormat": "path",
                    "supportsVariableType": True,
                    "supportsRunInTerminalRequest": False,
                    "supportsProgressReporting": False,
                    "supportsStartDebuggingRequest": False,
                },
                timeout_s=self.config.start_timeout_s,
            )
        except (DapError, DapTimeout, AdapterGone) as exc:
            raise ToolError(
                f"the {adapter.id} adapter did not start: {exc}{self.transport.stderr_note()}"
            ) from None

    async def configure(
        self,
        command: str,
        arguments: dict[str, Any],
        breakpoints: Mapping[Path, Mapping[int, BreakpointSpec]],
        functions: Mapping[str, BreakpointSpec],
        exception_filters: Sequence[str],
    ) -> None:
        """The handshake that works for adapters that send ``initialized`` late (debugpy) and
        early (lldb): send launch/attach without waiting, wait for ``initialized`` (or the
        response), configure, ``configurationDone``, then take the launch/attach response."""
        client = self.client
        bound = self.config.start_timeout_s
        if command == "launch" and self.adapter.build_output_argument:
            bound += self.config.build_timeout_s  # the adapter builds the program first (dlv)
        answered, outcome = client.collect(
            await client.send_request(command, arguments), bound, self.run.task_group
        )
        with anyio.move_on_after(bound):
            await first_of(self._initialized, answered, self._finish)
            if "error" not in outcome:
                # lldb answers launch first, then sends initialized
                await first_of(self._initialized, self._finish)
        if "error" in outcome:
            raise ToolError(
                f"{command} failed: {failure_reason(outcome['error'])}{self.transport.stderr_note()}"
            )
        if not self._initialized.is_set():
            if self._finish.is_set():
                return  # the program came and went before the adapter asked for configuration
            raise ToolError(
                f"the {self.adapter.id} adapter sent no 'initialized' event within "
                f"{bound:g} s{self.transport.stderr_note()}"
            )
        await self._send_configuration(command, breakpoints, functions, exception_filters)
        await first_of(answered, self._finish)
        if "error" in outcome:
            raise ToolError(
                f"{command} failed: {failure_reason(outcome['error'])}{self.transport.stderr_note()}"
            )
        self._remember_tree()
        if self.phase is Phase.STARTING:
            self.phase = Phase.RUNNING
            self._notify()

    async def _send_configuration(
        self,
        command: str,
        breakpoints: Mapping[Path, Mapping[int, BreakpointSpec]],
        functions: Mapping[str, BreakpointSpec],
        exception_filters: Sequence[str],
    ) -> None:
        """Breakpoints, exception filters (and an attached program's threads), then
        ``configurationDone``."""
        try:
            for path, lines in breakpoints.items():
                await self.set_breakpoints(path, lines)
            if functions:
                await self.set_function_breakpoints(functions)
            offered = [name for name, _ in features.exception_filters(self.capabilities)]
            filters = [name for name in exception_filters if name in offered]
            self.exceptions_set = filters
            self.exceptions_refused = [name for name in exception_filters if name not in offered]
            await self._request_or_end("setExceptionBreakpoints", {"filters": filters})
            if command == "attach":
                await self._threads_at_attach()
            if self.capabilities.get("supportsConfigurationDoneRequest", True):
                # a program that exits at once can lose this reply (debugpy#314)
                await self._request_or_end("configurationDone", {})
        except (DapError, DapTimeout, AdapterGone) as exc:
            why = f" ({self._end_cause})" if self._end_cause else ""
            raise ToolError(
                f"configuring the {self.adapter.id} adapter failed: {failure_reason(exc)}{why}"
            ) from None

    async def _threads_at_attach(self) -> None:
        """The threads, asked before ``configurationDone`` while the adapter still holds the
        program where it attached (delve lists goroutines only then: once the program runs it
        answers one placeholder thread)."""
        try:
            body = await self._request_or_end("threads", {})
        except (DapError, DapTimeout, AdapterGone):
            return
        threads = (body or {}).get("threads") or []
        self.attach_threads = [t for t in threads if isinstance(t, dict)]

    async def _request_or_end(
        self, command: str, arguments: dict[str, Any]
    ) -> dict[str, Any] | None:
        """A request whose answer may never come because the program ended meanwhile."""
        client = self.client
        answered, outcome = client.collect(
            await client.send_request(command, arguments),
            self.config.request_timeout_s,
            self.run.task_group,
        )
        await first_of(answered, self._finish)
        if "error" in outcome:
            raise outcome["error"]
        body: dict[str, Any] | None = outcome.get("body")
        return body

    async def set_breakpoints(
        self,
        path: Path,
        lines: Mapping[int, BreakpointSpec],
        symbols: Mapping[int, str] | None = None,
    ) -> list[BreakpointState]:
        """Send one file's breakpoints, given as lines of the file now: each goes to its line in
        the text the program loaded (``symbols`` help find an edited line), or is refused when
        that text has none; keep what the adapter says about each (one whose settings the
        adapter's capabilities lack is not sent, and says so)."""

        def place(line: int) -> Placed:
            return self.loaded.to_loaded(path, line, (symbols or {}).get(line))

        states, sent = bp.source_breakpoints(lines, self.capabilities, self.adapter, place)
        try:
            await self._changed_source(path)
            body = await self.client.request(
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
        if self.phase is not Phase.RUNNING:
            await self._nearest_valid_lines(path, states, sent)
        for state in states:
            self._line_now(path, state)
        if lines:
            self.breakpoints[path] = states
        else:
            self.breakpoints.pop(path, None)
        return states

    async def _nearest_valid_lines(
        self, path: Path, states: Sequence[BreakpointState], sent: list[dict[str, Any]]
    ) -> None:
        """For each line the adapter did not verify, the nearest line it would: the lines around
        it are sent once beside the file's breakpoints, then the breakpoints alone again. Only
        while the program is not running (before configurationDone, or stopped), so that no
        probe can be hit."""
        lost = [
            s for s in states if s.refused is None and s.verified is False and s.function is None
        ]
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
            body = await self.client.request(
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
            restored = await self.client.request(
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
                    found if state.loaded is None else self.loaded.to_now(path, found).line
                )

    async def _changed_source(self, path: Path) -> None:
        """Once per file that changed since the program loaded it: what the adapter needs to
        place lines by the program's code (see ``DebugAdapter.changed_source_requests``)."""
        if path in self._changed_sources or not self.loaded.changed(path):
            return
        loaded = self.loaded.loaded(path)
        if loaded is None:
            return  # nothing is sent to this file (its lines are refused)
        self._changed_sources.add(path)
        for command, arguments in self.adapter.changed_source_requests(
            path, len(loaded.splitlines())
        ):
            await self.client.request(command, arguments)

    async def set_function_breakpoints(
        self, functions: Mapping[str, BreakpointSpec]
    ) -> list[BreakpointState]:
        """Send the whole set of function breakpoints (DAP replaces it at each request)."""
        states, sent = bp.function_breakpoints(functions, self.capabilities, self.adapter)
        body: dict[str, Any] = {}
        if sent or self.function_breakpoints:
            try:
                body = await self.client.request("setFunctionBreakpoints", {"breakpoints": sent})
            except (DapError, DapTimeout, AdapterGone) as exc:
                raise ToolError(
                    f"setting the function breakpoints failed: {failure_reason(exc)}"
                ) from None
        bp.take_answer(states, body.get("breakpoints") or [])
        self.function_breakpoints = states
        return states

    async def set_exception_filters(self, filters: Sequence[str]) -> None:
        try:
            await self.client.request("setExceptionBreakpoints", {"filters": list(filters)})
        except (DapError, DapTimeout, AdapterGone) as exc:
            raise ToolError(
                f"setting the exception filters failed: {failure_reason(exc)}"
            ) from None

    # --- driving ----------------------------------------------------------------------------

    async def resume(self, command: str, thread_id: int | None) -> bool:
        """continue / next / stepIn / stepOut, then wait (bounded) for the next stop or the end."""
        if self.phase is not Phase.STOPPED and command != "continue":
            raise ToolError(
                f"{_OP_NAMES.get(command, command)} needs a stopped program; it is {self.describe_phase()}"
            )
        if self.phase is Phase.RUNNING:
            # already running (attached, or still running after the last answer): continue
            # means wait for the next stop; a continue request here is refused by some
            # adapters ("debuggee is running")
            return await self.wait_settled(self.config.stop_timeout_s)
        tid = thread_id if thread_id is not None else await self.default_thread()
        previous_phase, previous_stop = self.phase, self.stop
        self.phase = Phase.RUNNING
        self.stop = None
        self._forget_ids()
        self._notify()
        try:
            await self.client.request(command, {"threadId": tid})
        except (DapError, DapTimeout, AdapterGone) as exc:
            if self.phase is Phase.RUNNING:
                self.phase, self.stop = previous_phase, previous_stop
            raise ToolError(
                f"{_OP_NAMES.get(command, command)} failed: {failure_reason(exc)}"
            ) from None
        return await self.wait_settled(self.config.stop_timeout_s)

    async def pause(self, thread_id: int | None) -> bool:
        if self.phase is Phase.STOPPED:
            return True
        tid = thread_id if thread_id is not None else await self.default_thread()
        deadline = anyio.current_time() + self.config.stop_timeout_s
        for attempt in range(2):
            try:
                await self.client.request("pause", {"threadId": tid})
            except (DapError, DapTimeout, AdapterGone) as exc:
                raise ToolError(f"pause failed: {failure_reason(exc)}") from None
            # lldb-vscode resumes asynchronously after configurationDone: a pause that lands
            # before the resume took effect stops nothing, yet is answered with success; so
            # one more pause once the first has produced no stop for a while
            wait = max(0.0, deadline - anyio.current_time())
            if attempt == 0:
                wait = min(wait, _PAUSE_RETRY_S)
            if await self.wait_settled(wait):
                return True
        return False

    async def default_thread(self) -> int:
        if self.stop is not None and self.stop.thread_id is not None:
            return self.stop.thread_id
        threads = await self.threads()
        if not threads:
            raise ToolError("the program has no threads to act on")
        return int(threads[0]["id"])

    async def threads(self) -> list[dict[str, Any]]:
        try:
            body = await self.client.request("threads")
        except (DapError, DapTimeout, AdapterGone) as exc:
            raise ToolError(f"threads failed: {failure_reason(exc)}") from None
        return [t for t in body.get("threads") or [] if isinstance(t, dict)]

    async def stack(
        self, thread_id: int | None, levels: int, *, start: int = 0
    ) -> tuple[list[dict[str, Any]], int | None]:
        """Up to ``levels`` frames of a thread from ``start``, and the total the adapter reports
        (if it does)."""
        self.require_stopped("stack")
        tid = thread_id if thread_id is not None else await self.default_thread()
        try:
            body = await self.client.request(
                "stackTrace", {"threadId": tid, "startFrame": start, "levels": levels}
            )
        except (DapError, DapTimeout, AdapterGone) as exc:
            raise ToolError(f"stack failed: {failure_reason(exc)}") from None
        frames = [f for f in body.get("stackFrames") or [] if isinstance(f, dict)]
        for frame in frames:
            if isinstance(frame.get("name"), str):
                frame["name"] = self.adapter.frame_name(frame["name"])
        known = self.stop_frames.setdefault(tid, {})
        for position, frame in enumerate(frames, start):
            first = known.get(position)
            if first is not None and frame_label(first) == frame_label(frame):
                frame["id"] = first["id"]
            else:
                known[position] = frame
            self.frames[int(frame["id"])] = frame_label(frame)
        total = body.get("totalFrames")
        return frames, total if isinstance(total, int) else None

    async def describe_stop(self) -> StopPoint | None:
        """Fill in the current stop's top frame, source line and exception (once per stop)."""
        stop = self.stop
        if stop is None or self.phase is not Phase.STOPPED or stop.frame_id is not None:
            return stop
        if stop.thread_id is None:  # delve's stop after pause names no thread
            try:
                stop.thread_id = await self.default_thread()
            except ToolError:
                pass
        try:
            frames, _ = await self.stack(stop.thread_id, 1)
        except ToolError:
            frames = []
        if frames:
            top = frames[0]
            stop.frame_id = int(top["id"])
            stop.frame_name = str(top.get("name", "?"))
            stop.path = (top.get("source") or {}).get("path")
            stop.line = top.get("line")
            stop.source_line = await self.line_text(stop.path, stop.line)
        if frames and not self._in_workdir(stop.path):
            # stopped inside the runtime or a library (delve stops a panic in
            # runtime.fatalpanic, a pause in runtime.gopark or libc): the nearest frame of the
            # program's own code says more
            try:
                deeper, _ = await self.stack(stop.thread_id, _OWN_FRAME_SEARCH)
            except ToolError:
                deeper = []
            for frame in deeper[1:]:
                path = (frame.get("source") or {}).get("path")
                if self._in_workdir(path):
                    stop.own_frame = (
                        int(frame["id"]),
                        str(frame.get("name", "?")),
                        str(path),
                        int(frame.get("line") or 0),
                    )
                    break
        if stop.reason == "exception" and self.capabilities.get("supportsExceptionInfoRequest"):
            try:
                info = await self.client.request("exceptionInfo", {"threadId": stop.thread_id})
            except (DapError, DapTimeout, AdapterGone):
                info = {}
            stop.exception = exception_text(info)
        return stop

    async def line_text(self, path: str | None, line: int | None) -> str | None:
        """Line ``line`` of ``path`` as the program runs it: from the text it loaded when the
        file changed since (None when that text is unknown), else read from the file."""
        if path and line and self.loaded.changed(path):
            return self.loaded.line_text(path, line)
        return await source_line(path, line)

    def _in_workdir(self, path: str | None) -> bool:
        if not path:
            return False
        try:
            Path(path).resolve().relative_to(self.run.workdir.resolve())
        except ValueError:
            return False
        return True

    def require_stopped(self, what: str) -> None:
        if self.phase is not Phase.STOPPED:
            raise ToolError(f"{what} needs a stopped program; it is {self.describe_phase()}")

    async def scopes(self, frame_id: int) -> list[dict[str, Any]]:
        try:
            body = await self.client.request("scopes", {"frameId": frame_id})
        except (DapError, DapTimeout, AdapterGone) as exc:
            raise ToolError(f"scopes failed: {failure_reason(exc)}") from None
        scopes = [s for s in body.get("scopes") or [] if isinstance(s, dict)]
        self.references.update(
            int(s["variablesReference"]) for s in scopes if s.get("variablesReference")
        )
        return scopes

    async def variables(self, reference: int) -> list[dict[str, Any]]:
        try:
            body = await self.client.request("variables", {"variablesReference": reference})
        except (DapError, DapTimeout, AdapterGone) as exc:
            raise ToolError(f"variables failed: {failure_reason(exc)}") from None
        variables = [v for v in body.get("variables") or [] if isinstance(v, dict)]
        self.references.update(
            int(v["variablesReference"]) for v in variables if v.get("variablesReference")
        )
        return variables

    async def evaluate(self, expression: str, frame_id: int | None) -> dict[str, Any]:
        arguments: dict[str, Any] = {"expression": expression, "context": "repl"}
        if frame_id is not None:
            arguments["frameId"] = frame_id
        try:
            body = await self.client.request("evaluate", arguments)
        except (DapError, DapTimeout, AdapterGone) as exc:
            why = traceback_tail(failure_reason(exc))
            sep = "\n" if "\n" in why else " "
            raise ToolError(f"evaluate failed:{sep}{why}") from None
        if body.get("variablesReference"):
            self.references.add(int(body["variablesReference"]))
        return body

    async def set_variable(
        self, name: str, value: str, reference: int | None, frame_id: int | None
    ) -> tuple[dict[str, Any], str]:
        """Assign ``name``: a child of ``reference`` (setVariable), else in the frame's scope —
        through setExpression where the adapter offers it, else setVariable in the first of the
        frame's scopes that holds ``name``. Returns the adapter's answer and how it was set."""
        caps, adapter_id = self.capabilities, self.adapter.id
        try:
            if reference is None and features.supports(caps, "set_expression"):
                assert frame_id is not None
                # assigning a name that does not exist would make a new variable (Python):
                # only what already evaluates is set
                await self._must_exist(name, frame_id)
                arguments: dict[str, Any] = {"expression": name, "value": value}
                if frame_id is not None:
                    arguments["frameId"] = frame_id
                body = await self.client.request("setExpression", arguments)
                return body, "setExpression"
            features.require(caps, adapter_id, "set_variable", "set_variable")
            if reference is None:
                assert frame_id is not None
                reference = await self._scope_holding(name, frame_id)
            body = await self.client.request(
                "setVariable", {"variablesReference": reference, "name": name, "value": value}
            )
        except (DapError, DapTimeout, AdapterGone) as exc:
            raise ToolError(f"set_variable failed: {traceback_tail(failure_reason(exc))}") from None
        return body, "setVariable"

    async def _must_exist(self, name: str, frame_id: int) -> None:
        try:
            await self.client.request(
                "evaluate", {"expression": name, "frameId": frame_id, "context": "watch"}
            )
        except DapError as exc:
            why = traceback_tail(exc.message).strip().splitlines()[-1:]
            raise ArgumentError(
                "name",
                f"no variable {name!r} in frame_id {frame_id} ({' '.join(why)}); set_variable "
                "changes an existing variable",
            ) from None

    async def _scope_holding(self, name: str, frame_id: int) -> int:
        """The reference of the first (cheap) scope of the frame that has a variable ``name``."""
        looked = []
        for scope in await self.scopes(frame_id):
            reference = int(scope.get("variablesReference") or 0)
            if not reference or scope.get("expensive"):
                continue
            looked.append(str(scope.get("name", "?")))
            if any(v.get("name") == name for v in await self.variables(reference)):
                return reference
        where = f" (looked in {', '.join(looked)})" if looked else ""
        raise ArgumentError(
            "name",
            f"no variable {name!r} in frame_id {frame_id}{where}; give the reference of its "
            "container to set a member",
        )

    def describe_phase(self) -> str:
        if self.phase is Phase.ENDED:
            return f"ended ({self.end_reason})"
        if self.phase is Phase.STOPPED:
            return "stopped"
        return str(self.phase.value)

    # --- ending -----------------------------------------------------------------------------

    async def _lifecycle(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Owns the session's end: program end, adapter gone, a terminate request, or the TTL."""
        assert self._client is not None
        client = self._client
        async with anyio.create_task_group() as tg:

            async def serve() -> None:
                await client.serve()
                self._finish.set()

            tg.start_soon(serve)
            task_status.started()
            with anyio.move_on_after(max(0.0, self.deadline - anyio.current_time())) as ttl:
                await self._finish.wait()
            if ttl.cancelled_caught and self._end_cause is None:
                self._end_cause = (
                    f"the session's TTL of {self.config.ttl_s:g} s expired at {clock(time.time())}; "
                    + (
                        "debuggee and adapter killed"
                        if self.mode == "launch"
                        else "detached from the program"
                    )
                )
            with anyio.CancelScope(shield=True):
                await self._shutdown(client)
            tg.cancel_scope.cancel()
        self.phase = Phase.ENDED
        self.ended_at = time.time()
        self._ended.set()
        self._notify()

    async def _shutdown(self, client: DapClient) -> None:
        self._remember_tree()
        hung = self.hang_note is not None
        await self._let_go(client, hung)
        if self._end_cause is None:
            self._end_cause = await self._unexpected_end(client)
        self.end_reason = self._end_cause
        await client.aclose()  # debugpy's adapter exits when its stdin closes, not on disconnect
        if self.process is not None:
            if not hung:
                with anyio.move_on_after(_SHUTDOWN_S / 2):
                    await self.process.wait()
            await self.process.terminate(grace_s=0.5)
        await self._end_leftovers()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)

    async def _let_go(self, client: DapClient, hung: bool) -> None:
        """Disconnect politely, or kill a hung adapter's processes at once."""
        if hung:
            # a hung adapter gets no polite disconnect and no grace: a stopped process cannot
            # act on SIGTERM, and closing pipes it does not read could wait on it
            if self.process is not None:
                self.process.kill()
            for pid in self._tree:
                self.run.process_owner.kill_tree(pid)
        elif not client.closed.is_set():
            # first: an adapter may say how the program ended only now (delve's exit status)
            with anyio.move_on_after(_SHUTDOWN_S / 2):
                try:
                    await client.request(
                        "disconnect",
                        {"terminateDebuggee": self.mode == "launch", "restart": False},
                        timeout_s=_SHUTDOWN_S / 2,
                    )
                except (DapError, DapTimeout, AdapterGone):
                    pass

    async def _unexpected_end(self, client: DapClient) -> str:
        """Why the session ended when nobody ended it: the program, or the adapter going."""
        if self._program_ended:
            return (
                f"the program exited with code {self.exit_code}"
                if self.exit_code is not None
                else "the program ended"
            )
        code = None
        if self.process is not None:
            with anyio.move_on_after(1.0):
                code = await self.process.wait()
        status = f" (exit code {code})" if code is not None else ""
        return (
            f"the {self.adapter.id} adapter stopped unexpectedly{status}: {client.closed_reason}"
            + self.transport.stderr_note()
        )

    async def _end_leftovers(self) -> None:
        """End what the session started that outlived its adapter.

        An adapter that exits by itself orphans its children (debugpy's launcher, the
        debuggee). terminate() finds re-parented ones by process group and owner marker; a
        debuggee that changed both (its own session, a scrubbed environment) would still
        escape, so the pids seen while it ran are checked as well."""
        owner = self.run.process_owner
        leftovers = {pid for pid in self._tree if is_alive(pid)}
        # A debuggee that double-forked, left its session and emptied its environment is in
        # none of those: where this process is a subreaper it was re-parented here, and the
        # run's orphans that started after the adapter are this session's
        if self.process is not None:
            since = self.process.lineage.roots.get(self.process.pid)
            if since is not None:
                strays = owner.strays(since, self.process.marker) - leftovers
                self.strays_ended = [describe(pid) for pid in sorted(strays)]
                leftovers |= strays
        for pid in leftovers:
            owner.kill_tree(pid)
        with anyio.move_on_after(1.0):
            while any(is_alive(pid) for pid in leftovers):  # reaped by whoever adopted them
                await anyio.sleep(0.02)
        self.left_alive = [describe(pid) for pid in sorted(leftovers) if is_alive(pid)]

    def _remember_tree(self) -> None:
        # only what the run owns: the adapter's ``systemProcessId`` is its word, not proof —
        # a pid of someone else's is never remembered, so never killed
        seen = self.run.process_owner.lineage.observe(self.session_pids())
        self._tree |= seen - ({self.process.pid} if self.process else set())

    async def close(self, reason: str) -> None:
        """End the session (bounded); a no-op once it has ended."""
        if self._end_cause is None and not self._ended.is_set():
            self._end_cause = reason
        self._finish.set()
        if self._client is None:
            self.phase = Phase.ENDED
            self.end_reason = self.end_reason or reason
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(_SHUTDOWN_S * 2):
            await self._ended.wait()


_OWN_FRAME_SEARCH = 30
#: log point lines kept until the next answer (older ones are dropped and counted)
_MAX_LOGGED = 200

_OP_NAMES = {"next": "step_over", "stepIn": "step_in", "stepOut": "step_out"}

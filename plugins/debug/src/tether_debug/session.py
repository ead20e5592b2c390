"""One live debug session: the DAP handshake, the program's state as events report it, an
adapter that stops answering, and the session's end. Reaching the adapter is
:mod:`tether_debug.transport`, the DAP connection :mod:`tether_debug.client`, the requests that
drive and inspect the program :mod:`tether_debug.dap_requests`, the shutdown
:mod:`tether_debug.ending`, the program's phase, stop and output :mod:`tether_debug.state`."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from tether import ToolError
from tether.processes.hang import HangWatch, activity
from tether.processes.managed import ManagedProcess, descendants
from tether.text import clock
from tether_debug import dap_requests as dap
from tether_debug import ending, features
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
from tether_debug.loaded import LoadedTexts
from tether_debug.render import logged_text
from tether_debug.state import OutputLog, Phase, StopPoint
from tether_debug.transport import AdapterTransport

if TYPE_CHECKING:
    from tether import Run

__all__ = ["DebugSession", "OutputLog", "Phase", "StopPoint"]

#: log point lines kept until the next answer (older ones are dropped and counted)
_MAX_LOGGED = 200


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
        self.changed_sources: set[Path] = set()
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
        self.end_cause: str | None = None
        self.program_ended = False
        self.tree: set[int] = set()  # the adapter's descendants, for cleanup
        #: processes that had left the session's trees and were ended with it ("pid `argv`")
        self.strays_ended: list[str] = []
        #: the session's processes still alive after its end (a kill that did not take)
        self.left_alive: list[str] = []
        self.scratch_dir: Path | None = None
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
        if self.scratch_dir is None:
            self.scratch_dir = Path(tempfile.mkdtemp(prefix=f"tether-debug-{self.adapter.id}-"))
        return self.scratch_dir

    def notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def forget_ids(self) -> None:
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
            self.forget_ids()
            self.notify()
        elif event == "continued":
            if self.phase is Phase.STOPPED:
                self.phase = Phase.RUNNING
                self.stop = None
                self.forget_ids()
                self.notify()
        elif event == "exited":
            code = body.get("exitCode")
            self.exit_code = code if isinstance(code, int) else None
            self.notify()
        elif event == "terminated":
            self.program_ended = True
            self._finish.set()
            self.notify()
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
                            self.line_now(path, state)
                    state.message = info.get("message", state.message)

    def line_now(self, path: Path, state: BreakpointState) -> None:
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
        if self._finish.is_set() or self.end_cause is not None:
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
        self.end_cause = self.hang_note
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
        ending.remember_tree(self)
        if self.phase is Phase.STARTING:
            self.phase = Phase.RUNNING
            self.notify()

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
                await dap.set_breakpoints(self, path, lines)
            if functions:
                await dap.set_function_breakpoints(self, functions)
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
            why = f" ({self.end_cause})" if self.end_cause else ""
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

    # --- driving ----------------------------------------------------------------------------

    def require_stopped(self, what: str) -> None:
        if self.phase is not Phase.STOPPED:
            raise ToolError(f"{what} needs a stopped program; it is {self.describe_phase()}")

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
            if ttl.cancelled_caught and self.end_cause is None:
                self.end_cause = (
                    f"the session's TTL of {self.config.ttl_s:g} s expired at {clock(time.time())}; "
                    + (
                        "debuggee and adapter killed"
                        if self.mode == "launch"
                        else "detached from the program"
                    )
                )
            with anyio.CancelScope(shield=True):
                await ending.shutdown(self, client)
            tg.cancel_scope.cancel()
        self.phase = Phase.ENDED
        self.ended_at = time.time()
        self._ended.set()
        self.notify()

    async def close(self, reason: str) -> None:
        """End the session (bounded); a no-op once it has ended."""
        if self.end_cause is None and not self._ended.is_set():
            self.end_cause = reason
        self._finish.set()
        if self._client is None:
            self.phase = Phase.ENDED
            self.end_reason = self.end_reason or reason
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(ending.SHUTDOWN_S * 2):
            await self._ended.wait()

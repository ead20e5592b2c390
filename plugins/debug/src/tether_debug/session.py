"""One live debug session: the adapter (a run-owned process or a TCP connection), the DAP
handshake, the program's state as events report it, its output, and a bounded shutdown."""

from __future__ import annotations

import enum
import functools
import json
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import attrs

from tether import ArgumentError, ToolError
from tether.framing import LineReader, LineTooLong
from tether.hang import HangWatch, activity
from tether.process import ManagedProcess, descendants, describe, is_alive
from tether.reading import UnreadableFile, read_outside
from tether.text import TailBuffer, clock
from tether_debug import breakpoints as bp
from tether_debug import features
from tether_debug.adapters import Availability, DebugAdapter
from tether_debug.breakpoints import BreakpointSpec, BreakpointState
from tether_debug.client import AdapterGone, DapClient, DapError, DapTimeout
from tether_debug.config import DebugConfig

if TYPE_CHECKING:
    from tether import Run

_LOCALHOST = "127.0.0.1"
_SHUTDOWN_S = 3.0
_PAUSE_RETRY_S = 2.0
# The adapter's stdout lines read while looking for where it listens (a longer one is skipped).
_MAX_LISTEN_LINE_BYTES = 1024 * 1024


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
        self.deadline = anyio.current_time() + config.ttl_s
        self.phase = Phase.STARTING
        self.stop: StopPoint | None = None
        self.exit_code: int | None = None
        self.end_reason: str | None = None
        self.ended_at: float | None = None
        self.output = OutputLog(config.output_buffer_bytes)
        self.process: ManagedProcess | None = None
        self.debuggee_pid: int | None = None
        self.capabilities: dict[str, Any] = {}
        self.breakpoints: dict[Path, list[BreakpointState]] = {}
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
        self._end_cause: str | None = None
        self._program_ended = False
        self._tree: set[int] = set()  # the adapter's descendants, for cleanup
        #: processes that had left the session's trees and were ended with it ("pid `argv`")
        self.strays_ended: list[str] = []
        #: the session's processes still alive after its end (a kill that did not take)
        self.left_alive: list[str] = []
        self._scratch: Path | None = None
        #: the threads when attached (asked before the program was let go), or None
        self.attach_threads: list[dict[str, Any]] | None = None
        #: requests in a row that timed out, and since when the adapter looks hung (the core's
        #: rule, shared with tether-lsp's servers)
        self.hang = HangWatch()
        #: why the session was ended for a hung adapter (None: it was not); ``hang_reported``
        #: once a call's result has said so
        self.hang_note: str | None = None
        self.hang_reported = False

    # --- state ------------------------------------------------------------------------------

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
        if not self.logged:
            return ""
        dropped = self.logged_dropped
        lines, self.logged, self.logged_dropped = self.logged, [], 0
        head = "Log points printed (they do not stop):"
        if dropped:
            head += f" ({dropped} earlier lines dropped; the last {_MAX_LOGGED} kept)"
        return "\n".join([head, *(f"  {line}" for line in lines)])

    def _update_breakpoint(self, info: Mapping[str, Any]) -> None:
        for states in [*self.breakpoints.values(), self.function_breakpoints]:
            for state in states:
                if state.id is not None and state.id == info.get("id"):
                    state.verified = bool(info.get("verified", state.verified))
                    state.line = info.get("line", state.line)
                    state.message = info.get("message", state.message)

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
        receive: anyio.abc.ByteReceiveStream
        send: anyio.abc.ByteSendStream
        if attach_port is not None and adapter.attach_mode == "connect":
            stream = await self._connect(_LOCALHOST, attach_port, field="port", process=None)
            receive, send = stream, stream
        else:
            assert self.availability is not None
            command = self.availability.resolution.command
            assert command is not None
            cwd = self.availability.root or self.run.workdir
            if adapter.transport == "tcp" and adapter.listen_pattern:
                argv = [part.replace("{port}", "0") for part in command]
                self.process = await self._spawn(argv, cwd, stdin=False, stdout=True)
                port = await self._listening_port(self.process, adapter.listen_pattern)
                stream = await self._connect(_LOCALHOST, port, field=None, process=self.process)
                receive, send = stream, stream
            elif adapter.transport == "tcp":
                port = _free_port()
                argv = [part.replace("{port}", str(port)) for part in command]
                self.process = await self._spawn(argv, cwd, stdin=False, stdout=False)
                stream = await self._connect(_LOCALHOST, port, field=None, process=self.process)
                receive, send = stream, stream
            else:
                self.process = await self._spawn(list(command), cwd, stdin=True, stdout=True)
                receive, send = self.process.stdout, self.process.stdin
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
                f"the {adapter.id} adapter did not start: {exc}{self._stderr_note()}"
            ) from None

    async def _spawn(
        self, argv: list[str], cwd: Path, *, stdin: bool, stdout: bool
    ) -> ManagedProcess:
        # a debuggee that writes to the adapter's stderr needs the whole output buffer there
        stderr_bytes = (
            self.config.output_buffer_bytes if self.adapter.program_output_on_stdio else 16 * 1024
        )
        try:
            process = await self.run.spawn(
                argv, cwd=cwd, stdin=stdin, stdout=stdout, stderr_bytes=stderr_bytes
            )
        except OSError as exc:
            raise ToolError(
                f"the {self.adapter.id} adapter cannot start: {argv[0]}: {exc.strerror or exc}"
            ) from None
        if self.adapter.program_output_on_stdio:
            self.output.follow(process.stderr_tail)
        return process

    async def _listening_port(self, process: ManagedProcess, pattern: str) -> int:
        """Read the adapter's stdout (bounded by ``start_timeout_s``) until it says where it
        listens; then keep draining it (into ``output`` when the program writes there)."""
        regex = re.compile(pattern)
        lines = LineReader(process.stdout, max_line_bytes=_MAX_LISTEN_LINE_BYTES)
        printed: list[bytes] = []  # lines before the listen line, for an error message
        port: int | None = None
        with anyio.move_on_after(self.config.start_timeout_s):
            try:
                while port is None:
                    try:
                        line = await lines.receive_line()
                    except LineTooLong as exc:
                        printed.append(f"[{exc}]".encode())
                        continue
                    found = regex.search(line.decode("utf-8", "replace"))
                    if found:
                        port = int(found.group("port"))
                    else:
                        printed.append(line)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
        if port is None:
            with anyio.move_on_after(1.0):
                await process.wait()
            code = process.returncode
            why = (
                f"exited with code {code} before saying where it listens"
                if code is not None
                else f"did not say where it listens within {self.config.start_timeout_s:g} s"
            )
            await process.terminate()
            pending = lines.stream.buffer  # a line it had begun
            said = b"\n".join([*printed, pending]).decode("utf-8", "replace").strip()[-500:]
            raise ToolError(
                f"the {self.adapter.id} adapter {why}"
                + (f"\nadapter stdout: {said}" if said else "")
                + self._stderr_note()
            )
        # the rest as it comes, what was read past the listen line first
        self.run.task_group.start_soon(self._drain_stdout, lines.stream)
        return port

    async def _drain_stdout(self, stdout: anyio.abc.ByteReceiveStream) -> None:
        try:
            async for chunk in stdout:
                if self.adapter.program_output_on_stdio:
                    self.output.write(chunk.decode("utf-8", "replace"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass

    async def _connect(
        self, host: str, port: int, *, field: str | None, process: ManagedProcess | None
    ) -> anyio.abc.SocketStream:
        """Connect to a listening adapter; a spawned one gets ``start_timeout_s`` to listen."""
        deadline = anyio.current_time() + self.config.start_timeout_s
        while True:
            try:
                return await anyio.connect_tcp(host, port)
            except OSError as exc:
                if process is None:
                    assert field is not None
                    hint = self.adapter.attach_hint.format(port=port)
                    raise ArgumentError(
                        field,
                        f"nothing accepts connections on {host}:{port} ({exc.strerror or exc}); start "
                        "the program under a debug server listening there first"
                        + (f" (e.g. {hint})" if hint else ""),
                    ) from None
                if process.returncode is not None or anyio.current_time() > deadline:
                    await process.terminate()
                    why = (
                        f"exited with code {process.returncode}"
                        if process.returncode is not None
                        else f"was not listening on {port} after {self.config.start_timeout_s:g} s"
                    )
                    raise ToolError(
                        f"the {self.adapter.id} adapter {why}{self._stderr_note()}"
                    ) from None
                await anyio.sleep(0.05)

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
        answered, outcome = self._watch(await client.send_request(command, arguments), bound)
        with anyio.move_on_after(bound):
            await _first(self._initialized, answered, self._finish)
            if "error" not in outcome:
                # lldb answers launch first, then sends initialized
                await _first(self._initialized, self._finish)
        if "error" in outcome:
            raise ToolError(f"{command} failed: {_reason(outcome['error'])}{self._stderr_note()}")
        if not self._initialized.is_set():
            if self._finish.is_set():
                return  # the program came and went before the adapter asked for configuration
            raise ToolError(
                f"the {self.adapter.id} adapter sent no 'initialized' event within "
                f"{bound:g} s{self._stderr_note()}"
            )
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
                f"configuring the {self.adapter.id} adapter failed: {_reason(exc)}{why}"
            ) from None
        await _first(answered, self._finish)
        if "error" in outcome:
            raise ToolError(f"{command} failed: {_reason(outcome['error'])}{self._stderr_note()}")
        self._remember_tree()
        if self.phase is Phase.STARTING:
            self.phase = Phase.RUNNING
            self._notify()

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

    def _watch(self, seq: int, timeout_s: float) -> tuple[anyio.Event, dict[str, Any]]:
        """Collect the response to ``seq`` in the background: (answered event, outcome)."""
        answered = anyio.Event()
        outcome: dict[str, Any] = {}
        client = self.client

        async def take() -> None:
            try:
                outcome["body"] = await client.response(seq, timeout_s)
            except (DapError, DapTimeout, AdapterGone) as exc:
                outcome["error"] = exc
            finally:
                answered.set()

        self.run.task_group.start_soon(take)
        return answered, outcome

    async def _request_or_end(
        self, command: str, arguments: dict[str, Any]
    ) -> dict[str, Any] | None:
        """A request whose answer may never come because the program ended meanwhile."""
        answered, outcome = self._watch(
            await self.client.send_request(command, arguments), self.config.request_timeout_s
        )
        await _first(answered, self._finish)
        if "error" in outcome:
            raise outcome["error"]
        body: dict[str, Any] | None = outcome.get("body")
        return body

    async def set_breakpoints(
        self, path: Path, lines: Mapping[int, BreakpointSpec]
    ) -> list[BreakpointState]:
        """Send one file's breakpoints; keep what the adapter says about each (one whose settings
        the adapter's capabilities lack is not sent, and says so)."""
        states, sent = bp.source_breakpoints(lines, self.capabilities, self.adapter.id)
        try:
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
            raise ToolError(f"setting the breakpoints of {path} failed: {_reason(exc)}") from None
        bp.take_answer(states, body.get("breakpoints") or [])
        if lines:
            self.breakpoints[path] = states
        else:
            self.breakpoints.pop(path, None)
        return states

    async def set_function_breakpoints(
        self, functions: Mapping[str, BreakpointSpec]
    ) -> list[BreakpointState]:
        """Send the whole set of function breakpoints (DAP replaces it at each request)."""
        states, sent = bp.function_breakpoints(functions, self.capabilities, self.adapter.id)
        body: dict[str, Any] = {}
        if sent or self.function_breakpoints:
            try:
                body = await self.client.request("setFunctionBreakpoints", {"breakpoints": sent})
            except (DapError, DapTimeout, AdapterGone) as exc:
                raise ToolError(
                    f"setting the function breakpoints failed: {_reason(exc)}"
                ) from None
        bp.take_answer(states, body.get("breakpoints") or [])
        self.function_breakpoints = states
        return states

    async def set_exception_filters(self, filters: Sequence[str]) -> None:
        try:
            await self.client.request("setExceptionBreakpoints", {"filters": list(filters)})
        except (DapError, DapTimeout, AdapterGone) as exc:
            raise ToolError(f"setting the exception filters failed: {_reason(exc)}") from None

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
            raise ToolError(f"{_OP_NAMES.get(command, command)} failed: {_reason(exc)}") from None
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
                raise ToolError(f"pause failed: {_reason(exc)}") from None
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
            raise ToolError(f"threads failed: {_reason(exc)}") from None
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
            raise ToolError(f"stack failed: {_reason(exc)}") from None
        frames = [f for f in body.get("stackFrames") or [] if isinstance(f, dict)]
        known = self.stop_frames.setdefault(tid, {})
        for position, frame in enumerate(frames, start):
            first = known.get(position)
            if first is not None and _frame_label(first) == _frame_label(frame):
                frame["id"] = first["id"]
            else:
                known[position] = frame
            self.frames[int(frame["id"])] = _frame_label(frame)
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
            stop.source_line = await source_line(stop.path, stop.line)
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
            kind = info.get("exceptionId") or ""
            text = str(info.get("description") or "")
            if len(text) > 1 and text[0] == text[-1] == '"':
                text = _unquote(text)  # delve quotes a panic's string value
            stop.exception = f"{kind}: {text}".strip(": ") or None
        return stop

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
            raise ToolError(f"scopes failed: {_reason(exc)}") from None
        scopes = [s for s in body.get("scopes") or [] if isinstance(s, dict)]
        self.references.update(
            int(s["variablesReference"]) for s in scopes if s.get("variablesReference")
        )
        return scopes

    async def variables(self, reference: int) -> list[dict[str, Any]]:
        try:
            body = await self.client.request("variables", {"variablesReference": reference})
        except (DapError, DapTimeout, AdapterGone) as exc:
            raise ToolError(f"variables failed: {_reason(exc)}") from None
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
            why = _traceback_tail(_reason(exc))
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
            raise ToolError(f"set_variable failed: {_traceback_tail(_reason(exc))}") from None
        return body, "setVariable"

    async def _must_exist(self, name: str, frame_id: int) -> None:
        try:
            await self.client.request(
                "evaluate", {"expression": name, "frameId": frame_id, "context": "watch"}
            )
        except DapError as exc:
            why = _traceback_tail(exc.message).strip().splitlines()[-1:]
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
        if self._end_cause is None:
            if self._program_ended:
                self._end_cause = (
                    f"the program exited with code {self.exit_code}"
                    if self.exit_code is not None
                    else "the program ended"
                )
            else:
                code = None
                if self.process is not None:
                    with anyio.move_on_after(1.0):
                        code = await self.process.wait()
                status = f" (exit code {code})" if code is not None else ""
                self._end_cause = f"the {self.adapter.id} adapter stopped unexpectedly{status}: {client.closed_reason}"
                self._end_cause += self._stderr_note()
        self.end_reason = self._end_cause
        await client.aclose()  # debugpy's adapter exits when its stdin closes, not on disconnect
        if self.process is not None:
            if not hung:
                with anyio.move_on_after(_SHUTDOWN_S / 2):
                    await self.process.wait()
            await self.process.terminate(grace_s=0.5)
        # An adapter that exits by itself orphans its children (debugpy's launcher, the
        # debuggee). terminate() finds re-parented ones by process group and owner marker; a
        # debuggee that changed both (its own session, a scrubbed environment) would still
        # escape, so the pids seen while it ran are checked as well.
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
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)

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

    def _stderr_note(self) -> str:
        if self.process is None:
            return ""
        tail = self.process.stderr_tail.text().strip()
        if not tail:
            return ""
        lines = tail.splitlines()[-8:]
        return "\nadapter stderr (last lines):\n" + "\n".join(lines)


_OWN_FRAME_SEARCH = 30
#: log point lines kept until the next answer (older ones are dropped and counted)
_MAX_LOGGED = 200

_OP_NAMES = {"next": "step_over", "stepIn": "step_in", "stepOut": "step_out"}


async def _first(*events: anyio.Event) -> None:
    """Return as soon as any of ``events`` is set."""
    if any(e.is_set() for e in events):
        return
    async with anyio.create_task_group() as tg:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(wait, event)


def _reason(exc: BaseException) -> str:
    return exc.message if isinstance(exc, DapError) else str(exc)


def _traceback_tail(message: str) -> str:
    """A Python traceback cut to the part about the evaluated code (debugpy includes its own
    frames); other messages unchanged."""
    if "Traceback (most recent call last):" not in message:
        return message
    lines = message.rstrip().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith('  File "<string>"')]
    tail = lines[starts[-1] :] if starts else lines[-1:]
    return "\n".join(tail)


def _unquote(text: str) -> str:
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, str) else text


def _frame_label(frame: Mapping[str, Any]) -> str:
    source = frame.get("source") or {}
    where = source.get("path") or source.get("name") or "?"
    return f"{frame.get('name', '?')} at {where}:{frame.get('line', '?')}"


#: the largest source file a stack frame's line is shown from
SOURCE_LINE_MAX_BYTES = 8 * 1024 * 1024


async def source_line(path: str | None, line: int | None) -> str | None:
    """Line ``line`` of the source file ``path`` a frame points at (the program's or a
    library's), read off the event loop; None when it is no regular file or over the cap."""
    if not path or not line:
        return None
    try:
        # never blocks (a FIFO is refused, not opened) and never loads a huge file
        data = await anyio.to_thread.run_sync(
            functools.partial(read_outside, path, max_bytes=SOURCE_LINE_MAX_BYTES),
            abandon_on_cancel=True,
        )
    except UnreadableFile:
        return None
    lines = data.decode("utf-8", "replace").split("\n")
    return lines[line - 1].rstrip("\r") if line <= len(lines) else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_LOCALHOST, 0))
        return int(sock.getsockname()[1])

"""Runners execute one worker attempt: the built-in command runner and callable runner.

A runner receives a :class:`Job` (brief, tier, working directory, the run, an output sink)
and returns an :class:`Outcome`. The roster owns status, timing, cancellation and the idle
watchdog; a runner only has to leave no process behind when it returns or is cancelled.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import anyio
import anyio.abc
import anyio.lowlevel
import attrs

import tether
import tether.processes.managed
from tether.text import plural
from tether.wire.framing import LineReader, LineTooLong
from tether.workdir.reading import peek
from tether_vibe.config import CommandRunnerConfig, ResultMode

if TYPE_CHECKING:
    from tether.processes.managed import ManagedProcess

# How long output still buffered in the pipes may take to read once the worker exited.
DRAIN_TIMEOUT_S = 2.0
# Event types of `claude -p --output-format stream-json`; other JSON lines are plain output.
STREAM_JSON_TYPES = frozenset({"system", "assistant", "user", "result", "stream_event"})
# Event types of `codex exec --json` (JSON Lines: a thread, its turns, the items of a turn).
CODEX_JSON_TYPES = frozenset(
    {
        "thread.started",
        "turn.started",
        "turn.completed",
        "turn.failed",
        "item.started",
        "item.updated",
        "item.completed",
        "error",
    }
)
# A result file is read up to this size (the roster then cuts to [vibe] result_chars).
MAX_RESULT_FILE_BYTES = 1024 * 1024
# Longest output line read; stream-json result events can be large. A longer line is skipped
# (the live tail shows a note in its place).
MAX_LINE_BYTES = 4 * 1024 * 1024


@attrs.frozen
class Outcome:
    """How one attempt ended. ``ok`` False means status ``failed`` with ``reason``."""

    ok: bool
    result: str = ""
    reason: str | None = None
    exit_code: int | None = None
    stderr_tail: str = ""


@attrs.define
class Job:
    """What a runner gets for one attempt of a worker."""

    worker_id: str
    label: str
    tier: str
    brief: str
    cwd: Path
    run: tether.Run
    output: Callable[[str], None]
    activity: Callable[[], None] = lambda: None
    kill_grace_s: float = 2.0


@runtime_checkable
class Runner(Protocol):
    """Executes a worker's brief at a tier.

    ``watch_idle``: whether the roster's idle watchdog applies (the runner reports output
    through ``job.output``, other signs of life through ``job.activity``). ``describe()`` is
    shown in ``vibe_list`` and errors. ``check(cwd)`` returns None when the runner can start in
    ``cwd``, else the reason it cannot (``vibe_spawn`` refuses then, and no worker is added).
    """

    watch_idle: bool

    def describe(self) -> str: ...

    def check(self, cwd: Path) -> str | None: ...

    async def run(self, job: Job) -> Outcome: ...


# ---------------------------------------------------------------------------------------------
# result extraction


def _render_stream_event(event: Mapping[str, Any]) -> str | None:
    """A one-line rendering of a stream-json event for the live tail (None: not worth showing)."""
    kind = event.get("type")
    if kind == "assistant":
        message = event.get("message")
        parts: list[str] = []
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, list):
            for block in content:
                if not isinstance(block, Mapping):
                    continue
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    parts.append(block["text"].strip())
                elif block.get("type") == "tool_use":
                    parts.append(f"[tool {block.get('name', '?')}]")
        return " ".join(p for p in parts if p) or None
    if kind == "result":
        return f"[result {event.get('subtype', '')}]".replace(" ]", "]")
    if kind == "system":
        return f"[system {event.get('subtype', '')}]".replace(" ]", "]")
    return None


def _render_codex_event(event: Mapping[str, Any]) -> str | None:
    """A one-line rendering of a ``codex exec --json`` event for the live tail."""
    kind = event.get("type")
    if kind == "turn.failed":
        error = event.get("error")
        message = error.get("message") if isinstance(error, Mapping) else error
        return f"[turn failed: {message}]"
    if kind == "error":
        return f"[error: {event.get('message', '')}]"
    item = event.get("item")
    if not isinstance(item, Mapping) or kind not in ("item.started", "item.completed"):
        return None
    what = item.get("type")
    if what == "agent_message" and kind == "item.completed":
        return str(item.get("text", "")).strip() or None
    if what == "command_execution":
        command = item.get("command", "")
        if kind == "item.started":
            return f"[run {command}]"
        return f"[ran {command}: exit code {item.get('exit_code')}]"
    if what == "file_change" and kind == "item.completed":
        changes = item.get("changes") or []
        paths = ", ".join(
            f"{c.get('kind', '')} {c.get('path', '')}".strip()
            for c in changes
            if isinstance(c, Mapping)
        )
        return f"[edit {paths}: {item.get('status', '')}]"
    if what == "mcp_tool_call" and kind == "item.started":
        return f"[tool {item.get('server', '')}.{item.get('tool', '')}]"
    if what == "error":
        return f"[error: {item.get('message', '')}]"
    if what in ("reasoning", "web_search", "todo_list") and kind == "item.completed":
        return f"[{what}]"
    return None


@attrs.define
class ResultExtractor:
    """Collects an attempt's stdout lines and extracts the final result.

    ``auto``: a stream-json ``result`` event if one was printed, else the result file if one is
    configured and was written, else the last non-empty line. The other modes require their
    source and fail with the reason when it is missing.
    """

    mode: ResultMode = "auto"
    result_file: str | None = None
    last_line: str | None = None
    result_event: dict[str, Any] | None = None
    # the result file as it was before the attempt: left unchanged means "not written"
    stale_stamp: tuple[int, int, int] | None = None
    # lines over MAX_LINE_BYTES, skipped unread (a result event among them is lost)
    skipped_lines: int = 0
    # `codex exec --json`: its last agent message, and why its turn failed
    codex_message: str | None = None
    codex_failure: str | None = None

    def before_start(self, cwd: Path) -> None:
        if self.result_file is not None:
            self.stale_stamp = _stamp(cwd / self.result_file)

    def feed(self, line: str) -> str | None:
        """Record one stdout line; return what the live tail should show for it."""
        stripped = line.strip()
        if not stripped:
            return None
        if stripped.startswith("{") and self.mode in ("auto", "stream-json"):
            try:
                event = json.loads(stripped)
            except ValueError:
                event = None
            if isinstance(event, dict) and event.get("type") in STREAM_JSON_TYPES:
                if event["type"] == "result":
                    self.result_event = event
                return _render_stream_event(event)
            if isinstance(event, dict) and event.get("type") in CODEX_JSON_TYPES:
                shown = _render_codex_event(event)
                item = event.get("item")
                if (
                    event["type"] == "item.completed"
                    and isinstance(item, Mapping)
                    and item.get("type") == "agent_message"
                ):
                    self.codex_message = str(item.get("text", ""))
                elif event["type"] == "turn.failed":
                    self.codex_failure = shown
                return shown
        self.last_line = stripped
        return stripped

    def extract(self, cwd: Path) -> Outcome:
        if self.mode in ("auto", "stream-json") and self.result_event is not None:
            event = self.result_event
            text = event.get("result")
            text = text if isinstance(text, str) else json.dumps(text)
            if event.get("is_error") is True:
                subtype = event.get("subtype", "error")
                return Outcome(
                    ok=False, result=text, reason=f"result event reports an error ({subtype})"
                )
            return Outcome(ok=True, result=text)
        if self.mode == "auto" and self.codex_failure is not None:
            return Outcome(ok=False, result=self.codex_message or "", reason=self.codex_failure)
        if self.mode == "auto" and self.codex_message is not None:
            return Outcome(ok=True, result=self.codex_message.strip())
        if self.mode == "stream-json":
            skipped = (
                f" ({plural(self.skipped_lines, 'line')} over {MAX_LINE_BYTES} bytes skipped)"
                if self.skipped_lines
                else ""
            )
            return Outcome(ok=False, reason=f'no stream-json "result" event in the output{skipped}')
        if self.mode == "file" or self.result_file is not None:
            from_file = self._from_file(cwd, required=self.mode == "file")
            if from_file is not None:
                return from_file
        if self.last_line is None:
            return Outcome(ok=True, result="(the worker printed no output)")
        return Outcome(ok=True, result=self.last_line)

    def _from_file(self, cwd: Path, *, required: bool) -> Outcome | None:
        if self.result_file is None:
            return Outcome(ok=False, reason='result = "file" needs result_file')
        path = (cwd / self.result_file).resolve()
        if not path.is_relative_to(cwd.resolve()):
            return Outcome(
                ok=False,
                reason=f"result_file {self.result_file!r} is outside the worker's directory",
            )
        stamp = _stamp(path)
        if stamp is None or stamp == self.stale_stamp:
            if required:
                stale = " (it still holds an earlier content)" if stamp is not None else ""
                return Outcome(
                    ok=False, reason=f"result file {self.result_file} was not written{stale}"
                )
            return None
        data = peek(path, MAX_RESULT_FILE_BYTES)  # a FIFO or device is never opened
        if data is None:
            return Outcome(ok=False, reason=f"result file {self.result_file} is not a regular file")
        return Outcome(ok=True, result=data.decode("utf-8", errors="replace").strip())


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    if not path.is_file():
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


# ---------------------------------------------------------------------------------------------
# the bundled setups: one per agent CLI the README documents (and the tests run for real)

#: ``[vibe.runners.<tier>]`` for each supported agent CLI: streaming output (so the live tail
#: and the idle watchdog see every step), the CLI's own edit tool allowed in the worker's
#: directory, and "--" before the brief (so a brief starting with "-" is text).
BUNDLED_RUNNERS: dict[str, dict[str, Any]] = {
    "claude": {
        "command": [
            "claude",
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "acceptEdits",
            "--",
            "{brief}",
        ],
        "result": "stream-json",
    },
    "codex": {
        "command": [
            "codex",
            "exec",
            "--json",
            "--sandbox",
            "workspace-write",
            "--skip-git-repo-check",
            "--",
            "{brief}",
        ],
    },
}


def bundled_runner(cli: str) -> dict[str, Any]:
    """A copy of the bundled ``[vibe.runners.<tier>]`` table for ``cli`` (claude, codex)."""
    if cli not in BUNDLED_RUNNERS:
        raise KeyError(f"no bundled runner for {cli!r}; known: {', '.join(BUNDLED_RUNNERS)}")
    return json.loads(json.dumps(BUNDLED_RUNNERS[cli]))


# ---------------------------------------------------------------------------------------------
# command runner


def _values(job: Job) -> tuple[tuple[str, str], ...]:
    return (
        ("brief", job.brief),
        ("tier", job.tier),
        ("label", job.label),
        ("worker_id", job.worker_id),
        ("cwd", str(job.cwd)),
    )


PLACEHOLDER = re.compile(r"\{(brief|tier|label|worker_id|cwd)\}")


def substitute(arg: str, job: Job) -> str:
    """Replace ``{brief}``/``{tier}``/``{label}``/``{worker_id}``/``{cwd}`` in one argv element.

    One pass over the harness's template, not ``str.format`` (briefs are full of braces) nor
    one replacement after another: a placeholder inside a substituted value (a brief holding
    ``{cwd}`` or a template of its own) stays as written, since no text from the model is ever
    read as a template.
    """
    values = dict(_values(job))
    return PLACEHOLDER.sub(lambda match: values[match[1]], arg)


def becomes_option(command: tuple[str, ...], job: Job) -> str | None:
    """Why substituting ``job`` into ``command`` would turn a value (the brief, a label) into
    an option of the program, or None. An element that does not start with "-" but would after
    substitution is one, unless the command puts "--" (end of options) before it: the harness
    declares that way that its CLI accepts it."""
    end = command.index("--") if "--" in command else len(command)
    for template in command[1:end]:
        if template.startswith("-") or not substitute(template, job).startswith("-"):
            continue
        field = next((k for k, _ in _values(job) if template.startswith("{" + k + "}")), "brief")
        return (
            f'{field}: expected text that does not start with "-": it would reach '
            f'`{os.path.basename(command[0])}` as an option (the runner\'s command has no "--" '
            f'before "{{{field}}}"); rephrase it, or the harness puts "--" before "{{{field}}}" '
            "in [vibe.runners.<tier>] command when its CLI accepts one"
        )
    return None


def _decode(raw: bytes | bytearray) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r")


async def _read_lines(
    stream: anyio.abc.ByteReceiveStream,
    on_line: Callable[[str], None],
    on_skipped: Callable[[LineTooLong], None],
) -> None:
    """Call ``on_line`` for each line of ``stream`` until EOF; a line over MAX_LINE_BYTES is
    skipped up to its newline and reported to ``on_skipped`` instead."""
    reader = LineReader(stream, max_line_bytes=MAX_LINE_BYTES)
    while True:
        try:
            line = await reader.receive_line()
        except LineTooLong as exc:
            on_skipped(exc)
            continue
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return
        on_line(_decode(line))


@attrs.define
class CommandRunner:
    """Runs an agent CLI headless, one process (own process group) per attempt.

    ``{brief}`` in the command is replaced by the brief; with no ``{brief}`` the brief is
    written to the process's stdin. A brief (or label) that would become an option is refused
    (:func:`becomes_option`) unless the command has "--" before it. Output is streamed line by line to the live tail and the
    idle watchdog. When the main process exits, whatever it left in its process group is killed.
    """

    command: tuple[str, ...]
    result: ResultMode = "auto"
    result_file: str | None = None
    env: Mapping[str, str] = attrs.field(factory=dict)
    watch_idle: bool = True

    @classmethod
    def from_config(cls, cfg: CommandRunnerConfig) -> CommandRunner:
        return cls(
            command=tuple(cfg.command),
            result=cfg.result,
            result_file=cfg.result_file,
            env=dict(cfg.env),
        )

    def describe(self) -> str:
        return "command " + json.dumps(list(self.command))

    def check(self, cwd: Path) -> str | None:
        if not self.command:
            return "command is empty"
        exe = self.command[0]
        if "/" in exe:
            path = cwd / exe
            if not (path.is_file() and os.access(path, os.X_OK)):
                return f"command {exe!r} is not an executable file (relative to {cwd})"
        elif shutil.which(exe) is None:
            return f"command {exe!r} not found on PATH"
        if self.result == "file" and not self.result_file:
            return 'result = "file" needs result_file'
        return None

    def check_job(self, job: Job) -> str | None:
        """Why this job's values cannot be given to the command (one would become an option)."""
        return becomes_option(self.command, job)

    async def run(self, job: Job) -> Outcome:
        problem = self.check(job.cwd)
        if problem is not None:
            return Outcome(ok=False, reason=problem)
        option = becomes_option(self.command, job)
        if option is not None:
            return Outcome(ok=False, reason=option)
        argv = [substitute(arg, job) for arg in self.command]
        brief_on_stdin = not any("{brief}" in arg for arg in self.command)
        env = dict(self.env)
        extractor = ResultExtractor(mode=self.result, result_file=self.result_file)
        extractor.before_start(job.cwd)
        try:
            # the core shields the start: a started process always belongs to the run
            proc: ManagedProcess = await job.run.spawn(
                argv, cwd=job.cwd, env=env, stdin=brief_on_stdin, stdout=True
            )
        except OSError as exc:
            return Outcome(ok=False, reason=f"could not start {argv[0]!r}: {exc.strerror or exc}")
        except tether.ToolError as exc:  # the run is closing
            return Outcome(ok=False, reason=str(exc))
        code = await _follow(proc, job, extractor, brief_on_stdin)
        return _outcome(code, extractor, job.cwd, proc.stderr_tail.render())


async def _follow(
    proc: ManagedProcess, job: Job, extractor: ResultExtractor, brief_on_stdin: bool
) -> int:
    """Feed the worker its brief, show its output until it exits, and return its exit code;
    the process and what it left in its group are ended whatever happens."""

    def on_line(line: str) -> None:
        shown = extractor.feed(line)
        if shown is not None:
            job.output(shown)
        else:  # a tool result event, a blank line: not worth showing, still a sign of life
            job.activity()

    def on_skipped(exc: LineTooLong) -> None:
        extractor.skipped_lines += 1
        head = exc.head[:40].decode("utf-8", "replace")
        job.output(f"[a line over the limit of {exc.limit} bytes was skipped; it began {head!r}]")

    reader_done = anyio.Event()

    async def read_stdout() -> None:
        try:
            await _read_lines(proc.stdout, on_line, on_skipped)
        finally:
            reader_done.set()

    async def watch_stderr() -> None:
        # Some CLIs report progress on stderr only (codex exec without --json): that is life,
        # and what the worker is doing, so its lines reach the live tail too (marked).
        seen, partial = 0, ""
        while True:
            await anyio.sleep(0.25)
            if proc.stderr_tail.total == seen:
                continue
            text, missed = proc.stderr_tail.since(seen)
            seen = proc.stderr_tail.total
            if missed:
                job.output(f"[stderr: {missed} bytes not shown]")
                partial = ""
            *complete, partial = (partial + text).split("\n")
            shown = [line.rstrip("\r") for line in complete if line.strip()]
            for line in shown:
                job.output(f"[stderr] {line}")
            if not shown:
                job.activity()

    try:
        await anyio.lowlevel.checkpoint()
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_stdout)
            tg.start_soon(watch_stderr)
            if brief_on_stdin:
                await _send_brief(proc, job.brief)
            code = await proc.wait()
            await _drain(proc, job, reader_done)
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await proc.terminate(grace_s=job.kill_grace_s)
    return code


async def _drain(proc: ManagedProcess, job: Job, reader_done: anyio.Event) -> None:
    """After the worker's exit: leftovers in its process group (a backgrounded shell) die with
    it; then the pipes reach EOF and the output still buffered in them is read.
    (terminate_tree, not proc.terminate(), which would close the pipes unread)"""
    with anyio.CancelScope(shield=True):
        if _group_alive(proc.pid):
            await tether.processes.managed.terminate_tree(
                proc.pid, job.kill_grace_s, lineage=proc.lineage
            )
    with anyio.move_on_after(0.05):
        await reader_done.wait()
    if not reader_done.is_set():  # a daemon carrying the run's marker holds stdout
        with anyio.CancelScope(shield=True):
            await tether.processes.managed.terminate_tree(
                proc.pid, job.kill_grace_s, marker=proc.marker, lineage=proc.lineage
            )
    with anyio.move_on_after(DRAIN_TIMEOUT_S):
        await reader_done.wait()


def _outcome(code: int, extractor: ResultExtractor, cwd: Path, stderr_tail: str) -> Outcome:
    """What the worker's run came to, from its exit code and its output."""
    if code != 0:
        reason = f"exit code {code}"
        if code < 0:
            with contextlib.suppress(ValueError):
                reason = f"killed by {signal.Signals(-code).name} (not by tether)"
        return Outcome(
            ok=False,
            result=extractor.last_line or "",
            reason=reason,
            exit_code=code,
            stderr_tail=stderr_tail,
        )
    outcome = extractor.extract(cwd)
    return attrs.evolve(outcome, exit_code=code, stderr_tail=stderr_tail)


def _group_alive(pgid: int) -> bool:
    """Whether any process is left in the group (a cheap check that spares /proc scans)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


async def _send_brief(proc: ManagedProcess, brief: str) -> None:
    stdin = proc.stdin
    if stdin is None:
        return
    try:
        await stdin.send(brief.encode("utf-8"))
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass  # the process exited without reading its brief; its exit code says why
    finally:
        await stdin.aclose()


# ---------------------------------------------------------------------------------------------
# callable runner

WorkerFunction = Callable[[str, str], Awaitable[str]]


@attrs.define
class CallableRunner:
    """Runs a worker in-process: ``await fn(brief, tier)`` returns the result text.

    For a harness that runs its sub-agents itself. Raising :class:`tether.ToolError` (or any
    exception) marks the worker ``failed`` with the message; cancelling it (kill, run close)
    is the function's ordinary anyio cancellation. The idle watchdog does not apply.
    """

    fn: WorkerFunction
    name: str | None = None
    watch_idle: bool = False

    def describe(self) -> str:
        name = self.name or str(getattr(self.fn, "__qualname__", None) or repr(self.fn))
        return f"callable {name}"

    def check(self, cwd: Path) -> str | None:
        return None

    async def run(self, job: Job) -> Outcome:
        try:
            value = await self.fn(job.brief, job.tier)
        except tether.ToolError as exc:
            return Outcome(ok=False, reason=str(exc))
        except Exception as exc:  # the harness's worker crashed: a failed worker, not a dead run
            return Outcome(ok=False, reason=f"{type(exc).__name__}: {exc}")
        if not isinstance(value, str):
            return Outcome(ok=False, reason=f"runner returned {type(value).__name__}, expected str")
        return Outcome(
            ok=True, result=value if value.strip() else "(the worker returned an empty result)"
        )

"""``tether session``: one long run over stdio, one JSON object per line.

Requests ``{"id", "tool", "args", "progress"?}`` run concurrently and are answered by ``{"id",
"is_error", "content", "meta"}``; ``{"cancel": ID}`` stops one; a request with ``"progress": true``
gets ``{"progress": ID, "elapsed_s", "message"}`` lines while it runs. Cards ``{"card", "kind", …}`` go out for questions and approvals (only with
``--interactive``) and come back as ``{"card", "choices", "text"}`` or ``{"card", "skip": true}``.
See docs/session-protocol.md.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import itertools
import json
import os
import sys
import termios
import traceback
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO, get_args

import anyio
import anyio.abc
import attrs

from tether.cli.signals import Stop, lines
from tether.errors import NoPerson
from tether.person import Answer
from tether.plugins import core_version
from tether.registry import SchemaFormat
from tether.run import Run, open_run
from tether.terminal import json_safe
from tether.tools import ToolResult
from tether.wire.framing import LineTooLong

#: The session protocol's version, announced in the ready line (1: ready line, tools request,
#: cards carry the client's request_id; 2: cancel and progress lines).
PROTOCOL_VERSION = 2

#: A request that asked for progress gets its first progress line after this long, then one
#: every PROGRESS_EVERY_S (as the MCP bridge sends its notifications).
PROGRESS_AFTER_S = 0.5
PROGRESS_EVERY_S = 1.0

#: The longest line the session reads (a request or an answer, without its newline); a longer
#: one is answered with an error line and skipped, and the session reads on.
MAX_REQUEST_LINE_BYTES = 64 * 1024 * 1024

#: The id of the client's request whose call is running (cards raised by it, or by a call made
#: from inside it — an eval cell's bridge — carry it as ``request_id``).
_client_request: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "tether_session_request", default=None
)
#: The card stream of the connection whose call is running (a served run has one per connection)
_connection_cards: contextvars.ContextVar[CardStream | None] = contextvars.ContextVar(
    "tether_connection_cards", default=None
)


@attrs.define
class Terminal:
    """The ``terminal`` resource of ``tether call``: a person is attached only on a TTY.
    Cards are written to ``stdout`` here meaning the terminal's output (stderr, so the JSON
    result on the real stdout stays clean)."""

    interactive: bool
    stdin: TextIO
    stdout: TextIO

    @classmethod
    def from_stdio(cls) -> Terminal:
        try:
            interactive = sys.stdin is not None and sys.stdin.isatty()
        except ValueError:
            interactive = False
        return cls(interactive=interactive, stdin=sys.stdin, stdout=sys.stderr)


class _PendingCard:
    def __init__(self, validate: Callable[[dict[str, Any]], str | None] | None) -> None:
        self.validate = validate
        self.answer: dict[str, Any] | None = None
        self.error: BaseException | None = None
        self.event = anyio.Event()


class CardStream:
    """The ``card_stream`` resource of ``tether session``: writes cards, routes answers back."""

    def __init__(self, write: Callable[[dict[str, Any]], None], *, interactive: bool) -> None:
        self._write = write
        self.interactive = interactive
        self._ids = itertools.count(1)
        self._pending: dict[str, _PendingCard] = {}

    async def ask(
        self,
        card: dict[str, Any],
        *,
        timeout_s: float,
        validate: Callable[[dict[str, Any]], str | None] | None = None,
    ) -> dict[str, Any]:
        """Show ``card`` and wait for a valid answer; TimeoutError after ``timeout_s``.

        ``validate(answer)`` returns an error text for an answer that does not fit the card: the
        client gets an error line and the card stays open.
        """
        if not self.interactive:
            raise NoPerson("no person attached: the session was started without --interactive")
        card_id = f"card_{next(self._ids)}"
        pending = _PendingCard(validate)
        self._pending[card_id] = pending
        body = {k: v for k, v in card.items() if k not in ("id", "card")}
        request_id = _client_request.get()
        if request_id is not None:
            body["request_id"] = request_id
        self._write({"card": card_id, **body})
        try:
            with anyio.fail_after(timeout_s):
                await pending.event.wait()
        finally:
            self._pending.pop(card_id, None)
        if pending.error is not None:
            raise pending.error
        assert pending.answer is not None
        return pending.answer

    def close_input(self) -> None:
        """The client's input ended: nobody can answer any more. Open cards fail at once with
        NoPerson and later asks too, instead of waiting for their timeouts."""
        self.interactive = False
        for card_id, pending in list(self._pending.items()):
            pending.error = NoPerson(
                f"no person attached: the session's input closed before {card_id} was answered"
            )
            pending.event.set()

    def deliver(self, answer: dict[str, Any]) -> str | None:
        """Route an answer line to its card; an error text when it cannot be taken."""
        # "choices": null / "text": null are the same as leaving them out
        answer = {k: v for k, v in answer.items() if not (k in ("choices", "text") and v is None)}
        card_id = answer.get("card")
        pending = self._pending.get(card_id) if isinstance(card_id, str) else None
        if pending is None:
            open_cards = ", ".join(self._pending) or "none"
            return f"card: no open card {card_id!r} (open cards: {open_cards})"
        problem = _answer_shape_problem(answer)
        if problem is None and pending.validate is not None:
            problem = pending.validate(answer)
        if problem is not None:
            return problem
        pending.answer = answer
        pending.event.set()
        return None


class CardRouter:
    """The ``card_stream`` resource of a run served to several connections (``tether serve``):
    a card goes to the connection whose call raised it, and to no other. A call made outside
    any connection has nobody to ask."""

    @property
    def interactive(self) -> bool:
        cards = _connection_cards.get()
        return cards is not None and cards.interactive

    async def ask(
        self,
        card: dict[str, Any],
        *,
        timeout_s: float,
        validate: Callable[[dict[str, Any]], str | None] | None = None,
    ) -> dict[str, Any]:
        cards = _connection_cards.get()
        if cards is None:
            raise NoPerson("no person attached: the call came from no connection")
        return await cards.ask(card, timeout_s=timeout_s, validate=validate)


def _answer_shape_problem(answer: dict[str, Any]) -> str | None:
    """Why ``answer`` is not an answer line (the core's one reading, ``Answer.from_json``)."""
    try:
        Answer.from_json(answer)
    except ValueError as exc:
        return str(exc)
    return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (JSON has no NaN or Infinity)")


def parse_json(text: str | bytes) -> Any:
    """Strict JSON: ``NaN``/``Infinity`` refused, invalid UTF-8 and nesting too deep for the
    parser refused as ValueError (the caller answers a protocol error; nothing escapes)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"the line is not valid UTF-8 (byte {text[exc.start]:#04x} at offset {exc.start})"
            ) from None
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError("the line is nested too deeply to parse") from None


def utf8_stdout() -> None:
    """Write stdout as UTF-8 whatever the locale says (every line the CLI writes is UTF-8 JSON)."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(encoding="utf-8", errors="strict")


def json_line(obj: Any) -> str:
    """``obj`` as one JSON line that is valid UTF-8 whatever its strings hold: a lone surrogate
    (an echoed ``"\\ud800"``, a file name with non-UTF-8 bytes) is written as its JSON escape,
    and so is every character a terminal would act on (:func:`tether.terminal.json_safe`).
    Not JSON-encodable (NaN, a cycle, nesting too deep) raises ValueError."""
    try:
        text = json.dumps(obj, ensure_ascii=False, allow_nan=False)
    except RecursionError:
        raise ValueError("the reply is nested too deeply to encode") from None
    except TypeError as exc:
        raise ValueError(f"the reply is not JSON: {exc}") from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(obj, ensure_ascii=True, allow_nan=False)
    # what a terminal acts on (C1 controls, bidi overrides) as JSON escapes: the same value
    return json_safe(text) + "\n"


def internal_error(tool: str, exc: BaseException) -> dict[str, Any]:
    """The reply to a call whose tool raised (a bug): the error, its traceback in meta."""
    reply = _error_line(f"internal error in {tool}: {type(exc).__name__}: {exc}")
    reply.pop("id")
    reply["meta"] = {"traceback": "".join(traceback.format_exception(exc))}
    return reply


def _error_line(message: str, request_id: Any = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": request_id,
        "is_error": True,
        "content": [{"type": "text", "text": message}],
        "meta": {},
        **extra,
    }


@contextlib.contextmanager
def _no_echo() -> Iterator[None]:
    """Under a terminal (a pty a client drives), the line discipline would echo every request
    line back on the output the client reads: echo is off while the session runs, and the
    terminal's settings are restored after."""
    try:
        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd) if os.isatty(fd) else None
    except (AttributeError, ValueError, OSError, termios.error):
        saved = None
    if saved is None:
        yield
        return
    quiet = list(saved)
    quiet[3] &= ~(termios.ECHO | termios.ECHONL)
    with contextlib.suppress(OSError, termios.error):
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        with contextlib.suppress(OSError, termios.error):
            termios.tcsetattr(fd, termios.TCSANOW, saved)


def _quiet_terminal(
    session: Callable[..., Coroutine[Any, Any, int]],
) -> Callable[..., Coroutine[Any, Any, int]]:
    """A session reading the process's stdin runs with the terminal's echo off (:func:`_no_echo`)
    from before its ready line to its end."""

    @functools.wraps(session)
    async def quiet(**kwargs: Any) -> int:
        with _no_echo() if kwargs.get("stdin") is None else contextlib.nullcontext():
            return await session(**kwargs)

    return quiet


@_quiet_terminal
async def run_session(
    *,
    workdir: Path,
    config: dict[str, Any],
    conversation_id: str,
    surface: str,
    vibe: bool,
    interactive: bool,
    make_resources: Callable[[dict[str, Any]], object],
    stdin: Any = None,
    stdout: TextIO | None = None,
    workdir_config: dict[str, Any] | None = None,
    trust_workdir: bool = False,
    stop: Stop | None = None,
) -> int:
    if stdout is None:
        utf8_stdout()
    session = _Session(stdout or sys.stdout, stop or Stop("session"), surface)
    cards = CardStream(session.write, interactive=interactive)
    session.cards = cards
    async with open_run(
        workdir,
        conversation_id=conversation_id,
        plugins=[make_resources({"card_stream": cards})],
        config=config,
        vibe=vibe,
        workdir_config=workdir_config,
        trust_workdir=trust_workdir,
    ) as run:
        run.surface_tier(surface)
        session.run = run
        session.write(_ready_line(run, surface, conversation_id))
        # bytes, decoded line by line: one invalid line is answered, it does not end the session;
        # a stop ends the reading at once (no thread blocked on stdin), the calls in flight
        # answer, then the run closes
        source = session.stop.until_stopped(
            stdin
            if stdin is not None
            else lines(sys.stdin.fileno(), max_line_bytes=MAX_REQUEST_LINE_BYTES)
        )
        async with anyio.create_task_group() as tg:
            await session.read(source, tg)
            cards.close_input()
    return session.stop.exit_code(0)


def _ready_line(run: Run, surface: str, conversation_id: str) -> dict[str, Any]:
    """The session's first line: protocol, versions, the installed plugins, where it runs."""
    return {
        "ready": True,
        "protocol": PROTOCOL_VERSION,
        "tether": core_version(),
        "plugins": [
            {"name": i.name, "version": i.version, "status": i.status}
            for i in run.pm.report
            if i.origin == "installed"  # not the CLI's own plugin object
        ],
        "surface": surface,
        "workdir": str(run.workdir),
        "conversation": conversation_id,
    }


class _Session:
    """One ``tether session``: its output, the requests in flight, and what each input line
    asks for."""

    def __init__(
        self,
        out: TextIO,
        stop: Stop,
        surface: str,
        *,
        conversation: str | None = None,
    ) -> None:
        self.out = out
        self.stop = stop
        self.surface = surface
        #: the conversation this connection's calls are made for (None: the run's own)
        self.conversation = conversation
        #: the requests in flight, each with the scope that cancels it
        self.in_flight: dict[Any, anyio.CancelScope] = {}
        self.cards: CardStream | None = None
        self.run: Run | None = None

    def cancel_all(self) -> None:
        """Cancel every call of this connection (its client went away)."""
        for scope in list(self.in_flight.values()):
            scope.cancel()

    def write(self, obj: dict[str, Any] | None) -> None:
        if obj is None:
            return
        try:
            line = json_line(obj)
        except ValueError as exc:
            line = json_line(
                _error_line(f"internal error: the reply could not be written: {exc}", obj.get("id"))
            )
        try:
            self.out.write(line)
            self.out.flush()
        except (BrokenPipeError, ValueError):  # the client went away (a hang-up): nobody reads
            if not self.stop.requested:
                raise

    async def read(self, source: AsyncIterator[Any], tg: anyio.abc.TaskGroup) -> None:
        """Answer every input line until the input ends or the session is stopped."""
        while True:
            try:
                line = await source.__anext__()
            except StopAsyncIteration:
                break
            except LineTooLong as exc:  # skipped; the session reads on from the next line
                self.write(
                    _error_line(
                        f"line is over the limit of {MAX_REQUEST_LINE_BYTES} bytes "
                        f"({MAX_REQUEST_LINE_BYTES >> 20} MiB) for one request or answer "
                        f"and was skipped; it began {exc.head[:40].decode('utf-8', 'replace')!r}"
                    )
                )
                continue
            self.dispatch(line, tg)

    def dispatch(self, line: Any, tg: anyio.abc.TaskGroup) -> None:
        """One input line: a card's answer, a request to the session, or a tool call."""
        line = line.strip()
        if not line:
            return
        try:
            message = parse_json(line)
        except ValueError as exc:
            self.write(_error_line(f"line is not valid JSON: {exc}"))
            return
        if not isinstance(message, dict):
            self.write(_error_line("line must be a JSON object (a request or an answer)"))
            return
        if "cancel" in message and "id" not in message and "card" not in message:
            self.write(self._cancel(message))
            return
        if "card" in message and "id" not in message:
            assert self.cards is not None
            problem = self.cards.deliver(message)
            if problem:
                self.write(_error_line(problem, card=message.get("card")))
            return
        request_id = message.get("id")
        if "request" in message and "tool" not in message:
            self.write(_answer_request(message, self.in_flight, self.run, self.surface))
            return
        problem = _request_problem(message, self.in_flight)
        if problem:
            valid_id = (
                request_id
                if isinstance(request_id, str | int) and not isinstance(request_id, bool)
                else None
            )
            self.write(_error_line(problem, valid_id if valid_id not in self.in_flight else None))
            return
        self.in_flight[request_id] = anyio.CancelScope()
        tg.start_soon(
            self.serve,
            request_id,
            message["tool"],
            message.get("args", {}),
            message.get("progress", False),
        )

    def _cancel(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """``{"cancel": ID}``: stop this connection's request ID (its reply says it was
        cancelled); an error line when there is no such request in flight here."""
        request_id = message["cancel"]
        extra = set(message) - {"cancel"}
        if extra:
            problem = f"{sorted(extra)[0]}: unknown key in a cancel line (expected cancel)"
        elif isinstance(request_id, bool) or not isinstance(request_id, str | int):
            problem = "cancel: expected the id (a string or an integer) of a request in flight"
        elif request_id not in self.in_flight:
            running = ", ".join(repr(i) for i in self.in_flight) or "none"
            problem = (
                f"cancel: no request {request_id!r} in flight on this connection "
                f"(in flight: {running})"
            )
        else:
            self.in_flight[request_id].cancel()
            return None
        return _error_line(problem, cancel=request_id)

    async def serve(self, request_id: Any, tool: str, args: dict[str, Any], progress: bool) -> None:
        """One tool call, answered on its own line (a tool's bug included)."""
        _client_request.set(request_id)
        _connection_cards.set(self.cards)
        assert self.run is not None
        cancelled = self.in_flight[request_id]
        latest: list[str] = []
        try:
            with self.stop.scope() as scope, cancelled:
                result = await self._call(request_id, tool, args, latest if progress else None)
            if scope.cancelled_caught:
                reply = _error_line(
                    self.stop.reason(f"request {request_id!r} ({tool})"), request_id
                )
            elif cancelled.cancelled_caught:
                reply = _error_line(
                    f"request {request_id!r} ({tool}) was cancelled by the client "
                    "(an eval cell is interrupted with its interpreter kept)",
                    request_id,
                )
                reply["meta"] = {"cancelled": True}
            else:
                reply = {"id": request_id, **result.to_json()}
        except Exception as exc:  # a bug in a tool: report it, keep the session alive
            reply = {"id": request_id, **internal_error(tool, exc)}
        finally:
            self.in_flight.pop(request_id, None)
        self.write(reply)

    async def _call(
        self, request_id: Any, tool: str, args: dict[str, Any], latest: list[str] | None
    ) -> ToolResult:
        """The call, with progress lines beside it when ``latest`` collects its progress."""
        assert self.run is not None
        call = functools.partial(
            self.run.call,
            tool,
            args,
            surface=self.surface,
            call_id=f"req_{request_id}",
            on_progress=None if latest is None else latest.append,
            conversation=self.conversation,
        )
        if latest is None:  # no ticker task (nor its task group) for a call without progress
            return await call()
        async with anyio.create_task_group() as ticker:
            ticker.start_soon(self._tick, request_id, latest)
            try:
                result = await call()
            finally:
                ticker.cancel_scope.cancel()
        return result

    async def _tick(self, request_id: Any, latest: list[str]) -> None:
        """Progress lines while request ``request_id`` runs: how long, and the last thing the
        tool reported (a language server's indexing)."""
        elapsed, step = 0.0, PROGRESS_AFTER_S
        while True:
            await anyio.sleep(step)
            elapsed += step
            step = PROGRESS_EVERY_S
            text = f"still running after {elapsed:.1f} s"
            if latest:
                text += f": {latest[-1]}"
            self.write({"progress": request_id, "elapsed_s": round(elapsed, 1), "message": text})


def _answer_request(
    message: dict[str, Any], in_flight: Mapping[Any, Any], run: Any, surface: str
) -> dict[str, Any]:
    """A request to the session itself: ``{"id", "request": "tools", "format"?}``."""
    request_id = message.get("id")
    valid_id = isinstance(request_id, str | int) and not isinstance(request_id, bool)
    reply_id = request_id if valid_id and request_id not in in_flight else None
    extra = set(message) - {"id", "request", "format"}
    fmt = message.get("format", "json")
    if not valid_id:
        problem = "id: expected a string or an integer"
    elif request_id in in_flight:
        problem = f"id: request {request_id!r} is still in flight"
    elif extra:
        problem = f"{sorted(extra)[0]}: unknown key in a request (expected id, request, format)"
    elif message["request"] != "tools":
        problem = f'request: expected "tools", got {message["request"]!r}'
    elif fmt not in get_args(SchemaFormat):
        problem = f"format: expected one of {', '.join(get_args(SchemaFormat))}, got {fmt!r}"
    else:
        return {"id": request_id, "tools": run.schemas(surface=surface, format=fmt)}
    return _error_line(problem, reply_id)


def _request_problem(message: dict[str, Any], in_flight: Mapping[Any, Any]) -> str | None:
    request_id = message.get("id")
    if "id" not in message:
        return "id: a request needs an id (or a card answer needs a card)"
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        return "id: expected a string or an integer"
    extra = set(message) - {"id", "tool", "args", "progress"}
    if extra:
        return f"{sorted(extra)[0]}: unknown key in a request (expected id, tool, args, progress)"
    if not isinstance(message.get("progress", False), bool):
        return "progress: expected true or false"
    if not isinstance(message.get("tool"), str):
        return "tool: expected the tool's name (a string)"
    if "args" in message and not isinstance(message["args"], dict):
        return "args: expected an object"
    if request_id in in_flight:
        return f"id: request {request_id!r} is still in flight"
    return None

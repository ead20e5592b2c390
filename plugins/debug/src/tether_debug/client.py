"""A Debug Adapter Protocol client over the core's Content-Length framing: sequence numbers,
a timeout on every request, events handed to a callback, reverse requests refused politely."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc

from tether.wire.framing import (
    FramedReader,
    FramedWriter,
    FrameTooLarge,
    FramingError,
    PendingRequests,
)

EventHandler = Callable[[dict[str, Any]], None]
# A message the adapter sends over this is skipped unread; the connection stays usable.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
#: told the command of each request that timed out
TimeoutHandler = Callable[[str], None]


class DapError(Exception):
    """A request the adapter answered with ``success: false``."""

    def __init__(self, command: str, message: str) -> None:
        self.command = command
        self.message = message
        super().__init__(f"{command} failed: {message}")


class AdapterGone(Exception):
    """The adapter closed the connection (or it broke) while requests were pending."""


class DapTimeout(Exception):
    """The adapter did not answer a request in time."""

    def __init__(self, command: str, timeout_s: float, skipped: str = "") -> None:
        self.command = command
        meanwhile = f", and meanwhile {skipped} — it may have been the answer" if skipped else ""
        super().__init__(
            f"the adapter did not answer {command!r} within {timeout_s:g} s{meanwhile}"
        )


class DapClient:
    """One DAP connection. Run :meth:`serve` in a task; then :meth:`request` from any task."""

    def __init__(
        self,
        receive: anyio.abc.ByteReceiveStream,
        send: anyio.abc.ByteSendStream,
        *,
        on_event: EventHandler,
        request_timeout_s: float,
        on_timeout: TimeoutHandler | None = None,
        on_message: Callable[[], None] | None = None,
    ) -> None:
        self._receive = receive
        self._send = send
        self._reader = FramedReader(receive, max_frame_bytes=MAX_MESSAGE_BYTES)
        # messages over MAX_MESSAGE_BYTES the adapter sent, skipped unread (and the last one)
        self.messages_skipped = 0
        self.last_skipped = ""
        self._writer = FramedWriter(send)
        self._pending = PendingRequests()
        self._commands: dict[int, str] = {}
        self._seq = itertools.count(1)
        self._on_event = on_event
        self._on_timeout = on_timeout
        self._on_message = on_message
        self.request_timeout_s = request_timeout_s
        self.closed_reason: str | None = None
        self.closed = anyio.Event()

    async def serve(self) -> None:
        """Read messages until the adapter closes the stream; then fail every pending request."""
        reason = "the adapter closed the connection"
        try:
            while True:
                try:
                    message = await self._reader.read()
                except FrameTooLarge as exc:  # skipped; the adapter stays usable
                    self.messages_skipped += 1
                    self.last_skipped = str(exc)
                    continue
                await self._dispatch(message)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        except (FramingError, OSError) as exc:
            reason = f"the connection to the adapter broke: {exc}"
        finally:
            self.closed_reason = reason
            self._pending.fail_all(AdapterGone(reason))
            self.closed.set()

    async def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if self._on_message is not None:
            self._on_message()  # the adapter is alive and writing
        kind = message.get("type")
        if kind == "response":
            self._pending.resolve(message.get("request_seq"), message)
        elif kind == "event":
            self._on_event(message)
        elif kind == "request":
            # Reverse requests (runInTerminal, startDebugging): tether runs everything through
            # the internal console and one session, so it declines them.
            await self._write(
                {
                    "type": "response",
                    "request_seq": message.get("seq"),
                    "command": message.get("command"),
                    "success": False,
                    "message": f"tether does not support the reverse request {message.get('command')!r}",
                }
            )

    async def _write(self, message: dict[str, Any]) -> None:
        message["seq"] = next(self._seq)
        await self._writer.write(message)

    async def send_request(self, command: str, arguments: dict[str, Any] | None = None) -> int:
        """Send a request without waiting; pass the returned seq to :meth:`response`."""
        if self.closed.is_set():
            raise AdapterGone(self.closed_reason or "the adapter is gone")
        seq = next(self._seq)
        self._pending.register(seq)
        self._commands[seq] = command
        message: dict[str, Any] = {"seq": seq, "type": "request", "command": command}
        if arguments is not None:
            message["arguments"] = arguments
        try:
            await self._writer.write(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            self._pending.discard(seq)
            raise AdapterGone(f"cannot write to the adapter: {exc or type(exc).__name__}") from exc
        return seq

    async def response(self, seq: int, timeout_s: float | None = None) -> dict[str, Any]:
        """The body of the response to ``seq``; :class:`DapError` if it failed."""
        command = self._commands.pop(seq, "request")
        timeout = self.request_timeout_s if timeout_s is None else timeout_s
        skipped_before = self.messages_skipped
        try:
            message = await self._pending.wait(seq, timeout)
        except TimeoutError:
            if self._on_timeout is not None:
                self._on_timeout(command)
            skipped = self.last_skipped if self.messages_skipped != skipped_before else ""
            raise DapTimeout(command, timeout, skipped) from None
        if not message.get("success", False):
            body = message.get("body") or {}
            error = body.get("error") if isinstance(body, dict) else None
            text = message.get("message") or ""
            if isinstance(error, dict) and error.get("format"):
                detail = _format_error(error)
                # delve repeats its message at the start of the format
                text = (
                    detail
                    if not text or text == command or detail.startswith(text)
                    else f"{text}: {detail}"
                )
            raise DapError(command, text or "no reason given")
        body = message.get("body")
        return body if isinstance(body, dict) else {}

    async def request(
        self, command: str, arguments: dict[str, Any] | None = None, timeout_s: float | None = None
    ) -> dict[str, Any]:
        """Send ``command`` and wait (bounded) for its response body."""
        return await self.response(await self.send_request(command, arguments), timeout_s)

    def collect(
        self, seq: int, timeout_s: float, task_group: anyio.abc.TaskGroup
    ) -> tuple[anyio.Event, dict[str, Any]]:
        """Take the response to ``seq`` in the background: (answered event, outcome), the
        outcome holding ``body`` or the request's ``error``."""
        answered = anyio.Event()
        outcome: dict[str, Any] = {}

        async def take() -> None:
            try:
                outcome["body"] = await self.response(seq, timeout_s)
            except (DapError, DapTimeout, AdapterGone) as exc:
                outcome["error"] = exc
            finally:
                answered.set()

        task_group.start_soon(take)
        return answered, outcome

    async def aclose(self) -> None:
        for stream in (self._send, self._receive):
            try:
                await stream.aclose()
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                pass


def _format_error(error: dict[str, Any]) -> str:
    text = str(error.get("format", ""))
    for name, value in (error.get("variables") or {}).items():
        text = text.replace("{" + str(name) + "}", str(value))
    return text


async def first_of(*events: anyio.Event) -> None:
    """Return as soon as any of ``events`` is set."""
    if any(e.is_set() for e in events):
        return
    async with anyio.create_task_group() as tg:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(wait, event)


def failure_reason(exc: BaseException) -> str:
    """What went wrong with a request, as the adapter said it (its own message for a refusal)."""
    return exc.message if isinstance(exc, DapError) else str(exc)

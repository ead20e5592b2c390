"""JSON-RPC 2.0 with one language server process over the core's Content-Length framing.

:class:`RpcConnection` is the protocol, as :class:`tether_debug.client.DapClient` is for DAP:
request ids and the answers waited for, a timeout on every request, requests kept past their
timeout, ``$/cancelRequest``, the server's own requests and notifications handed to its owner,
the hang watch, the LSP ``shutdown``/``exit`` handshake, and the "gone" state with its message.
It owns its reader: the reader runs in a task group of the connection's own, so :meth:`aclose`
ends it before returning and a reader that fails ends this connection and nothing else.
:class:`tether_lsp.client.LspClient` is the session on top of it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import attrs

import tether
from tether.processes.hang import HangWatch, activity
from tether.processes.managed import ManagedProcess, descendants, is_alive
from tether.wire.framing import (
    FramedReader,
    FramedWriter,
    FrameTooLarge,
    FramingError,
    PendingRequests,
)


class ServerGone(tether.ToolError):
    """The server process exited (or its output could not be read)."""


class RequestFailed(tether.ToolError):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class RequestTimedOut(tether.ToolError):
    """The server did not answer in time; ``$/cancelRequest`` was sent."""


class StillComputing(RequestTimedOut):
    """The server did not answer in time and the request is kept running: the next identical
    request gets its answer."""


class MethodNotFound(Exception):
    """Raised by a request handler for a method it does not handle (answered ``-32601``)."""


class InvalidParams(Exception):
    """Raised by ``on_request`` for a server's request whose params do not fit the protocol:
    answered with an error saying which field (the connection goes on)."""


#: answers a request of the server: (method, params) -> result, or raises MethodNotFound
RequestHandler = Callable[[str, Any], Any]
#: told each notification of the server: (method, params)
NotificationHandler = Callable[[str, dict[str, Any]], None]

#: requests whose answer is never kept past their timeout (the connection's own lifecycle)
_NEVER_KEPT = frozenset({"initialize", "shutdown", "$/tether/ping"})
#: queries that only read the server's state: an identical one asked while one is in flight,
#: with nothing sent to the server in between, waits for that one's answer (see
#: :meth:`RpcConnection.request`)
JOINABLE = frozenset(
    {
        "textDocument/hover",
        "textDocument/definition",
        "textDocument/declaration",
        "textDocument/typeDefinition",
        "textDocument/implementation",
        "textDocument/references",
        "textDocument/documentSymbol",
        "textDocument/prepareCallHierarchy",
        "callHierarchy/incomingCalls",
        "callHierarchy/outgoingCalls",
        "workspace/symbol",
    }
)
#: kept requests per server, and how long one is kept before it is cancelled
KEPT_LIMIT = 8
KEPT_FOR_S = 300.0
# A message the server sends over this is skipped unread; the server stays usable.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024


@attrs.frozen
class InFlight:
    """A joinable request sent and not yet answered, and what had been sent before it."""

    request_id: int
    #: :attr:`RpcConnection.sent_notifications` when it was sent
    after: int


@attrs.define
class KeptRequest:
    """A request that outlived its timeout; its answer goes to the next identical request."""

    request_id: int
    method: str
    uri: str | None
    asked_at: float


class RpcConnection:
    """JSON-RPC with one server process: :meth:`start` it, :meth:`request` from any task,
    :meth:`aclose` it. ``name`` (the server's id) opens every error message."""

    def __init__(
        self,
        name: str,
        *,
        on_request: RequestHandler,
        on_notification: NotificationHandler,
        request_timeout_s: float,
        first_request_timeout_s: float | None = None,
    ) -> None:
        self.name = name
        self.request_timeout_s = request_timeout_s
        #: a freshly started server's first answer of each kind includes its start-up (loading
        #: the project, a cold cache): it may take as long as the start itself
        self.first_request_timeout_s = max(first_request_timeout_s or 0.0, request_timeout_s)
        self.process: ManagedProcess | None = None
        #: why the connection ended (None while it runs)
        self.exit_reason: str | None = None
        #: requests in a row that timed out with nothing heard from the server meanwhile, and
        #: since when it looks hung (the core's rule, shared with the debug adapters)
        self.hang = HangWatch()
        # messages over MAX_MESSAGE_BYTES the server sent, skipped unread (and the last one)
        self.messages_skipped = 0
        self.last_skipped = ""
        self._on_request = on_request
        self._on_notification = on_notification
        self._answered: set[str] = set()
        self._next_id = 0
        self._pending = PendingRequests()
        self._kept: dict[str, KeptRequest] = {}
        self._in_flight: dict[str, InFlight] = {}
        #: notifications sent to the server (document changes among them): a query asked
        #: after one is never answered with the answer of a query asked before it
        self.sent_notifications = 0
        self._writer: FramedWriter | None = None
        self._changed = anyio.Event()
        self._group: anyio.abc.TaskGroup | None = None
        self._closing = False
        self._done = anyio.Event()

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self, process: ManagedProcess, host: anyio.abc.TaskGroup) -> None:
        """Speak with ``process`` over its stdin/stdout. Its reader runs in the connection's own
        task group, which one task of ``host`` holds until the connection ends."""
        self.process = process
        self._writer = FramedWriter(process.stdin)
        reader = FramedReader(process.stdout, max_frame_bytes=MAX_MESSAGE_BYTES)
        await host.start(self._serve, reader)

    async def _serve(
        self,
        reader: FramedReader,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                group.start_soon(self._read_loop, reader)
                task_status.started()
        except Exception as exc:  # the reader failed: this connection ends, not the run
            while isinstance(exc, ExceptionGroup) and exc.exceptions:
                exc = exc.exceptions[0]
            if self.process is not None:
                with anyio.CancelScope(shield=True):
                    await self.process.terminate(grace_s=0.2)
            self._mark_gone(f"stopped by tether, its output unreadable: {exc}")
        finally:
            self._done.set()

    async def _read_loop(self, reader: FramedReader) -> None:
        try:
            while True:
                try:
                    message = await reader.read()
                except FrameTooLarge as exc:  # skipped; the server stays usable
                    self.messages_skipped += 1
                    self.last_skipped = str(exc)
                    continue
                if not isinstance(message, dict):
                    raise FramingError(f"a message that is not a JSON object: {message!r:.80}")
                await self._dispatch(message)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            if self._closing:  # the handshake's exit, or aclose closed the pipes
                self._mark_gone("closed by tether")
                return
            if self.process is not None:
                with anyio.move_on_after(1.0):
                    await self.process.wait()
            self._mark_gone("its output closed")

    async def aclose(self) -> None:
        """The LSP ``shutdown``/``exit`` handshake (bounded), then the process tree terminated
        and the reader ended: when this returns, nothing of the connection runs."""
        with anyio.CancelScope(shield=True):
            self._closing = True
            if self.alive:
                with anyio.move_on_after(1.5):
                    try:
                        await self.request("shutdown", None, timeout_s=1.0)
                        await self.notify("exit", None)
                    except tether.ToolError:
                        pass
            if self.process is not None and self.process.returncode is None:
                await self.process.terminate(grace_s=0.5)
            self._mark_gone("closed by tether")
            if self._group is not None:
                self._group.cancel_scope.cancel()
                await self._done.wait()

    @property
    def alive(self) -> bool:
        return self.exit_reason is None and self.process is not None

    def check_running(self) -> bool:
        """False (and marked gone) when the process died since its last message."""
        process = self.process
        if self.alive and process is not None:
            if process.returncode is not None or not is_alive(process.pid):
                self._mark_gone("found dead")
        return self.alive

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def stderr_tail(self) -> str:
        return "" if self.process is None else self.process.stderr_tail.text()

    def _mark_gone(self, reason: str) -> None:
        if self.exit_reason is None:
            self.exit_reason = reason
            self._kept.clear()
            self._pending.fail_all(ServerGone(self.gone_message()))
            self._wake()

    def gone_message(self) -> str:
        code = None if self.process is None else self.process.returncode
        text = f"{self.name} exited ({self.exit_reason}"
        text += f", exit code {code})" if code is not None else ")"
        tail = self.stderr_tail().strip()
        if tail:
            text += f"; its stderr ends with:\n{tail[-1500:]}"
        return text

    # -- messages --------------------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> None:
        if self._writer is None or self.exit_reason is not None:
            raise ServerGone(self.gone_message())
        message["jsonrpc"] = "2.0"
        try:
            await self._writer.write(message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self._mark_gone(f"its stdin closed: {exc.__class__.__name__}")
            raise ServerGone(self.gone_message()) from exc

    async def notify(self, method: str, params: Any) -> None:
        if method != "$/cancelRequest":
            self.sent_notifications += 1
        await self._send({"method": method, "params": params})

    async def _dispatch(self, message: dict[str, Any]) -> None:
        self.hang.heard()  # any message means the server is alive and reading
        method = message.get("method")
        if method is None:
            if "id" in message:
                self._pending.resolve(message["id"], message)
        elif "id" in message:
            try:
                reply = {"result": self._on_request(method, message.get("params"))}
            except MethodNotFound:
                reply = {"error": {"code": -32601, "message": f"{method} not handled"}}
            except InvalidParams as exc:
                reply = {"error": {"code": -32602, "message": str(exc)}}
            await self._send({"id": message["id"], **reply})
        else:
            self._on_notification(method, message.get("params") or {})
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Wait for ``predicate`` to hold, checked again after each server message (and when
        the connection ends); False on timeout."""
        deadline = time.monotonic() + timeout_s
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.exit_reason is not None:
                return predicate()
            with anyio.move_on_after(remaining):
                await self._changed.wait()
        return True

    # -- requests --------------------------------------------------------------------------

    async def request(self, method: str, params: Any, *, timeout_s: float | None = None) -> Any:
        """Send ``method`` and wait (bounded) for its answer. A request that times out while
        the server runs is kept, not cancelled (:class:`StillComputing`): the next identical
        request waits for that same answer instead of starting the work over.

        A :data:`JOINABLE` query identical to one still in flight, with no notification sent
        to the server since that one was sent (no document changed), waits for its answer
        too: several agents asking the same thing at once cost the server one answer. The
        request is cancelled only when the last of its callers gives up on it."""
        key = f"{method} {json.dumps(params, sort_keys=True, default=str)}"
        kept = self._kept.get(key)
        timeout = self._timeout_for(method, kept, timeout_s)
        request_id = await self._request_id_for(key, method, params, kept)
        skipped_before = self.messages_skipped
        try:
            message = await self._pending.wait(request_id, timeout)
        except TimeoutError:
            if method != "$/tether/ping":
                self._note_timeout()
            if self.messages_skipped != skipped_before:  # the answer may have been skipped
                self._kept.pop(key, None)
                await self._cancel(request_id)
                raise RequestTimedOut(
                    f"{self.name} did not answer {method} within {timeout:g} s, and "
                    f"meanwhile {self.last_skipped} — it may have been the answer (request "
                    "cancelled)"
                ) from None
            if self.alive and method not in _NEVER_KEPT:
                # keep listening: no await between the wait giving up and this
                self._pending.register(request_id)
                if kept is None:
                    uri = (params or {}).get("textDocument", {}).get("uri")
                    kept = KeptRequest(request_id, method, uri, time.monotonic() - timeout)
                    self._kept[key] = kept
                await self._trim_kept()
                if key in self._kept:
                    asked = time.monotonic() - kept.asked_at
                    raise StillComputing(
                        f"{self.name} is still computing {method} (asked {asked:.0f} s "
                        "ago); the request is kept running — ask again with the same call to "
                        "get its answer"
                    ) from None
            self._kept.pop(key, None)
            await self._cancel(request_id)
            raise RequestTimedOut(
                f"{self.name} did not answer {method} within {timeout:g} s (request cancelled)"
            ) from None
        except BaseException:
            if not self._pending.waiting(request_id):
                self._kept.pop(key, None)
            raise
        finally:
            if request_id not in self._pending:
                self._drop_in_flight(key, request_id)
        self._kept.pop(key, None)
        self._answered.add(method)
        return self._result_of(method, message)

    async def _request_id_for(
        self, key: str, method: str, params: Any, kept: KeptRequest | None
    ) -> int:
        """The request whose answer a call with ``key`` waits for: the kept one, else an
        identical one in flight with nothing sent to the server since, else a new one."""
        if kept is not None:
            return kept.request_id
        in_flight = self._in_flight.get(key)
        if (
            in_flight is not None
            and in_flight.after == self.sent_notifications
            and in_flight.request_id in self._pending
        ):
            return in_flight.request_id
        return await self._send_request(method, params, key if method in JOINABLE else None)

    def _drop_in_flight(self, key: str, request_id: int) -> None:
        """Identical requests no longer join ``request_id`` (answered, failed, or left by
        every caller)."""
        in_flight = self._in_flight.get(key)
        if in_flight is not None and in_flight.request_id == request_id:
            del self._in_flight[key]

    def _timeout_for(self, method: str, kept: KeptRequest | None, timeout_s: float | None) -> float:
        """The wait for an answer: the caller's, else the first request of a method waits
        the longer first-request timeout (unless it is a kept one)."""
        if timeout_s is not None:
            return timeout_s
        if method in self._answered or kept is not None:
            return self.request_timeout_s
        return self.first_request_timeout_s

    async def _send_request(self, method: str, params: Any, joinable: str | None = None) -> int:
        """Send a new request, its answer awaited from now on; its id. With ``joinable`` (the
        request's key), identical requests join it from now on, while it is being sent too."""
        self._next_id += 1
        request_id = self._next_id
        self._pending.register(request_id)
        if joinable is not None:
            self._in_flight[joinable] = InFlight(request_id, self.sent_notifications)
        try:
            await self._send({"id": request_id, "method": method, "params": params})
        except tether.ToolError:
            # a caller that joined it meanwhile was woken with the error (the connection
            # is gone: every pending request failed)
            self._pending.discard(request_id)
            if joinable is not None:
                self._drop_in_flight(joinable, request_id)
            raise
        return request_id

    def _result_of(self, method: str, message: dict[str, Any]) -> Any:
        """The answer's result; :class:`RequestFailed` when the server answered an error."""
        if "error" in message and message["error"] is not None:
            error = message["error"]
            raise RequestFailed(
                f"{self.name} refused {method}: {error.get('message', error)}",
                error.get("code"),
            )
        return message.get("result")

    async def answers(self, timeout_s: float = 1.0) -> bool:
        """Does the server still read and answer? A request for an unknown ``$/`` method
        must be answered with an error (LSP); a hung server answers nothing."""
        try:
            await self.request("$/tether/ping", None, timeout_s=timeout_s)
        except RequestFailed:
            return True
        except tether.ToolError:
            return False
        return True

    def _note_timeout(self) -> None:
        """Count a timeout; after one the server may be judged hung: every process of its
        tree stopped, or two timeouts in a row without any message or CPU time spent."""
        if self.process is None:
            return
        self.hang.timed_out(*activity({self.process.pid, *descendants(self.process.pid)}))

    async def _cancel(self, request_id: int) -> None:
        if self._pending.waiting(request_id):
            return  # another caller still waits for its answer: the last one cancels it
        self._pending.discard(request_id)
        for key, in_flight in list(self._in_flight.items()):
            if in_flight.request_id == request_id:
                del self._in_flight[key]
        if self.alive:
            try:
                await self.notify("$/cancelRequest", {"id": request_id})
            except tether.ToolError:
                pass

    async def _trim_kept(self) -> None:
        """Cancel kept requests past their time, and the oldest beyond the limit."""
        now = time.monotonic()
        for key, kept in list(self._kept.items()):
            if now - kept.asked_at > KEPT_FOR_S:
                del self._kept[key]
                await self._cancel(kept.request_id)
        while len(self._kept) > KEPT_LIMIT:
            oldest = min(self._kept, key=lambda k: self._kept[k].asked_at)
            await self._cancel(self._kept.pop(oldest).request_id)

    async def drop_kept(self, uri: str) -> None:
        """``uri`` changed: the answers kept for its old text are cancelled."""
        for key, kept in list(self._kept.items()):
            if kept.uri == uri:
                del self._kept[key]
                await self._cancel(kept.request_id)

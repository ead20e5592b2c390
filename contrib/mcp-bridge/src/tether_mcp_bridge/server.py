"""The MCP server: one stdio server process = one run.

Built on the ``mcp`` SDK's low-level server (2.x), which serves both protocol revisions on one
stdio connection — the client's first request decides: ``initialize`` opens a 2025-11-25
connection (server-initiated ``elicitation/create``, roots, progress and cancellation
notifications); a request carrying the 2026-07-28 ``_meta`` envelope opens a stateless one
(questions travel as ``input_required`` results the client answers by retrying).

Every ``tools/call`` goes through ``Run.call`` like every other transport. Questions and
approval cards reach the person through the run's ``card_stream`` resource, implemented here on
elicitation. A call's card is tied to the MCP request it came from (a context variable set for
the call's task, so a bridge call from inside an eval cell finds it too).
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import itertools
import logging
import secrets
import signal
import sys
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

import tether
from tether.cli import cli_run, run_config
from tether.cli.serve import attached_run, check_attach
from tether.person import CARD_STREAM
from tether_mcp_bridge.cards import answer_from_elicitation, card_message, card_schema

log = logging.getLogger("tether_mcp_bridge")

#: ``_meta`` key of a result carrying tether's ``ToolResult.meta`` (see the README).
META_KEY = "tether/meta"
#: JSON-RPC error codes.
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: A call that runs longer than this sends progress notifications (when the client asked).
PROGRESS_AFTER_S = 0.5
PROGRESS_EVERY_S = 1.0
#: How many times an answer that does not fit its card is asked again.
REASK_LIMIT = 3

_current: contextvars.ContextVar[_Call | None] = contextvars.ContextVar(
    "tether_mcp_call", default=None
)


def _package_version() -> str:
    try:
        return version("tether-mcp-bridge")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


class _Call:
    """One ``tools/call`` in flight: how its cards reach the person."""

    def __init__(
        self, request_id: Any, args: dict[str, Any], *, modern: bool, can_elicit: bool
    ) -> None:
        self.request_id = request_id
        self.call_id = f"mcp_{request_id}"
        self.args = args
        self.modern = modern
        self.can_elicit = can_elicit
        #: 2025-11-25: sends ``elicitation/create`` related to this request
        self.elicit: Callable[[str, dict[str, Any]], Any] | None = None
        #: 2026-07-28: the card waiting for an ``input_required`` round trip
        self.waiting: tuple[str, dict[str, Any], anyio.Event] | None = None
        self.answer: dict[str, Any] | None = None
        self.changed = anyio.Event()
        self.result: tether.ToolResult | None = None
        self.error: BaseException | None = None
        self.scope: anyio.CancelScope | None = None
        #: the last progress the tool reported (a language server's indexing state)
        self.progress: str | None = None

    def report(self, message: str) -> None:
        self.progress = message

    def progress_text(self, waited: float) -> str:
        text = f"still running after {waited:.0f} s"
        return f"{text}: {self.progress}" if self.progress else text

    def wake(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()


class ElicitationCards:
    """The run's ``card_stream`` resource: a card becomes a form elicitation of the MCP request
    whose call raised it. A client that declared no elicitation capability fails it closed."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    @property
    def interactive(self) -> bool:
        # whether *this* client can answer is known per request: ask() decides, at once
        return True

    async def ask(
        self,
        card: dict[str, Any],
        *,
        timeout_s: float,
        validate: Callable[[dict[str, Any]], str | None] | None = None,
    ) -> dict[str, Any]:
        call = _current.get()
        if call is None or not call.can_elicit:
            raise tether.NoPerson(
                "no person attached: the MCP client did not declare the elicitation capability"
            )
        card_id = f"card_{next(self._ids)}"
        # an approval of the client's own call shows its complete arguments
        arguments = call.args if card.get("call_id") == call.call_id else None
        message, schema = card_message(card, arguments), card_schema(card)
        with anyio.fail_after(timeout_s):
            for _ in range(REASK_LIMIT):
                action, content = await self._elicit(call, card_id, message, schema)
                if action != "accept" and card.get("kind") == "approval":
                    # what is known is the client's answer, not that a person gave it
                    raise tether.NoPerson(
                        f'the MCP client answered the approval request with "{action}": a '
                        "person declined it, or the client runs headless and declines every "
                        "request on its own (Claude Code's -p, Codex's exec do)"
                    )
                answer = answer_from_elicitation(action, content)
                problem = (
                    validate(answer) if validate is not None and "skip" not in answer else None
                )
                if problem is None:
                    return {"card": card_id, **answer}
                message = f"{problem}\n\n{card_message(card, arguments)}"
        raise tether.NoPerson(f"{card_id}: {REASK_LIMIT} answers did not fit the card")

    async def _elicit(
        self, call: _Call, card_id: str, message: str, schema: dict[str, Any]
    ) -> tuple[str, dict[str, Any] | None]:
        if not call.modern:
            assert call.elicit is not None
            result = await call.elicit(message, schema)
            return result.action, result.content
        done = anyio.Event()
        call.waiting = (card_id, {"message": message, "schema": schema}, done)
        call.answer = None
        call.wake()
        try:
            await done.wait()
        finally:
            call.waiting = None
        reply: dict[str, Any] = call.answer or {}
        return str(reply.get("action", "cancel")), reply.get("content")


def _annotations(tier: str) -> types.ToolAnnotations:
    if tier == "read":
        return types.ToolAnnotations(read_only_hint=True, destructive_hint=False)
    return types.ToolAnnotations(read_only_hint=False, destructive_hint=True)


def to_call_tool_result(result: tether.ToolResult) -> types.CallToolResult:
    """text → text content, images → image content, ``is_error`` → ``isError``,
    ``meta`` → ``_meta["tether/meta"]`` (for the harness, not the model)."""
    content: list[Any] = []
    for item in result.to_json()["content"]:
        if item["type"] == "image":
            content.append(types.ImageContent(data=item["data"], mime_type=item["mime_type"]))
        else:
            content.append(types.TextContent(text=item.get("text", "")))
    meta = {META_KEY: result.meta} if result.meta else None
    return types.CallToolResult(content=content, is_error=result.is_error, _meta=meta)


def _root_dir(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


class Bridge:
    """The server's state: the run (opened in the background once the workdir is known) and
    the calls."""

    def __init__(self, ns: argparse.Namespace, tg: anyio.abc.TaskGroup) -> None:
        self.ns = ns
        self.tg = tg
        self.cards = ElicitationCards()
        self.run: tether.Run | None = None
        self._imported = anyio.Event()
        self._opened = anyio.Event()
        self._opening = False
        self._open_error: BaseException | None = None
        self._close = anyio.Event()
        self._parked: dict[str, _Call] = {}
        self._calls: set[_Call] = set()
        self._lock = anyio.Lock()

    # --- the run ------------------------------------------------------------------------

    async def load(self) -> None:
        """Started with the server, which answers ``initialize`` meanwhile: import every
        plugin in a worker thread (the event loop keeps serving), then, when the workdir is
        known already (``--workdir``), open the run. A request that needs the run awaits it."""
        try:
            await anyio.to_thread.run_sync(tether.make_plugin_manager)
        except Exception as exc:  # a bug: every request that needs the run says it
            self._open_error = exc
            log.exception("tether mcp: loading the plugins failed")
        finally:
            self._imported.set()
        async with self._lock:
            if self._close.is_set() or self.ns.workdir is None:
                return
            if self.run is None and self._open_error is None:
                self.tg.start_soon(self._own_run)
                await self._opened.wait()

    async def get_run(self, ctx: Any) -> tether.Run:
        await self._imported.wait()
        async with self._lock:
            if self.run is None and self._open_error is None:
                workdir = await self._workdir(ctx)
                self.ns.workdir = str(workdir)
                self.tg.start_soon(self._own_run)
                await self._opened.wait()
        if self._open_error is not None:
            raise MCPError(code=INTERNAL_ERROR, message=f"the run did not open: {self._open_error}")
        assert self.run is not None
        return self.run

    async def _workdir(self, ctx: Any) -> Path:
        if self.ns.workdir is not None:
            return Path(self.ns.workdir)
        problem = "no workdir: pass --workdir DIR"
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        caps = ctx.session.client_capabilities
        if not modern and caps is not None and caps.roots is not None:
            try:
                roots = (await ctx.session.list_roots()).roots
            except Exception as exc:
                raise MCPError(
                    code=INVALID_PARAMS, message=f"{problem} (roots/list failed: {exc})"
                ) from None
            dirs = [d for d in (_root_dir(str(r.uri)) for r in roots) if d is not None]
            if len(dirs) == 1:
                return dirs[0]
            offered = ", ".join(str(r.uri) for r in roots) or "none"
            problem += f", or offer exactly one file:// root (the client offered: {offered})"
        else:
            problem += ", or use a client that offers exactly one root (2025-11-25 roots)"
        log.error("tether mcp: %s", problem)
        raise MCPError(code=INVALID_PARAMS, message=problem)

    async def _own_run(self) -> None:
        """The task that owns the run: it opens it, and closes it (every child process with
        it) when the client disconnects or the process is signalled."""
        try:
            if self.ns.attach is not None or self.ns.warm:
                # a served run (tether serve): this client is one connection of it, with its
                # own surface; its cards come back here and go out as elicitations
                async with attached_run(self.ns, self.cards.ask) as remote:
                    self.run = remote
                    self._opened.set()
                    await self._close.wait()
                return
            # the run as every CLI command opens it, with the elicitation card stream wired
            async with cli_run(self.ns, {CARD_STREAM: self.cards}) as run:
                self.run = run
                self._opened.set()
                await self._close.wait()
        except Exception as exc:
            self._open_error = exc
            log.error("tether mcp: the run did not open: %s", exc)
        finally:
            self.run = None
            self._opened.set()

    def shutdown(self) -> None:
        """Cancel every call still running or parked, then close the run (its own task
        awaits the close, which kills every process the run started)."""
        for call in self._calls:
            if call.scope is not None:
                call.scope.cancel()
        self._parked.clear()
        self._close.set()

    # --- handlers -----------------------------------------------------------------------

    async def list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        run = await self.get_run(ctx)
        tools = [
            types.Tool(
                name=schema["name"],
                description=schema["description"],
                input_schema=schema["input_schema"],
                annotations=_annotations(schema["tier"]),
            )
            for schema in run.schemas(surface=self.ns.surface, format="json")
        ]
        return types.ListToolsResult(tools=tools)

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> Any:
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        if modern and params.request_state is not None:
            return await self._resume(ctx, params)
        run = await self.get_run(ctx)
        names = {spec.name for spec in run.tools_for(self.ns.surface)}
        if params.name not in names:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"unknown tool {params.name!r} on surface {self.ns.surface!r} "
                f"(tools: {', '.join(sorted(names))})",
            )
        caps = ctx.session.client_capabilities
        args = params.arguments or {}
        call = _Call(
            ctx.request_id,
            args,
            modern=modern,
            can_elicit=caps is not None and caps.elicitation is not None,
        )
        if not modern:
            request_id = ctx.request_id

            async def elicit(message: str, schema: dict[str, Any]) -> Any:
                return await ctx.session.elicit_form(message, schema, related_request_id=request_id)

            call.elicit = elicit
            return await self._inline(ctx, run, call, params.name, args)
        # 2026-07-28: the call may outlive this request (paused on a card until the retry)
        call.scope = anyio.CancelScope()
        self.tg.start_soon(self._execute, run, call, params.name, args)
        return await self._await(ctx, call)

    async def _inline(
        self, ctx: Any, run: tether.Run, call: _Call, name: str, args: dict[str, Any]
    ) -> types.CallToolResult:
        """2025-11-25: the call runs in the request's own task (cards go out as
        ``elicitation/create`` while it waits), with a progress ticker beside it."""
        _current.set(call)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._tick, ctx, call)
                try:
                    result = await run.call(
                        name,
                        args,
                        surface=self.ns.surface,
                        call_id=call.call_id,
                        on_progress=call.report,
                    )
                except Exception as exc:  # a bug in a tool: an MCP error, the server goes on
                    log.exception("tether mcp: %s raised", name)
                    raise MCPError(
                        code=INTERNAL_ERROR, message=f"internal error: {type(exc).__name__}: {exc}"
                    ) from None
                finally:
                    tg.cancel_scope.cancel()
        except anyio.get_cancelled_exc_class():
            # notifications/cancelled: the call was stopped where it stood (an eval cell is
            # interrupted with its interpreter kept); say so, as a cancelled request gets no reply
            with anyio.CancelScope(shield=True):
                await self._say_cancelled(ctx, call)
            raise
        return to_call_tool_result(result)

    async def _tick(self, ctx: Any, call: _Call) -> None:
        waited, step = 0.0, PROGRESS_AFTER_S
        while True:
            await anyio.sleep(step)
            waited += step
            step = PROGRESS_EVERY_S
            await ctx.session.report_progress(waited, None, call.progress_text(waited))

    async def _say_cancelled(self, ctx: Any, call: _Call) -> None:
        log.info("tether mcp: request %s cancelled by the client", call.request_id)
        if call.modern:
            return
        try:
            await ctx.session.send_log_message(
                "info",
                f"request {call.request_id} cancelled: the call was stopped "
                "(an eval cell is interrupted, its interpreter and variables kept)",
            )
        except Exception:  # the client may be gone
            pass

    async def _execute(
        self,
        run: tether.Run,
        call: _Call,
        name: str,
        args: dict[str, Any],
    ) -> None:
        _current.set(call)
        self._calls.add(call)
        assert call.scope is not None
        with call.scope as scope:
            try:
                call.result = await run.call(
                    name,
                    args,
                    surface=self.ns.surface,
                    call_id=call.call_id,
                    on_progress=call.report,
                )
            except Exception as exc:  # a bug in a tool: an MCP error, the server goes on
                log.exception("tether mcp: %s raised", name)
                call.error = exc
        self._calls.discard(call)
        if scope.cancelled_caught and call.result is None and call.error is None:
            call.error = anyio.get_cancelled_exc_class()()
        call.wake()

    async def _await(self, ctx: Any, call: _Call) -> Any:
        """Wait for the call's end (or, on 2026-07-28, its next card), with progress."""
        waited = 0.0
        step = PROGRESS_AFTER_S
        try:
            while True:
                if call.result is not None:
                    return to_call_tool_result(call.result)
                if call.error is not None:
                    raise MCPError(
                        code=INTERNAL_ERROR,
                        message=f"internal error: {type(call.error).__name__}: {call.error}",
                    )
                if call.modern and call.waiting is not None:
                    return self._input_required(call)
                changed = call.changed
                with anyio.move_on_after(step):
                    await changed.wait()
                    continue
                waited += step
                step = PROGRESS_EVERY_S
                await ctx.session.report_progress(waited, None, call.progress_text(waited))
        except anyio.get_cancelled_exc_class():
            # notifications/cancelled (or the client went away): stop the call, shielded, so
            # an eval cell is interrupted with its interpreter kept, an LSP request cancelled
            with anyio.CancelScope(shield=True):
                await self._cancel(ctx, call)
            raise

    async def _cancel(self, ctx: Any, call: _Call) -> None:
        if call.scope is not None:
            call.scope.cancel()
        with anyio.move_on_after(10):
            while call.result is None and call.error is None:
                changed = call.changed
                await changed.wait()
        await self._say_cancelled(ctx, call)

    def _input_required(self, call: _Call) -> types.InputRequiredResult:
        assert call.waiting is not None
        card_id, body, _ = call.waiting
        state = secrets.token_urlsafe(24)
        self._parked[state] = call
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=body["message"], requested_schema=body["schema"]
            )
        )
        return types.InputRequiredResult(input_requests={card_id: request}, request_state=state)

    async def _resume(self, ctx: Any, params: types.CallToolRequestParams) -> Any:
        state = params.request_state or ""
        call = self._parked.pop(state, None)
        if call is None or call.waiting is None:
            raise MCPError(
                code=INVALID_PARAMS,
                message="requestState: no call of this server is waiting for it "
                "(answered already, or the server restarted)",
            )
        card_id, _, done = call.waiting
        responses = params.input_responses or {}
        reply = responses.get(card_id)
        if reply is None:
            call.answer = {"action": "cancel"}
        else:
            data = reply.model_dump(mode="json") if hasattr(reply, "model_dump") else dict(reply)
            call.answer = {"action": data.get("action"), "content": data.get("content")}
        call.waiting = None
        done.set()
        # wait for the card's answer to be taken before looking for the next card
        await anyio.lowlevel.checkpoint()
        return await self._await(ctx, call)


def _http_address(ns: argparse.Namespace) -> tuple[str, int]:
    from tether.cli.serve_http import http_address

    return http_address(ns.http, allow_remote=ns.allow_remote)


_UNAUTHORIZED = b'{"error": "unauthorized: send Authorization: Bearer <the token file\'s token>"}'


def bearer_app(routes: dict[str, Any]) -> Any:
    """An ASGI app: a request whose ``Authorization: Bearer TOKEN`` carries one of ``routes``'
    tokens (compared in constant time with each) goes to that token's session manager — the
    token alone chooses it, so a request field never reaches another token's surface; any
    other request gets 401 and nothing else."""
    import hmac

    expected = [(token.encode(), manager) for token, manager in routes.items()]

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, value = given.partition(b" ")
        chosen = None
        for token, manager in expected:
            if hmac.compare_digest(value, token) and scheme.lower() == b"bearer":
                chosen = manager
        if chosen is not None:
            await chosen.handle_request(scope, receive, send)
            return
        headers = [
            (b"content-type", b"application/json"),
            (b"www-authenticate", b"Bearer"),
            (b"content-length", str(len(_UNAUTHORIZED)).encode()),
        ]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": _UNAUTHORIZED})

    return app


async def _serve_uvicorn(app: Any, listening: Any) -> None:
    """Serve ``app`` on the bound socket until cancelled, then shut down in a bounded time. The
    process's signals stay its own (uvicorn's capture of them is turned off)."""
    import uvicorn

    class _Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Any:
            yield

    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2)
    http = _Server(config)

    async def run() -> None:
        with anyio.CancelScope(shield=True):  # its own shutdown ends it, bounded
            await http.serve(sockets=[listening])
        tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        try:
            await anyio.sleep_forever()
        finally:
            http.should_exit = True


def _mcp_server(bridge: Bridge) -> Server[Any]:
    return Server(
        "tether",
        version=_package_version(),
        instructions="Tools bound to the live resources of one run (tether).",
        on_list_tools=bridge.list_tools,
        on_call_tool=bridge.call_tool,
    )


async def serve_http(ns: argparse.Namespace, server: Server[Any]) -> None:
    """``tether mcp --http HOST:PORT``: MCP streamable HTTP; every request needs
    ``Authorization: Bearer TOKEN`` (the token file's), else 401 and nothing else; the surface
    is this endpoint's."""
    import json

    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from tether.cli.serve import runtime_dir
    from tether.cli.serve_http import bind, write_token

    host, port = _http_address(ns)
    token_file = Path(ns.token_file) if ns.token_file else runtime_dir() / f"mcp-http-{port}.token"
    token = write_token(token_file)
    manager = StreamableHTTPSessionManager(app=server)
    # bound and listening before the ready line: a client that reads it can connect at once
    listening = bind(host, port)
    try:
        async with manager.run():
            ready = {
                "ready": True,
                "url": f"http://{host}:{port}/mcp",
                "token_file": str(token_file),
                "surface": ns.surface,
            }
            sys.stdout.write(json.dumps(ready) + "\n")
            sys.stdout.flush()
            await _serve_uvicorn(bearer_app({token: manager}), listening)
    finally:
        listening.close()
        with contextlib.suppress(FileNotFoundError):
            token_file.unlink()


async def serve_endpoint(endpoint: Any) -> None:
    """``tether serve --http`` (the ``tether_serve_http`` hook), in the server's process: per
    surface, an MCP server whose run is one connection attached to the served run's socket
    with that surface (the server caps it and keeps its calls, cards and conversation apart);
    a request's bearer token alone chooses which. Serves until cancelled."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    async with anyio.create_task_group() as tg, contextlib.AsyncExitStack() as stack:
        bridges, routes = [], {}
        for token, surface in endpoint.tokens.items():
            ns = argparse.Namespace(
                attach=str(endpoint.socket),
                warm=False,
                surface=surface,
                conversation=None,
                workdir=str(endpoint.workdir),
            )
            bridge = Bridge(ns, tg)
            bridges.append(bridge)
            tg.start_soon(bridge.load)
            manager = StreamableHTTPSessionManager(app=_mcp_server(bridge))
            await stack.enter_async_context(manager.run())
            routes[token] = manager
        try:
            await _serve_uvicorn(bearer_app(routes), endpoint.listener)
        finally:
            for bridge in bridges:
                bridge.shutdown()


async def serve(ns: argparse.Namespace) -> int:
    """``tether mcp``: serve until the client disconnects or a signal arrives."""
    from tether.terminal import stderr_log_handler  # every log line with its controls visible

    logging.basicConfig(level=logging.WARNING, handlers=[stderr_log_handler(sys.stderr)])
    if ns.http is not None:
        _http_address(ns)  # a bad or non-loopback address is a usage error at start
    if ns.attach is not None or ns.warm:
        if ns.approve is not None:
            raise tether.ConfigError(
                "--approve: a connection cannot change a served run's approval policy; start "
                "the server with it (tether serve --approve TIER)"
            )
        ns.workdir = ns.workdir or "."
        if ns.attach:  # a socket that refuses this surface is a usage error at start
            await check_attach(ns)
    else:
        ns.surface = ns.surface or "default"
    if ns.workdir is not None:
        run_config(ns)  # a bad --workdir or --config is a usage error at start
    async with anyio.create_task_group() as tg:
        bridge = Bridge(ns, tg)
        server = _mcp_server(bridge)

        async def on_signals(serving: anyio.CancelScope, scope: anyio.CancelScope) -> None:
            with (
                scope,
                anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals,
            ):
                async for signum in signals:
                    log.warning("tether mcp: signal %d, closing the run", signum)
                    serving.cancel()
                    return

        serving, listening = anyio.CancelScope(), anyio.CancelScope()
        tg.start_soon(on_signals, serving, listening)
        tg.start_soon(bridge.load)
        with serving:
            if ns.http is not None:
                await serve_http(ns, server)
            else:
                async with stdio_server() as (read_stream, write_stream):
                    await server.run(
                        read_stream, write_stream, server.create_initialization_options()
                    )
        listening.cancel()
        # the client disconnected (or a signal came): stop what runs, then close the run
        bridge.shutdown()
    return 0

"""``tether serve``: one run served to many clients, each connection with its own surface.

The run's language servers, caches, ledger and checkpoints are shared; a debug session and an
eval kernel belong to a conversation (each connection's, unless it names one). The server
listens on a Unix socket in a per-user runtime directory (mode 0700, the socket 0600; never in
the workdir) and speaks the session protocol (docs/session-protocol.md) after one attach line
that fixes the connection's surface. Where it lives, and how ``--attach`` finds it, is keyed by
the workdir and the configuration file. See docs/architecture.md ("One run, many clients").
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import fcntl
import json
import math
import os
import select
import signal
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import attrs

from _tether_attach import (
    peer_uid,
    private_problem,
    runtime_path,
    server_key,
    socket_problem,
)
from _tether_attach import server_alive as _lock_held
from tether.cli.serve_http import check_options, http_endpoint, remove_tokens
from tether.cli.session import (
    MAX_REQUEST_LINE_BYTES,
    CardRouter,
    CardStream,
    _error_line,
    _ready_line,
    _Session,
    json_line,
    parse_json,
)
from tether.cli.signals import Stop
from tether.errors import ConfigError, ToolError
from tether.person import CARD_STREAM
from tether.run import Run
from tether.wire.framing import LineReader, LineTooLong

#: how long a new connection has to send its attach line
ATTACH_TIMEOUT_S = 10.0
#: how long ``--warm`` waits for a server it started to be ready (the run's wiring, not its
#: language servers: those start in the background)
START_TIMEOUT_S = 60.0
#: how long a starting server retries its lock while clients probe it (each holds it an instant)
LOCK_PATIENCE_S = 0.5


class ServeError(ConfigError):
    """A server cannot be started, found or reached (a usage error of the command)."""


# --- where servers live ---------------------------------------------------------------------


def runtime_dir(create: bool = True) -> Path:
    """The per-user directory of sockets and server records (:func:`_tether_attach.runtime_path`),
    created when missing. It must be a real directory (not a link) owned by this user with no
    access for anyone else; anything else is refused."""
    path = Path(runtime_path())
    if create:
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o700)
    problem = private_problem(path, stat.S_ISDIR, "directory")
    if problem:
        raise ServeError(f"runtime directory {str(path)!r}: {problem}; refused")
    return path


@attrs.frozen
class ServerPaths:
    """The files of one server in the runtime directory."""

    base: Path

    @classmethod
    def of(cls, key: str) -> ServerPaths:
        return cls(runtime_dir() / key)

    @property
    def socket(self) -> Path:
        return self.base.with_suffix(".sock")

    @property
    def record(self) -> Path:
        return self.base.with_suffix(".json")

    @property
    def lock(self) -> Path:
        return self.base.with_suffix(".lock")

    @property
    def start_lock(self) -> Path:
        return self.base.with_suffix(".start")

    @property
    def log(self) -> Path:
        return self.base.with_suffix(".log")


def _open_lock(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def server_alive(paths: ServerPaths) -> bool:
    """Whether a server holds ``paths``' lock (:func:`_tether_attach.server_alive`)."""
    return _lock_held(paths.lock)


def check_socket(path: Path) -> None:
    """A socket a client may connect to: this user's, mode 0600, in a private runtime directory."""
    problem = socket_problem(path)
    if problem:
        raise ServeError(problem)


def read_records() -> list[dict[str, Any]]:
    """Every live server's record; a dead server's files are removed on the way."""
    found = []
    directory = runtime_dir()
    for record in sorted(directory.glob("*.json")):
        paths = ServerPaths(record.with_suffix(""))
        if not server_alive(paths):
            _remove_files(paths)
            continue
        with contextlib.suppress(OSError, ValueError):
            found.append(json.loads(record.read_text()))
    return found


def _remove_files(paths: ServerPaths) -> None:
    for path in (paths.socket, paths.record):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    remove_tokens(paths.base)  # --http's token files


def _write_record(paths: ServerPaths, record: dict[str, Any]) -> None:
    tmp = paths.record.with_suffix(".json.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(record))
    os.replace(tmp, paths.record)


# --- the server -------------------------------------------------------------------------------


class Server:
    """One served run: its connections, the conversations they hold, its idle clock."""

    def __init__(
        self, run: Run, stop: Stop, max_surface: str, idle_timeout_s: float, key: str
    ) -> None:
        self.run = run
        self.stop = stop
        self.max_surface = max_surface
        self.max_tier = run.surface_tier(max_surface)
        self.idle_timeout_s = idle_timeout_s
        self.key = key
        self.connections: set[_Session] = set()
        #: conversations held by a live connection (another connection may not use them)
        self.held: set[str] = set()
        self.last_activity = time.monotonic()

    def attach_problem(self, hello: Any) -> tuple[str | None, dict[str, Any]]:
        """The attach line's problem, or None and its settings."""
        if not isinstance(hello, dict) or set(hello) != {"attach"}:
            return 'the first line must be {"attach": {"surface": …}}', {}
        attach = hello["attach"]
        if not isinstance(attach, dict):
            return "attach: expected an object", {}
        extra = set(attach) - {"surface", "interactive", "conversation"}
        if extra:
            return (
                f"attach.{sorted(extra)[0]}: unknown key (expected surface, interactive, "
                "conversation)",
                {},
            )
        surface = attach.get("surface", self.max_surface)
        if not isinstance(surface, str):
            return "attach.surface: expected a surface's name (a string)", {}
        try:
            tier = self.run.surface_tier(surface)
        except ToolError as exc:
            return f"attach.surface: {exc}", {}
        if tier > self.max_tier:
            return (
                f"attach.surface: {surface!r} reaches tier {tier.value}, above this server's "
                f"{self.max_surface!r} (tier {self.max_tier.value}); start the server with a "
                "wider --surface to allow it",
                {},
            )
        interactive = attach.get("interactive", False)
        if not isinstance(interactive, bool):
            return "attach.interactive: expected true or false", {}
        conversation = attach.get("conversation")
        if conversation is not None and (not isinstance(conversation, str) or not conversation):
            return "attach.conversation: expected a non-empty string", {}
        if conversation is not None and conversation in self.held:
            return (
                f"attach.conversation: {conversation!r} is held by another live connection "
                "(its debug session and kernels are its own)",
                {},
            )
        return None, {"surface": surface, "interactive": interactive, "conversation": conversation}

    async def handle(self, stream: anyio.abc.SocketStream) -> None:
        """One connection: the attach line, then the session protocol until it goes away."""
        async with stream:
            raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)
            if peer_uid(raw) != os.getuid():  # the socket is 0600: only a misconfiguration
                return
            out = _SocketOut()
            reader = LineReader(stream, max_line_bytes=MAX_REQUEST_LINE_BYTES)
            async with anyio.create_task_group() as tg:
                tg.start_soon(out.pump, stream)
                try:
                    await self._converse(reader, out)
                finally:
                    out.close()

    async def _converse(self, reader: LineReader, out: _SocketOut) -> None:
        try:
            with anyio.fail_after(ATTACH_TIMEOUT_S):
                first = await reader.receive_line()
            hello = parse_json(first)
        except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, LineTooLong):
            return
        except ValueError as exc:
            out.write(json_line(_error_line(f"attach line is not valid JSON: {exc}")))
            return
        problem, settings = self.attach_problem(hello)
        if problem is not None:
            out.write(json_line(_error_line(problem)))
            return
        owned = settings["conversation"] is None
        conversation = settings["conversation"] or f"conn-{uuid.uuid4().hex}"
        session = _Session(out, self.stop, settings["surface"], conversation=conversation)  # type: ignore[arg-type]
        session.cards = CardStream(session.write, interactive=settings["interactive"])
        session.run = self.run
        self.connections.add(session)
        self.held.add(conversation)
        try:
            ready = _ready_line(self.run, settings["surface"], conversation)
            ready["server"] = {"pid": os.getpid(), "key": self.key}
            session.write(ready)
            async with anyio.create_task_group() as tg:
                await session.read(_ConnectionLines(self, reader), tg)
                # the client went away: its calls are cancelled, its cards closed; other
                # connections' calls go on
                session.cancel_all()
                session.cards.close_input()
        finally:
            self.connections.discard(session)
            self.held.discard(conversation)
            self.last_activity = time.monotonic()
            if owned:
                with anyio.CancelScope(shield=True):
                    await self.run.close_conversation(conversation)

    async def idle_watch(self, serving: anyio.CancelScope) -> None:
        """End the server after ``idle_timeout_s`` without a connection (0: never)."""
        if self.idle_timeout_s <= 0:
            return
        while True:
            await anyio.sleep(min(1.0, self.idle_timeout_s / 4))
            idle = time.monotonic() - self.last_activity
            if not self.connections and idle >= self.idle_timeout_s:
                print(
                    f"tether serve: idle for {idle:.0f} s with no client, closing the run",
                    file=sys.stderr,
                    flush=True,
                )
                serving.cancel()
                return


class _ConnectionLines:
    """A connection's lines, each noting activity: a reset connection ends them like EOF; a line
    over the limit raises LineTooLong and the next read goes on (the session answers it)."""

    def __init__(self, server: Server, reader: LineReader) -> None:
        self.server = server
        self.reader = reader

    def __aiter__(self) -> _ConnectionLines:
        return self

    async def __anext__(self) -> bytes:
        try:
            line = await self.reader.receive_line()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise StopAsyncIteration from None
        except ConnectionError:
            raise StopAsyncIteration from None
        self.server.last_activity = time.monotonic()
        return line


class _SocketOut:
    """The session's output on a socket: lines queued by the (synchronous) writers, sent in
    order by one task; a client gone away makes every later line a no-op."""

    def __init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[str](math.inf)

    def write(self, line: str) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._send.send_nowait(line)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self._send.close()

    async def pump(self, stream: anyio.abc.SocketStream) -> None:
        async with self._receive:
            async for line in self._receive:
                try:
                    await stream.send(line.encode("utf-8"))
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    return


def _flock_within(fd: int, seconds: float, poll_s: float) -> bool:
    """Take ``fd``'s exclusive lock, trying every ``poll_s`` for up to ``seconds``; False when
    it is still held by another process then."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(poll_s)


@contextlib.contextmanager
def _held_lock(paths: ServerPaths) -> Iterator[None]:
    """The server's lock for its whole life; a second server for the same key is refused. A
    client asking whether a server is alive holds the lock for an instant (``server_alive``
    takes and drops it): a lock still held after :data:`LOCK_PATIENCE_S` is a live server's."""
    fd = _open_lock(paths.lock)
    try:
        if not _flock_within(fd, LOCK_PATIENCE_S, poll_s=0.01):
            raise ServeError(
                f"a server for this workdir and configuration is running already "
                f"(socket {paths.socket}); `tether serve --stop` ends it"
            )
        yield
    finally:
        os.close(fd)


async def serve(ns: Any, stop: Stop) -> int:
    """``tether serve``: open the run, listen, print the ready line, serve until stopped."""
    from tether.cli import cli_run, run_config

    workdir, _, _ = run_config(ns)
    check_options(ns)  # --http's usage errors, before the run opens
    key = server_key(workdir, ns.config, trust_workdir=ns.trust_workdir, vibe=ns.vibe)
    paths = ServerPaths.of(key)
    with _held_lock(paths):
        # the lock is ours: a socket left there is a killed server's
        _remove_files(paths)
        if ns.conversation is None:
            ns.conversation = f"serve-{key}"
        async with (
            cli_run(ns, {CARD_STREAM: CardRouter()}) as run,
            contextlib.AsyncExitStack() as stack,
        ):
            server = Server(run, stop, ns.surface, ns.idle_timeout, key)
            if ns.warm:
                run.warm()
            # --http: MCP streamable HTTP too (a plugin's), bound before the ready line
            http_record, serve_http = await stack.enter_async_context(
                http_endpoint(ns, run, paths.socket, paths.base)
            )
            listener = await anyio.create_unix_listener(paths.socket, mode=0o600)
            record = {
                "ready": True,
                "pid": os.getpid(),
                "key": key,
                "workdir": str(run.workdir),
                "config": str(ns.config.resolve()) if ns.config else None,
                "surface": ns.surface,
                "socket": str(paths.socket),
                "endpoints": {"socket": str(paths.socket), **http_record},
            }
            _write_record(paths, record)
            try:
                sys.stdout.write(json_line(record))
                sys.stdout.flush()
            except (BrokenPipeError, ValueError):  # whoever started us stopped reading
                pass
            try:
                async with listener, anyio.create_task_group() as tg:
                    with stop.scope() as serving:
                        tg.start_soon(server.idle_watch, serving)
                        tg.start_soon(listener.serve, server.handle, tg)
                        if serve_http is not None:
                            tg.start_soon(serve_http)
                        await anyio.sleep_forever()
                    tg.cancel_scope.cancel()
            finally:
                _remove_files(paths)
    return 0


# --- managing servers and attaching -----------------------------------------------------------


def list_servers() -> int:
    sys.stdout.write(json_line(read_records()))
    return 0


def stop_server(paths: ServerPaths, timeout_s: float = 30.0) -> int:
    """SIGTERM to the server holding ``paths``' lock, then wait for its lock to be released."""
    if not server_alive(paths):
        print("tether serve --stop: no server for this workdir and configuration", file=sys.stderr)
        return 1
    try:
        record = json.loads(paths.record.read_text())
    except (FileNotFoundError, ValueError):  # starting or closing: its record comes and goes
        record = None
    if record is not None:
        os.kill(int(record["pid"]), signal.SIGTERM)
    else:
        record = {"pid": None, "socket": str(paths.socket)}
    deadline = time.monotonic() + timeout_s
    while server_alive(paths):
        if time.monotonic() > deadline:
            print(f"tether serve --stop: pid {record['pid']} still running", file=sys.stderr)
            return 1
        time.sleep(0.05)
    print(json.dumps({"stopped": record["pid"], "socket": record["socket"]}))
    return 0


def find_endpoint(ns: Any, *, warm: bool) -> Path:
    """The socket for ``--attach [ENDPOINT]``: the given one, else this workdir and
    configuration's server; with ``warm``, one is started when there is none (one only, however
    many clients ask at once: they take turns on the start lock)."""
    if ns.attach:
        return Path(ns.attach)
    from tether.cli import run_config

    workdir, _, _ = run_config(ns)
    key = server_key(workdir, ns.config, trust_workdir=ns.trust_workdir, vibe=ns.vibe)
    paths = ServerPaths.of(key)
    if server_alive(paths) and paths.socket.exists():
        return paths.socket
    if not warm:
        raise ServeError(
            f"--attach: no server for workdir {str(workdir)!r} and this configuration; start one "
            "with `tether serve` (or use --warm)"
        )
    fd = _open_lock(paths.start_lock)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        if not _flock_within(fd, START_TIMEOUT_S, poll_s=0.05):
            raise ServeError("--warm: another client's server start took too long")
        if not (server_alive(paths) and paths.socket.exists()):
            _start_server(ns, workdir, paths, deadline)
        return paths.socket
    finally:
        os.close(fd)


def _start_server(ns: Any, workdir: Path, paths: ServerPaths, deadline: float) -> None:
    argv = [sys.executable, "-m", "tether", "serve", "--workdir", str(workdir)]
    if ns.config is not None:
        argv += ["--config", str(ns.config.resolve())]
    if ns.trust_workdir:
        argv.append("--trust-workdir")
    if ns.vibe:
        argv.append("--vibe")
    argv += ["--idle-timeout", str(getattr(ns, "idle_timeout", None) or 900)]
    # the server outlives this command, which kills every descendant it has when it ends (the
    # CLI's rule): it is started outside this process's tree — a shell backgrounds it and exits,
    # and this process stops being a subreaper first, so the server is re-parented elsewhere
    _stop_subreaping()
    log = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        shell = subprocess.Popen(
            ["/bin/sh", "-c", 'exec "$@" &', "sh", *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,  # not the caller's terminal, not its signals
            close_fds=True,
        )
    finally:
        os.close(log)
    shell.wait(max(0.1, deadline - time.monotonic()))
    assert shell.stdout is not None
    with shell.stdout:
        # the ready line, or the end of a server that failed (its reason is in the log)
        ready, _, _ = select.select([shell.stdout], [], [], max(0.1, deadline - time.monotonic()))
        line = shell.stdout.readline() if ready else b""
    if not line:
        reason = paths.log.read_text(errors="replace").strip()[-2000:]
        raise ServeError(f"--warm: the server did not start: {reason or 'no output'}")


def _stop_subreaping() -> None:
    import ctypes

    pr_set_child_subreaper = 36
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_child_subreaper, 0, 0, 0, 0)


class Attached:
    """A client of a served run over its socket (the session protocol, one connection)."""

    def __init__(self, stream: anyio.abc.SocketStream, ready: dict[str, Any]) -> None:
        self.stream = stream
        self.reader = LineReader(stream, max_line_bytes=MAX_REQUEST_LINE_BYTES)
        self.ready = ready

    @classmethod
    async def connect(
        cls,
        path: Path,
        *,
        surface: str | None = None,
        interactive: bool = False,
        conversation: str | None = None,
    ) -> Attached:
        check_socket(path)
        try:
            stream = await anyio.connect_unix(path)
        except OSError as exc:
            if exc.errno in (errno.ECONNREFUSED, errno.ENOENT):
                raise ServeError(f"--attach: no server listens on {str(path)!r}") from None
            raise
        raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)
        if peer_uid(raw) != os.getuid():
            await stream.aclose()
            raise ServeError(f"--attach: {str(path)!r} is served by another user; refused")
        attach: dict[str, Any] = {"interactive": interactive}
        if surface is not None:
            attach["surface"] = surface
        if conversation is not None:
            attach["conversation"] = conversation
        await stream.send(json_line({"attach": attach}).encode())
        client = cls(stream, {})
        first = await client.receive()
        if first is None or not first.get("ready"):
            await stream.aclose()
            text = first["content"][0]["text"] if first and first.get("content") else "closed"
            raise ServeError(f"--attach: the server refused the connection: {text}")
        client.ready = first
        return client

    async def send(self, message: dict[str, Any]) -> None:
        await self.stream.send(json_line(message).encode())

    async def receive(self) -> dict[str, Any] | None:
        try:
            line = await self.reader.receive_line()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return None
        value = parse_json(line)
        return value if isinstance(value, dict) else None

    async def aclose(self) -> None:
        await self.stream.aclose()


async def call_attached(ns: Any, stop: Stop, args: dict[str, Any]) -> dict[str, Any]:
    """``tether call --attach``: one request on a served run; cards are refused (no person:
    the server's approval policy, its ``--approve``, decides)."""
    path = await anyio.to_thread.run_sync(lambda: find_endpoint(ns, warm=ns.warm))
    client = await Attached.connect(path, surface=ns.surface, conversation=ns.conversation)
    try:
        with stop.scope():
            await client.send({"id": 1, "tool": ns.tool, "args": args})
            while True:
                message = await client.receive()
                if message is None:
                    reply = _error_line("the server closed the connection before answering")
                    reply.pop("id")
                    return reply
                if message.get("id") == 1:
                    message.pop("id")
                    return message
        reply = _error_line(stop.reason(ns.tool))
        reply.pop("id")
        return reply
    finally:
        with anyio.CancelScope(shield=True):
            await client.aclose()


class _RemoteTool:
    def __init__(self, schema: dict[str, Any]) -> None:
        self.name = schema["name"]
        self.tier = schema.get("tier")


class RemoteRun:
    """A served run as a transport sees a run (``schemas``, ``tools_for``, ``call``), over one
    attached connection: ``tether mcp --attach`` serves it to an MCP client. The surface is the
    connection's (fixed when it attached); the ``surface`` arguments are ignored. Cards the
    server sends for a call are answered by ``answer_card(card)``, run in that call's context
    (the MCP request that made it)."""

    def __init__(
        self,
        client: Attached,
        tools: list[dict[str, Any]],
        answer_card: Any,
        task_group: anyio.abc.TaskGroup,
    ) -> None:
        self.client = client
        self._tools = tools
        self._answer_card = answer_card
        self._tg = task_group
        self._ids = iter(range(1, 1 << 62))
        #: each request in flight: the context of the call (its cards are answered in it), the
        #: event of its reply, the reply, its progress listener
        self._waiting: dict[int, tuple[contextvars.Context, anyio.Event, list[Any], Any]] = {}
        self.workdir = Path(client.ready.get("workdir", "."))

    @classmethod
    @contextlib.asynccontextmanager
    async def attach(
        cls,
        path: Path,
        *,
        surface: str | None,
        conversation: str | None,
        answer_card: Any,
    ) -> Any:
        client = await Attached.connect(
            path, surface=surface, interactive=True, conversation=conversation
        )
        try:
            await client.send({"id": 0, "request": "tools", "format": "json"})
            reply = await client.receive()
            if reply is None or "tools" not in reply:
                raise ServeError(f"--attach: the server did not list its tools: {reply}")
            async with anyio.create_task_group() as tg:
                remote = cls(client, reply["tools"], answer_card, tg)
                tg.start_soon(remote._read)
                try:
                    yield remote
                finally:
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await client.aclose()

    def schemas(self, surface: str = "default", format: str = "json") -> list[dict[str, Any]]:
        return self._tools

    def tools_for(self, surface: str = "default") -> list[_RemoteTool]:
        return [_RemoteTool(schema) for schema in self._tools]

    async def _read(self) -> None:
        while True:
            message = await self.client.receive()
            if message is None:
                for _, done, box, _ in self._waiting.values():
                    box.append(None)
                    done.set()
                return
            if "card" in message:
                waiting = self._waiting.get(message.get("request_id"))  # type: ignore[arg-type]
                if waiting is None:
                    await self.client.send({"card": message["card"], "skip": True})
                    continue
                waiting[0].run(self._tg.start_soon, self._card, message)
            elif "progress" in message:
                waiting = self._waiting.get(message["progress"])
                if waiting is not None and waiting[3] is not None:
                    waiting[3](message["message"])
            elif message.get("id") in self._waiting:
                _, done, box, _ = self._waiting[message["id"]]
                box.append(message)
                done.set()

    async def _card(self, card: dict[str, Any]) -> None:
        from tether.errors import NoPerson

        card_id = card["card"]
        body = {k: v for k, v in card.items() if k not in ("card", "request_id")}
        try:
            answer = await self._answer_card(body, timeout_s=float(card.get("timeout_s") or 600))
        except (NoPerson, TimeoutError):
            answer = {"skip": True}
        reply = {k: v for k, v in answer.items() if k in ("choices", "text", "skip")}
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await self.client.send({"card": card_id, **reply})

    async def call(
        self,
        name: str,
        args: dict[str, Any] | None = None,
        *,
        surface: str = "default",
        call_id: str | None = None,
        on_progress: Any = None,
    ) -> Any:
        from tether.tools import ToolResult

        request_id = next(self._ids)
        done = anyio.Event()
        box: list[dict[str, Any] | None] = []
        self._waiting[request_id] = (contextvars.copy_context(), done, box, on_progress)
        try:
            await self.client.send(
                {"id": request_id, "tool": name, "args": args or {}, "progress": True}
            )
            try:
                await done.wait()
            except anyio.get_cancelled_exc_class():
                # stop it on the server too (an eval cell is interrupted), shielded and bounded
                with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                    await self.client.send({"cancel": request_id})
                    await done.wait()
                raise
        finally:
            self._waiting.pop(request_id, None)
        reply = box[0] if box else None
        if reply is None:
            return ToolResult.error("the served run closed the connection before answering")
        return _result_from_json(reply)


def _result_from_json(reply: dict[str, Any]) -> Any:
    import base64

    from tether.tools import Image, Text, ToolResult

    content: list[Any] = []
    for item in reply.get("content", []):
        if item.get("type") == "image":
            content.append(Image(base64.b64decode(item["data"]), item["mime_type"]))
        else:
            content.append(Text(item.get("text", "")))
    return ToolResult(
        content=tuple(content), is_error=bool(reply.get("is_error")), meta=reply.get("meta") or {}
    )


@contextlib.asynccontextmanager
async def attached_run(ns: Any, answer_card: Any) -> Any:
    """The served run ``--attach [SOCKET]`` / ``--warm`` names, as a :class:`RemoteRun`."""
    path = await anyio.to_thread.run_sync(lambda: find_endpoint(ns, warm=ns.warm))
    async with RemoteRun.attach(
        path, surface=ns.surface, conversation=ns.conversation, answer_card=answer_card
    ) as remote:
        yield remote


async def check_attach(ns: Any) -> None:
    """ServeError now if the socket ``--attach SOCKET`` names refuses this connection."""
    client = await Attached.connect(
        Path(ns.attach), surface=ns.surface, conversation=ns.conversation
    )
    await client.aclose()

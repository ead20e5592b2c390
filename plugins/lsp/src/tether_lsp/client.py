"""One running language server: JSON-RPC over the core's framing, documents, diagnostics."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import attrs

import tether
from tether.framing import FramedReader, FramedWriter, FrameTooLarge, PendingRequests
from tether.hang import HangWatch, activity
from tether.process import descendants, is_alive
from tether_lsp.servers import ServerSpec

_CLIENT_CAPABILITIES: dict[str, Any] = {
    "general": {"positionEncodings": ["utf-8", "utf-16"]},
    "window": {"workDoneProgress": True},
    "workspace": {
        "configuration": True,
        "workspaceFolders": True,
        "applyEdit": False,
        "symbol": {"resolveSupport": {"properties": []}},
        "workspaceEdit": {"documentChanges": True},
        # we tell the server about files changed on disk before each query (see scan_root)
        "didChangeWatchedFiles": {"dynamicRegistration": True},
    },
    "textDocument": {
        "synchronization": {"didSave": True, "willSave": False},
        # pull ("diagnostic") is added for specs with pull_diagnostics: a server that is
        # offered pull stops pushing
        "publishDiagnostics": {"versionSupport": True, "relatedInformation": False},
        "hover": {"contentFormat": ["markdown", "plaintext"]},
        "definition": {"linkSupport": True},
        "typeDefinition": {"linkSupport": True},
        "implementation": {"linkSupport": True},
        "references": {},
        "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
        "codeAction": {
            "codeActionLiteralSupport": {
                "codeActionKind": {
                    "valueSet": ["", "quickfix", "refactor", "source", "source.organizeImports"]
                }
            },
            "isPreferredSupport": True,
        },
        "rename": {"prepareSupport": True},
        "callHierarchy": {},
    },
}


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


#: requests whose answer is never kept past their timeout (the run's own lifecycle)
_NEVER_KEPT = frozenset({"initialize", "shutdown", "$/tether/ping"})
#: kept requests per server, and how long one is kept before it is cancelled
KEPT_LIMIT = 8
# A message the server sends over this is skipped unread; the server stays usable.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
KEPT_FOR_S = 300.0


@attrs.define
class KeptRequest:
    """A request that outlived its timeout; its answer goes to the next identical request."""

    request_id: int
    method: str
    uri: str | None
    asked_at: float


@attrs.define
class OpenDocument:
    path: Path
    uri: str
    language_id: str
    version: int
    text: str
    mtime_ns: int
    size: int
    #: the publish sequence number when this text was sent: a publish without a ``version``
    #: (typescript-language-server's) belongs to this text only when it came after
    sent_seq: int = 0


@attrs.frozen
class Published:
    seq: int
    version: int | None
    items: list[dict[str, Any]]


def path_to_uri(path: Path) -> str:
    return path.as_uri()


def uri_to_path(uri: str) -> Path | None:
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


def lookup_section(settings: Mapping[str, Any], section: str | None) -> Any:
    """The part of nested ``settings`` named by a dotted ``section`` (None when absent)."""
    if not section:
        return dict(settings)
    node: Any = settings
    for part in section.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


_SCAN_SKIP = {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache"}
SCAN_LIMIT = 50_000
FILE_EVENTS_SETTLE_S = 3.0


def scan_root(root: Path, suffixes: frozenset[str]) -> dict[str, tuple[int, int]]:
    """path -> (mtime_ns, size) of the source files under ``root`` (bounded)."""
    found: dict[str, tuple[int, int]] = {}
    stack = [str(root)]
    while stack and len(found) < SCAN_LIMIT:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in _SCAN_SKIP and not entry.name.startswith("."):
                        stack.append(entry.path)
                elif os.path.splitext(entry.name)[1] in suffixes:
                    stat = entry.stat()
                    found[entry.path] = (stat.st_mtime_ns, stat.st_size)
            except OSError:
                continue
    return found


class LspClient:
    """A started server for one (spec, root); every request is bounded by a timeout."""

    def __init__(
        self,
        run: tether.Run,
        spec: ServerSpec,
        root: Path,
        argv: list[str],
        settings: Mapping[str, Any],
        request_timeout_s: float,
        first_request_timeout_s: float | None = None,
    ) -> None:
        self.run = run
        self.spec = spec
        self.root = root
        self.argv = argv
        self.settings = settings
        self.request_timeout_s = request_timeout_s
        #: a freshly started server's first answer of each kind includes its start-up (loading
        #: the project, a cold cache): it may take as long as the start itself
        self.first_request_timeout_s = max(first_request_timeout_s or 0.0, request_timeout_s)
        self._answered: set[str] = set()
        self.capabilities: dict[str, Any] = {}
        self.encoding = "utf-16"
        self.documents: dict[str, OpenDocument] = {}
        self.published: dict[str, Published] = {}
        self.progress: dict[str, str] = {}
        self.registered: set[str] = set()
        self.configured = False
        self.files_known = spec.ready_log is None
        #: counts the ends of server work (progress end, a diagnostics refresh request)
        self.settled = 0
        self.started_at = time.monotonic()
        self.exit_reason: str | None = None
        self.crash_counted = False
        self._seq = 0
        self._next_id = 0
        self._changed = anyio.Event()
        self._pending = PendingRequests()
        self._process: Any = None
        self._writer: FramedWriter | None = None
        self._snapshot: dict[str, tuple[int, int]] = {}
        self._sync_lock = anyio.Lock()
        self._kept: dict[str, KeptRequest] = {}
        #: requests in a row that timed out with nothing heard from the server meanwhile, and
        #: since when it looks hung (the core's rule, shared with the debug adapters)
        self.hang = HangWatch()
        # messages over MAX_MESSAGE_BYTES the server sent, skipped unread (and the last one)
        self.messages_skipped = 0
        self.last_skipped = ""

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self.exit_reason is None and self._process is not None

    def check_running(self) -> bool:
        """False (and marked gone) when the process died since its last message."""
        if self.alive and (self._process.returncode is not None or not is_alive(self._process.pid)):
            self._mark_gone("found dead")
        return self.alive

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def stderr_tail(self) -> str:
        if self._process is None:
            return ""
        return self._process.stderr_tail.text()

    async def start(self, timeout_s: float) -> None:
        env = dict(os.environ)
        self._process = await self.run.spawn(
            self.argv, cwd=self.root, env=env, stdin=True, stdout=True
        )
        self._writer = FramedWriter(self._process.stdin)
        reader = FramedReader(self._process.stdout, max_frame_bytes=MAX_MESSAGE_BYTES)
        self.run.task_group.start_soon(self._read_loop, reader)
        root_uri = path_to_uri(self.root)
        params: dict[str, Any] = {
            "processId": os.getpid(),
            "clientInfo": {"name": "tether"},
            "rootUri": root_uri,
            "rootPath": str(self.root),
            "workspaceFolders": [{"uri": root_uri, "name": self.root.name}],
            "capabilities": self._capabilities(),
        }
        if self.spec.initialization_options is not None:
            params["initializationOptions"] = dict(self.spec.initialization_options)
        result = await self.request("initialize", params, timeout_s=timeout_s)
        self.capabilities = (result or {}).get("capabilities", {}) or {}
        self.encoding = self.capabilities.get("positionEncoding") or "utf-16"
        self._snapshot = scan_root(self.root, frozenset(self.spec.extensions))
        await self.notify("initialized", {})
        if self.settings or self.spec.waits_for_configuration:
            # pyright only pulls its configuration once told it changed (pyright#11103)
            await self.notify("workspace/didChangeConfiguration", {"settings": dict(self.settings)})

    def _capabilities(self) -> dict[str, Any]:
        if not self.spec.pull_diagnostics:
            return _CLIENT_CAPABILITIES
        text_document = {**_CLIENT_CAPABILITIES["textDocument"], "diagnostic": {}}
        return {**_CLIENT_CAPABILITIES, "textDocument": text_document}

    async def close(self) -> None:
        """Polite shutdown, bounded; the process group is killed afterwards in any case."""
        with anyio.CancelScope(shield=True):
            if self.alive:
                with anyio.move_on_after(1.5):
                    try:
                        await self.request("shutdown", None, timeout_s=1.0)
                        await self.notify("exit", None)
                    except tether.ToolError:
                        pass
            if self._process is not None and self._process.returncode is None:
                await self._process.terminate(grace_s=0.5)
            self._mark_gone("closed by tether")

    def _mark_gone(self, reason: str) -> None:
        if self.exit_reason is None:
            self.exit_reason = reason
            self._kept.clear()
            self._pending.fail_all(ServerGone(self._gone_message()))
            self._notify_change()

    def _gone_message(self) -> str:
        code = None if self._process is None else self._process.returncode
        text = f"{self.spec.id} exited ({self.exit_reason}"
        text += f", exit code {code})" if code is not None else ")"
        tail = self.stderr_tail().strip()
        if tail:
            text += f"; its stderr ends with:\n{tail[-1500:]}"
        return text

    # -- JSON-RPC --------------------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> None:
        if self._writer is None or self.exit_reason is not None:
            raise ServerGone(self._gone_message())
        message["jsonrpc"] = "2.0"
        try:
            await self._writer.write(message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self._mark_gone(f"its stdin closed: {exc.__class__.__name__}")
            raise ServerGone(self._gone_message()) from exc

    async def notify(self, method: str, params: Any) -> None:
        await self._send({"method": method, "params": params})

    async def request(self, method: str, params: Any, *, timeout_s: float | None = None) -> Any:
        """Send ``method`` and wait (bounded) for its answer. A request that times out while
        the server runs is kept, not cancelled (:class:`StillComputing`): the next identical
        request waits for that same answer instead of starting the work over."""
        key = f"{method} {json.dumps(params, sort_keys=True, default=str)}"
        kept = self._kept.get(key)
        if timeout_s is not None:
            timeout = timeout_s
        elif method in self._answered or kept is not None:
            timeout = self.request_timeout_s
        else:
            timeout = self.first_request_timeout_s
        if kept is not None:
            request_id = kept.request_id
        else:
            self._next_id += 1
            request_id = self._next_id
            self._pending.register(request_id)
            try:
                await self._send({"id": request_id, "method": method, "params": params})
            except tether.ToolError:
                self._pending.discard(request_id)
                raise
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
                    f"{self.spec.id} did not answer {method} within {timeout:g} s, and "
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
                        f"{self.spec.id} is still computing {method} (asked {asked:.0f} s "
                        "ago); the request is kept running — ask again with the same call to "
                        "get its answer"
                    ) from None
            self._kept.pop(key, None)
            await self._cancel(request_id)
            raise RequestTimedOut(
                f"{self.spec.id} did not answer {method} within {timeout:g} s (request cancelled)"
            ) from None
        except BaseException:
            self._kept.pop(key, None)
            raise
        self._kept.pop(key, None)
        self._answered.add(method)
        if "error" in message and message["error"] is not None:
            error = message["error"]
            raise RequestFailed(
                f"{self.spec.id} refused {method}: {error.get('message', error)}",
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
        if self._process is None:
            return
        self.hang.timed_out(*activity({self._process.pid, *descendants(self._process.pid)}))

    async def _cancel(self, request_id: int) -> None:
        self._pending.discard(request_id)
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

    async def _drop_kept(self, uri: str) -> None:
        """The document changed: answers computed for its old text are cancelled."""
        for key, kept in list(self._kept.items()):
            if kept.uri == uri:
                del self._kept[key]
                await self._cancel(kept.request_id)

    async def _read_loop(self, reader: FramedReader) -> None:
        try:
            while True:
                try:
                    message = await reader.read()
                except FrameTooLarge as exc:  # skipped; the server stays usable
                    self.messages_skipped += 1
                    self.last_skipped = str(exc)
                    continue
                await self._dispatch(message)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            if self._process is not None:
                with anyio.move_on_after(1.0):
                    await self._process.wait()
            self._mark_gone("its output closed")
        except Exception as exc:  # a malformed frame must not take the run's task group down
            self._mark_gone(f"unreadable output: {exc}")
            if self._process is not None:
                with anyio.CancelScope(shield=True):
                    await self._process.terminate(grace_s=0.2)

    async def _dispatch(self, message: dict[str, Any]) -> None:
        # any message means the server is alive and reading
        self.hang.heard()
        method = message.get("method")
        if method is None:
            if "id" in message:
                self._pending.resolve(message["id"], message)
            return
        if "id" in message:
            await self._answer(message["id"], method, message.get("params"))
            return
        self._on_notification(method, message.get("params") or {})

    async def _answer(self, request_id: Any, method: str, params: Any) -> None:
        result: Any = None
        if method == "workspace/configuration":
            items = (params or {}).get("items", [])
            result = [lookup_section(self.settings, item.get("section")) for item in items]
            self.configured = True
            self._notify_change()
        elif method == "client/registerCapability":
            for registration in (params or {}).get("registrations", []):
                self.registered.add(registration.get("method", ""))
        elif method == "workspace/diagnostic/refresh":
            self.settled += 1
            self._notify_change()
        elif method == "workspace/workspaceFolders":
            result = [{"uri": path_to_uri(self.root), "name": self.root.name}]
        elif method == "workspace/applyEdit":
            result = {"applied": False, "failureReason": "tether applies edits itself"}
        elif method not in (
            "window/workDoneProgress/create",
            "client/unregisterCapability",
            "window/showMessageRequest",
            "workspace/diagnostic/refresh",
            "workspace/semanticTokens/refresh",
            "workspace/inlayHint/refresh",
            "workspace/codeLens/refresh",
        ):
            await self._send(
                {"id": request_id, "error": {"code": -32601, "message": f"{method} not handled"}}
            )
            return
        await self._send({"id": request_id, "result": result})

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "textDocument/publishDiagnostics":
            self._seq += 1
            uri = params.get("uri", "")
            self.published[uri] = Published(
                self._seq, params.get("version"), list(params.get("diagnostics") or [])
            )
        elif method == "window/logMessage":
            if self.files_known or not re.search(
                self.spec.ready_log or "", str(params.get("message"))
            ):
                return
            self.files_known = True
        elif method == "$/progress":
            token = str(params.get("token"))
            value = params.get("value") or {}
            kind = value.get("kind")
            if kind == "begin":
                title = str(value.get("title") or "working")
                message = value.get("message")
                self.progress[token] = f"{title} ({message})" if message else title
            elif kind == "report" and token in self.progress and value.get("message"):
                title = self.progress[token].split(" (", 1)[0]
                self.progress[token] = f"{title} ({value['message']})"
            elif kind == "end":
                self.progress.pop(token, None)
                self.settled += 1
        else:
            return
        self._notify_change()

    def _notify_change(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Wait for ``predicate`` to hold, woken by each server message; False on timeout."""
        deadline = time.monotonic() + timeout_s
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.exit_reason is not None:
                return predicate()
            with anyio.move_on_after(remaining):
                await self._changed.wait()
        return True

    # -- readiness -------------------------------------------------------------------------

    def is_ready(self) -> bool:
        if self.spec.waits_for_configuration and not self.configured:
            return False
        return self.files_known and not self.progress

    def busy_with(self) -> str:
        if self.progress:
            return ", ".join(sorted(self.progress.values()))
        if self.spec.waits_for_configuration and not self.configured:
            return "loading its configuration"
        if not self.files_known:
            return "finding the project's files"
        return ""

    async def wait_ready(self, timeout_s: float, *, index: bool = True) -> bool:
        """Wait for the server's signals: its configuration loaded and, when ``index`` (a
        project-wide question), the end of its indexing progress."""
        if not index:
            return await self.wait_until(
                lambda: self.configured or not self.spec.waits_for_configuration, timeout_s
            )
        return await self.wait_until(self.is_ready, timeout_s)

    # -- capabilities ----------------------------------------------------------------------

    def supports(self, method: str, capability: str) -> bool:
        if method in self.spec.unsupported:
            return False
        if method in self.registered:
            return True
        value = self.capabilities.get(capability)
        return bool(value) or isinstance(value, dict)

    # -- documents -------------------------------------------------------------------------

    async def sync_document(self, path: Path) -> tuple[OpenDocument, bool]:
        """Open ``path`` or send its new content if it changed on disk; True when sent."""
        async with self._sync_lock:  # parallel calls must not open one document twice
            return await self._sync(path)

    async def _sync(self, path: Path) -> tuple[OpenDocument, bool]:
        uri = path_to_uri(path)
        stat = path.stat()
        doc = self.documents.get(uri)
        if doc is not None and doc.mtime_ns == stat.st_mtime_ns and doc.size == stat.st_size:
            return doc, False
        text = path.read_bytes().decode("utf-8", errors="replace")
        if doc is None:
            language_id = self.spec.language_id(path.suffix) or self.spec.language
            doc = OpenDocument(
                path, uri, language_id, 1, text, stat.st_mtime_ns, stat.st_size, self._seq
            )
            self.documents[uri] = doc
            self._snapshot.pop(str(path), None)
            await self.notify(
                "textDocument/didOpen",
                {
                    "textDocument": {
                        "uri": uri,
                        "languageId": language_id,
                        "version": 1,
                        "text": text,
                    }
                },
            )
            return doc, True
        doc.mtime_ns, doc.size = stat.st_mtime_ns, stat.st_size
        if text == doc.text:
            return doc, False
        doc.version += 1
        doc.text = text
        doc.sent_seq = self._seq
        await self._drop_kept(uri)
        await self.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": doc.version},
                "contentChanges": [{"text": text}],
            },
        )
        return doc, True

    async def refresh_documents(self) -> bool:
        """Sync every open document with the disk (a shell or git may have changed it), and
        tell a server that watches files which other files appeared, changed or vanished.
        True when anything was sent."""
        async with self._sync_lock:
            return await self._refresh()

    async def _refresh(self) -> bool:
        sent = False
        if "workspace/didChangeWatchedFiles" in self.registered:
            current = scan_root(self.root, frozenset(self.spec.extensions))
            # open documents travel as didChange below, not as file events
            for doc in self.documents.values():
                current.pop(str(doc.path), None)
            events = [
                {"uri": Path(path).as_uri(), "type": 1 if path not in self._snapshot else 2}
                for path, stamp in current.items()
                if self._snapshot.get(path) != stamp
            ]
            events += [
                {"uri": Path(path).as_uri(), "type": 3}
                for path in self._snapshot
                if path not in current
            ]
            self._snapshot = current
            if events:
                seq, settled = self._seq, self.settled
                await self.notify("workspace/didChangeWatchedFiles", {"changes": events})
                sent = True
                added_or_removed = any(event["type"] != 2 for event in events)
                if added_or_removed and self.spec.settles_after_file_events and self.documents:
                    await self.wait_until(
                        lambda: self._seq > seq or self.settled > settled, FILE_EVENTS_SETTLE_S
                    )
        for uri, doc in list(self.documents.items()):
            if not doc.path.exists():
                del self.documents[uri]
                await self._drop_kept(uri)
                await self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
                sent = True
                continue
            _, changed = await self._sync(doc.path)
            sent = sent or changed
        return sent

    async def save(self, doc: OpenDocument) -> None:
        sync = self.capabilities.get("textDocumentSync")
        save = sync.get("save") if isinstance(sync, dict) else None
        if not save:
            return
        params: dict[str, Any] = {"textDocument": {"uri": doc.uri}}
        if isinstance(save, dict) and save.get("includeText"):
            params["text"] = doc.text
        await self.notify("textDocument/didSave", params)

    @property
    def publish_seq(self) -> int:
        return self._seq

    def fresh_published(self, doc: OpenDocument) -> Published | None:
        """The diagnostics published for ``doc``'s current text, if they arrived: a versioned
        publish of this version, or an unversioned one received after the text was sent."""
        got = self.published.get(doc.uri)
        if got is None:
            return None
        if got.version is not None:
            return got if got.version >= doc.version else None
        return got if got.seq > doc.sent_seq else None

    async def current_diagnostics(
        self, doc: OpenDocument, timeout_s: float
    ) -> list[dict[str, Any]] | None:
        """Diagnostics of ``doc``'s current text: pulled, or pushed (None: not in time)."""
        if self.spec.pull_diagnostics:
            try:
                result = await self.request(
                    "textDocument/diagnostic",
                    {"textDocument": {"uri": doc.uri}},
                    timeout_s=timeout_s,
                )
            except RequestTimedOut:
                return None
            result = result or {}
            if result.get("kind") == "unchanged" and doc.uri in self.published:
                return self.published[doc.uri].items
            self._seq += 1
            items = list(result.get("items") or [])
            self.published[doc.uri] = Published(self._seq, doc.version, items)
            return items
        return await self.diagnostics_for(doc, timeout_s)

    async def diagnostics_for(
        self, doc: OpenDocument, timeout_s: float
    ) -> list[dict[str, Any]] | None:
        """Diagnostics pushed for ``doc``'s current text, waited for (None: not in time)."""
        if await self.wait_until(lambda: self.fresh_published(doc) is not None, timeout_s):
            got = self.fresh_published(doc)
            return None if got is None else got.items
        return None

"""One running language server's session: capabilities, progress and readiness, documents,
diagnostics, and the answers to its requests — on the protocol of :mod:`tether_lsp.rpc`."""

from __future__ import annotations

import os
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from stat import S_ISREG
from typing import Any

import anyio
import attrs

import tether
from tether.processes.hang import HangWatch
from tether.workdir import reading
from tether.workdir.paths import relative
from tether_lsp.documents import (
    OpenDocument,
    Published,
    file_events,
    path_to_uri,
    scan_root,
    skipped_dir,
    uri_to_path,
)
from tether_lsp.rpc import MethodNotFound, RequestTimedOut, RpcConnection
from tether_lsp.servers import ServerSpec
from tether_lsp.trust import untrusted_env
from tether_lsp.watch import TreeWatch, WatchUnavailable

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


@attrs.define
class Progress:
    """One work-done progress of the server, as it last reported it (its own words)."""

    title: str
    message: str | None = None
    percentage: int | None = None

    def describe(self) -> str:
        """``indexing: 12/121 (9%)`` (clangd), ``440 files to analyze`` (the pyright family,
        whose title is empty), ``Initializing JS/TS language features…`` (tsserver)."""
        text = self.title
        if self.message:
            text = f"{text}: {self.message}" if text else self.message
        if self.percentage is not None:
            text += f" ({self.percentage}%)"
        return text or "working"


#: the server's requests answered with an empty result (beside those :meth:`LspClient._answer`
#: answers with something)
_ACCEPTED = frozenset(
    {
        "window/workDoneProgress/create",
        "client/unregisterCapability",
        "window/showMessageRequest",
        "workspace/semanticTokens/refresh",
        "workspace/inlayHint/refresh",
        "workspace/codeLens/refresh",
    }
)

#: the pyright family's log line once it knows the project's files (its total, which its
#: "N files to analyze" progress does not repeat)
_FOUND_FILES = re.compile(r"Found (\d+) source files?")


def _percent(value: float | None) -> int | None:
    return None if value is None else max(0, min(100, round(value)))


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


FILE_EVENTS_SETTLE_S = 3.0
#: files changed on disk sent as open documents, per query, to a server that watches no files
OPEN_CHANGED_LIMIT = 20


def unconfirmed_of(events: list[dict[str, Any]], why: str) -> dict[Path, str]:
    """The files of ``events`` (a refresh's), each with ``why`` its intake is unconfirmed."""
    return {path: why for event in events if (path := uri_to_path(event["uri"])) is not None}


class LspClient:
    """The session with one server for one (spec, root), on an :class:`RpcConnection`: its
    capabilities, progress and readiness, the documents it was sent, the diagnostics it gave,
    and its answers to the server's requests. Every request is bounded by a timeout."""

    def __init__(
        self,
        run: tether.Run,
        spec: ServerSpec,
        root: Path,
        argv: list[str],
        settings: Mapping[str, Any],
        request_timeout_s: float,
        first_request_timeout_s: float | None = None,
        on_progress: Callable[[LspClient], None] | None = None,
    ) -> None:
        self.run = run
        self.spec = spec
        self.root = root
        self.argv = argv
        self.settings = settings
        self._connect(request_timeout_s, first_request_timeout_s)
        self.capabilities: dict[str, Any] = {}
        self.encoding = "utf-16"
        self.documents: dict[str, OpenDocument] = {}
        self.published: dict[str, Published] = {}
        #: active work-done progress by token (begun, not yet ended)
        self.progress: dict[str, Progress] = {}
        #: "602 source files found", when the server said how many files its project has
        self.files_found: str | None = None
        #: told of every change of ``progress`` (the supervisor forwards it to the calls)
        self.on_progress = on_progress
        #: progress begins and reports so far, and the last state they described: a call
        #: that saw the count move waited on a busy server
        self.progress_events = 0
        self.last_busy = ""
        self.registered: set[str] = set()
        self.configured = False
        self.files_known = spec.ready_log is None
        #: counts the ends of server work (progress end, a diagnostics refresh request)
        self.settled = 0
        #: files another process changed that the server has not opened, whose intake the
        #: last refresh could not confirm: path -> why (see :func:`coverage.stale_note`)
        self.unconfirmed: dict[Path, str] = {}
        self.started_at = time.monotonic()
        self.crash_counted = False
        self._seq = 0
        self._snapshot: dict[str, tuple[int, int]] = {}
        #: the root's inotify watch (Linux), so a query stats only the files changed since the
        #: last one; None: each query scans the root
        self.watch: TreeWatch | None = None
        self._sync_lock = anyio.Lock()
        #: the last version of each document closed: reopened, it goes on from there, so a
        #: late publish for the closed text is never taken for the reopened one
        self._closed_versions: dict[str, int] = {}
        #: counts the changes of the files the server knows (a refresh that sent anything, a
        #: write): an open document sent before the last one is sent again before it is asked
        #: about, so the server rebuilds it against the other files as they are now
        self.generation = 0
        #: refreshes begun and the last one ended (its number, whether it sent anything): a
        #: query that waited for the lock while another query's refresh, begun after it came,
        #: ran takes that refresh as its own (the disk as it was after the query came)
        self._refreshes_begun = 0
        self._refresh_ended: tuple[int, bool] = (0, False)
        #: each open document as the last refresh left it (:func:`_sent_state`)
        self._refreshed_docs: dict[str, tuple[int, int, int]] = {}

    def _connect(self, request_timeout_s: float, first_request_timeout_s: float | None) -> None:
        """Make the session's :class:`RpcConnection` and take its calls onto the session."""
        #: the protocol: requests, timeouts, the server's messages, its reader, its end
        self.rpc = RpcConnection(
            self.spec.id,
            on_request=self._answer,
            on_notification=self._on_notification,
            request_timeout_s=request_timeout_s,
            first_request_timeout_s=first_request_timeout_s,
        )
        # the protocol's calls, made on the session by the queries, rename and the supervisor
        self.request = self.rpc.request
        self.notify = self.rpc.notify
        self.answers = self.rpc.answers
        self.wait_until = self.rpc.wait_until
        self.check_running = self.rpc.check_running
        self.stderr_tail = self.rpc.stderr_tail

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self.rpc.alive

    @property
    def pid(self) -> int | None:
        return self.rpc.pid

    @property
    def exit_reason(self) -> str | None:
        return self.rpc.exit_reason

    @property
    def hang(self) -> HangWatch:
        return self.rpc.hang

    async def start(self, timeout_s: float) -> None:
        with tether.waiting("server start", server=self.spec.id, root=str(self.root)):
            await self._start(timeout_s)

    async def _start(self, timeout_s: float) -> None:
        env = {**os.environ, **untrusted_env(self.spec.untrusted, self.run)}
        # confined: on an untrusted workdir the server writes only in the run's directory
        process = await self.run.spawn(
            self.argv, cwd=self.root, env=env, stdin=True, stdout=True, confine=True
        )
        await self.rpc.start(process, self.run.task_group)
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
        # watched before the first scan: a change made between the two is in both
        self.watch = await anyio.to_thread.run_sync(self._start_watch)
        self._snapshot = await self._scan()
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
        """Polite shutdown, bounded; the process tree is killed and the reader ended in any
        case before this returns."""
        await self.rpc.aclose()
        self.close_watch()

    def close_watch(self) -> None:
        watch, self.watch = self.watch, None
        if watch is not None:
            watch.close()

    def _start_watch(self) -> TreeWatch | None:
        try:
            return TreeWatch(str(self.root), skipped_dir)
        except WatchUnavailable:
            return None

    # -- the server's requests and notifications -------------------------------------------

    def _answer(self, method: str, params: Any) -> Any:
        """The result for a request of the server; :class:`MethodNotFound` for the others."""
        if method == "workspace/configuration":
            items = (params or {}).get("items", [])
            self.configured = True
            return [lookup_section(self.settings, item.get("section")) for item in items]
        if method == "client/registerCapability":
            for registration in (params or {}).get("registrations", []):
                self.registered.add(registration.get("method", ""))
        elif method == "workspace/diagnostic/refresh":
            self.settled += 1
        elif method == "workspace/workspaceFolders":
            return [{"uri": path_to_uri(self.root), "name": self.root.name}]
        elif method == "workspace/applyEdit":
            return {"applied": False, "failureReason": "tether applies edits itself"}
        elif method not in _ACCEPTED:
            raise MethodNotFound(method)
        return None

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "textDocument/publishDiagnostics":
            self._seq += 1
            uri = params.get("uri", "")
            self.published[uri] = Published(
                self._seq, params.get("version"), list(params.get("diagnostics") or [])
            )
        elif method == "window/logMessage":
            text = str(params.get("message"))
            if self.files_known or not re.search(self.spec.ready_log or "", text):
                return
            self.files_known = True
            found = _FOUND_FILES.search(text)
            if found:
                count = int(found[1])
                self.files_found = f"{count:,} source file{'s' if count != 1 else ''} found"
        elif method == "$/progress":
            self._on_progress(str(params.get("token")), params.get("value") or {})

    def _on_progress(self, token: str, value: Mapping[str, Any]) -> None:
        kind = value.get("kind")
        percentage = value.get("percentage")
        percentage = percentage if isinstance(percentage, int | float) else None
        message = value.get("message")
        message = str(message) if message else None
        if kind == "begin":
            title = str(value.get("title") or "")
            self.progress[token] = Progress(title, message, _percent(percentage))
        elif kind == "report" and token in self.progress:
            current = self.progress[token]
            # a report that leaves out the message or percentage keeps the previous one (LSP)
            if message is not None:
                current.message = message
            if percentage is not None:
                current.percentage = _percent(percentage)
        elif kind == "end":
            if self.progress.pop(token, None) is None:
                return
            self.settled += 1
        else:
            return
        if self.progress:
            self.progress_events += 1
            self.last_busy = self.busy_with()
        if self.on_progress is not None:
            self.on_progress(self)

    # -- readiness -------------------------------------------------------------------------

    def is_ready(self) -> bool:
        """Configured, its files known, and no work in progress that can change an answer
        (checking files for diagnostics does not: ``ServerSpec.checking_progress``)."""
        if self.spec.waits_for_configuration and not self.configured:
            return False
        return self.files_known and not self.indexing()

    def indexing(self) -> list[Progress]:
        """The work in progress that can change an answer."""
        checking = self.spec.checking_progress
        return [
            progress
            for progress in self.progress.values()
            if not checking or not re.search(checking, progress.describe())
        ]

    def busy_with(self) -> str:
        """What the server is busy with, in its own words (its progress titles, messages and
        percentages); "" when it reports nothing."""
        if self.progress:
            text = ", ".join(sorted(progress.describe() for progress in self.progress.values()))
            return f"{text} (of {self.files_found})" if self.files_found else text
        if self.spec.waits_for_configuration and not self.configured:
            return "loading its configuration"
        if not self.files_known:
            return "finding the project's files"
        return ""

    async def wait_ready(self, timeout_s: float, *, index: bool = True) -> bool:
        """Wait for the server's signals: its configuration loaded and, when ``index`` (a
        project-wide question), the end of its indexing progress."""
        with tether.waiting("readiness", server=self.spec.id, index=index):
            return await self._wait_ready(timeout_s, index=index)

    async def _wait_ready(self, timeout_s: float, *, index: bool) -> bool:
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

    def source_files(self) -> list[Path]:
        """The root's files of the server's languages as its last scan saw them, and the
        documents open in it."""
        paths = {Path(path) for path in self._snapshot}
        paths.update(doc.path for doc in self.documents.values())
        return sorted(paths)

    async def _scan(self) -> dict[str, tuple[int, int]]:
        suffixes = frozenset(self.spec.extensions)
        return await reading.off_loop(self.root, lambda reader: scan_root(reader, suffixes))

    async def _changed_on_disk(self) -> dict[str, tuple[int, int]]:
        """The root's source files as :meth:`_scan` gives them: from the snapshot and the files
        the watch says changed (only those are looked at), else by a scan of the root."""
        watch = self.watch
        if watch is None:
            return await self._scan()
        suffixes = frozenset(self.spec.extensions)
        snapshot = self._snapshot

        def look(reader: reading.Reader) -> dict[str, tuple[int, int]] | None:
            paths = watch.changed()
            if paths is None:
                return None
            current = dict(snapshot)
            for path in paths:
                reader.check()
                if os.path.splitext(path)[1] not in suffixes:
                    continue
                try:
                    info = os.stat(path, follow_symlinks=False)
                except OSError:
                    current.pop(path, None)
                    continue
                if S_ISREG(info.st_mode):
                    current[path] = (info.st_mtime_ns, info.st_size)
                else:
                    current.pop(path, None)
            return current

        current = await reading.off_loop(self.root, look)
        return current if current is not None else await self._scan()

    async def _sync(self, path: Path) -> tuple[OpenDocument, bool]:
        [looked] = await self._look([path])
        if isinstance(looked, reading.UnreadableFile):
            raise looked
        return await self._send_looked(path, *looked)

    async def _look(
        self, paths: list[Path]
    ) -> list[tuple[os.stat_result, bytes | None] | reading.UnreadableFile]:
        """Each path's stat, and its content when it is not what its open document was last
        sent as (or an UnreadableFile), in one trip off the event loop: the core's reader, so a
        FIFO, a device or a file over the cap is refused by name, a symlink swapped in on the
        way is never followed."""
        workdir = self.run.workdir
        docs = [self.documents.get(path_to_uri(path)) for path in paths]

        def look(
            reader: reading.Reader,
        ) -> list[tuple[os.stat_result, bytes | None] | reading.UnreadableFile]:
            found: list[tuple[os.stat_result, bytes | None] | reading.UnreadableFile] = []
            for path, doc in zip(paths, docs, strict=True):
                shown = relative(workdir, path)
                try:
                    stat = reader.stat(path, field="file", shown=shown)
                    if doc is not None and (doc.mtime_ns, doc.size) == (
                        stat.st_mtime_ns,
                        stat.st_size,
                    ):
                        found.append((stat, None))
                    else:
                        found.append((stat, reader.read(path, field="file", shown=shown)))
                except reading.UnreadableFile as exc:
                    found.append(exc)
            return found

        return await reading.off_loop(workdir, look)

    async def _send_looked(
        self, path: Path, stat: os.stat_result, data: bytes | None
    ) -> tuple[OpenDocument, bool]:
        """Open ``path`` or send its new content, as :meth:`_look` found it."""
        uri = path_to_uri(path)
        doc = self.documents.get(uri)
        if data is None:
            assert doc is not None
            return doc, False
        text = data.decode("utf-8", errors="replace")
        if doc is None:
            language_id = self.spec.language_id(path.suffix) or self.spec.language
            version = self._closed_versions.pop(uri, 0) + 1
            doc = OpenDocument(
                path, uri, language_id, version, text, stat.st_mtime_ns, stat.st_size, self._seq
            )
            doc.generation = self.generation
            self.documents[uri] = doc
            self._snapshot.pop(str(path), None)
            item = {"uri": uri, "languageId": language_id, "version": version, "text": text}
            await self.notify("textDocument/didOpen", {"textDocument": item})
            return doc, True
        doc.mtime_ns, doc.size = stat.st_mtime_ns, stat.st_size
        if text == doc.text:
            return doc, False
        doc.version += 1
        doc.text = text
        doc.sent_seq = self._seq
        doc.generation = self.generation
        doc.previous_text = False
        await self.rpc.drop_kept(uri)
        await self.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": doc.version},
                "contentChanges": [{"text": text}],
            },
        )
        return doc, True

    async def send_text(self, path: Path, text: str) -> OpenDocument:
        """Give the server ``text`` as ``path``'s content (opened, or a new version), whatever
        the disk holds: the text a file had before a write, for the diagnostics to compare
        with. The next sync sends the disk's content again."""
        async with self._sync_lock:
            return await self._send_text(path, text)

    async def _send_text(self, path: Path, text: str) -> OpenDocument:
        uri = path_to_uri(path)
        doc = self.documents.get(uri)
        if doc is None:
            language_id = self.spec.language_id(path.suffix) or self.spec.language
            version = self._closed_versions.pop(uri, 0) + 1
            doc = OpenDocument(path, uri, language_id, version, text, 0, -1, self._seq)
            self.documents[uri] = doc
            self._snapshot.pop(str(path), None)
            item = {"uri": uri, "languageId": language_id, "version": version, "text": text}
            await self.notify("textDocument/didOpen", {"textDocument": item})
            return doc
        doc.mtime_ns, doc.size = 0, -1  # not the disk's: the next sync sends the disk's
        if text != doc.text:
            doc.version += 1
            doc.text = text
            doc.sent_seq = self._seq
            await self.rpc.drop_kept(uri)
            params = {
                "textDocument": {"uri": uri, "version": doc.version},
                "contentChanges": [{"text": text}],
            }
            await self.notify("textDocument/didChange", params)
        return doc

    @asynccontextmanager
    async def unsaved(self) -> AsyncIterator[Unsaved]:
        """Texts the disk does not hold, shown to the server for a moment (a preview): inside,
        :meth:`Unsaved.send` gives it a file's text as a new unsaved version; on the way out
        every document touched is given the disk's text again (:meth:`Unsaved.restore`). The
        documents stay locked meanwhile: no query, write or refresh syncs one in between, so
        none is answered on the unsaved text and none undoes it halfway."""
        async with self._sync_lock:
            handle = Unsaved(self)
            try:
                yield handle
            finally:
                # cancelled or not, the server must not keep texts the disk does not have
                with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                    await handle.restore()

    async def _close_document(self, doc: OpenDocument) -> None:
        """The server forgets ``doc``; its diagnostics are forgotten too."""
        self.documents.pop(doc.uri, None)
        self.published.pop(doc.uri, None)
        self._closed_versions[doc.uri] = doc.version
        await self.rpc.drop_kept(doc.uri)
        await self.notify("textDocument/didClose", {"textDocument": {"uri": doc.uri}})

    @property
    def pushes_diagnostics(self) -> bool:
        """Its diagnostics come when it pushes them (not when asked for)."""
        return not (self.spec.pull_diagnostics or self.spec.tsserver_diagnostics)

    async def resend(self, doc: OpenDocument, rebuild: bool = False) -> None:
        """Send ``doc``'s text again as a new version: a pushing server diagnoses it anew, with
        everything sent before it (the rest of a multi-file change). ``rebuild``: its text is
        the same, another file changed (clangd skips a version whose text and command did not
        change, and publishes nothing for it, unless told ``forceRebuild``; other servers
        ignore the field)."""
        async with self._sync_lock:
            await self._resend(doc, rebuild)

    async def _resend(self, doc: OpenDocument, rebuild: bool = False) -> None:
        doc.version += 1
        doc.sent_seq = self._seq
        doc.generation = self.generation
        await self.rpc.drop_kept(doc.uri)
        params: dict[str, Any] = {
            "textDocument": {"uri": doc.uri, "version": doc.version},
            "contentChanges": [{"text": doc.text}],
        }
        if rebuild:
            params["forceRebuild"] = True
        await self.notify("textDocument/didChange", params)

    async def refresh_documents(self) -> bool:
        """Sync every open document with the disk (a shell or git may have changed it), and
        tell a server that watches files which other files appeared, changed or vanished.
        True when anything was sent."""
        async with self._sync_lock:
            return await self._refresh()

    async def sync_for_query(self, path: Path) -> tuple[OpenDocument, bool, bool]:
        """:meth:`refresh_documents` then :meth:`sync_document` of ``path``, under one hold of
        the lock: (the document, anything refreshed, the document opened or changed now).
        Queries that come together share refreshes: one that waited for the lock while a
        refresh begun after it came ran (another query's) does not look at the disk again,
        so N concurrent queries cost two refreshes, not N one after the other."""
        came = self._refreshes_begun
        async with self._sync_lock:
            number, refreshed = self._refresh_ended
            if number <= came:
                refreshed = await self._refresh()
            doc = self.documents.get(path_to_uri(path))
            if doc is not None and self._refreshed_docs.get(doc.uri) == _sent_state(doc):
                # the refresh just looked at it on disk, and nothing sent it anything since
                sent = False
            else:
                doc, sent = await self._sync(path)
            if doc.generation < self.generation:
                # another file changed since the server last built this one (a header, a
                # module it imports, changed by tether or by another process): sent again,
                # so its diagnostics, hovers and definitions are on the files as they are now
                await self._resend(doc, rebuild=True)
                sent = True
            return doc, refreshed, sent

    async def _refresh(self) -> bool:
        self._refreshes_begun += 1
        number = self._refreshes_begun
        sent: list[OpenDocument] = []
        refreshed = await self._refresh_files(sent)
        if refreshed:
            # the documents sent by this refresh are on the new state; the others are not
            self.generation += 1
            for doc in sent:
                doc.generation = self.generation
        self._refresh_ended = (number, refreshed)
        self._refreshed_docs = {uri: _sent_state(doc) for uri, doc in self.documents.items()}
        return refreshed

    async def _refresh_files(self, resent: list[OpenDocument]) -> bool:
        """The refresh, the documents it sent into ``resent``; True when anything was sent."""
        sent = False
        current = await self._changed_on_disk()
        # open documents travel as didChange below, not as file events
        for doc in self.documents.values():
            current.pop(str(doc.path), None)
        events = file_events(self._snapshot, current)
        self._snapshot = current
        if events and "workspace/didChangeWatchedFiles" in self.registered:
            seq, settled = self._seq, self.settled
            await self.notify("workspace/didChangeWatchedFiles", {"changes": events})
            sent = True
            added_or_removed = any(event["type"] != 2 for event in events)
            if added_or_removed and self.spec.settles_after_file_events and self.documents:
                settled_now = await self.wait_until(
                    lambda: self._seq > seq or self.settled > settled, FILE_EVENTS_SETTLE_S
                )
                told = unconfirmed_of(events, f"not settled within {FILE_EVENTS_SETTLE_S:g} s")
                if settled_now:
                    for known in told:
                        self.unconfirmed.pop(known, None)
                else:
                    self.unconfirmed.update(told)
        elif events:
            # a server that watches no files (clangd, typescript-language-server) ignores file
            # events and answers from its index of the old text: it is sent the files that
            # appeared or changed as open documents (their disk text), a bounded number
            touched = [event for event in events if event["type"] != 3]
            opened: list[OpenDocument] = []
            for event in touched[:OPEN_CHANGED_LIMIT]:
                path = uri_to_path(event["uri"])
                if path is None:
                    continue
                try:
                    doc, _ = await self._sync(path)
                except reading.UnreadableFile:
                    continue
                opened.append(doc)
                resent.append(doc)
                sent = True
            if opened and self.pushes_diagnostics:
                # it indexes an opened file as it parses it, done when it publishes for it
                await self.wait_until(
                    lambda: all(self.fresh_published(doc) for doc in opened),
                    FILE_EVENTS_SETTLE_S,
                )
            # a file sent and parsed is taken in; one beyond the bound or not parsed in time
            # stays unconfirmed until it is (the answers say so meanwhile)
            for doc in opened:
                if not self.pushes_diagnostics or self.fresh_published(doc):
                    self.unconfirmed.pop(doc.path, None)
                else:
                    self.unconfirmed[doc.path] = f"not parsed within {FILE_EVENTS_SETTLE_S:g} s"
            self.unconfirmed.update(
                unconfirmed_of(
                    touched[OPEN_CHANGED_LIMIT:],
                    f"not sent: over the {OPEN_CHANGED_LIMIT} files a query sends",
                )
            )
        docs = list(self.documents.values())
        # every open document looked at in one trip off the event loop, then each sent
        for doc, looked in zip(docs, await self._look([d.path for d in docs]), strict=True):
            if isinstance(looked, reading.UnreadableFile):
                # gone, or no longer a regular file: the server forgets it
                await self._close_document(doc)
                sent = True
                continue
            _, changed = await self._send_looked(doc.path, *looked)
            if changed:
                resent.append(doc)
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
        if self.spec.versioned_publishes and doc.previous_text:
            return None  # about the file on disk (the new text), not the old text sent
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
        if self.spec.tsserver_diagnostics:
            from tether_lsp import tsserver

            pulled = await tsserver.pull(self, doc, timeout_s)
            if pulled is not None:
                self._seq += 1
                self.published[doc.uri] = Published(self._seq, doc.version, pulled)
            return pulled
        return await self.diagnostics_for(doc, timeout_s)

    async def diagnostics_for(
        self, doc: OpenDocument, timeout_s: float
    ) -> list[dict[str, Any]] | None:
        """Diagnostics pushed for ``doc``'s current text, waited for (None: not in time)."""
        if await self.wait_until(lambda: self.fresh_published(doc) is not None, timeout_s):
            got = self.fresh_published(doc)
            return None if got is None else got.items
        return None


class Unsaved:
    """The documents a preview showed the server (:meth:`LspClient.unsaved`), to restore."""

    def __init__(self, client: LspClient) -> None:
        self.client = client
        self._touched: dict[str, OpenDocument] = {}

    async def send(self, path: Path, text: str) -> OpenDocument:
        """Give the server ``text`` as ``path``'s content, a new version, saved nowhere."""
        doc = await self.client._send_text(path, text)
        self._touched[doc.uri] = doc
        return doc

    async def resend(self, doc: OpenDocument) -> None:
        """:meth:`LspClient.resend`, inside the preview's hold of the documents."""
        await self.client._resend(doc)

    async def restore(self) -> None:
        """Every document touched gets the disk's text as a new version; one whose file is
        not there (the change would create it) is closed. A document opened for the preview
        stays open: closed and opened again, clangd's empty publish for the close arrives
        after the new ``didOpen`` and passes for the reopened text's diagnostics."""
        client = self.client
        for uri, doc in self._touched.items():
            if client.documents.get(uri) is not doc:
                continue
            try:
                await client._sync(doc.path)
            except reading.UnreadableFile:
                await client._close_document(doc)
        self._touched.clear()


def _sent_state(doc: OpenDocument) -> tuple[int, int, int]:
    """What tells whether ``doc`` was sent anything since: its version, and the disk's mtime
    and size it was last synced with (a text sent that the disk does not hold resets them)."""
    return (doc.version, doc.mtime_ns, doc.size)

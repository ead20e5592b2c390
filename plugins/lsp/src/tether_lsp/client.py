"""One running language server's session: its start and end, capabilities, readiness and
diagnostics — on the protocol of :mod:`tether_lsp.rpc`, with the documents it was sent in
:mod:`tether_lsp.sync` and what it sends unasked in :mod:`tether_lsp.inbound`."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
from lsprotocol import types

import tether
from tether.processes.hang import HangWatch
from tether_lsp import inbound, protocol
from tether_lsp.documents import OpenDocument, Published, path_to_uri, skipped_dir
from tether_lsp.inbound import Progress
from tether_lsp.rpc import RequestTimedOut, RpcConnection
from tether_lsp.servers import ServerSpec
from tether_lsp.sync import DocumentSync
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


def _snake(name: str) -> str:
    """``hoverProvider`` -> ``hover_provider`` (lsprotocol's attribute for an LSP field)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


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
        self.capabilities = types.ServerCapabilities()
        #: capabilities the server offered that did not fit the protocol, left out
        self.capabilities_dropped: list[str] = []
        self.encoding = "utf-16"
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
        self.started_at = time.monotonic()
        #: the start is over (initialized, its files scanned, its watch on): until then no
        #: query may use it (the supervisor hands it out only then)
        self.started = False
        self.crash_counted = False
        self._seq = 0
        #: the root's inotify watch (Linux), so a query stats only the files changed since the
        #: last one; None: each query scans the root
        self.watch: TreeWatch | None = None
        self._documents()

    def _documents(self) -> None:
        """Make the session's :class:`DocumentSync` and take its calls onto the session."""
        #: the documents the server was sent, in step with the disk
        self.sync = DocumentSync(self)
        self.documents = self.sync.documents
        self.unconfirmed = self.sync.unconfirmed
        # its calls, made on the session by the queries, the writes and the previews
        self.sync_document = self.sync.sync_document
        self.sync_for_query = self.sync.sync_for_query
        self.refresh_documents = self.sync.refresh_documents
        self.send_text = self.sync.send_text
        self.resend = self.sync.resend
        self.unsaved = self.sync.unsaved
        self.save = self.sync.save
        self.source_files = self.sync.source_files

    def _connect(self, request_timeout_s: float, first_request_timeout_s: float | None) -> None:
        """Make the session's :class:`RpcConnection` and take its calls onto the session."""
        #: the protocol: requests, timeouts, the server's messages, its reader, its end
        self.rpc = RpcConnection(
            self.spec.id,
            on_request=lambda method, params: inbound.answer(self, method, params),
            on_notification=lambda method, params: inbound.on_notification(self, method, params),
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
        raw = await self.request("initialize", params, timeout_s=timeout_s)
        result, self.capabilities_dropped = protocol.initialize_result(self.spec.id, raw)
        self.capabilities = result.capabilities
        encoding = self.capabilities.position_encoding
        self.encoding = str(getattr(encoding, "value", encoding) or "utf-16")
        # watched before the first scan: a change made between the two is in both
        self.watch = await anyio.to_thread.run_sync(self._start_watch)
        self.sync.snapshot = await self.sync.scan()
        await self.notify("initialized", {})
        if self.settings or self.spec.waits_for_configuration:
            # pyright only pulls its configuration once told it changed (pyright#11103)
            await self.notify("workspace/didChangeConfiguration", {"settings": dict(self.settings)})
        self.started = True

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
        """The server offers ``method``: its ``capability`` (``hoverProvider``) is true or
        options, or it registered the method since."""
        if method in self.spec.unsupported:
            return False
        if method in self.registered:
            return True
        value = getattr(self.capabilities, _snake(capability))
        return value is not None and value is not False

    async def ask(self, method: str, params: Any, *, timeout_s: float | None = None) -> Any:
        """The typed result (:func:`tether_lsp.protocol.result`) of a request whose params
        are an lsprotocol object; :class:`~tether_lsp.protocol.MalformedReply` when the
        server's answer does not fit the protocol."""
        raw = await self.request(method, protocol.to_wire(params), timeout_s=timeout_s)
        return protocol.result(self.spec.id, method, raw)

    # -- diagnostics -----------------------------------------------------------------------

    @property
    def pushes_diagnostics(self) -> bool:
        """Its diagnostics come when it pushes them (not when asked for)."""
        return not (self.spec.pull_diagnostics or self.spec.tsserver_diagnostics)

    @property
    def publish_seq(self) -> int:
        """Counts the diagnostics received (pushed or pulled)."""
        return self._seq

    def next_publish_seq(self) -> int:
        """The sequence number of diagnostics received now."""
        self._seq += 1
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
    ) -> list[types.Diagnostic] | None:
        """Diagnostics of ``doc``'s current text: pulled, or pushed (None: not in time)."""
        if self.spec.pull_diagnostics:
            document = types.TextDocumentIdentifier(uri=doc.uri)
            try:
                report = await self.ask(
                    "textDocument/diagnostic",
                    types.DocumentDiagnosticParams(text_document=document),
                    timeout_s=timeout_s,
                )
            except RequestTimedOut:
                return None
            unchanged = isinstance(report, types.RelatedUnchangedDocumentDiagnosticReport)
            if unchanged and doc.uri in self.published:
                return self.published[doc.uri].items
            items = list(getattr(report, "items", None) or [])
            self.published[doc.uri] = Published(self.next_publish_seq(), doc.version, items)
            return items
        if self.spec.tsserver_diagnostics:
            from tether_lsp import tsserver

            pulled = await tsserver.pull(self, doc, timeout_s)
            if pulled is not None:
                seq = self.next_publish_seq()
                self.published[doc.uri] = Published(seq, doc.version, pulled)
            return pulled
        return await self.diagnostics_for(doc, timeout_s)

    async def diagnostics_for(
        self, doc: OpenDocument, timeout_s: float
    ) -> list[types.Diagnostic] | None:
        """Diagnostics pushed for ``doc``'s current text, waited for (None: not in time)."""
        if await self.wait_until(lambda: self.fresh_published(doc) is not None, timeout_s):
            got = self.fresh_published(doc)
            return None if got is None else got.items
        return None

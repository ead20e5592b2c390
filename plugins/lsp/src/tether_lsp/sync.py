"""The documents a language server was sent, kept in step with the disk: opened, changed,
resent, closed, and the files changed on disk told to it before each query."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING

import anyio
from lsprotocol import types

from tether.workdir import reading
from tether.workdir.paths import relative
from tether_lsp import protocol
from tether_lsp.documents import OpenDocument, file_events, path_to_uri, scan_root, uri_to_path

if TYPE_CHECKING:
    from tether_lsp.client import LspClient

FILE_EVENTS_SETTLE_S = 3.0
#: files changed on disk sent as open documents, per query, to a server that watches no files
OPEN_CHANGED_LIMIT = 20
#: past this many open documents, a query's look at them (one lstat each) is not made on the
#: event loop: the refresh looks off the loop, under the documents' lock, as for any change
QUICK_LOOK_MAX_DOCUMENTS = 64


def unconfirmed_of(events: list[types.FileEvent], why: str) -> dict[Path, str]:
    """The files of ``events`` (a refresh's), each with ``why`` its intake is unconfirmed."""
    return {path: why for event in events if (path := uri_to_path(event.uri)) is not None}


def _sent_state(doc: OpenDocument) -> tuple[int, int, int]:
    """What tells whether ``doc`` was sent anything since: its version, and the disk's mtime
    and size it was last synced with (a text sent that the disk does not hold resets them)."""
    return (doc.version, doc.mtime_ns, doc.size)


Looked = tuple[os.stat_result, bytes | None] | reading.UnreadableFile


class DocumentSync:
    """The documents open in ``client``'s server and the root's files as it last heard of
    them. Every change goes through one lock: parallel calls never open one document twice,
    and a preview's unsaved texts are never synced over halfway (:meth:`unsaved`)."""

    def __init__(self, client: LspClient) -> None:
        self.client = client
        self.documents: dict[str, OpenDocument] = {}
        #: the root's source files (path -> mtime, size) as the server was last told of them
        self.snapshot: dict[str, tuple[int, int]] = {}
        #: files another process changed that the server has not opened, whose intake the
        #: last refresh could not confirm: path -> why (see :func:`coverage.stale_note`); one
        #: dict for the sync's life (the client hands it out)
        self.unconfirmed: dict[Path, str] = {}
        self.lock = anyio.Lock()
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

    async def sync_document(self, path: Path) -> tuple[OpenDocument, bool]:
        """Open ``path`` or send its new content if it changed on disk; True when sent."""
        async with self.lock:  # parallel calls must not open one document twice
            return await self.sync(path)

    def source_files(self) -> list[Path]:
        """The root's files of the server's languages as its last scan saw them, and the
        documents open in it."""
        paths = {Path(path) for path in self.snapshot}
        paths.update(doc.path for doc in self.documents.values())
        return sorted(paths)

    async def scan(self) -> dict[str, tuple[int, int]]:
        """The root's source files of the server's languages: path -> (mtime, size)."""
        suffixes = frozenset(self.client.spec.extensions)
        return await reading.off_loop(self.client.root, lambda reader: scan_root(reader, suffixes))

    async def _changed_on_disk(self) -> dict[str, tuple[int, int]]:
        """The root's source files as :meth:`scan` gives them: from the snapshot and the files
        the watch says changed (only those are looked at), else by a scan of the root."""
        return await reading.off_loop(self.client.root, self._changed_work())

    def _changed_work(self) -> Callable[[reading.Reader], dict[str, tuple[int, int]]]:
        """:meth:`_changed_on_disk`'s work, done in a reader's thread (a reader on the root)."""
        watch = self.client.watch
        suffixes = frozenset(self.client.spec.extensions)
        snapshot = self.snapshot

        def look(reader: reading.Reader) -> dict[str, tuple[int, int]]:
            paths = watch.changed() if watch is not None else None
            if paths is None:
                return scan_root(reader, suffixes)
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

        return look

    async def _open(
        self, path: Path, text: str, mtime_ns: int, size: int, *, from_disk: bool
    ) -> OpenDocument:
        """Send ``path`` as a newly opened document holding ``text`` (``from_disk``: the
        disk's text, on the files' current generation)."""
        client = self.client
        uri = path_to_uri(path)
        language_id = client.spec.language_id(path.suffix) or client.spec.language
        version = self._closed_versions.pop(uri, 0) + 1
        doc = OpenDocument(
            path, uri, language_id, version, text, mtime_ns, size, client.publish_seq
        )
        if from_disk:
            doc.generation = self.generation
        self.documents[uri] = doc
        self.snapshot.pop(str(path), None)
        item = types.TextDocumentItem(uri=uri, language_id=language_id, version=version, text=text)
        opened = types.DidOpenTextDocumentParams(text_document=item)
        await client.notify("textDocument/didOpen", protocol.to_wire(opened))
        return doc

    async def _change(self, doc: OpenDocument, text: str, *, rebuild: bool = False) -> None:
        """Send ``text`` as ``doc``'s next version."""
        doc.version += 1
        doc.text = text
        doc.sent_seq = self.client.publish_seq
        await self.client.rpc.drop_kept(doc.uri)
        changed = types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
        params = protocol.to_wire(changed)
        if rebuild:
            params["forceRebuild"] = True  # clangd's extension (not in LSP)
        await self.client.notify("textDocument/didChange", params)

    async def sync(self, path: Path) -> tuple[OpenDocument, bool]:
        """:meth:`sync_document` with the lock held."""
        [looked] = await self._look([path])
        if isinstance(looked, reading.UnreadableFile):
            raise looked
        return await self._send_looked(path, *looked)

    async def _look(self, paths: list[Path]) -> list[Looked]:
        """Each path's stat, and its content when it is not what its open document was last
        sent as (or an UnreadableFile), in one trip off the event loop: the core's reader, so a
        FIFO, a device or a file over the cap is refused by name, a symlink swapped in on the
        way is never followed."""
        return await reading.off_loop(self.client.run.workdir, self._look_work(paths))

    def _look_work(self, paths: list[Path]) -> Callable[[reading.Reader], list[Looked]]:
        """:meth:`_look`'s work, done in a reader's thread (a reader on the workdir)."""
        workdir = self.client.run.workdir
        docs = [self.documents.get(path_to_uri(path)) for path in paths]

        def look(reader: reading.Reader) -> list[Looked]:
            found: list[Looked] = []
            for path, doc in zip(paths, docs, strict=True):
                shown = relative(workdir, path)
                try:
                    stat = reader.stat(path, field="file", shown=shown)
                    same = doc is not None and (doc.mtime_ns, doc.size) == (
                        stat.st_mtime_ns,
                        stat.st_size,
                    )
                    found.append(
                        (stat, None if same else reader.read(path, field="file", shown=shown))
                    )
                except reading.UnreadableFile as exc:
                    found.append(exc)
            return found

        return look

    async def _send_looked(
        self, path: Path, stat: os.stat_result, data: bytes | None
    ) -> tuple[OpenDocument, bool]:
        """Open ``path`` or send its new content, as :meth:`_look` found it."""
        doc = self.documents.get(path_to_uri(path))
        if data is None:
            assert doc is not None
            return doc, False
        text = data.decode("utf-8", errors="replace")
        if doc is None:
            doc = await self._open(path, text, stat.st_mtime_ns, stat.st_size, from_disk=True)
            return doc, True
        doc.mtime_ns, doc.size = stat.st_mtime_ns, stat.st_size
        if text == doc.text:
            return doc, False
        doc.generation = self.generation
        doc.previous_text = False
        await self._change(doc, text)
        return doc, True

    async def send_text(self, path: Path, text: str) -> OpenDocument:
        """Give the server ``text`` as ``path``'s content (opened, or a new version), whatever
        the disk holds: the text a file had before a write, for the diagnostics to compare
        with. The next sync sends the disk's content again."""
        async with self.lock:
            return await self.send_text_held(path, text)

    async def send_text_held(self, path: Path, text: str) -> OpenDocument:
        """:meth:`send_text` with the lock held."""
        doc = self.documents.get(path_to_uri(path))
        if doc is None:
            return await self._open(path, text, 0, -1, from_disk=False)
        doc.mtime_ns, doc.size = 0, -1  # not the disk's: the next sync sends the disk's
        if text != doc.text:
            await self._change(doc, text)
        return doc

    @asynccontextmanager
    async def unsaved(self) -> AsyncIterator[Unsaved]:
        """Texts the disk does not hold, shown to the server for a moment (a preview): inside,
        :meth:`Unsaved.send` gives it a file's text as a new unsaved version; on the way out
        every document touched is given the disk's text again (:meth:`Unsaved.restore`). The
        documents stay locked meanwhile: no query, write or refresh syncs one in between, so
        none is answered on the unsaved text and none undoes it halfway."""
        async with self.lock:
            handle = Unsaved(self)
            try:
                yield handle
            finally:
                # cancelled or not, the server must not keep texts the disk does not have
                with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                    await handle.restore()

    async def close_document(self, doc: OpenDocument) -> None:
        """The server forgets ``doc``; its diagnostics are forgotten too."""
        self.documents.pop(doc.uri, None)
        self.client.published.pop(doc.uri, None)
        self._closed_versions[doc.uri] = doc.version
        await self.client.rpc.drop_kept(doc.uri)
        closed = types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri)
        )
        await self.client.notify("textDocument/didClose", protocol.to_wire(closed))

    async def resend(self, doc: OpenDocument, rebuild: bool = False) -> None:
        """Send ``doc``'s text again as a new version: a pushing server diagnoses it anew, with
        everything sent before it (the rest of a multi-file change). ``rebuild``: its text is
        the same, another file changed (clangd skips a version whose text and command did not
        change, and publishes nothing for it, unless told ``forceRebuild``; other servers
        ignore the field)."""
        async with self.lock:
            await self.resend_held(doc, rebuild)

    async def resend_held(self, doc: OpenDocument, rebuild: bool = False) -> None:
        """:meth:`resend` with the lock held."""
        doc.generation = self.generation
        await self._change(doc, doc.text, rebuild=rebuild)

    async def refresh_documents(self) -> bool:
        """Sync every open document with the disk (a shell or git may have changed it), and
        tell a server that watches files which other files appeared, changed or vanished.
        True when anything was sent."""
        async with self.lock:
            return await self._refresh()

    async def sync_for_query(self, path: Path) -> tuple[OpenDocument, bool, bool]:
        """:meth:`refresh_documents` then :meth:`sync_document` of ``path``, under one hold of
        the lock: (the document, anything refreshed, the document opened or changed now).
        Queries that come together share refreshes: one that waited for the lock while a
        refresh begun after it came ran (another query's) does not look at the disk again,
        so N concurrent queries cost two refreshes, not N one after the other."""
        came = self._refreshes_begun
        if not self.lock.locked():
            # nothing under way (a refresh, a write, a preview): a refresh that finds nothing
            # changed is made here, with no await (no other task runs meanwhile, as under the
            # lock), so queries on an unchanged disk never queue behind each other's look
            doc = self._quick_query(path)
            if doc is not None:
                return doc, False, False
        async with self.lock:
            number, refreshed = self._refresh_ended
            if number <= came:
                refreshed = await self._refresh()
            doc = self.documents.get(path_to_uri(path))
            if doc is not None and self._refreshed_docs.get(doc.uri) == _sent_state(doc):
                # the refresh just looked at it on disk, and nothing sent it anything since
                sent = False
            else:
                doc, sent = await self.sync(path)
            if doc.generation < self.generation:
                # another file changed since the server last built this one (a header, a
                # module it imports, changed by tether or by another process): sent again,
                # so its diagnostics, hovers and definitions are on the files as they are now
                await self.resend_held(doc, rebuild=True)
                sent = True
            return doc, refreshed, sent

    def _quick_query(self, path: Path) -> OpenDocument | None:
        """``path``'s open document when a refresh made now finds nothing changed and nothing
        was sent to the document since the last one (:meth:`_unchanged_now`, counted as a
        refresh); else None, and the query refreshes under the lock."""
        doc = self.documents.get(path_to_uri(path))
        if (
            doc is None
            or doc.generation < self.generation
            or self._refreshed_docs.get(doc.uri) != _sent_state(doc)
            or not self._unchanged_now()
        ):
            return None
        self._refreshes_begun += 1
        self._refresh_ended = (self._refreshes_begun, False)
        self._refreshed_docs = {uri: _sent_state(doc) for uri, doc in self.documents.items()}
        return doc

    def _unchanged_now(self) -> bool:
        """Nothing changed on disk since the last refresh, told on the event loop without
        waiting: every open document's ``lstat`` is what it was last synced with (the test the
        refresh's look makes: the same mtime and size, not read again; the metadata call
        ``confine`` makes on the loop for every query) and the root's watch has nothing queued
        but its barrier (:meth:`TreeWatch.quiet`). False for anything else — no watch, a change
        queued, a text sent that the disk does not hold, a file gone or not a regular file —
        and the refresh looks off the loop as before; False, without looking, past
        ``QUICK_LOOK_MAX_DOCUMENTS`` open documents (the loop's cost stays bounded)."""
        if len(self.documents) > QUICK_LOOK_MAX_DOCUMENTS:
            return False
        for doc in self.documents.values():
            if doc.size < 0:
                return False
            try:
                info = os.stat(doc.path, follow_symlinks=False)
            except OSError:
                return False
            if not S_ISREG(info.st_mode) or (info.st_mtime_ns, info.st_size) != (
                doc.mtime_ns,
                doc.size,
            ):
                return False
        watch = self.client.watch
        return watch is not None and watch.quiet()

    async def _refresh(self) -> bool:
        self._refreshes_begun += 1
        number = self._refreshes_begun
        refreshed = False
        if not self._unchanged_now():  # else no trip off the loop: nothing to look at
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
        docs = list(self.documents.values())
        current, looks = await self._changed_and_looked(docs)
        # open documents travel as didChange below, not as file events
        for doc in self.documents.values():
            current.pop(str(doc.path), None)
        events = file_events(self.snapshot, current)
        self.snapshot = current
        sent = False
        if events and "workspace/didChangeWatchedFiles" in self.client.registered:
            await self._tell_file_events(events)
            sent = True
        elif events:
            sent = await self._open_changed(events, resent)
        if events:  # the open documents looked at again, after what was told or opened
            docs = list(self.documents.values())
            looks = await self._look([d.path for d in docs])
        # every open document looked at in one trip off the event loop, then each sent
        for doc, looked in zip(docs, looks, strict=True):
            if isinstance(looked, reading.UnreadableFile):
                # gone, or no longer a regular file: the server forgets it
                await self.close_document(doc)
                sent = True
                continue
            _, changed = await self._send_looked(doc.path, *looked)
            if changed:
                resent.append(doc)
            sent = sent or changed
        return sent

    async def _changed_and_looked(
        self, docs: list[OpenDocument]
    ) -> tuple[dict[str, tuple[int, int]], list[Looked]]:
        """:meth:`_changed_on_disk` and :meth:`_look` of ``docs``, one after the other in one
        trip off the event loop (a query's refresh costs one thread hop, not two)."""
        changed, look = self._changed_work(), self._look_work([d.path for d in docs])
        workdir = self.client.run.workdir

        def both(reader: reading.Reader) -> tuple[dict[str, tuple[int, int]], list[Looked]]:
            current = changed(reader)
            with reading.Reader(workdir, stop=reader.stop) as in_workdir:
                return current, look(in_workdir)

        return await reading.off_loop(self.client.root, both)

    async def _tell_file_events(self, events: list[types.FileEvent]) -> None:
        """Tell a server that watches files what changed on disk; a server that rebuilds its
        project on files added or removed is given a moment to do it."""
        client = self.client
        seq, settled = client.publish_seq, client.settled
        told = types.DidChangeWatchedFilesParams(changes=events)
        await client.notify("workspace/didChangeWatchedFiles", protocol.to_wire(told))
        added_or_removed = any(event.type != types.FileChangeType.Changed for event in events)
        if added_or_removed and client.spec.settles_after_file_events and self.documents:
            settled_now = await client.wait_until(
                lambda: client.publish_seq > seq or client.settled > settled,
                FILE_EVENTS_SETTLE_S,
            )
            unsettled = unconfirmed_of(events, f"not settled within {FILE_EVENTS_SETTLE_S:g} s")
            if settled_now:
                for known in unsettled:
                    self.unconfirmed.pop(known, None)
            else:
                self.unconfirmed.update(unsettled)

    async def _open_changed(
        self, events: list[types.FileEvent], resent: list[OpenDocument]
    ) -> bool:
        """A server that watches no files (clangd, typescript-language-server) ignores file
        events and answers from its index of the old text: it is sent the files that appeared
        or changed as open documents (their disk text), a bounded number. True when any was."""
        touched = [event for event in events if event.type != types.FileChangeType.Deleted]
        opened: list[OpenDocument] = []
        for event in touched[:OPEN_CHANGED_LIMIT]:
            path = uri_to_path(event.uri)
            if path is None:
                continue
            try:
                doc, _ = await self.sync(path)
            except reading.UnreadableFile:
                continue
            opened.append(doc)
            resent.append(doc)
        client = self.client
        if opened and client.pushes_diagnostics:
            # it indexes an opened file as it parses it, done when it publishes for it
            await client.wait_until(
                lambda: all(client.fresh_published(doc) for doc in opened),
                FILE_EVENTS_SETTLE_S,
            )
        # a file sent and parsed is taken in; one beyond the bound or not parsed in time
        # stays unconfirmed until it is (the answers say so meanwhile)
        for doc in opened:
            if not client.pushes_diagnostics or client.fresh_published(doc):
                self.unconfirmed.pop(doc.path, None)
            else:
                self.unconfirmed[doc.path] = f"not parsed within {FILE_EVENTS_SETTLE_S:g} s"
        self.unconfirmed.update(
            unconfirmed_of(
                touched[OPEN_CHANGED_LIMIT:],
                f"not sent: over the {OPEN_CHANGED_LIMIT} files a query sends",
            )
        )
        return bool(opened)

    async def save(self, doc: OpenDocument) -> None:
        """Tell the server ``doc`` was saved, when it asked to be told (with the text when it
        asked for it)."""
        sync = self.client.capabilities.text_document_sync
        save = sync.save if isinstance(sync, types.TextDocumentSyncOptions) else None
        if not save:
            return
        include = isinstance(save, types.SaveOptions) and save.include_text
        params = types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            text=doc.text if include else None,
        )
        await self.client.notify("textDocument/didSave", protocol.to_wire(params))


class Unsaved:
    """The documents a preview showed the server (:meth:`DocumentSync.unsaved`), to restore."""

    def __init__(self, sync: DocumentSync) -> None:
        self.sync = sync
        self._touched: dict[str, OpenDocument] = {}

    async def send(self, path: Path, text: str) -> OpenDocument:
        """Give the server ``text`` as ``path``'s content, a new version, saved nowhere."""
        doc = await self.sync.send_text_held(path, text)
        self._touched[doc.uri] = doc
        return doc

    async def resend(self, doc: OpenDocument) -> None:
        """:meth:`DocumentSync.resend`, inside the preview's hold of the documents."""
        await self.sync.resend_held(doc)

    async def restore(self) -> None:
        """Every document touched gets the disk's text as a new version; one whose file is
        not there (the change would create it) is closed. A document opened for the preview
        stays open: closed and opened again, clangd's empty publish for the close arrives
        after the new ``didOpen`` and passes for the reopened text's diagnostics."""
        sync = self.sync
        for uri, doc in self._touched.items():
            if sync.documents.get(uri) is not doc:
                continue
            try:
                await sync.sync(doc.path)
            except reading.UnreadableFile:
                await sync.close_document(doc)
        self._touched.clear()

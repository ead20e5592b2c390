"""The workdir watched while a language server runs: files changed on disk by any process (the
harness's shell, ``git checkout``, a formatter) reach every server before its next answer.

One watcher per run (``watchfiles``, imported when the first server starts), one
:class:`Inbox` per server: the paths changed under its root since it last looked. The client
turns them into ``workspace/didChangeWatchedFiles`` events or resynced documents
(:meth:`tether_lsp.client.LspClient.refresh_documents`); an inbox that overflowed, or a
watcher not ready (starting, or failed: inotify's limit), makes the client scan its root
instead, as it did before the watcher existed. Nothing is lost either way, only paid for.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

import anyio

from tether_lsp.documents import SCAN_SKIP

#: the watcher gathers a burst of changes this long (ms) and yields them once quiet this long
DEBOUNCE_MS = 400
STEP_MS = 30
#: how long a query waits for changes made just before it to arrive: one step and a margin
SETTLE_S = 0.06
#: paths an inbox holds before it gives them up for one rescan of its root
INBOX_LIMIT = 5_000
#: the watch thread returns this often without changes, so readiness is known (ms)
ROUND_MS = 1_000
#: the close waits this long for the watch thread to end (it ends within one step)
CLOSE_WAIT_S = 2.0


class Inbox:
    """Paths changed under one server's root since it last took them."""

    def __init__(self, root: Path, watch: DiskWatch) -> None:
        self.root = root
        self.watch = watch
        self._prefix = str(root).rstrip("/") + "/"
        self.paths: set[str] = set()
        #: more than :data:`INBOX_LIMIT` changes, a directory moved or removed, or the watcher
        #: not (yet) ready: the next refresh scans the root
        self.overflow = True

    def covers(self, path: str) -> bool:
        return path.startswith(self._prefix)

    def add(self, path: str) -> None:
        if self.overflow:
            return
        self.paths.add(path)
        if len(self.paths) > INBOX_LIMIT:
            self.paths.clear()
            self.overflow = True

    def take(self) -> tuple[set[str], bool]:
        """(the paths, whether the root must be scanned instead); empties the inbox."""
        paths, overflow = self.paths, self.overflow
        self.paths, self.overflow = set(), False
        return paths, overflow


def _ignored(path: str, root: str) -> bool:
    """A path under a directory no server looks into (.git, node_modules, .venv, a hidden
    one): the same rule as the scan's (:func:`tether_lsp.documents.scan_root`)."""
    parts = path[len(root) :].split("/")[:-1]
    return any(part in SCAN_SKIP or part.startswith(".") for part in parts)


class DiskWatch:
    """The run's watch of its workdir; :meth:`run` in the run's task group, :meth:`aclose`
    with the supervisor."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.inboxes: list[Inbox] = []
        self.ready = False
        #: why the watcher is not running (watchfiles missing, inotify's limit reached)
        self.failed: str | None = None
        self.batches = 0
        self._stop = threading.Event()
        self._done = anyio.Event()
        self._started = False

    def subscribe(self, root: Path) -> Inbox:
        inbox = Inbox(root, self)
        self.inboxes.append(inbox)
        return inbox

    def unsubscribe(self, inbox: Inbox) -> None:
        if inbox in self.inboxes:
            self.inboxes.remove(inbox)

    async def settle(self) -> None:
        """Let changes made just before this reach the inboxes (bounded: :data:`SETTLE_S`)."""
        if self.ready:
            await anyio.sleep(SETTLE_S)

    def deliver(self, changes: Iterable[tuple[object, str]]) -> None:
        root = str(self.workdir).rstrip("/")
        for _, path in changes:
            if _ignored(path, root):
                continue
            for inbox in self.inboxes:
                if inbox.covers(path):
                    inbox.add(path)

    async def run(self) -> None:
        self._started = True
        try:
            import watchfiles

            async for changes in watchfiles.awatch(
                self.workdir,
                watch_filter=None,
                debounce=DEBOUNCE_MS,
                step=STEP_MS,
                stop_event=self._stop,  # a threading.Event: set from any thread
                rust_timeout=ROUND_MS,
                yield_on_timeout=True,
                ignore_permission_denied=True,
            ):
                if not self.ready:
                    # changes before now may have been missed: every inbox rescans once
                    self.ready = True
                    for inbox in self.inboxes:
                        inbox.paths.clear()
                        inbox.overflow = True
                if changes:
                    self.batches += 1
                    self.deliver(changes)
        except Exception as exc:  # any failure: the clients scan instead
            self.failed = f"{type(exc).__name__}: {exc}"
        finally:
            self.ready = False
            for inbox in self.inboxes:
                inbox.overflow = True
            self._done.set()

    async def aclose(self) -> None:
        """Stop the watch thread and wait (bounded) until it ended."""
        self._stop.set()
        if not self._started:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_WAIT_S):
            await self._done.wait()

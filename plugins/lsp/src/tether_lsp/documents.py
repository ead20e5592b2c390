"""Files as a language server sees them: their URIs, the documents it was sent (text and
version), the diagnostics it published for them, and the scan that finds the files changed behind
its back (by a shell, git) between two queries."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import attrs
from lsprotocol import types

from tether.wire.positions import split_lines
from tether.workdir.reading import Reader


@attrs.define
class OpenDocument:
    """A file the server was sent (``didOpen``), as it was last sent."""

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
    #: the client's :attr:`DocumentSync.generation` when this text was last sent: lower, the
    #: server's view of it predates a change of another file (a header, an imported module)
    generation: int = 0
    #: the text is a written file's text from before the write (a baseline): the disk holds
    #: the new one, so an unversioned publish (gopls' from disk) is not about it
    previous_text: bool = False
    #: :meth:`lines` of the text they were split from (whichever text it holds now)
    _lines: list[str] = attrs.field(factory=list, init=False, repr=False, eq=False)
    _lines_of: str | None = attrs.field(default=None, init=False, repr=False, eq=False)

    def lines(self) -> list[str]:
        """The text's lines as LSP counts them, split once per text (every query on the
        document resolves its position in them); not to be changed."""
        if self._lines_of is not self.text:
            self._lines, self._lines_of = split_lines(self.text), self.text
        return self._lines


class Published:
    """The diagnostics the server last gave for a file: ``seq`` counts the publishes. A push
    keeps the server's JSON and structures it (:mod:`tether_lsp.protocol`) when first read: a
    server publishes for files nobody asks about, and 20,000 diagnostics take a while."""

    def __init__(
        self,
        seq: int,
        version: int | None,
        items: list[types.Diagnostic] | None = None,
        *,
        raw: list[Any] | None = None,
        server: str = "",
    ) -> None:
        self.seq = seq
        self.version = version
        self._items = items
        self._raw = raw
        self._server = server

    @property
    def items(self) -> list[types.Diagnostic]:
        """The diagnostics, typed; :class:`~tether_lsp.protocol.MalformedReply` when the
        server's publish does not fit the protocol."""
        if self._items is None:
            from tether_lsp.protocol import structure_each

            method = "textDocument/publishDiagnostics"
            field = "params.diagnostics"
            raw = self._raw or []
            self._items = structure_each(self._server, method, raw, types.Diagnostic, field=field)
            self._raw = None
        return self._items


def path_to_uri(path: Path) -> str:
    return path.as_uri()


def uri_to_path(uri: str) -> Path | None:
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


_SCAN_SKIP = {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache"}
SCAN_LIMIT = 50_000


def skipped_dir(name: str) -> bool:
    """A directory neither scanned nor watched (a VCS's, a dependency tree, caches)."""
    return name in _SCAN_SKIP or name.startswith(".")


def scan_root(reader: Reader, suffixes: frozenset[str]) -> dict[str, tuple[int, int]]:
    """path -> (mtime_ns, size) of the regular source files under the reader's root (bounded;
    run in the reader's thread: :func:`tether.workdir.reading.off_loop`). Nothing is read; symlinks are
    neither followed nor listed."""
    found: dict[str, tuple[int, int]] = {}
    stack = [str(reader.root)]
    while stack and len(found) < SCAN_LIMIT:
        reader.check()  # the call was cancelled: stop
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not skipped_dir(entry.name):
                        stack.append(entry.path)
                elif os.path.splitext(entry.name)[1] in suffixes:
                    info = entry.stat(follow_symlinks=False)
                    if stat.S_ISREG(info.st_mode):
                        found[entry.path] = (info.st_mtime_ns, info.st_size)
            except OSError:
                continue
    return found


def file_events(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]
) -> list[types.FileEvent]:
    """The ``workspace/didChangeWatchedFiles`` events from one :func:`scan_root` to the next:
    created, changed, deleted."""
    kind = types.FileChangeType
    events = [
        types.FileEvent(
            uri=Path(path).as_uri(), type=kind.Created if path not in before else kind.Changed
        )
        for path, stamp in after.items()
        if before.get(path) != stamp
    ]
    events += [
        types.FileEvent(uri=Path(path).as_uri(), type=kind.Deleted)
        for path in before
        if path not in after
    ]
    return events

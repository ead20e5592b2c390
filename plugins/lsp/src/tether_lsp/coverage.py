"""What an answer covers: the server's project, a textual look at the rest, and a plain
statement of what was not searched.

A server answers ``symbols``, ``references``, ``implementation`` for its own project (tsserver:
only the projects it has loaded; pyright: its ``include``); an empty or partial answer must not
read as "nowhere in the workdir". The workdir's files of the server's languages are searched for
the name as a whole word — through :class:`NameIndex`, an index of the identifiers of every
source file kept current by an inotify watch of the workdir, so a query reads only the files
that may hold the name — and the matches the server's answer does not cover are named with why
the server did not see them (:func:`tether_lsp.crosscheck.outside_project`). Files the search
could not read within its budget are named as not searched.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import re
import stat
import threading
import time
import weakref
from array import array
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from tether import ToolError
from tether import regex as linear
from tether.workdir.paths import relative
from tether.workdir.reading import ReadCancelled, Reader, UnreadableFile, off_loop
from tether_lsp.documents import scan_root, skipped_dir
from tether_lsp.watch import TreeWatch, WatchUnavailable

if TYPE_CHECKING:
    from tether_lsp.client import LspClient
    from tether_lsp.crosscheck import Uncovered
    from tether_lsp.servers import ServerSpec
    from tether_lsp.supervisor import LspSupervisor

#: a file larger than this is not indexed (generated code, bundles) and is named unsearched
FILE_CAP = 1 << 20
#: how long one query may spend reading files not indexed yet (the first query on a big tree)
SEARCH_BUDGET_S = 3.0
FILES_SHOWN = 10
LINES_SHOWN = 5

#: identifiers as the languages spell them (``$`` for JavaScript): the index's words
_WORD = re.compile(rb"[A-Za-z_$][\w$]*")
Stamp = tuple[int, int]


def _hashes(data: bytes) -> array[int]:
    """The sorted hashes of the identifiers in ``data`` (64-bit: a false match only costs a
    read, never a miss)."""
    return array("q", sorted(map(hash, set(_WORD.findall(data)))))


@attrs.frozen
class Found:
    """A whole-word search of the workdir's files: the lines (1-based) of each file holding
    the name, the files it did not read (with why), and how many it looked at."""

    lines: dict[Path, tuple[int, ...]]
    unsearched: dict[Path, str]
    searched: int


class NameIndex:
    """The identifiers of every source file under ``workdir`` (``suffixes``), as sorted hashes
    per file, kept current by an inotify watch (else a stat scan per query). Used from one
    worker thread at a time (its lock)."""

    def __init__(self, workdir: Path, suffixes: frozenset[str]) -> None:
        self.workdir = workdir
        self.suffixes = suffixes
        self._lock = threading.Lock()
        self._watch: TreeWatch | None = None
        self._started = False
        #: a background build was started (:func:`warm_soon`)
        self.warming = False
        #: path -> (mtime_ns, size) of every source file, as last listed
        self._listed: dict[str, Stamp] = {}
        #: path -> (the stamp it was read at, its suffix, its identifiers' hashes)
        self._words: dict[str, tuple[Stamp, str, array[int]]] = {}

    def close(self) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.close()

    def _relist(self, reader: Reader) -> None:
        """The listing brought up to date: the files the watch says changed, else a scan."""
        if not self._started:
            self._started = True
            try:
                # watched before the first scan: a change made between the two is in both
                self._watch = TreeWatch(str(self.workdir), skipped_dir)
            except WatchUnavailable:
                self._watch = None
            self._listed = scan_root(reader, self.suffixes)
            return
        changed = self._watch.changed() if self._watch is not None else None
        if changed is None:
            self._listed = scan_root(reader, self.suffixes)
            return
        for path in changed:
            if os.path.splitext(path)[1] not in self.suffixes:
                continue
            try:
                info = os.stat(path, follow_symlinks=False)
            except OSError:
                self._listed.pop(path, None)
                continue
            if stat.S_ISREG(info.st_mode):
                self._listed[path] = (info.st_mtime_ns, info.st_size)
            else:
                self._listed.pop(path, None)

    def index_some(self, reader: Reader, count: int) -> bool:
        """Index up to ``count`` files not indexed yet (or changed); True when none is left.
        The lock is held for that many files only: a search waits at most that long."""
        with self._lock:
            if not self._started:
                self._relist(reader)
            left = [
                path
                for path, stamp in self._listed.items()
                if stamp[1] <= FILE_CAP
                and (path not in self._words or self._words[path][0] != stamp)
            ]
            for path in left[:count]:
                reader.check()
                try:
                    data = reader.read(path, max_bytes=FILE_CAP)
                except UnreadableFile:
                    continue
                suffix = os.path.splitext(path)[1]
                self._words[path] = (self._listed[path], suffix, _hashes(data))
            return len(left) <= count

    def files(self, reader: Reader, suffixes: Iterable[str]) -> list[Path]:
        """The source files of ``suffixes`` under the workdir, as they are now (the watch's
        changes taken in). Run it in the reader's thread."""
        wanted = frozenset(suffixes)
        with self._lock:
            self._relist(reader)
            return sorted(Path(p) for p in self._listed if os.path.splitext(p)[1] in wanted)

    def search(
        self, reader: Reader, name: str, suffixes: Iterable[str], budget_s: float = SEARCH_BUDGET_S
    ) -> Found:
        """The files of ``suffixes`` holding ``name`` as a whole word, with its lines; a file
        not indexed yet is read and indexed now, within ``budget_s`` (the others are named
        unsearched). Run it in the reader's thread (:func:`tether.workdir.reading.off_loop`)."""
        wanted = frozenset(suffixes)
        word = name.encode()
        key = hash(word)
        pattern = linear.compile(rb"(?m)(?:^|[^\w$])" + re.escape(word) + rb"(?:[^\w$]|$)")
        deadline = time.monotonic() + budget_s
        unsearched: dict[Path, str] = {}
        candidates: list[str] = []
        stale: list[str] = []
        searched = 0
        with self._lock:
            self._relist(reader)
            listed, words = self._listed, self._words
            for path in [p for p in words if p not in listed]:
                del words[path]
            # the hot loop of a warm index: one dict lookup and one bisect per file
            for path, stamp in listed.items():
                entry = words.get(path)
                if entry is None or entry[0] != stamp:
                    stale.append(path)
                    continue
                if entry[1] not in wanted:
                    continue
                searched += 1
                hashes = entry[2]
                at = bisect.bisect_left(hashes, key)
                if at < len(hashes) and hashes[at] == key:
                    candidates.append(path)
            reader.check()
            searched += self._index_stale(
                reader, stale, wanted, word, (deadline, budget_s), candidates, unsearched
            )
            lines = _lines_holding(reader, pattern, candidates, unsearched)
        return Found(lines, unsearched, searched)

    def _index_stale(
        self,
        reader: Reader,
        stale: list[str],
        wanted: frozenset[str],
        word: bytes,
        budget: tuple[float, float],
        candidates: list[str],
        unsearched: dict[Path, str],
    ) -> int:
        """Read and index the files of ``wanted`` not indexed (or changed) since, until
        the ``budget``'s deadline (and the seconds it gave): each holding ``word`` joins ``candidates``; the rest are named in
        ``unsearched``. How many were searched."""
        listed, words = self._listed, self._words
        deadline, budget_s = budget
        searched = 0
        for path in sorted(stale):
            suffix = os.path.splitext(path)[1]
            if suffix not in wanted:
                continue
            reader.check()
            if listed[path][1] > FILE_CAP:
                unsearched[Path(path)] = "too large"
            elif time.monotonic() > deadline:
                unsearched[Path(path)] = f"not read within {budget_s:g} s"
            else:
                try:
                    data = reader.read(path, max_bytes=FILE_CAP)
                except UnreadableFile as exc:
                    unsearched[Path(path)] = exc.reason
                    continue
                words[path] = (listed[path], suffix, _hashes(data))
                searched += 1
                if word in data:
                    candidates.append(path)
        return searched


def _lines_holding(
    reader: Reader, pattern: linear.Regex[bytes], candidates: list[str], unsearched: dict[Path, str]
) -> dict[Path, tuple[int, ...]]:
    """The lines of each candidate file where ``pattern`` (the whole word) is found."""
    lines: dict[Path, tuple[int, ...]] = {}
    for path in sorted(candidates):
        reader.check()
        try:
            data = reader.read(path, max_bytes=FILE_CAP)
        except UnreadableFile as exc:
            unsearched[Path(path)] = exc.reason
            continue
        found = sorted(
            {data.count(b"\n", 0, match.start()) + 1 for match in pattern.finditer(data)}
        )
        if found:
            lines[Path(path)] = tuple(found)
    return lines


_indexes: weakref.WeakKeyDictionary[LspSupervisor, NameIndex] = weakref.WeakKeyDictionary()


def index_of(supervisor: LspSupervisor) -> NameIndex:
    """The run's index of the workdir's source files (every server's extensions)."""
    index = _indexes.get(supervisor)
    if index is None:
        suffixes = frozenset(s for spec in supervisor.specs.values() for s in spec.extensions)
        index = _indexes[supervisor] = NameIndex(supervisor.workdir, suffixes)
    return index


#: files indexed per hold of the index's lock by the background build
WARM_CHUNK = 200


def warm_soon(supervisor: LspSupervisor) -> None:
    """Build the run's index in the background (once): the first searches then find it built
    instead of naming most files unsearched on a big tree. It runs in the run's task group,
    :data:`WARM_CHUNK` files at a time, and stops when the run closes."""
    index = index_of(supervisor)
    if index.warming:
        return
    index.warming = True

    async def build() -> None:
        with contextlib.suppress(OSError, ReadCancelled):
            done = False
            while not done:  # each chunk in a worker thread: the loop stays free between
                done = await off_loop(index.workdir, lambda r: index.index_some(r, WARM_CHUNK))

    supervisor.run.task_group.start_soon(build)


def close_index(supervisor: LspSupervisor) -> None:
    index = _indexes.pop(supervisor, None)
    if index is not None:
        index.close()


def unsearched_line(unsearched: dict[Path, str], workdir: Path) -> str | None:
    """The plain statement of the files a search did not read, capped ("N more files")."""
    if not unsearched:
        return None
    paths = sorted(unsearched)
    shown = ", ".join(
        f"{relative(workdir, path)} ({unsearched[path]})" for path in paths[:FILES_SHOWN]
    )
    more = len(paths) - FILES_SHOWN
    return f"not searched: {len(paths)} files — {shown}" + (
        f", and {more} more files" if more > 0 else ""
    )


def listed_lines(lines: tuple[int, ...]) -> str:
    shown = ", ".join(str(n) for n in lines[:LINES_SHOWN])
    more = len(lines) - LINES_SHOWN
    return shown + (f" and {more} more lines" if more > 0 else "")


_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")


def declaration_pattern(name: str) -> linear.Regex[str]:
    """A line that declares ``name`` by its text, in any of the languages: after a word that
    declares (``def``, ``func``, ``function``, ``class``, ``const``, ``#define`` …), assigned
    or annotated at the start of a line, or a C function's definition or prototype."""
    word = re.escape(name)
    return linear.compile(
        r"(?:\b(?:def|class|function|func|const|let|var|type|interface|struct|enum|union"
        r"|typedef|fn|trait|module|namespace|define)\s+\**\s*" + word + r"\b)"
        r"|(?:^\s*(?:export\s+)?" + word + r"\s*[:=(])"
        r"|(?:^[A-Za-z_][\w \t\*]*[\s\*]" + word + r"\s*\()"
        r"|(?:^func\s*\([^)]*\)\s*" + word + r"\b)"
    )


async def symbol_coverage(
    supervisor: LspSupervisor,
    client: LspClient,
    query: str,
    answered: set[Path],
    exact: bool,
) -> list[str]:
    """What a workspace symbol search did not cover: the files declaring ``query`` by their
    text that the server's answer does not list (``answered``), with why the server did not
    see them, the files only mentioning it, and the files not searched. With ``exact`` (the
    answer has a symbol of that very name), only the files outside the server's project are
    named (a prototype in a header is not news). [] when ``query`` is not one identifier (a
    fuzzy query has no textual equivalent)."""
    from tether_lsp import crosscheck

    if not _IDENTIFIER.fullmatch(query):
        return []
    index = index_of(supervisor)
    unseen = await crosscheck.uncovered(client, index, query, {})
    others = [item for item in unseen.found if item.path.resolve() not in answered]
    pattern = declaration_pattern(query)

    def declared(reader: Reader) -> dict[Path, tuple[int, ...]]:
        out: dict[Path, tuple[int, ...]] = {}
        for item in others:
            try:
                text = reader.read_text(item.path, max_bytes=FILE_CAP, errors="replace")
            except (UnreadableFile, ToolError):
                continue
            lines = text.splitlines()
            hits = tuple(n for n in item.lines if n <= len(lines) and pattern.search(lines[n - 1]))
            if hits:
                out[item.path] = hits
        return out

    decl = await off_loop(supervisor.workdir, declared)
    shown = [
        item for item in others if item.path in decl and (item.outside is not None or not exact)
    ]
    lines = _declared_lines(supervisor.workdir, client.spec.id, query, shown, decl)
    mentions = len(others) - len(shown)
    if mentions:
        lines.append(
            f"`{query}` is mentioned (not declared) in {mentions} more file"
            f"{'s' if mentions != 1 else ''} the answer does not list"
        )
    if not lines and not answered:
        # an empty answer says where else it looked
        lines.append(
            f"a whole-word search of the workdir's {unseen.searched} "
            f"{'/'.join(sorted(client.spec.extensions))} files finds `{query}` nowhere else"
        )
    missing = unsearched_line(unseen.unsearched, supervisor.workdir)
    if missing:
        lines.append(missing)
    return lines


def _declared_lines(
    workdir: Path,
    server: str,
    query: str,
    shown: list[Uncovered],
    decl: dict[Path, tuple[int, ...]],
) -> list[str]:
    """The files declaring ``query`` by their text that the server's answer does not list."""
    rows: list[str] = []
    for item in shown[:FILES_SHOWN]:
        why = item.outside or (
            f"in {possessive(server)} project, not in its answer (a project it has not loaded, "
            "or not indexed yet)"
        )
        rows.append(f"  {relative(workdir, item.path)}:{listed_lines(decl[item.path])} — {why}")
    if len(shown) > FILES_SHOWN:
        rows.append(f"  and {len(shown) - FILES_SHOWN} more files")
    if not rows:
        return []
    return [
        f"`{query}` is declared, by the text, in {len(shown)} file"
        f"{'s' if len(shown) != 1 else ''} {possessive(server)} answer does not list:\n"
        + "\n".join(rows)
    ]


def possessive(name: str) -> str:
    return f"{name}'" if name.endswith("s") else f"{name}'s"


async def unchecked_files(
    supervisor: LspSupervisor, targets: list[tuple[ServerSpec, Path]]
) -> list[str]:
    """For ``diagnostics "*"``: per checker that ran, the workdir's files of its languages that
    no root it checked covers — outside every root checked, or left out by the project there
    (``include``/``exclude``, ``compile_commands.json``, build constraints) — with why, capped."""
    from tether_lsp.crosscheck import outside_of

    by_spec: dict[str, tuple[ServerSpec, list[Path]]] = {}
    for spec, root in targets:
        by_spec.setdefault(spec.id, (spec, []))[1].append(root)
    index = index_of(supervisor)

    def look(reader: Reader) -> list[str]:
        lines = []
        for spec, roots in by_spec.values():
            left: dict[Path, str] = {}
            for path in index.files(reader, spec.extensions):
                reader.check()
                inside = [r for r in roots if r == path.parent or r in path.parents]
                if not inside:
                    left[path] = "in no root checked"
                    continue
                # the innermost root checked holds the file
                root = max(inside, key=lambda r: len(r.parts))
                why = outside_of(spec, root, path, reader)
                if why is not None:
                    left[path] = why
            if left:
                groups: dict[str, list[Path]] = {}
                for path in sorted(left):
                    groups.setdefault(left[path], []).append(path)
                parts = []
                for why, paths in groups.items():
                    named = ", ".join(relative(supervisor.workdir, p) for p in paths[:FILES_SHOWN])
                    more = len(paths) - FILES_SHOWN
                    named += f", and {more} more files" if more > 0 else ""
                    parts.append(f"{why}: {named}")
                lines.append(
                    f"not checked by {spec.id}'s checker: {len(left)} "
                    f"{'/'.join(sorted(spec.extensions))} files — " + "; ".join(parts)
                )
        return lines

    return await off_loop(supervisor.workdir, look)


STALE_SHOWN = 5


def stale_note(client: LspClient) -> str | None:
    """When the server may not have taken in files another process changed and it has not
    opened (more than a query sends, or not parsed in time): what it said about the files
    using them may be stale — said, instead of stating them as current."""
    for path in [p for p in client.unconfirmed if p.as_uri() in client.documents]:
        del client.unconfirmed[path]  # opened since: the server has its text
    if not client.unconfirmed:
        return None
    paths = sorted(client.unconfirmed)
    workdir = client.run.workdir
    shown = ", ".join(
        f"{relative(workdir, p)} ({client.unconfirmed[p]})" for p in paths[:STALE_SHOWN]
    )
    more = len(paths) - STALE_SHOWN
    shown += f", and {more} more files" if more > 0 else ""
    return (
        f"{client.spec.id} may not have taken in {len(paths)} file"
        f"{'s' if len(paths) != 1 else ''} another process changed — {shown}: what it says "
        "of the files using them may be stale; ask about those files (they are sent then) or "
        "`lsp reload`"
    )

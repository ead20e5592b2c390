"""The search engine: a per-process parse cache, a literal prefilter, and worker processes.

Parsing holds the GIL, so large searches are sharded over forked worker processes by a
stable hash of the path; each worker keeps its own bounded cache of parsed trees, so a later
search in the same run finds most trees already parsed where it needs them.
"""

from __future__ import annotations

import os
import re
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import tree_sitter as ts

from tether.process import kill_tree
from tether.text import truncate
from tether_astgrep.grammars import Grammar, GrammarRegistry
from tether_astgrep.matcher import Match, Matcher
from tether_astgrep.pattern import CompiledPattern
from tether_astgrep.rewrite import SyntaxCheck, apply_matches, check_syntax

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

# A parsed tree costs about this many bytes per byte of source (measured on CPython's stdlib).
TREE_BYTES_PER_SOURCE_BYTE = 28
BINARY_SNIFF_BYTES = 8192
MAX_TEXT_CHARS = 2000  # of a match or capture sent back from a search


@attrs.frozen
class Task:
    mode: str  # "search" or "edit"
    pattern: CompiledPattern  # its strictness included
    rewrite: str | None
    max_file_bytes: int


@attrs.frozen
class FileResult:
    path: str
    skipped: str | None = None  # "binary", "too large", "unreadable"
    matches: tuple[tuple[Any, ...], ...] = ()  # (line, col, end_line, end_col, text, captures)
    parse_errors: bool = False
    # edit mode
    original: bytes | None = None
    new: bytes | None = None
    replaced: int = 0
    skipped_inner: int = 0
    new_error_lines: tuple[int, ...] = ()
    syntax: SyntaxCheck | None = None
    lossy_lines: tuple[int, ...] = ()  # matches not rewritten: code between their parts
    kept_lines: tuple[int, ...] = ()  # rewritten, unmentioned code before/after kept as is


class _Entry:
    __slots__ = ("cost", "mtime_ns", "size", "source", "tree")

    def __init__(self, mtime_ns: int, size: int, source: bytes) -> None:
        self.mtime_ns = mtime_ns
        self.size = size
        self.source = source
        self.tree: ts.Tree | None = None
        self.cost = len(source)


class FileCache:
    """Sources and parsed trees keyed by (path, mtime, size), bounded by an estimated byte budget."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget = budget_bytes
        self.used = 0
        self.admit_trees = True
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def get(self, path: str, st: os.stat_result) -> _Entry | None:
        entry = self._entries.get(path)
        if entry is None:
            return None
        if entry.mtime_ns != st.st_mtime_ns or entry.size != st.st_size:
            self._drop(path)
            return None
        self._entries.move_to_end(path)
        return entry

    def put(self, path: str, entry: _Entry) -> None:
        self._drop(path)
        self._entries[path] = entry
        self.used += entry.cost
        if self.used > self.budget:
            self.trim()

    def set_tree(self, path: str, entry: _Entry, tree: ts.Tree) -> None:
        if not self.admit_trees or path not in self._entries:
            return
        extra = len(entry.source) * TREE_BYTES_PER_SOURCE_BYTE
        if self.used + extra > self.budget:
            # Full: keep the trees we have. Searches scan the same files in the same order,
            # and evicting old trees for new ones (LRU) would leave none of the next scan's.
            return
        entry.tree = tree
        entry.cost += extra
        self.used += extra

    def _drop(self, path: str) -> None:
        entry = self._entries.pop(path, None)
        if entry is not None:
            self.used -= entry.cost

    def trim(self) -> None:
        """Drop the oldest sources while over budget (trees are never admitted over it)."""
        for path in list(self._entries):
            if self.used <= self.budget:
                return
            self._drop(path)


class ProcessState:
    """What one process (the run's own, or a worker) keeps between searches."""

    def __init__(
        self, registry: GrammarRegistry, cache_bytes: int, trees_from_search: int = 1
    ) -> None:
        self.registry = registry
        self.cache = FileCache(cache_bytes)
        # Keeping trees costs page faults and teardown time; a one-shot search never gains
        # from them, so a worker starts keeping them from the run's second search on.
        self.trees_from_search = trees_from_search
        self.searches = 0
        self._parsers: dict[str, ts.Parser] = {}
        self._matchers: dict[tuple[str, str, bool], Matcher] = {}
        self._chains: dict[tuple[bytes, ...], list[re.Pattern[bytes]]] = {}

    def parser(self, grammar: Grammar) -> ts.Parser:
        parser = self._parsers.get(grammar.id)
        if parser is None:
            parser = self._parsers[grammar.id] = grammar.parser()
        return parser

    def chains(self, pattern: CompiledPattern) -> list[re.Pattern[bytes]]:
        found = self._chains.get(pattern.chains)
        if found is None:
            found = self._chains[pattern.chains] = [re.compile(c) for c in pattern.chains]
        return found

    def matcher(self, pattern: CompiledPattern, grammar: Grammar, track: bool = False) -> Matcher:
        key = (grammar.id, pattern.source, track)
        matcher = self._matchers.get(key)
        if matcher is None or matcher.pattern != pattern:
            if len(self._matchers) > 64:
                self._matchers.clear()
            matcher = self._matchers[key] = Matcher(pattern, grammar, track=track)
        return matcher

    def run(self, task: Task, root: str, paths: Sequence[str]) -> list[FileResult]:
        self.searches += 1
        self.cache.admit_trees = self.searches >= self.trees_from_search
        grammar = self.registry.get(task.pattern.grammar_id)
        assert grammar is not None
        matcher = self.matcher(task.pattern, grammar, track=task.mode == "edit")
        return [self._one(task, grammar, matcher, root, p) for p in paths]

    def _one(
        self, task: Task, grammar: Grammar, matcher: Matcher, root: str, path: str
    ) -> FileResult:
        full = os.path.join(root, path)
        try:
            st = os.stat(full)
        except OSError:
            return FileResult(path, skipped="unreadable")
        if st.st_size > task.max_file_bytes:
            return FileResult(path, skipped="too large")
        # An edit must stage exactly what is on disk now: never trust the cache for it.
        entry = self.cache.get(path, st) if task.mode == "search" else None
        if entry is None:
            try:
                with open(full, "rb") as f:
                    source = f.read()
            except OSError:
                return FileResult(path, skipped="unreadable")
            if source.find(b"\0", 0, BINARY_SNIFF_BYTES) >= 0:
                return FileResult(path, skipped="binary")
            entry = _Entry(st.st_mtime_ns, st.st_size, source)
            self.cache.put(path, entry)
        source = entry.source
        for literal in task.pattern.literals:
            if literal not in source:
                return FileResult(path)
        for chain in self.chains(task.pattern):
            if chain.search(source) is None:
                return FileResult(path)
        tree = entry.tree
        if tree is None:
            tree = self.parser(grammar).parse(source)
            self.cache.set_tree(path, entry, tree)
        found = matcher.find(tree, source)
        has_errors = tree.root_node.has_error
        if task.mode == "edit":
            if not found:
                return FileResult(path, parse_errors=has_errors)
            assert task.rewrite is not None
            applied = apply_matches(task.rewrite, found, source, tree, grammar)
            new = applied.new
            syntax = None
            if new != source:
                new_tree = self.parser(grammar).parse(new)
                syntax = check_syntax(grammar, path, source, tree, new, new_tree)
            return FileResult(
                path,
                parse_errors=has_errors,
                original=source,
                new=new,
                replaced=applied.replaced,
                skipped_inner=applied.skipped_inner,
                new_error_lines=syntax.new_error_lines if syntax is not None else (),
                syntax=syntax,
                lossy_lines=applied.lossy_lines,
                kept_lines=applied.kept_lines,
            )
        return FileResult(
            path,
            matches=tuple(_describe(m, source) for m in found),
            parse_errors=has_errors,
        )


def _describe(m: Match, source: bytes) -> tuple[Any, ...]:
    """(line, column, end line, end column, text, captures): 1-based, columns in characters."""

    def column(offset: int) -> int:
        line_start = source.rfind(b"\n", 0, offset) + 1
        return len(source[line_start:offset].decode("utf-8", "replace")) + 1

    def text(start: int, end: int) -> str:
        return truncate(source[start:end].decode("utf-8", "replace"), MAX_TEXT_CHARS)

    caps = {name: "" if a < 0 else text(a, b) for name, (a, b) in m.captures.items()}
    return (
        m.start_point[0] + 1,
        column(m.start_byte),
        m.end_point[0] + 1,
        column(m.end_byte),
        text(m.start_byte, m.end_byte),
        caps,
    )


def _worker_main(conn: Connection, registry: GrammarRegistry, cache_bytes: int) -> None:
    state = ProcessState(registry, cache_bytes, trees_from_search=2)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return  # the run's process is gone: so are we
        if msg is None:
            return
        task_id, task, root, paths = msg
        try:
            conn.send((task_id, state.run(task, root, paths), None))
        except Exception as exc:
            conn.send((task_id, None, f"{type(exc).__name__}: {exc}"))


class WorkerError(Exception):
    pass


def _max_fd() -> int:
    try:
        return int(os.sysconf("SC_OPEN_MAX"))
    except (ValueError, OSError):
        return 4096


def _reaped(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done == pid


def _reap_blocking(pid: int) -> None:
    try:
        os.waitpid(pid, 0)  # SIGKILLed: returns at once
    except ChildProcessError:
        pass


class WorkerPool:
    """Forked worker processes, each owning the files whose path hashes to it."""

    def __init__(
        self,
        registry: GrammarRegistry,
        workers: int,
        cache_bytes: int,
        on_start: Callable[[int], None] | None = None,
    ) -> None:
        self.on_start = on_start  # told each worker's pid as it starts
        self.registry = registry
        self.size = workers
        self.cache_bytes = cache_bytes
        self._procs: list[int] = []
        self._conns: list[Connection] = []
        self._lock = threading.Lock()
        self._next_id = 0

    @property
    def pids(self) -> list[int]:
        return list(self._procs)

    def _start(self) -> None:
        # A bare fork, not multiprocessing's Process: its bootstrap closes stdin and flushes
        # stdout, which deadlocks when another thread of the run (a stdio session reader)
        # holds those locks at fork time. The child touches only its pipe and tree-sitter.
        from multiprocessing.connection import Pipe  # with pickle: only a run that forks pays

        per_worker = self.cache_bytes // self.size
        for _ in range(self.size):
            parent, child = Pipe(duplex=True)
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the worker
                code = 0
                try:
                    keep = child.fileno()
                    os.closerange(3, keep)
                    os.closerange(keep + 1, _max_fd())
                    devnull = os.open(os.devnull, os.O_RDWR)
                    for fd in (0, 1):
                        os.dup2(devnull, fd)
                    _worker_main(child, self.registry, per_worker)
                except BaseException:
                    code = 1
                finally:
                    os._exit(code)
            child.close()
            self._procs.append(pid)
            if self.on_start is not None:
                self.on_start(pid)
            self._conns.append(parent)

    def run(
        self, task: Task, root: str, paths: Sequence[str], timeout_s: float
    ) -> list[FileResult]:
        with self._lock:
            if not self._procs:
                self._start()
            self._next_id += 1
            task_id = self._next_id
            shards: list[list[str]] = [[] for _ in range(self.size)]
            for p in paths:
                shards[zlib.crc32(p.encode()) % self.size].append(p)
            deadline = time.monotonic() + timeout_s
            try:
                for conn, shard in zip(self._conns, shards, strict=True):
                    conn.send((task_id, task, root, shard))
                results: list[FileResult] = []
                for conn in self._conns:
                    while True:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0 or not conn.poll(remaining):
                            raise WorkerError(f"search workers gave no answer in {timeout_s:.0f} s")
                        got_id, got, error = conn.recv()
                        if got_id == task_id:
                            break
                    if error is not None:
                        raise WorkerError(f"search worker failed: {error}")
                    results.extend(got)
            except WorkerError:
                self._stop_locked()
                raise
            except (EOFError, OSError) as exc:
                self._stop_locked()
                raise WorkerError(f"a search worker died ({type(exc).__name__})") from exc
            return results

    def _stop_locked(self) -> None:
        for conn in self._conns:
            try:
                conn.send(None)
            except OSError:
                pass
        deadline = time.monotonic() + 1.0
        for pid in self._procs:
            while not _reaped(pid) and time.monotonic() < deadline:
                time.sleep(0.001)  # a worker told to stop exits at once
            if not _reaped(pid):
                kill_tree(pid)
                _reap_blocking(pid)
        for conn in self._conns:
            conn.close()
        self._procs.clear()
        self._conns.clear()

    def stop(self) -> None:
        if self._lock.acquire(timeout=2.0):
            try:
                self._stop_locked()
            finally:
                self._lock.release()
            return
        # A search is still running in a thread: end the workers under it.
        for pid in list(self._procs):
            kill_tree(pid)
            _reap_blocking(pid)

"""The search engine: a per-process parse cache, a literal prefilter, and worker processes.

Parsing holds the GIL, so large searches are sharded over worker processes by a stable hash
of the path; each worker keeps its own bounded cache of parsed trees, so a later search in the
same run finds most trees already parsed where it needs them. Workers are forked on Linux;
where fork is unsafe in a threaded process (macOS, and under ``TETHER_PORTABLE=1``) each is a
fresh interpreter (``spawn``) that rebuilds the grammars from their pickled references.
"""

from __future__ import annotations

import itertools
import operator
import os
import re
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs
import tree_sitter as ts

from tether import regex as linear
from tether.processes.managed import kill_tree
from tether.text import truncate
from tether.workdir.reading import Reader, UnreadableFile
from tether_astgrep.grammars import Grammar, GrammarRegistry
from tether_astgrep.matcher import Match, Matcher
from tether_astgrep.pattern import CompiledPattern, MetaVar
from tether_astgrep.recovery import Recovery, recover, region_rows
from tether_astgrep.rewrite import SyntaxCheck, apply_matches, check_syntax
from tether_astgrep.rules import CompiledRule, RuleMatcher

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

# What one cached file costs, in bytes per byte of its source: the source itself plus its
# parsed tree. Measured as resident-memory growth while parsing CPython's stdlib and its
# site-packages (13,356 files) and keeping every other tree, as a worker does: 28.4; rounded up.
CACHED_BYTES_PER_SOURCE_BYTE = 30
ENTRY_OVERHEAD_BYTES = 1024  # the entry, its key, the bytes and Tree objects
BINARY_SNIFF_BYTES = 8192
MAX_TEXT_CHARS = 2000  # of a match or capture sent back from a search
CHUNK_FILES = 32  # most files per message to a worker; two messages in flight per worker
# Searches whose results a cached file keeps (the most recent ones): a search repeated over
# unchanged files reuses each file's matches instead of matching its tree again.
RESULTS_PER_FILE = 8
RESULT_OVERHEAD_BYTES = 256  # a kept result: the FileResult, its key, its tuple
MATCH_OVERHEAD_BYTES = 320  # a described match: its tuple, numbers and captures dict


@attrs.frozen
class Task:
    mode: str  # "search" or "edit"
    pattern: CompiledPattern | CompiledRule  # its strictness included
    rewrite: str | None
    max_file_bytes: int
    # Matches described (text, captures) and sent back, per process; past it they are only
    # counted. None: all of them (an edit needs every one).
    keep: int | None = None


@attrs.frozen
class FileResult:
    path: str
    skipped: str | None = None  # "binary", "too large", "unreadable"
    matches: tuple[tuple[Any, ...], ...] = ()  # (line, col, end_line, end_col, text, captures)
    count: int = 0  # matches in the file, described or not
    parse_errors: bool = False
    # Lines inside ERROR nodes: code the grammar could not read, where a match may be lost.
    unsearchable_lines: int = 0
    # Lines of ERROR regions a search read again with a few tokens respelled or blanked
    # (`recovery.py`); `unsearchable_lines` counts what is still unread after that.
    reread_lines: int = 0
    # edit mode
    original: bytes | None = None
    new: bytes | None = None
    replaced: int = 0
    skipped_inner: int = 0
    new_error_lines: tuple[int, ...] = ()
    syntax: SyntaxCheck | None = None
    lossy_lines: tuple[int, ...] = ()  # matches not rewritten: code between their parts
    kept_lines: tuple[int, ...] = ()  # rewritten, unmentioned code before/after kept as is
    dropped_comments: tuple[tuple[int, str], ...] = ()  # (line, text) the rewrite removes
    # what this search did with the file: parsed it (no cached tree), or gave the result an
    # earlier identical search had found in the same cached tree
    parsed: bool = False
    reused: bool = False

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as its fields in order (what a worker sends the run for each file); a
        result that only counts matches (most of a search's: past the page, its matches are
        counted, not described) as its path, count and flags alone: a quarter of the bytes,
        unpickled in half the time."""
        if _others(self) == _OTHERS_UNSET:
            return _counted, (self.path, self.count, self.parsed, self.reused)
        return FileResult, _fields(self)


_fields = operator.attrgetter(*(a.name for a in attrs.fields(FileResult)))
_COUNTED = ("path", "count", "parsed", "reused")
# the other fields, and what they are in a result that only counts
_others = operator.attrgetter(*(a.name for a in attrs.fields(FileResult) if a.name not in _COUNTED))
_OTHERS_UNSET = _others(FileResult(""))


def _counted(path: str, count: int, parsed: bool, reused: bool) -> FileResult:
    """A `FileResult` that says only how many matches its file has (`FileResult.__reduce__`)."""
    return FileResult(path, count=count, parsed=parsed, reused=reused)


def file_stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    """What tells a file changed: its mtime and its size, its inode (a file replaced by
    another, as editors and the core's writer do, within the clock's tick and of the same
    size) and its ctime (an mtime set back, as `rsync -t` or `touch -d` do)."""
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)


class _Entry:
    __slots__ = (
        "cands",
        "recovery",
        "results",
        "results_cost",
        "sig",
        "sig_cost",
        "source",
        "stamp",
        "tree",
    )

    def __init__(
        self,
        stamp: tuple[int, int, int, int],
        source: bytes,
        tree: ts.Tree,
        recovery: Recovery | None,
    ) -> None:
        self.stamp = stamp
        self.source = source
        self.tree = tree
        self.recovery = recovery
        # a search's key (ProcessState._slot) -> (its result in this file, the result's cost)
        self.results: dict[int, tuple[FileResult, int]] = {}
        self.results_cost = 0
        # its tree's nodes' significant children, by node id (`Matcher.sig_memo`), and their cost
        self.sig: dict[int, list[ts.Node]] | None = None
        # its anchored candidates, by what decides them (`Matcher.cand_memo`), made and
        # dropped with `sig`, their cost counted in `sig_cost`
        self.cands: dict[tuple[Any, ...], list[ts.Node]] | None = None
        self.sig_cost = 0


_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_WORD_START = _WORD_BYTES - frozenset(b"0123456789")


def has_word(source: bytes, word: bytes) -> bool:
    """Whether `word` occurs in `source` not inside a longer word: no ASCII letter or `_`
    before it, no ASCII letter, digit or `_` after it.

    A digit may stand before a token (Python's `1if x else y` is `1` then `if`, CSS's `10px`
    is `10` then `px`); any non-ASCII byte counts as a boundary, so a word beside a non-ASCII
    letter (`éprint`) keeps the file: the check can only rule out, never wrongly.
    """
    size = len(word)
    pos = source.find(word)
    while pos >= 0:
        end = pos + size
        if (pos == 0 or source[pos - 1] not in _WORD_START) and (
            end == len(source) or source[end] not in _WORD_BYTES
        ):
            return True
        pos = source.find(word, pos + 1)
    return False


def entry_cost(source: bytes, reread: bool = False) -> int:
    """What keeping a file's source and tree costs (an estimate, in bytes); a file re-read
    past its grammar's errors (``recovery``) keeps a second tree."""
    return (len(source) * CACHED_BYTES_PER_SOURCE_BYTE + ENTRY_OVERHEAD_BYTES) * (1 + reread)


def result_cost(result: FileResult) -> int:
    """What keeping a search's result costs (an estimate, in bytes): its described matches'
    text and captures; a match only counted costs nothing."""
    cost = RESULT_OVERHEAD_BYTES
    for m in result.matches:
        cost += MATCH_OVERHEAD_BYTES + len(m[4]) + sum(len(v) for v in m[5].values())
    return cost


def _rss_bytes() -> int:
    from tether.processes import procinfo  # /proc on Linux, psutil elsewhere

    return procinfo.rss_bytes()


class FileCache:
    """Sources with their parsed trees, keyed by path and `file_stamp`, under a byte budget;
    with each, the results of the last few searches in it (``remember``), which go with it.

    Admission, not eviction: a file is stored only while it fits, and what is stored stays
    until its file changes. Searches scan the same files in the same order, and evicting old
    entries for new ones (LRU) would throw out exactly what the next scan needs first; kept
    this way, a corpus larger than the budget is served warm for the part that fits and at
    cold speed for the rest. Each store is O(1). Besides the estimate, the process's resident
    memory is checked as the cache grows: it never grows the process by more than the budget.
    """

    def __init__(self, budget_bytes: int) -> None:
        self.budget = max(0, budget_bytes)
        self.used = 0
        self.hits = 0
        self.refused = 0  # files parsed that did not fit
        self.reused = 0  # results of an earlier identical search given again
        self._entries: dict[str, _Entry] = {}
        self._rss_base = _rss_bytes()
        self._rss_full = False
        self._memo_full = False  # a tree's children did not fit: keep no more till some go

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, path: str, st: os.stat_result) -> _Entry | None:
        entry = self._entries.get(path)
        if entry is None:
            return None
        if entry.stamp != file_stamp(st):
            del self._entries[path]
            reread = entry.recovery is not None
            self.used -= entry_cost(entry.source, reread) + entry.results_cost + entry.sig_cost
            self._memo_full = False
            return None
        self.hits += 1
        return entry

    def offer(
        self,
        path: str,
        st: os.stat_result,
        source: bytes,
        tree: ts.Tree,
        recovery: Recovery | None = None,
    ) -> _Entry | None:
        """The new entry, or None: it did not fit."""
        cost = entry_cost(source, recovery is not None)
        if self._rss_full or self.used + cost > self.budget or path in self._entries:
            self.refused += 1
            return None
        entry = self._entries[path] = _Entry(file_stamp(st), source, tree, recovery)
        self.used += cost
        return entry

    def remember(self, entry: _Entry, slot: int, result: FileResult) -> None:
        """Keep `result`, the search `slot`'s in `entry`'s file, while it fits the budget (in
        place of that search's earlier one; past RESULTS_PER_FILE, the oldest goes)."""
        old = entry.results.pop(slot, None)
        if old is None and len(entry.results) >= RESULTS_PER_FILE:
            old = entry.results.pop(next(iter(entry.results)))
        if old is not None:
            entry.results_cost -= old[1]
            self.used -= old[1]
        cost = result_cost(result)
        if self._rss_full or self.used + cost > self.budget:
            return
        entry.results[slot] = (result, cost)
        entry.results_cost += cost
        self.used += cost

    def memo(self, entry: _Entry) -> dict[int, list[ts.Node]] | None:
        """Where a search over `entry`'s tree keeps its nodes' children (`Matcher.sig_memo`;
        beside it, `entry.cands` keeps its anchored candidates: `Matcher.cand_memo`), or None:
        the cache is full, or the file was re-read past its grammar's errors (two trees, whose
        node ids may be the same)."""
        if entry.recovery is not None or (entry.sig is None and self._memo_full):
            return None
        if entry.sig is None:
            entry.sig, entry.cands = {}, {}
        return entry.sig

    def charge_memo(self, entry: _Entry, added: int) -> None:
        """`entry`'s children memo grew by `added` bytes: kept while it fits the budget, else
        dropped whole (and no other is started until files change)."""
        if not added:
            return
        if self._rss_full or self.used + added > self.budget:
            self.used -= entry.sig_cost
            entry.sig, entry.cands, entry.sig_cost = None, None, 0
            self._memo_full = True
            return
        entry.sig_cost += added
        self.used += added

    def check_memory(self) -> None:
        """Stop admitting once the process has grown by the budget, whatever the estimate."""
        if self._entries and _rss_bytes() - self._rss_base > self.budget:
            self._rss_full = True

    def stats(self) -> dict[str, int]:
        return {
            "entries": len(self._entries),
            "used": self.used,
            "budget": self.budget,
            "hits": self.hits,
            "refused": self.refused,
            "reused": self.reused,
            "rss_growth": max(0, _rss_bytes() - self._rss_base),
        }


class ProcessState:
    """What one process (the run's own, or a worker) keeps between searches."""

    def __init__(self, registry: GrammarRegistry, cache_bytes: int, cache_from_search: int = 1):
        self.registry = registry
        self.cache = FileCache(cache_bytes)
        # Caching a file costs page faults and teardown time; a one-shot search never reuses
        # what it read, so a worker caches only from the run's second search on.
        self.cache_from_search = cache_from_search
        self.searches = 0
        self.parsed = 0  # files parsed, all searches
        self._parsers: dict[str, ts.Parser] = {}
        self._matchers: dict[tuple[str, str, bool], Matcher] = {}
        self._rule: RuleMatcher | None = None
        self._chains: dict[tuple[bytes, ...], list[linear.Regex[bytes]]] = {}
        self._words: dict[tuple[bytes, ...], list[bytes]] = {}
        self._caching = False
        self._keep: int | None = None  # matches this task may still describe
        # A key per search (a pattern with its strictness): a cached file keeps its results
        # under it. Only patterns: a rule's parts compare by identity, never equal again.
        self._slots: dict[CompiledPattern, int] = {}
        self._slot_ids = itertools.count()
        self._slot: int | None = None

    def parser(self, grammar: Grammar) -> ts.Parser:
        parser = self._parsers.get(grammar.id)
        if parser is None:
            parser = self._parsers[grammar.id] = grammar.parser()
        return parser

    def chains(self, pattern: CompiledPattern | CompiledRule) -> list[linear.Regex[bytes]]:
        """The pattern's chains, compiled for the linear engine: they run over files of the
        checkout, where a backtracking engine is quadratic (an unclosed `/*` repeated: a
        40 KB file took 10 s). The grammar's comment regexes are written for Python's `re`
        (possessive, lookahead); the superset the engine runs keeps every file they keep."""
        found = self._chains.get(pattern.chains)
        if found is None:
            found = self._chains[pattern.chains] = [
                linear.compile(linear.superset(c)) for c in pattern.chains
            ]
        return found

    def words(self, pattern: CompiledPattern | CompiledRule) -> list[bytes]:
        """The pattern's literals that are words (`print`, `__init__`): a file holding a match
        has each one as a whole word, not only inside a longer one (`pprint`)."""
        found = self._words.get(pattern.literals)
        if found is None:
            found = self._words[pattern.literals] = [
                lit for lit in pattern.literals if _WORD.fullmatch(lit)
            ]
        return found

    def matcher(
        self, pattern: CompiledPattern | CompiledRule, grammar: Grammar, track: bool = False
    ) -> Matcher | RuleMatcher:
        if isinstance(pattern, CompiledRule):
            # one per search: a worker gets its chunks' tasks unpickled, each a new rule
            if self._rule is None or self._rule.compiled is not pattern:
                self._rule = RuleMatcher(pattern, grammar)
            return self._rule
        key = (grammar.id, pattern.source, track)
        matcher = self._matchers.get(key)
        if matcher is None or matcher.pattern != pattern:
            if len(self._matchers) > 64:
                self._matchers.clear()
            matcher = self._matchers[key] = Matcher(pattern, grammar, track=track)
        return matcher

    def begin(self, task: Task) -> None:
        """A new search: what it may keep and describe, and the key of its results."""
        self.searches += 1
        self._caching = self.searches >= self.cache_from_search
        self._keep = task.keep
        self._slot = None
        if task.mode == "search" and isinstance(task.pattern, CompiledPattern):
            slot = self._slots.get(task.pattern)
            if slot is None:
                if len(self._slots) >= 4096:  # the results of the keys forgotten stay, unused,
                    self._slots.clear()  # until later searches' results replace them
                slot = self._slots[task.pattern] = next(self._slot_ids)
            self._slot = slot

    def stats(self) -> dict[str, int]:
        """The cache's figures, and how many files this process has parsed."""
        return {**self.cache.stats(), "parsed": self.parsed}

    def run_chunk(
        self, task: Task, root: str, paths: Sequence[str], stop: threading.Event | None = None
    ) -> list[FileResult]:
        grammar = self.registry.get(task.pattern.grammar_id)
        assert grammar is not None
        matcher = self.matcher(task.pattern, grammar, track=task.mode == "edit")
        # the core's reader: no symlink followed, a FIFO or device never opened, the size cap
        # checked before reading; ``stop`` (a cancelled call) ends the chunk at the next file
        with Reader(root, stop=stop) as reader:
            out = [self._one(task, grammar, matcher, reader, p) for p in paths]
        if self._caching:
            self.cache.check_memory()
        return out

    def run(
        self, task: Task, root: str, paths: Sequence[str], stop: threading.Event | None = None
    ) -> list[FileResult]:
        self.begin(task)
        return self.run_chunk(task, root, paths, stop)

    def _one(
        self,
        task: Task,
        grammar: Grammar,
        matcher: Matcher | RuleMatcher,
        reader: Reader,
        path: str,
    ) -> FileResult:
        try:
            st = reader.stat(path)
        except UnreadableFile as exc:
            return FileResult(path, skipped=_skip_reason(exc))
        if st.st_size > task.max_file_bytes:
            return FileResult(path, skipped="too large")
        # An edit must stage exactly what is on disk now: never trust the cache for it.
        entry = self.cache.get(path, st) if task.mode == "search" else None
        if entry is not None:
            again = self._again(entry)
            if again is not None:
                return again
            source = entry.source
        else:
            try:
                source = reader.read(path, max_bytes=task.max_file_bytes)
            except UnreadableFile as exc:
                return FileResult(path, skipped=_skip_reason(exc))
            if source.find(b"\0", 0, BINARY_SNIFF_BYTES) >= 0:
                return FileResult(path, skipped="binary")
        if not self._may_match(task.pattern, source):
            result = FileResult(path)
        elif entry is not None:
            result = self._searched_cached(matcher, path, source, entry)
        else:
            began = time.perf_counter()
            tree = self.parser(grammar).parse(source)
            self.parsed += 1
            recovery = None
            if task.mode == "search" and tree.root_node.has_error:
                # a rewrite is never made from a re-read tree: edits use the plain parse
                took = time.perf_counter() - began
                recovery = recover(self.parser(grammar), source, tree, grammar, took)
            if self._caching and task.mode == "search":
                entry = self.cache.offer(path, st, source, tree, recovery)
            if task.mode == "edit":
                return self._edited(task, grammar, matcher, path, source, tree)
            result = self._searched(matcher, path, source, tree, recovery, parsed=True)
        if entry is not None and self._slot is not None:
            self.cache.remember(entry, self._slot, result)
        return result

    def _again(self, entry: _Entry) -> FileResult | None:
        """The result an earlier identical search found in this cached (unchanged) file, if
        it described as many of its matches as this search may still describe; else None."""
        kept = entry.results.get(self._slot) if self._slot is not None else None
        if kept is None:
            return None
        result, keep = kept[0], self._keep
        described = len(result.matches)
        if described < (result.count if keep is None else min(keep, result.count)):
            return None
        matches = result.matches if keep is None or described <= keep else result.matches[:keep]
        if keep is not None:
            self._keep = keep - len(matches)
        self.cache.reused += 1
        return attrs.evolve(result, matches=matches, parsed=False, reused=True)

    def _searched_cached(
        self, matcher: Matcher | RuleMatcher, path: str, source: bytes, entry: _Entry
    ) -> FileResult:
        """`_searched` over a cached tree, its nodes' children taken from (and kept in) the
        entry's memo."""
        memo = self.cache.memo(entry) if isinstance(matcher, Matcher) else None
        if memo is None:
            return self._searched(matcher, path, source, entry.tree, entry.recovery)
        assert isinstance(matcher, Matcher)
        matcher.sig_memo, matcher.cand_memo, matcher.sig_added = memo, entry.cands, 0
        try:
            return self._searched(matcher, path, source, entry.tree, entry.recovery)
        finally:
            matcher.sig_memo = matcher.cand_memo = None
            self.cache.charge_memo(entry, matcher.sig_added)

    def _may_match(self, pattern: CompiledPattern | CompiledRule, source: bytes) -> bool:
        """Whether `source` has all the pattern's literals, words and chains (else no match)."""
        for literal in pattern.literals:
            if literal not in source:
                return False
        for word in self.words(pattern):
            if not has_word(source, word):
                return False
        for chain in self.chains(pattern):
            if chain.search(source) is None:
                return False
        return True

    def _edited(
        self,
        task: Task,
        grammar: Grammar,
        matcher: Matcher | RuleMatcher,
        path: str,
        source: bytes,
        tree: ts.Tree,
    ) -> FileResult:
        """An edit's result for one parsed file: its new text, checked for syntax."""
        found = matcher.find(tree, source)
        has_errors = tree.root_node.has_error
        lost = error_region_lines(tree) if has_errors else 0
        if not found:
            return FileResult(path, parse_errors=has_errors, unsearchable_lines=lost)
        assert task.rewrite is not None
        applied = apply_matches(task.rewrite, found, source, tree, grammar)
        new = applied.new
        syntax = None
        if new != source:
            new_tree = self.parser(grammar).parse(new)
            syntax = check_syntax(grammar, path, source, tree, new, new_tree)
        return FileResult(
            path,
            count=len(found),
            parse_errors=has_errors,
            unsearchable_lines=lost,
            original=source,
            new=new,
            replaced=applied.replaced,
            skipped_inner=applied.skipped_inner,
            new_error_lines=syntax.new_error_lines if syntax is not None else (),
            syntax=syntax,
            lossy_lines=applied.lossy_lines,
            kept_lines=applied.kept_lines,
            dropped_comments=applied.dropped_comments,
        )

    def _searched(
        self,
        matcher: Matcher | RuleMatcher,
        path: str,
        source: bytes,
        tree: ts.Tree,
        recovery: Recovery | None = None,
        parsed: bool = False,
    ) -> FileResult:
        """A search's result for one parsed file: its matches, described up to what the
        search may still keep, and counted past it. A file the grammar could not read whole
        is searched in its re-read tree, without the matches a blanked run touches."""
        has_errors = tree.root_node.has_error
        reread = 0
        if recovery is not None:
            kept = _merged(matcher, source, tree, recovery)
            count = len(kept)
            found = kept if self._keep is None else kept[: self._keep]
            lost, reread = recovery.unread_after, recovery.reread
        else:
            # past what this task may still describe, matches are counted, not built
            found, count = matcher.find_counted(tree, source, self._keep)
            lost = error_region_lines(tree) if has_errors else 0
        if not count:
            return FileResult(
                path,
                parse_errors=has_errors,
                unsearchable_lines=lost,
                reread_lines=reread,
                parsed=parsed,
            )
        if self._keep is not None:
            self._keep -= len(found)
        return FileResult(
            path,
            matches=tuple(_describe(m, source) for m in found),
            count=count,
            parse_errors=has_errors,
            unsearchable_lines=lost,
            parsed=parsed,
            reread_lines=reread,
        )


def _merged(
    matcher: Matcher | RuleMatcher, source: bytes, tree: ts.Tree, recovery: Recovery
) -> list[Match]:
    """A file's matches where the grammar could not parse all of it: the plain parse's
    where the re-read tree does not decide (`Recovery.speaks_for`), as before, and the
    re-read tree's it shows (`Recovery.held`)."""
    out = {
        (m.start_byte, m.end_byte): m
        for m in matcher.find(tree, source)
        if not recovery.speaks_for(source, m.start_byte, m.end_byte)
    }
    starts = {start for start, _ in out}
    for m in matcher.find(recovery.tree, source):
        if m.start_byte in starts:
            continue
        caps = recovery.held(source, m.start_byte, m.end_byte, m.captures, _runs(matcher))
        if caps is not None:
            out[(m.start_byte, m.end_byte)] = attrs.evolve(m, captures=caps)
    out.update(_island_matches(matcher, source, recovery, {start for start, _ in out}))
    return [out[k] for k in sorted(out, key=lambda k: (k[0], -k[1]))]


def _island_matches(
    matcher: Matcher | RuleMatcher, source: bytes, recovery: Recovery, starts: set[int]
) -> dict[tuple[int, int], Match]:
    """The matches of the island tree (`Recovery.island`: the directive lines alone) where no
    other match starts, each shown as its directive line. Only a pattern of one line is
    searched there: it says nothing of the code the directive governs, which the island did
    not read (`#if $C`, `#ifdef $X`; never `#if $C … #endif`, nor a rule)."""
    if recovery.island is None or not isinstance(matcher, Matcher):
        return {}
    if "\n" in matcher.pattern.source.strip():
        return {}
    out: dict[tuple[int, int], Match] = {}
    for m in matcher.find(recovery.island, source):
        end = recovery.island_end(m.start_byte, m.captures)
        if end is None or m.start_byte in starts:
            continue
        row = m.start_point[0] + source.count(b"\n", m.start_byte, end)
        column = end - (source.rfind(b"\n", 0, end) + 1)
        out[(m.start_byte, end)] = attrs.evolve(
            m, end_byte=end, end_point=(row, column), lossy_line=None, kept_line=None
        )
    return out


def _runs(matcher: Matcher | RuleMatcher) -> frozenset[str]:
    """The names of a pattern's `$$$` metavariables (a rule's: none)."""
    if not isinstance(matcher, Matcher):
        return frozenset()
    names: set[str] = set()
    stack: list[Any] = [*matcher.pattern.items, *(a for x in matcher.pattern.also for a in x.items)]
    while stack:
        item = stack.pop()
        if isinstance(item, MetaVar):
            if item.multi and item.name:
                names.add(item.name)
        else:
            stack.extend(item.children)
    return frozenset(names)


def error_region_lines(tree: ts.Tree) -> int:
    """How many lines ERROR nodes cover (tree-sitter-kotlin leaves a whole class as one)."""
    return len(region_rows(tree))


def _skip_reason(exc: UnreadableFile) -> str:
    """How a file the reader refused is counted: ``"too large"`` or ``"unreadable"``, or what
    it is when it is no regular file (``"a FIFO"``, ``"a character device"``)."""
    if exc.reason == "too large":
        return "too large"
    if exc.reason.startswith("a ") and exc.reason != "a regular file":
        return exc.reason
    return "unreadable"


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


def _worker_main(
    conn: Connection, registry: GrammarRegistry, cache_bytes: int, cache_from_search: int = 2
) -> None:
    state = ProcessState(registry, cache_bytes, cache_from_search=cache_from_search)
    current: tuple[int, Task, str] | None = None
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return  # the run's process is gone: so are we
        if msg is None:
            return
        kind = msg[0]
        if kind == "task":
            _, task_id, task, root = msg
            current = (task_id, task, root)
            state.begin(task)
        elif kind == "chunk":
            _, task_id, seq, paths = msg
            try:
                assert current is not None and current[0] == task_id, "chunk of an unknown task"
                conn.send(
                    ("chunk", task_id, seq, state.run_chunk(current[1], current[2], paths), None)
                )
            except Exception as exc:
                conn.send(("chunk", task_id, seq, None, f"{type(exc).__name__}: {exc}"))
        elif kind == "stats":
            conn.send(("stats", msg[1], 0, state.stats(), None))


#: what a spawned worker runs: ``python -c SPAWNED_WORKER FD``, its pipe on descriptor FD; the
#: first message is the run's ``sys.path`` (so that it imports what the run imports)
SPAWNED_WORKER = """
import sys
from multiprocessing.connection import Connection
conn = Connection(int(sys.argv[1]))
sys.path[:] = conn.recv()
from tether_astgrep.engine import spawned_worker_main
spawned_worker_main(conn)
"""


def spawned_worker_main(conn: Connection) -> None:
    """A spawned worker, once its imports can be found: the grammars (pickled references),
    then its cache budget, then it serves like a forked one."""
    try:
        grammars = conn.recv()
        cache_bytes, cache_from_search = conn.recv()
        conn.send(READY)
    except (EOFError, OSError):
        return  # the run's process is gone before it could say anything
    _worker_main(conn, GrammarRegistry(grammars), cache_bytes, cache_from_search)


#: what a spawned worker says once it can serve (its imports done, the grammars rebuilt)
READY = ("ready", 0, 0, None, None)
#: how long a spawned worker may take to say it: a fresh interpreter importing the engine
#: takes a fraction of a second on an idle machine; the stall timeout counts only from then
SPAWN_READY_S = 60.0


StartMethod = Literal["fork", "spawn"]


def default_start_method() -> StartMethod:
    """``fork`` where the core uses /proc (Linux: the cheapest start by far, see
    plugins/astgrep/benchmarks/RESULTS.md), ``spawn`` where it uses its portable backend
    (macOS, where fork is unsafe in a threaded process, and Linux under
    ``TETHER_PORTABLE=1``, to run that path here)."""
    from tether.processes import procinfo

    return "spawn" if procinfo.portable() else "fork"


def shippable(grammar: Grammar) -> bool:
    """Whether a spawned worker can rebuild ``grammar``: its ``language`` pickles (a
    ``lazy_language`` or a module-level function does; a lambda or a closure does not)."""
    import pickle

    try:
        pickle.dumps(grammar)
    except Exception:  # pickle raises several kinds (PicklingError, AttributeError, TypeError)
        return False
    return True


def chunked(paths: Sequence[str], takers: int) -> list[list[str]]:
    """`paths` in chunks for `takers` workers: up to `CHUNK_FILES` files each, shrinking
    towards the end (a quarter of what is left per taker), so that when the last chunk comes
    back no worker is left with much more than one file still to parse."""
    out = []
    k = 0
    while k < len(paths):
        size = max(1, min(CHUNK_FILES, (len(paths) - k) // (4 * takers)))
        out.append(list(paths[k : k + size]))
        k += size
    return out


def owned_chunks(paths: Sequence[str]) -> list[list[str]]:
    """A worker's own files (its shard) in chunks of `CHUNK_FILES`."""
    return [list(paths[k : k + CHUNK_FILES]) for k in range(0, len(paths), CHUNK_FILES)]


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


@attrs.frozen
class PoolResult:
    results: list[FileResult]
    stalled: bool  # stopped because no worker finished a file for the stall timeout
    replaced: int = 0  # workers killed then (they made no progress) and started anew


class _Dispatch:
    """One search's chunks, and what each worker of the pool has been sent of them."""

    def __init__(
        self,
        pool: WorkerPool,
        task_id: int,
        task: Task,
        root: str,
        queues: list[list[list[str]]],
        shared: bool,
    ) -> None:
        self.pool = pool
        self.task_id = task_id
        self.task = task
        self.root = root
        self.queues = queues
        self.shared = shared
        self.taken = [0] * len(queues)  # chunks sent, per queue
        self.given = [False] * pool.size  # told about this task
        self.in_flight = [0] * pool.size

    def queue(self, i: int) -> int:
        return 0 if self.shared else i

    def feed(self, i: int) -> None:
        pool = self.pool
        if not self.given[i]:
            if pool._outstanding[i]:
                return  # still answering an earlier search
            pool._conns[i].send(("task", self.task_id, self.task, self.root))
            self.given[i] = True
        q = self.queue(i)
        queue, taken = self.queues[q], self.taken
        while self.in_flight[i] < 2 and taken[q] < len(queue):
            pool._conns[i].send(("chunk", self.task_id, taken[q], queue[taken[q]]))
            taken[q] += 1
            self.in_flight[i] += 1
            pool._outstanding[i] += 1

    def pending(self, i: int) -> bool:
        q = self.queue(i)
        return self.in_flight[i] > 0 or self.taken[q] < len(self.queues[q]) or not self.given[i]


class WorkerPool:
    """Worker processes, each owning the files whose path hashes to it.

    Work goes out in chunks of files, at most two in flight per worker, so the run sees
    progress as each chunk comes back. A search stops only when no worker has finished a
    chunk for the stall timeout; it then returns what came back so far, and each worker that
    still owed work (it made no progress for that long: stopped, hung, or swapping) is killed,
    reaped and replaced by a new one, so the next search is whole. The workers that had
    finished their share keep their processes and their caches.

    ``start`` is how a worker starts (:func:`default_start_method`): ``fork`` inherits the
    run's grammars; ``spawn`` runs a fresh interpreter that is sent them pickled, so it
    serves only the grammars that pickle (:meth:`serves`); the run searches the others
    itself. Either way a worker is a direct child of the run's process, adopted by its
    process owner, and exits when its pipe closes (the run's process gone).
    """

    def __init__(
        self,
        registry: GrammarRegistry,
        workers: int,
        cache_bytes: int,
        on_start: Callable[[int], object] | None = None,
        on_exit: Callable[[int], None] | None = None,
        start: StartMethod | None = None,
    ) -> None:
        # told each worker's pid as it starts, and once it is reaped (the run's process owner
        # kills what is still running at close, and leaves alone a pid that may be reused)
        self.on_start = on_start
        self.on_exit = on_exit
        self.registry = registry
        self.size = workers
        self.cache_bytes = cache_bytes
        self._procs: list[int] = []
        self._conns: list[Connection] = []
        self._starting: set[int] = set()  # slots of spawned workers not ready yet
        self._outstanding: list[int] = []  # replies each worker still owes, of any task
        self._lock = threading.Lock()
        self._next_id = 0
        self.replaced = 0  # workers killed for making no progress, and started anew
        self._searches = 0
        self.start_method: StartMethod = start or default_start_method()
        self._shipped: list[Grammar] | None = None  # spawn: the grammars the workers get
        # written to when a search is cancelled or the pool stops: wakes the search's wait
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._closing = False
        # A run that will search again (a served one): its first search caches too, each
        # worker the files that hash to it, as later ones do.
        self.long_lived = False

    def serves(self, grammar_id: str) -> bool:
        """Whether the workers can search this grammar (with ``spawn``, only those that
        pickle: a grammar whose ``language`` is a lambda is searched by the run itself)."""
        if self.start_method == "fork":
            return True
        if self._shipped is None:
            self._shipped = [g for g in self.registry if shippable(g)]
        return any(g.id == grammar_id for g in self._shipped)

    @property
    def pids(self) -> list[int]:
        return list(self._procs)

    def start(self) -> None:
        """Start the workers now (else the first search does), and wait until they serve."""
        with self._lock:
            if not self._procs and not self._closing:
                self._start()
            self._await_ready()

    def _start(self) -> None:
        for _ in range(self.size):
            self._procs.append(0)
            self._conns.append(None)  # type: ignore[arg-type]
            self._outstanding.append(0)
            self._spawn(len(self._procs) - 1)

    def _spawn(self, i: int) -> None:
        """Start the worker of slot ``i`` (the files whose path hashes to it)."""
        # A bare fork, not multiprocessing's Process: its bootstrap closes stdin and flushes
        # stdout, which deadlocks when another thread of the run (a stdio session reader)
        # holds those locks at fork time. The child touches only its pipe and tree-sitter.
        from multiprocessing.connection import Pipe  # with pickle: only a run that forks pays

        per_worker = self.cache_bytes // self.size
        # A worker started after the run's first search (a replacement), or for a run that
        # will search again, caches at once.
        cache_from = 2 if self._searches == 0 and not self.long_lived else 1
        parent, child = Pipe(duplex=True)
        if self.start_method == "spawn":
            try:
                pid = self._spawn_interpreter(parent, child, per_worker, cache_from)
            finally:
                child.close()
            self._started(i, pid, parent)
            self._starting.add(i)
            return
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
                _worker_main(child, self.registry, per_worker, cache_from)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        child.close()
        self._started(i, pid, parent)

    def _started(self, i: int, pid: int, conn: Connection) -> None:
        self._procs[i] = pid
        if self.on_start is not None:
            self.on_start(pid)
        self._conns[i] = conn
        self._outstanding[i] = 0

    def _spawn_interpreter(
        self, parent: Connection, child: Connection, cache_bytes: int, cache_from: int
    ) -> int:
        """A fresh interpreter (no fork of this threaded process: posix_spawn), its pipe on
        one descriptor and stdin/stdout on /dev/null like a forked worker's; then what it
        needs to serve, sent down the pipe: sys.path, the grammars, its cache budget."""
        import sys

        fd = 3 if child.fileno() != 3 else 4  # dup2 onto itself would keep close-on-exec
        devnull = os.open(os.devnull, os.O_RDWR)
        try:
            pid = os.posix_spawn(
                sys.executable,
                [sys.executable, "-c", SPAWNED_WORKER, str(fd)],
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, devnull, 0),
                    (os.POSIX_SPAWN_DUP2, devnull, 1),
                    (os.POSIX_SPAWN_DUP2, child.fileno(), fd),
                ],
            )
        finally:
            os.close(devnull)
        if self._shipped is None:
            self._shipped = [g for g in self.registry if shippable(g)]
        try:
            parent.send(list(sys.path))
            parent.send(self._shipped)
            parent.send((cache_bytes, cache_from))
        except OSError:
            pass  # it died at once: the search that sends it work says so
        return pid

    def _await_ready(self) -> None:
        """Wait for the spawned workers still starting (a fork is ready at once), so that a
        search's stall timeout measures searching, not an interpreter's start."""
        from multiprocessing.connection import wait

        deadline = time.monotonic() + SPAWN_READY_S
        while self._starting:
            by_conn = {self._conns[i]: i for i in self._starting}
            ready = wait(list(by_conn), max(0.0, deadline - time.monotonic()))
            if not ready:
                self._stop_locked()
                raise WorkerError(f"a search worker did not start in {SPAWN_READY_S:.0f} s")
            for conn in ready:
                i = by_conn[conn]  # type: ignore[index]
                try:
                    msg = self._conns[i].recv()
                except (EOFError, OSError) as exc:
                    self._stop_locked()
                    raise WorkerError(
                        f"a search worker died as it started ({type(exc).__name__})"
                    ) from exc
                assert msg == READY, f"a starting worker said {msg!r}"
                self._starting.discard(i)

    def _replace(self, i: int) -> None:
        """Kill and reap the worker of slot ``i`` (it made no progress), start a new one.

        Only its own cache is lost: the other workers, their files and caches, stay.
        """
        pid = self._procs[i]
        kill_tree(pid)  # SIGKILL ends a stopped process too
        _reap_blocking(pid)
        self._exited(pid)
        self._conns[i].close()
        self.replaced += 1
        self._spawn(i)

    def _recv(self, i: int) -> tuple[Any, ...]:
        try:
            msg: tuple[Any, ...] = self._conns[i].recv()
        except (EOFError, OSError) as exc:
            self._stop_locked()
            raise WorkerError(f"a search worker died ({type(exc).__name__})") from exc
        self._outstanding[i] -= 1
        return msg

    def cancel(self, cancelled: threading.Event) -> None:
        """End the search that was given ``cancelled`` (its call timed out or was cancelled):
        the workers still owing it work are killed and replaced, never left computing (a rule
        may cost more than any deadline) nor given the next search."""
        cancelled.set()
        self._wake()

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except OSError:  # full (a wake-up is pending anyway) or closed (the pool is gone)
            pass

    def _woken(self) -> None:
        try:
            while os.read(self._wake_r, 512):
                pass
        except OSError:  # empty
            pass

    def run(
        self,
        task: Task,
        root: str,
        paths: Sequence[str],
        stall_s: float,
        cancelled: threading.Event | None = None,
    ) -> PoolResult:
        with self._lock:
            if (cancelled is not None and cancelled.is_set()) or self._closing:
                return PoolResult([], stalled=True)  # cancelled while an earlier one ended
            if not self._procs:
                self._start()
            self._await_ready()
            self._next_id += 1
            task_id = self._next_id
            # Each worker owns the files whose path hashes to it, so a later search finds its
            # trees where it parsed them. The pool's first search caches nothing (a one-shot
            # call never reuses what it read): it hands the next chunk to whichever worker is
            # free, so a worker slowed by other load on the machine does not hold up the end.
            shared = self._searches == 0 and not self.long_lived
            self._searches += 1
            # Files any worker may take shrink in chunks towards the end (no worker is left with
            # much); a worker's own files go in whole chunks: nobody else could take them, and
            # each chunk costs a round trip (a warm search's chunks are done in microseconds).
            queues = [
                chunked(shard, self.size) if shared else owned_chunks(shard)
                for shard in self._shards(paths, shared)
            ]
            dispatch = _Dispatch(self, task_id, task, root, queues, shared)
            try:
                return self._collect(dispatch, stall_s, cancelled or threading.Event())
            except OSError as exc:
                self._stop_locked()
                raise WorkerError(f"a search worker died ({type(exc).__name__})") from exc

    def _shards(self, paths: Sequence[str], shared: bool) -> list[list[str]]:
        """One list of all the files when any worker may take them, else each worker's own."""
        if shared:
            return [list(paths)]
        shards: list[list[str]] = [[] for _ in range(self.size)]
        for p in paths:
            shards[zlib.crc32(p.encode()) % self.size].append(p)
        return shards

    def _collect(
        self, dispatch: _Dispatch, stall_s: float, cancelled: threading.Event
    ) -> PoolResult:
        """Feed the workers the search's chunks and gather what comes back, until all is in,
        the search is cancelled, or no worker owing work made progress for `stall_s`."""
        from multiprocessing.connection import wait

        results: list[FileResult] = []
        for i in range(self.size):
            dispatch.feed(i)
        last_progress = time.monotonic()
        while True:
            waiting = [i for i in range(self.size) if dispatch.pending(i)]
            if not waiting:
                return PoolResult(results, stalled=False)
            if cancelled.is_set() or self._closing:
                # Nobody waits for the rest: each worker still computing for this search is
                # killed (and replaced, unless the pool is stopping), so no deadline is
                # outlived and the next search is whole.
                busy = [i for i in range(self.size) if self._outstanding[i]]
                for i in busy:
                    if self._closing:
                        kill_tree(self._procs[i])  # reaped by the stop
                    else:
                        self._replace(i)
                return PoolResult(results, stalled=True, replaced=len(busy))
            remaining = last_progress + stall_s - time.monotonic()
            if remaining <= 0:
                # Every worker still owing work made no progress for stall_s: it
                # stays stopped (or hung); the next search gets a new one instead.
                for i in waiting:
                    self._replace(i)
                return PoolResult(results, stalled=True, replaced=len(waiting))
            by_conn = {self._conns[i]: i for i in waiting if self._outstanding[i]}
            for conn in wait([*by_conn, self._wake_r], remaining):
                if conn == self._wake_r:
                    self._woken()
                    continue
                i = by_conn[conn]  # type: ignore[index]
                kind, got_id, _, got, error = self._recv(i)
                last_progress = time.monotonic()
                if kind == "chunk" and got_id == dispatch.task_id:
                    if error is not None:
                        self._stop_locked()
                        raise WorkerError(f"search worker failed: {error}")
                    dispatch.in_flight[i] -= 1
                    results.extend(got)
                dispatch.feed(i)

    def stats(self, timeout_s: float = 10.0) -> list[dict[str, int] | None]:
        """Each worker's cache figures; None for one still busy with an earlier search."""
        with self._lock:
            if not self._procs:
                return []
            self._await_ready()
            self._next_id += 1
            req = self._next_id
            out: list[dict[str, int] | None] = [None] * self.size
            asked = []
            for i, conn in enumerate(self._conns):
                if not self._outstanding[i]:
                    conn.send(("stats", req))
                    self._outstanding[i] += 1
                    asked.append(i)
            deadline = time.monotonic() + timeout_s
            for i in asked:
                while self._outstanding[i] and self._conns[i].poll(
                    max(0.0, deadline - time.monotonic())
                ):
                    kind, got_id, _, got, _ = self._recv(i)
                    if kind == "stats" and got_id == req:
                        out[i] = got
            return out

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
            self._exited(pid)
        for conn in self._conns:
            conn.close()
        self._procs.clear()
        self._conns.clear()
        self._outstanding.clear()
        self._starting.clear()

    def _exited(self, pid: int) -> None:
        if self.on_exit is not None:
            self.on_exit(pid)

    def stop(self) -> None:
        self._closing = True
        self._wake()  # a search still collecting ends now, and lets go of the lock
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
            self._exited(pid)

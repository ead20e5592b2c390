"""The `astgrep_service` resource: grammars, the search engine and the staged edits of a run."""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import attrs

import tether
from tether.killable import run_killable
from tether.text import listing
from tether.workdir.paths import confine
from tether_astgrep.config import AstgrepConfig
from tether_astgrep.files import RunCommand, list_files
from tether_astgrep.grammars import Grammar, GrammarRegistry

if TYPE_CHECKING:  # the engine and the pattern compiler are imported by the first search
    from tether_astgrep.answers import KeptAnswers
    from tether_astgrep.engine import FileResult, ProcessState, Task, WorkerPool
    from tether_astgrep.pattern import CompiledPattern
    from tether_astgrep.rules import CompiledRule

# A search that finds nothing tries this many other readings of its pattern, to say so.
OTHER_READINGS = 3


@attrs.frozen
class SearchOutcome:
    pattern: CompiledPattern | CompiledRule
    grammar: Grammar
    files: list[FileResult]  # by path; only the first max_results matches are described
    searched: int
    skipped: Counter[str]
    unreadable_ignores: list[str] = attrs.field(factory=list)  # .gitignore rules not applied
    # A search that found nothing: (interpretation, matches) of other readings that find some.
    other_readings: list[tuple[str, int]] = attrs.field(factory=list)
    files_total: int = 0  # files the search covers
    stalled: bool = False  # stopped early: only `files` were searched

    @property
    def total(self) -> int:
        """Matches found, described or only counted."""
        return sum(r.count for r in self.files)

    @property
    def parsed(self) -> int:
        """Files the search parsed (no process had their tree cached)."""
        return sum(r.parsed for r in self.files)

    @property
    def reused(self) -> int:
        """Files whose matches an earlier identical search had found in the same tree."""
        return sum(r.reused for r in self.files)


@attrs.frozen
class StagedEdit:
    edit_id: str
    changes: tuple[tuple[Path, bytes, bytes], ...]  # (absolute path, content at staging, new)
    # Files the rewrite gives new syntax errors, with their lines: accepted only with force.
    broken: tuple[tuple[str, tuple[int, ...]], ...] = ()


class AstgrepService:
    """One per run; wired as the `astgrep_service` resource."""

    def __init__(
        self,
        workdir: Path,
        registry: GrammarRegistry,
        config: AstgrepConfig,
        run_command: RunCommand,
        on_worker_start: Callable[[int], object] | None = None,
        on_worker_exit: Callable[[int], None] | None = None,
    ) -> None:
        self.workdir = workdir
        self._run_command = run_command
        self.registry = registry
        self.config = config
        self._on_worker_start = on_worker_start
        self._on_worker_exit = on_worker_exit
        # the search engine, made by the first search: a run that never searches never
        # imports it (tree-sitter matching, the worker pool, multiprocessing)
        self._local: ProcessState | None = None
        self._local_lock = anyio.Lock()
        self._engine_lock = threading.Lock()  # `warm` makes the engine in a thread
        self._pool: WorkerPool | None = None
        # a served run (`warm`): searches will come again, so the first one caches too
        self._long_lived = False
        self._answers: KeptAnswers | None = None  # made by the first search
        self.staged: dict[str, StagedEdit] = {}
        self.resolved: dict[str, str] = {}  # edit id -> accepted / discarded / rejected / failed
        self._edit_ids = itertools.count(1)

    def _engine(self) -> tuple[ProcessState, WorkerPool | None]:
        """The run's own search state and its worker pool (None: no workers), made once."""
        with self._engine_lock:
            return self._made_engine()

    def _made_engine(self) -> tuple[ProcessState, WorkerPool | None]:
        if self._local is None:
            from tether_astgrep.engine import ProcessState, WorkerPool

            config = self.config
            cache = config.cache_mb * 1024 * 1024
            # Large searches run in the workers, so they get most of the budget.
            local = cache if config.workers <= 0 else min(cache // 8, 64 * 1024 * 1024)
            if config.workers > 0 and self._pool is None:
                self._pool = WorkerPool(
                    self.registry,
                    config.workers,
                    cache - local,
                    on_start=self._on_worker_start,
                    on_exit=self._on_worker_exit,
                )
            cache_from = 1 if self._long_lived else 2
            self._local = ProcessState(self.registry, local, cache_from_search=cache_from)
        if self._pool is not None:
            self._pool.long_lived = self._long_lived
        return self._local, self._pool

    async def warm(self) -> None:
        """A served run (``tether serve``): searches will come again, so every process keeps
        what it parses from the first search on (a one-shot run's first search keeps nothing).
        Spawned workers (a fresh interpreter each: about a second) start now, off the event
        loop; forked ones, which start in milliseconds, with the first search, so a served run
        that never searches has none."""
        self._long_lived = True
        if self._local is not None:
            self._local.cache_from_search = 1
        _, pool = await anyio.to_thread.run_sync(self._engine)
        if pool is not None and pool.start_method == "spawn":
            await anyio.to_thread.run_sync(pool.start)

    async def aclose(self) -> None:
        if self._pool is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._pool.stop)

    @property
    def worker_pids(self) -> list[int]:
        return self._pool.pids if self._pool is not None else []

    async def cache_stats(self) -> list[dict[str, int]]:
        """Each worker's cache (entries, estimated bytes used, budget, hits); the run's own
        process's if it has no workers. A worker busy with an earlier search is left out."""
        local, pool = self._engine()
        if pool is None:
            return [local.stats()]
        found = await anyio.to_thread.run_sync(pool.stats)
        return [s for s in found if s is not None]

    # -- choosing files and grammar --------------------------------------------------------

    def _target(self, path: str | None) -> Path:
        if path is None:
            return self.workdir
        target = confine(self.workdir, path, field="path")
        if not target.exists():
            raise tether.ArgumentError("path", f"{path!r} does not exist")
        return target

    def _grammar(self, language: str | None, target: Path, files: list[str]) -> Grammar:
        if language is not None:
            grammar = self.registry.get(language)
            if grammar is None:
                raise tether.ArgumentError(
                    "language",
                    f"unknown language {language!r}; known: {', '.join(self.registry.ids)}",
                )
            return grammar
        if target.is_file():
            grammar = self.registry.for_path(target.name)
            if grammar is None:
                raise tether.ArgumentError(
                    "language",
                    f"required: cannot infer it from {target.name!r}; known: {', '.join(self.registry.ids)}",
                )
            return grammar
        seen = Counter(g.id for f in files if (g := self.registry.for_path(f)) is not None)
        # Beside code, grammars that are not installed and auxiliary files (a project's shell
        # scripts, YAML, JSON, HTML, CSS) do not make the directory "several languages".
        for keep in (
            lambda g: g.missing() is None,
            lambda g: not g.auxiliary,
        ):
            if len(seen) > 1:
                kept = Counter({k: v for k, v in seen.items() if keep(self._known(k))})
                seen = kept or seen
        if len(seen) == 1:
            only = next(iter(seen))
            grammar = self.registry.get(only)
            assert grammar is not None
            return grammar
        if not seen:
            raise tether.ArgumentError(
                "language", "required: no file under path has a known extension"
            )
        mix = ", ".join(f"{k}: {v} files" for k, v in seen.most_common())
        raise tether.ArgumentError(
            "language", f"required: the files under path are in several languages ({mix})"
        )

    def _known(self, grammar_id: str) -> Grammar:
        grammar = self.registry.get(grammar_id)
        assert grammar is not None
        return grammar

    def dump(
        self, snippet: str, language: str | None, path: str | None, strictness: str
    ) -> tuple[str, dict[str, object]]:
        """How the grammar of `language` (or of `path`) reads `snippet`."""
        if language is None and path is None:
            raise tether.ArgumentError("language", "required with dump (or a file path)")
        target = self._target(path)
        grammar = self._grammar(language, target, [target.name] if target.is_file() else [])
        missing = grammar.missing()
        if missing is not None:
            raise tether.ArgumentError("language", missing)
        from tether_astgrep.dump import dump

        return dump(snippet, grammar, strictness)

    # -- search -------------------------------------------------------------------------

    async def search(
        self,
        pattern: str | None,
        path: str | None,
        language: str | None,
        *,
        mode: str = "search",
        rewrite: str | None = None,
        strictness: str = "smart",
        max_results: int | None = None,
        rule: Mapping[str, Any] | None = None,
    ) -> SearchOutcome:
        """Search (or, in mode "edit", rewrite) every file; of a search's matches only the
        first `max_results` (by path, then position) are described, the rest are counted."""
        target = self._target(path)
        listing = await list_files(self.workdir, target, self._run_command)
        files = listing.names
        grammar = self._grammar(language, target, files)
        missing = grammar.missing()
        if missing is not None:
            raise tether.ArgumentError("language" if language is not None else "path", missing)
        files = self._searched_files(target, files, grammar)
        from tether_astgrep.engine import Task

        readings, rewrite = _readings(pattern, rule, grammar, strictness, mode, rewrite)
        compiled = readings[0]
        _check_rewrite(mode, rewrite, compiled)
        keep = max_results if mode == "search" else None
        task = Task(mode, compiled, rewrite, self.config.max_file_bytes, keep=keep)

        def other_readings() -> list[CompiledPattern | CompiledRule]:
            # read only for a search that found nothing: reading the pattern in every rung of
            # the grammar costs 1.5-3 ms, a warm search's whole matching for a rare pattern
            more = 1 + OTHER_READINGS
            return _readings(pattern, rule, grammar, strictness, mode, rewrite, more)[0][1:]

        results, stalled, others = await self._answer(task, other_readings, files)
        skipped = Counter(r.skipped for r in results if r.skipped)
        return SearchOutcome(
            compiled,
            grammar,
            results,
            len(results) - sum(skipped.values()),
            skipped,
            listing.unreadable_ignores,
            others,
            files_total=len(files),
            stalled=stalled,
        )

    async def _answer(
        self,
        task: Task,
        other_readings: Callable[[], list[CompiledPattern | CompiledRule]],
        files: list[str],
    ) -> tuple[list[FileResult], bool, list[tuple[str, int]]]:
        """Each file's result (by path; the first `task.keep` matches described), whether the
        search stopped early, and the other readings that find something if it found nothing.
        On a served run, a search asked again over the same unchanged files is answered as
        it was (a one-shot run does not pay for looking at every file's stamp first)."""
        if self._answers is None:
            from tether_astgrep.answers import KeptAnswers

            self._answers = KeptAnswers()
        answers = self._answers
        keeps = self._long_lived and answers.keeps(task)
        stamps = await answers.stamped(str(self.workdir), files) if keeps else None
        again = answers.get(task, stamps, files) if stamps is not None else None
        if again is not None:
            return again[0], False, again[1]
        results, stalled = await self._run(task, files)
        results.sort(key=lambda r: r.path)
        if task.keep is not None:
            results = _first_described(results, task.keep)
        others: list[tuple[str, int]] = []
        if not stalled and not any(r.count or r.replaced for r in results):
            # Nothing found: would the pattern, read another way, find something?
            others = await self._other_readings(other_readings(), files)
        if stamps is not None and not stalled:
            answers.put(task, stamps, results, others)
        return results, stalled, others

    def _searched_files(self, target: Path, files: list[str], grammar: Grammar) -> list[str]:
        """The files of `target` the search reads: the file itself, or the listed files of
        the grammar."""
        if target.is_file():
            return [target.relative_to(self.workdir).as_posix()]
        # in path order: each process describes its first max_results matches in the
        # order it is given its files, and the run keeps the first of those by path
        return sorted(f for f in files if self.registry.for_path(f) is grammar)

    async def _other_readings(
        self, readings: Sequence[CompiledPattern | CompiledRule], files: list[str]
    ) -> list[tuple[str, int]]:
        """The other readings of the pattern that find something, with their counts."""
        from tether_astgrep.engine import Task

        others: list[tuple[str, int]] = []
        for other in readings:
            task = Task("search", other, None, self.config.max_file_bytes, keep=0)
            found, other_stalled = await self._run(task, files)
            count = sum(r.count for r in found)
            if count:
                others.append((other.interpretation, count))
            if other_stalled:
                break
        return others

    async def _run(self, task: Task, files: list[str]) -> tuple[list[FileResult], bool]:
        from tether_astgrep.engine import WorkerError

        root = str(self.workdir)
        stall = self.config.search_timeout_s
        local, pool = self._engine()
        if (
            pool is not None
            and len(files) >= self.config.parallel_min_files
            and pool.serves(task.pattern.grammar_id)
        ):
            cancelled = threading.Event()
            done = None
            try:
                done = await anyio.to_thread.run_sync(
                    lambda: pool.run(task, root, files, stall, cancelled), abandon_on_cancel=True
                )
            except WorkerError as exc:
                raise tether.ToolError(str(exc)) from None
            finally:
                if done is None:  # the call timed out or the run closes: end its workers
                    pool.cancel(cancelled)
            return done.results, done.stalled
        async with self._local_lock:
            stop = threading.Event()
            try:
                # killable: on the call's timeout (or the run's close) the search ends at
                # once, even inside a file, and its half-updated state is dropped
                found = await run_killable(lambda: local.run(task, root, files, stop))
            except BaseException:
                self._local = None
                raise
            finally:
                stop.set()
            return found, False

    def stage(self, outcome: SearchOutcome) -> StagedEdit:
        assert not outcome.stalled, "a partial rewrite is never staged"
        edit_id = f"edit_{next(self._edit_ids)}"
        changes = tuple(
            (self.workdir / r.path, r.original, r.new)
            for r in outcome.files
            if r.original is not None and r.new is not None and r.new != r.original
        )
        broken = tuple(
            (r.path, r.new_error_lines)
            for r in outcome.files
            if r.new_error_lines and r.new is not None and r.new != r.original
        )
        staged = StagedEdit(edit_id, changes, broken)
        self.staged[edit_id] = staged
        while len(self.staged) > max(1, self.config.max_pending_edits):
            oldest = next(iter(self.staged))
            del self.staged[oldest]
            self.resolved[oldest] = (
                f"expired: more than {self.config.max_pending_edits} edits were pending"
            )
        return staged


def _readings(
    pattern: str | None,
    rule: Mapping[str, Any] | None,
    grammar: Grammar,
    strictness: str,
    mode: str,
    rewrite: str | None,
    most: int = 1,
) -> tuple[list[CompiledPattern | CompiledRule], str | None]:
    """The compiled rule, or the pattern's readings (the one to search first, then up to
    `most - 1` others), and the rewrite (the rule's fix when it has one)."""
    from tether_astgrep.pattern import PatternError, compile_readings

    if rule is not None:
        from tether_astgrep.rules import RuleError, compile_rule

        try:
            compiled_rule = compile_rule(rule, grammar, strictness, edit=mode == "edit")
        except RuleError as exc:
            raise tether.ArgumentError(exc.path, exc.message) from None
        if compiled_rule.fix is not None:
            if rewrite is not None:
                raise tether.ArgumentError(
                    "rewrite", "give the rewrite or the rule's fix, not both"
                )
            rewrite = compiled_rule.fix
        return [compiled_rule], rewrite
    assert pattern is not None
    try:
        readings: list[CompiledPattern | CompiledRule] = list(
            compile_readings(pattern, grammar, strictness=strictness, most=most)
        )
    except PatternError as exc:
        raise tether.ToolError(str(exc)) from None
    return readings, rewrite


def _check_rewrite(
    mode: str, rewrite: str | None, compiled: CompiledPattern | CompiledRule
) -> None:
    """An edit has a rewrite, and a rewrite uses only the metavariables the pattern binds."""
    if mode == "edit" and rewrite is None:
        raise tether.ArgumentError("rewrite", "required (or a fix in the rule)")
    if rewrite is not None:
        from tether_astgrep.rewrite import template_vars

        unbound = [v for v in template_vars(rewrite) if v not in compiled.var_names]
        if unbound:
            names = listing((f"${v}" for v in dict.fromkeys(unbound)), quote=False)
            raise tether.ArgumentError("rewrite", f"uses {names}, which the pattern does not bind")


def _first_described(results: list[FileResult], keep: int) -> list[FileResult]:
    """Each process described its own first `keep` matches; keep the first `keep` of all."""
    out = []
    for r in results:
        if len(r.matches) > keep:
            r = attrs.evolve(r, matches=r.matches[:keep])
        keep -= len(r.matches)
        out.append(r)
    return out

"""Scale: matches past max_results are counted, stalled workers give partial results, and the
warm cache keeps to its budget (issue 14, "Scale")."""

from __future__ import annotations

import os
import signal

import pytest

from tether.processes.managed import is_alive
from tether_astgrep.service import AstgrepService

pytestmark = pytest.mark.anyio

WORKERS = {"workers": 2, "parallel_min_files": 10}


def _service(run) -> AstgrepService:
    service: AstgrepService = run.resources["astgrep_service"]
    return service


async def test_max_results_keeps_only_what_is_shown_and_counts_the_rest(astgrep_run) -> None:
    # 40 files x 30 calls: 1,200 matches, known exactly
    files = {f"m{i:02}.py": "".join(f"f({i}, {j})\n" for j in range(30)) for i in range(40)}
    async with astgrep_run(files, config={"astgrep": WORKERS}) as run:
        service = _service(run)
        outcome = await service.search("f($A, $B)", None, "python", max_results=5)
        assert outcome.total == 1200
        # only the five shown were built and kept; the rest are counts
        assert sum(len(r.matches) for r in outcome.files) == 5
        assert sum(r.count for r in outcome.files) == 1200
        assert [(r.path, m[0]) for r in outcome.files for m in r.matches] == [
            ("m00.py", n) for n in range(1, 6)
        ]
        assert len([r for r in outcome.files if r.count]) == 40
        result = await run.call("ast_grep", {"pattern": "f($A, $B)", "max_results": 5})
        assert not result.is_error, result.text_content
        first = result.text_content.splitlines()[0]
        assert first.startswith("1200 matches in 40 files (40 python files searched)")
        assert "5 of 1200 shown" in result.text_content
        assert result.meta["total"] == 1200 and result.meta["shown"] == 5
        assert len(result.meta["matches"]) == 5
        # in-process (below parallel_min_files) alike
        scoped = await service.search("f($A, $B)", "m07.py", None, max_results=2)
        assert scoped.total == 30 and sum(len(r.matches) for r in scoped.files) == 2


def _cont(pid: int) -> None:
    """Let a stopped worker go on, if the pool has not already killed and reaped it."""
    if is_alive(pid):
        os.kill(pid, signal.SIGCONT)


async def test_a_worker_that_stays_stopped_is_replaced_and_the_others_keep_their_cache(
    astgrep_run, worker_start
) -> None:
    files = {f"m{i:02}.py": f"f({i})\n" for i in range(40)}
    config = {"astgrep": {**WORKERS, "search_timeout_s": 1.5}}
    async with astgrep_run(files, config=config) as run:
        service = _service(run)
        for _ in range(2):  # the second search fills the workers' caches
            warm = await run.call("ast_grep", {"pattern": "f($A)", "max_results": 100})
            assert warm.meta["total"] == 40
        pids = service.worker_pids
        before = await service.cache_stats()
        assert all(s["entries"] > 0 for s in before)
        os.kill(pids[0], signal.SIGSTOP)  # and it stays stopped
        try:
            partial = await run.call("ast_grep", {"pattern": "f($A)", "max_results": 100})
            assert not partial.is_error, partial.text_content
            done = partial.meta["files_done"]
            assert 0 < done < 40 and partial.meta["files_total"] == 40
            assert partial.meta["total"] == done  # one match per file searched
            assert (
                f"stopped after {done} of 40 files: no search worker finished a file for 1.5 s"
                in partial.text_content
            )
            # the stopped worker was killed and reaped (not left to the run's close), and a
            # new one stands in its place; the other worker is the same process
            assert not is_alive(pids[0])
            assert not os.path.exists(f"/proc/{pids[0]}")  # reaped: not even a zombie
            assert pids[0] not in run.process_owner.adopted
            now = service.worker_pids
            assert len(now) == 2 and now[1] == pids[1] and now[0] != pids[0]
            assert is_alive(now[0]) and set(now) <= run.process_owner.adopted
            # the next call works, whole, and the other worker's cache served it
            again = await run.call("ast_grep", {"pattern": "f($A)", "max_results": 100})
            assert not again.is_error and again.meta["total"] == 40
            assert "stopped" not in again.text_content
            after = await service.cache_stats()
            assert len(after) == 2
            assert after[1]["entries"] == before[1]["entries"]
            assert after[1]["hits"] > before[1]["hits"]
            # the replacement caches at once: the run is past its first search
            assert after[0]["entries"] > 0
        finally:
            _cont(pids[0])
        await service.aclose()
        assert not set(now) & run.process_owner.adopted
        assert not any(is_alive(p) for p in now)


async def test_an_edit_that_stops_stages_nothing(astgrep_run) -> None:
    files = {f"m{i:02}.py": f"f({i})\n" for i in range(40)}
    config = {"astgrep": {**WORKERS, "search_timeout_s": 1.0}}
    async with astgrep_run(files, config=config) as run:
        service = _service(run)
        await run.call("ast_grep", {"pattern": "f($A)"})
        stopped = service.worker_pids[1]
        os.kill(stopped, signal.SIGSTOP)
        try:
            edit = await run.call("ast_edit", {"pattern": "f($A)", "rewrite": "g($A)"})
        finally:
            _cont(stopped)
        assert edit.is_error
        assert "stopped after" in edit.text_content and "nothing staged" in edit.text_content
        assert service.staged == {}


async def test_the_cache_keeps_to_its_budget_and_keeps_what_it_has(astgrep_run) -> None:
    # ~200 KB of source; parsed, far more than the 1 MB budget
    body = "".join(f"def g{j}(a, b):\n    return f(a, b) + {j}\n\n" for j in range(40))
    files = {f"m{i:03}.py": body for i in range(200)}
    config = {"astgrep": {**WORKERS, "cache_mb": 1}}
    async with astgrep_run(files, config=config) as run:
        service = _service(run)
        first = await run.call("ast_grep", {"pattern": "f($A, $B)"})
        assert first.meta["total"] == 8000
        # a one-shot search keeps nothing
        assert [s["entries"] for s in await service.cache_stats()] == [0, 0]
        for _ in range(3):  # repeated full scans
            await run.call("ast_grep", {"pattern": "f($A, $B)"})
        stats = await service.cache_stats()
        budget = 1024 * 1024
        assert sum(s["budget"] for s in stats) <= budget
        for s in stats:
            assert 0 < s["used"] <= s["budget"], s
            assert 0 < s["entries"] < 100  # some, not all, of its ~100 files
        # what is kept stays kept (no eviction churn): the last scans hit every entry
        again = await service.cache_stats()
        await run.call("ast_grep", {"pattern": "f($A, $B)"})
        last = await service.cache_stats()
        for a, b in zip(again, last, strict=True):
            assert b["hits"] - a["hits"] == a["entries"] == b["entries"]


async def test_cache_mb_is_bounded(astgrep_run) -> None:
    with pytest.raises(Exception, match="cache_mb"):
        async with astgrep_run({"a.py": "f(1)\n"}, config={"astgrep": {"cache_mb": -1}}):
            pass


async def test_the_matches_shown_are_the_first_by_path_in_nested_directories(astgrep_run) -> None:
    # a walk lists a/z.py before a/b/c.py; by path a/b/c.py comes first
    files = {"a/z.py": "f(1)\n", "a/b/c.py": "f(2)\n", "a/b/d.py": "f(3)\n"}
    async with astgrep_run(files) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)", "max_results": 1})
        assert result.meta["total"] == 3
        assert [m["path"] for m in result.meta["matches"]] == ["a/b/c.py"]


WORD_CASES = {
    # a match, its word tokens at the edges of the file, beside digits and non-ASCII letters
    "edge.py": "print(1)",
    "digits.py": "x = [1if a else 2, print(x)]\n",
    "unicode.py": "éa = 1\nprint(éa)\nxé = print(2)\n",
    # the pattern's words only inside longer words: no match, never parsed
    "pprint.py": "pprint(x)\nsprint_x(y)\nprinter(z)\nfingerprint(w)\n",
}


def test_a_word_inside_a_longer_word_does_not_make_a_file_a_candidate(registry, tmp_path) -> None:
    from tether_astgrep.engine import ProcessState, Task
    from tether_astgrep.pattern import compile_pattern

    for name, code in WORD_CASES.items():
        (tmp_path / name).write_text(code, encoding="utf-8")
    grammar = registry.get("python")
    # caching from the first search: every file parsed is stored, so the cache counts parses
    state = ProcessState(registry, 64 * 1024 * 1024, cache_from_search=1)
    task = Task("search", compile_pattern("print($X)", grammar, strictness="smart"), None, 10**6)
    results = {r.path: r.count for r in state.run(task, str(tmp_path), sorted(WORD_CASES))}
    assert results == {"digits.py": 1, "edge.py": 1, "pprint.py": 0, "unicode.py": 2}
    assert len(state.cache) == 3  # pprint.py was ruled out before parsing


def test_counted_matches_are_the_same_as_built_ones(registry) -> None:
    from tether_astgrep.matcher import Matcher
    from tether_astgrep.pattern import compile_pattern

    grammar = registry.get("python")
    source = b"".join(b"a%d = b\nif x:\n    c = (d := 1)\nf(e=2)\n" % i for i in range(30))
    tree = grammar.parser().parse(source)
    for pattern in ("$A = $B", "$X = $Y\nif $C: $$$B"):
        matcher = Matcher(compile_pattern(pattern, grammar), grammar)
        every = matcher.find(tree, source)
        assert every
        for keep in (0, 1, 7, None):
            built, count = matcher.find_counted(tree, source, keep)
            assert count == len(every)
            assert built == (every if keep is None else every[:keep])


@pytest.mark.parametrize(("files", "takers"), [(0, 2), (1, 2), (279, 2), (1790, 2), (500, 1)])
def test_chunks_shrink_towards_the_end_so_no_worker_is_left_with_much(files, takers) -> None:
    from tether_astgrep.engine import CHUNK_FILES, chunked

    paths = [f"f{i:05}.py" for i in range(files)]
    chunks = chunked(paths, takers)
    assert [p for c in chunks for p in c] == paths  # every file once, in order
    sizes = [len(c) for c in chunks]
    assert sizes == sorted(sizes, reverse=True) and all(0 < s <= CHUNK_FILES for s in sizes)
    left = files
    for size in sizes:  # never more than a quarter of what is left per taker (at least 1)
        assert size <= max(1, left // (4 * takers))
        left -= size
    if files >= 4 * takers:  # the last 4 files per taker go out one by one
        assert sizes[-4 * takers :] == [1] * (4 * takers)

"""A served run (``tether serve`` warms it: ``run.warm()``) searches again and again: its first
search keeps the trees it parses; a search repeated over the same unchanged files is answered
by the run's process as it was (the workers not asked); and when some files changed, the
workers match only those again, giving the others' matches as they found them (issue 32:
``tether call --attach ast_grep`` on a 300-file project against the ast-grep CLI). The answers
are those of a run that keeps nothing.

Generated over where the search runs (the run's own process, or two workers started by fork or
by spawn) and over what the repeat asks (the same, more matches described, another pattern,
after a file changed)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tether_astgrep.service import AstgrepService

pytestmark = pytest.mark.anyio

PATTERN = "def $F($$$A): $$$B"
FILES = {
    f"m{i:02}.py": "".join(f"def f{i}_{j}(a, b=1):\n    return a * {j}\n\n" for j in range(5))
    for i in range(40)
}
WHERE = {
    "in-process": {"workers": 0},
    "workers": {"workers": 2, "parallel_min_files": 10},
}


def _service(run: Any) -> AstgrepService:
    service: AstgrepService = run.resources["astgrep_service"]
    return service


async def _grep(run: Any, pattern: str = PATTERN, **args: Any) -> Any:
    result = await run.call("ast_grep", {"pattern": pattern, "max_results": 3, **args})
    assert not result.is_error, result.text_content
    return result


def _answer(result: Any) -> tuple[Any, ...]:
    """What a search answers, without the counts of the work it took."""
    meta = {k: v for k, v in result.meta.items() if k not in ("files_parsed", "files_reused")}
    meta.pop("call_id", None)
    return result.text_content, meta


@pytest.fixture(params=sorted(WHERE))
def where(request: pytest.FixtureRequest, worker_start: str) -> dict[str, Any]:
    if request.param == "in-process" and worker_start == "spawn":
        pytest.skip("no workers: nothing is started")
    return WHERE[request.param]


async def test_a_served_run_parses_once_and_a_repeated_search_matches_nothing_again(
    astgrep_run, where, tether_workdir
) -> None:
    async with astgrep_run(FILES, config={"astgrep": where}) as run:
        run.warm()  # what `tether serve` does with the run it serves
        first = await _grep(run)
        assert first.meta["total"] == 200
        assert (first.meta["files_parsed"], first.meta["files_reused"]) == (40, 0)
        before = await _service(run).cache_stats()
        again = await _grep(run)
        assert (again.meta["files_parsed"], again.meta["files_reused"]) == (0, 40)
        assert _answer(again) == _answer(first)
        stats = await _service(run).cache_stats()
        assert sum(s["parsed"] for s in stats) == 40  # every file parsed once, in all
        assert sum(s["entries"] for s in stats) == 40
        # the run answered alone: no worker (nor its own search state) looked at a file
        assert [s["hits"] for s in stats] == [s["hits"] for s in before]
        # more matches described than the kept results hold: those files are matched again
        # (their trees still cached), the others' results given again
        more = await _grep(run, max_results=12)
        assert more.meta["files_parsed"] == 0 and more.meta["shown"] == 12
        assert 0 < more.meta["files_reused"] < 40
        # another pattern: the trees serve it, the results of the first do not
        other = await _grep(run, "return a * $N")
        assert other.meta["total"] == 200
        assert (other.meta["files_parsed"], other.meta["files_reused"]) == (0, 0)
        # another strictness is another search
        relaxed = await _grep(run, strictness="ast")
        assert relaxed.meta["files_reused"] == 0
        # a file that changes is read and parsed again, its new matches found
        path = tether_workdir / "m00.py"
        path.write_text(path.read_text() + "def extra(x):\n    return x\n")
        os.utime(path, ns=(1, 1))  # a new mtime even where the clock is coarse
        before = await _service(run).cache_stats()
        changed = await _grep(run)
        assert changed.meta["total"] == 201
        assert (changed.meta["files_parsed"], changed.meta["files_reused"]) == (1, 39)
        stats = await _service(run).cache_stats()
        assert sum(s["parsed"] for s in stats) == 41
        # given again by the search state holding each file's tree
        assert sum(s["reused"] for s in stats) - sum(s["reused"] for s in before) == 39
        assert _answer(changed) == _answer(await _grep(run))
    # the same answers from a run that keeps nothing (not warmed, one search)
    async with astgrep_run(config={"astgrep": where}) as cold:
        assert _answer(await _grep(cold)) == _answer(changed)


async def test_results_kept_count_against_the_cache_budget(astgrep_run, tether_workdir) -> None:
    async with astgrep_run(FILES, config={"astgrep": {"workers": 0}}) as run:
        run.warm()
        await _grep(run)
        trees = (await _service(run).cache_stats())[0]["used"]
        await _grep(run)
        await _grep(run, max_results=200)  # every match described, and kept
        (stats,) = await _service(run).cache_stats()
        assert stats["used"] > trees and stats["used"] <= stats["budget"]


def _change(workdir: Any, how: str) -> None:
    path = workdir / "m00.py"  # its matches are the ones shown
    if how == "rewritten":  # the same size and mtime: only the inode tells
        st = path.stat()
        new = workdir / "new.tmp"
        new.write_text(path.read_text().replace("return a * 0", "return b * 0"))
        os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(new, path)
    elif how == "removed":
        path.unlink()
    elif how == "added":
        (workdir / "zz.py").write_text("def late(a):\n    return a\n")
    elif how == "linked":  # a link is never followed: the file is no longer searched
        path.unlink()
        path.symlink_to(workdir / "m02.py")


@pytest.mark.parametrize("how", ["rewritten", "removed", "added", "linked"])
async def test_a_kept_answer_is_never_given_once_a_file_changed(
    astgrep_run, tether_workdir, how
) -> None:
    async with astgrep_run(FILES, config={"astgrep": {"workers": 0}}) as run:
        run.warm()
        await _grep(run)
        _change(tether_workdir, how)
        after = await _grep(run)
    async with astgrep_run(config={"astgrep": {"workers": 0}}) as cold:
        assert _answer(await _grep(cold)) == _answer(after)

"""The worker pool without fork (``spawn``: macOS, where fork is unsafe in a threaded process,
and Linux under ``TETHER_PORTABLE=1``): the same results as forked workers and as the run's own
process, workers that die with the run, and a grammar the workers cannot rebuild searched by
the run itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tether
from tether.processes import procinfo
from tether.processes.managed import is_alive
from tether_astgrep import engine
from tether_astgrep.grammars import Grammar, Scaffold

pytestmark = pytest.mark.anyio

#: real code: this plugin's own sources (more than parallel_min_files below)
SOURCES = Path(engine.__file__).parent
CORPUS: dict[str, str | bytes] = {
    f"pkg/{p.name}": p.read_bytes() for p in sorted(SOURCES.glob("*.py"))
}
PARALLEL = {"parallel_min_files": 5}
PATTERNS = ["def $F($$$A): $$$B", "self.$X", "$A == $B", "raise $E", "return $R"]


async def _outcomes(astgrep_run, workers: int) -> tuple[list[object], str | None, list[str]]:
    config = {"astgrep": {"workers": workers, **PARALLEL}}
    async with astgrep_run(CORPUS, config=config) as run:
        service = run.resources["astgrep_service"]
        seen: list[object] = []
        # the first search hands chunks to whichever worker is free; the second shards the
        # files by path and caches, the third reads from the caches
        for _ in range(3):
            for pattern in PATTERNS:
                outcome = await service.search(pattern, None, "python", max_results=30)
                seen.append((pattern, outcome.total, sorted(outcome.files, key=lambda r: r.path)))
        edit = await service.search("raise $E", None, "python", mode="edit", rewrite="raise ($E)")
        seen.append(sorted(edit.files, key=lambda r: r.path))
        pool = service._pool
        start = pool.start_method if pool is not None else None
        cmdlines = [b" ".join(procinfo.cmdline(pid) or []).decode() for pid in service.worker_pids]
    return seen, start, cmdlines


async def test_results_are_identical_with_forked_spawned_and_no_workers(
    astgrep_run, monkeypatch
) -> None:
    assert len(CORPUS) > PARALLEL["parallel_min_files"]
    found = {}
    for start in ("fork", "spawn"):
        monkeypatch.setattr(engine, "default_start_method", lambda start=start: start)
        seen, used, cmdlines = await _outcomes(astgrep_run, workers=2)
        assert used == start and len(cmdlines) == 2
        # a spawned worker is a fresh interpreter running the worker, not a copy of the run
        assert all((engine.SPAWNED_WORKER in c) == (start == "spawn") for c in cmdlines)
        found[start] = seen
    local, used, _ = await _outcomes(astgrep_run, workers=0)
    assert used is None
    assert found["fork"] == local
    assert found["spawn"] == local
    assert sum(total for _, total, _ in local[: len(PATTERNS)]) > 100  # a real search


def _closure_grammar() -> Grammar:
    import tree_sitter_python

    return Grammar(
        id="pyx",
        extensions=(".pyx",),
        language=lambda: tree_sitter_python.language(),  # a lambda: it does not pickle
        scaffolds=(Scaffold("statement", "", ""),),
    )


class _Cython:
    @tether.hookimpl
    def tether_astgrep_grammars(self) -> list[Grammar]:
        return [_closure_grammar()]


async def test_a_grammar_that_does_not_pickle_is_searched_by_the_run(
    astgrep_run, worker_start
) -> None:
    files: dict[str, str | bytes] = {f"m{i:02}.pyx": f"f({i})\n" for i in range(12)}
    config = {"astgrep": {"workers": 2, **PARALLEL}}
    async with astgrep_run(files, config=config, plugins=[_Cython()]) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)", "max_results": 100})
        assert not result.is_error, result.text_content
        assert result.meta["total"] == 12
        service = run.resources["astgrep_service"]
        pool = service._pool
        assert pool is not None and pool.serves("python")
        # forked workers inherit it; spawned ones could not rebuild it, so the run searched
        assert pool.serves("pyx") == (worker_start == "fork")
        assert bool(service.worker_pids) == (worker_start == "fork")


KILLED_RUN = """
import json, sys, time, anyio, tether, tether_astgrep.hooks
from tether_astgrep import engine

async def main(workdir):
    config = {"astgrep": {"workers": 2, "parallel_min_files": 1}}
    async with tether.open_run(
        workdir, conversation_id="c", entry_points=False, plugins=[tether_astgrep.hooks],
        config=config,
    ) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        service = run.resources["astgrep_service"]
        print(json.dumps({"total": result.meta["total"], "pids": service.worker_pids,
                          "start": service._pool.start_method}), flush=True)
        await anyio.sleep(600)

anyio.run(main, sys.argv[1])
"""


@pytest.mark.parametrize(("env", "start"), [({}, "fork"), ({procinfo.PORTABLE_ENV: "1"}, "spawn")])
def test_no_worker_outlives_a_killed_run(tmp_path, env, start) -> None:
    """SIGKILL gives the run no chance to stop its workers: each sees its pipe close and exits.
    ``TETHER_PORTABLE=1`` (the portable backend, as on macOS) is what makes the pool spawn."""
    if procinfo.portable() and start == "fork":
        pytest.skip("the portable backend spawns: this machine runs as macOS would")
    for i in range(4):
        (tmp_path / f"m{i}.py").write_text(f"f({i})\n")
    base = {k: v for k, v in os.environ.items() if k != procinfo.PORTABLE_ENV}
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_RUN, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**base, **env},
    )
    try:
        assert proc.stdout is not None
        seen = json.loads(proc.stdout.readline())
        assert seen["total"] == 4 and seen["start"] == start
        pids = seen["pids"]
        assert len(pids) == 2 and all(is_alive(p) for p in pids)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 15
    while any(is_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in pids if is_alive(p)], "workers outlived their run"

"""What ast_grep's worker pool costs to start with ``fork`` (Linux) and with ``spawn`` (macOS,
where fork is unsafe in a threaded process, and Linux under ``TETHER_PORTABLE=1``). Not a
test; not run in CI.

    uv run python plugins/astgrep/benchmarks/spawn_cost.py [--samples 7] [--workers 2]

Per start method: the median wall time from a new pool to the end of its first search of two
one-line files (every worker started and ready — a spawned one is a fresh interpreter that
imports the engine and rebuilds the grammars sent to it pickled — and Python's grammar loaded
in it), then a second search on the same pool (the workers already running). The run's own
process has searched once before, as a run that reaches the pool has.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from tether_astgrep.engine import ProcessState, StartMethod, Task, WorkerPool
from tether_astgrep.grammars import GrammarRegistry, all_grammars
from tether_astgrep.pattern import compile_pattern


def once(
    method: StartMethod, registry: GrammarRegistry, task: Task, root: str, workers: int
) -> tuple[float, float]:
    files = ["a.py", "b.py"]
    pool = WorkerPool(registry, workers, 64 * 2**20, start=method)
    try:
        start = time.perf_counter()
        first = pool.run(task, root, files, stall_s=120)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        second = pool.run(task, root, files, stall_s=120)
        warm = time.perf_counter() - start
    finally:
        pool.stop()
    assert sum(r.count for r in first.results) == 2 == sum(r.count for r in second.results)
    return cold, warm


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=7)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    registry = GrammarRegistry(all_grammars())
    python = registry.get("python")
    assert python is not None
    task = Task("search", compile_pattern("f($A)", python), None, 1 << 20)
    with tempfile.TemporaryDirectory() as root:
        for name in ("a.py", "b.py"):
            (Path(root) / name).write_text("f(1)\n")
        ProcessState(registry, 0).run(task, root, ["a.py"])  # the run has searched once
        print(
            f"load average {os.getloadavg()[0]:.2f}; {args.workers} workers, median of "
            f"{args.samples}: new pool -> first search done, then a second search"
        )
        methods: tuple[StartMethod, ...] = ("fork", "spawn")
        for method in methods:
            times = [once(method, registry, task, root, args.workers) for _ in range(args.samples)]
            cold = statistics.median(t[0] for t in times)
            warm = statistics.median(t[1] for t in times)
            print(f"{method:<6} first {cold * 1000:8.1f} ms   second {warm * 1000:6.1f} ms")
        print(f"load average {os.getloadavg()[0]:.2f} after")


if __name__ == "__main__":
    main()

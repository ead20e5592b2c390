"""The CPU of matching a pattern not asked before over cached trees, in one process.

    uv run python plugins/astgrep/benchmarks/match_cost.py [--runs 9] [--profile]

The project is serve.py's generated one (300 files, 20 functions each). One `ProcessState`
parses and caches every file with a first search; then each pattern is searched `--runs`
times, each time with its metavariables renamed (a pattern not asked before: no kept result
applies), as the served run's workers do it. Printed per pattern: the CPU time of
`ProcessState.run` (min and median, ms), the total count and the µs per match. To compare
with another commit, run this script with that commit's sources first on PYTHONPATH
(`git archive COMMIT | tar -x -C /tmp/base`, then `PYTHONPATH=/tmp/base/plugins/astgrep/src`),
alternating the two. `--profile` prints cProfile's top functions for the first pattern.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[3] / "contrib" / "mcp-bridge" / "benchmarks"))
from serve import generated_project

from tether_astgrep.engine import ProcessState, Task
from tether_astgrep.grammars import GrammarRegistry, all_grammars
from tether_astgrep.pattern import compile_readings

PATTERNS = [
    "def $F($$$A): $$$B",
    "$X = $A + $B",
    "def $F($A, $B): $$$C",
    "return $X * $Y",
]


def renamed(pattern: str, run: int) -> str:
    """The pattern with each metavariable's name made new (`$F` -> `$F_3`)."""
    return re.sub(r"(\$+)([A-Z]\w*)", lambda m: f"{m[1]}{m[2]}_{run}", pattern)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--keep", type=int, default=50, help="matches described (max_results)")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("patterns", nargs="*", default=PATTERNS)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="match-cost-"))
    generated_project(root)
    files = sorted(p.name for p in root.glob("*.py"))
    registry = GrammarRegistry()
    for grammar in all_grammars():
        registry.add(grammar, origin="builtin")
    python = registry.get("python")
    assert python is not None
    state = ProcessState(registry, 512 << 20, cache_from_search=1)

    def task(source: str) -> Task:
        compiled = next(iter(compile_readings(source, python, strictness="smart", most=1)))
        return Task("search", compiled, None, 10 << 20, keep=args.keep)

    state.run(task("def $WARM($$$A): $$$B"), str(root), files)  # parse and cache every file
    for pattern in args.patterns:
        state.run(task(renamed(pattern, 0)), str(root), files)  # the children kept
        times, count = [], 0
        for run in range(1, args.runs + 1):
            t = task(renamed(pattern, run))
            began = time.process_time()
            out = state.run(t, str(root), files)
            times.append((time.process_time() - began) * 1000)
            count = sum(r.count for r in out)
        best = min(times)
        print(
            f"{pattern!r}: min {best:.1f} ms, median {statistics.median(times):.1f} ms,"
            f" {count} matches, {best * 1000 / max(count, 1):.2f} µs a match"
        )
        if args.profile and pattern == args.patterns[0]:
            profile = cProfile.Profile()
            t = task(renamed(pattern, args.runs + 1))
            profile.enable()
            state.run(t, str(root), files)
            profile.disable()
            pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()

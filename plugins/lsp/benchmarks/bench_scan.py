"""What the per-query root scan (issue 25 item 4) costs on a big tree.

Run by hand (not in CI): ``uv run python plugins/lsp/benchmarks/bench_scan.py TREE [SUFFIX ...]``
(default suffixes ``.py .pyi``). Each query of a server scans its root's file stamps
(:func:`tether_lsp.documents.scan_root`) to find the files another process changed — or, where
inotify is available, asks the root's watch (:class:`tether_lsp.watch.TreeWatch`) for the files
changed since the last query, behind its barrier. This prints the files found, the directories
walked and the median / p90 / max milliseconds of a warm scan (the page cache warm, as on a
second query), then of the watch's answer with nothing changed and with one file touched by
another process, over ``ROUNDS`` queries each, and what setting up the watch cost.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tether.workdir.reading import Reader
from tether_lsp.documents import scan_root, skipped_dir
from tether_lsp.watch import TreeWatch

ROUNDS = 30


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: bench_scan.py TREE [SUFFIX ...]")
    root = Path(sys.argv[1]).resolve()
    suffixes = frozenset(sys.argv[2:] or [".py", ".pyi"])
    reader = Reader(root)
    scan_root(reader, suffixes)  # warm the page cache
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        found = scan_root(reader, suffixes)
        times.append((time.perf_counter() - started) * 1000)
    dirs = sum(1 for _ in os.walk(root))
    print(f"{root}: {len(found)} source files, {dirs} directories")
    print(f"  scan: {_figures(times)} (load {os.getloadavg()[0]:.2f})")
    started = time.perf_counter()
    watch = TreeWatch(str(root), skipped_dir)
    print(f"  watch set up in {(time.perf_counter() - started) * 1000:.0f} ms")
    touched = next(iter(found))
    try:
        for label, touch in (("nothing changed", False), ("one file touched", True)):
            times = []
            for _ in range(ROUNDS):
                if touch:  # another process, finished before the query starts
                    subprocess.run(["touch", touched], check=True)
                started = time.perf_counter()
                changed = watch.changed()
                times.append((time.perf_counter() - started) * 1000)
                assert changed is not None and (touched in changed) == touch, changed
            print(f"  watch, {label}: {_figures(times)} (load {os.getloadavg()[0]:.2f})")
    finally:
        watch.close()


def _figures(times: list[float]) -> str:
    times = sorted(times)
    return (
        f"ms median {statistics.median(times):.2f}, p90 {times[int(len(times) * 0.9)]:.2f}, "
        f"max {times[-1]:.2f}"
    )


if __name__ == "__main__":
    main()

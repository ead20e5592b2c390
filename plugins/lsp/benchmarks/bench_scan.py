"""What the per-query root scan (issue 25 item 4) costs on a big tree.

Run by hand (not in CI): ``uv run python plugins/lsp/benchmarks/bench_scan.py TREE [SUFFIX ...]``
(default suffixes ``.py .pyi``). Each query of a server scans its root's file stamps
(:func:`tether_lsp.documents.scan_root`) to find the files another process changed; this prints
the files found, the directories walked and the median / p90 / max milliseconds of a warm scan
(the page cache warm, as on a second query), over ``ROUNDS`` scans.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

from tether.reading import Reader
from tether_lsp.documents import scan_root

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
    times.sort()
    print(
        f"{root}: {len(found)} source files, {dirs} directories; scan ms median "
        f"{statistics.median(times):.1f}, p90 {times[int(len(times) * 0.9)]:.1f}, "
        f"max {times[-1]:.1f} (load {os.getloadavg()[0]:.2f})"
    )


if __name__ == "__main__":
    main()

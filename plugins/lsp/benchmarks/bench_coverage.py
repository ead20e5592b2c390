"""What the textual coverage check (issue 31 §3) costs on a big tree.

Run by hand (not in CI): ``uv run python plugins/lsp/benchmarks/bench_coverage.py TREE NAME
[SUFFIX ...]`` (default suffixes: every built-in server's). Prints, for a whole-word search of
``NAME``:

- the naive pass: every source file read through the core's reader and searched (what the
  cross-check of ``references`` did on every query before the index);
- the index's first search (every file read and indexed; unbounded budget here);
- the index's warm search (nothing changed: only the files whose identifiers may hold the
  name are read), median / p90 over ``ROUNDS``;
- the same after another process touched ``TOUCHED`` files (the watch names them; only they
  are read again);
- the index's memory (its hashes).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

from tether.workdir.reading import Reader
from tether_lsp.coverage import NameIndex
from tether_lsp.documents import scan_root
from tether_lsp.servers import BUILTIN_SERVERS

ROUNDS = 20
TOUCHED = 10


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit("usage: bench_coverage.py TREE NAME [SUFFIX ...]")
    root = Path(sys.argv[1]).resolve()
    name = sys.argv[2]
    suffixes = frozenset(sys.argv[3:] or {s for spec in BUILTIN_SERVERS for s in spec.extensions})
    word = name.encode()
    with Reader(root) as reader:
        listed = scan_root(reader, suffixes)
        start = time.perf_counter()
        hits = 0
        for path in sorted(listed):
            try:
                if word in reader.read(path, max_bytes=1 << 20):
                    hits += 1
            except Exception:
                continue
        naive = _ms(start)
        index = NameIndex(root, suffixes)
        start = time.perf_counter()
        first = index.search(reader, name, suffixes, budget_s=3600)
        cold = _ms(start)
        warm = []
        for _ in range(ROUNDS):
            start = time.perf_counter()
            found = index.search(reader, name, suffixes)
            warm.append(_ms(start))
        paths = sorted(listed)[:: max(1, len(listed) // TOUCHED)][:TOUCHED]
        touched = []
        for _ in range(5):
            for path in paths:
                os.utime(path)
            start = time.perf_counter()
            index.search(reader, name, suffixes)
            touched.append(_ms(start))
        index.close()
    entries = sum(len(entry[2]) for entry in index._words.values())
    warm.sort()
    print(f"tree {root}: {len(listed)} source files; `{name}` in {len(found.lines)} files")
    print(f"naive reader pass: {naive:.0f} ms ({hits} files hold the bytes)")
    print(f"index first search (builds it): {cold:.0f} ms, {first.searched} files searched")
    print(
        f"index warm search: median {statistics.median(warm):.1f} ms, "
        f"p90 {warm[int(len(warm) * 0.9) - 1]:.1f} ms"
    )
    print(f"after {TOUCHED} files touched: median {statistics.median(touched):.1f} ms (5 rounds)")
    print(f"index size: {entries} hashes, {entries * 8 / 1e6:.1f} MB")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()

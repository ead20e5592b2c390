"""tether ast_grep vs the ast-grep CLI on CPython's standard library (not a test; not run in CI).

    uv sync --package tether-astgrep --group bench
    uv run python plugins/astgrep/benchmarks/bench_stdlib.py [--repeat 2] [--corpus DIR]

Per pattern it prints: tether cold (a fresh `tether call` process, as a user runs it), tether
warm (the pattern asked for the first time in a `tether session` that has already searched the
corpus with other patterns), ast-grep (`ast-grep run -p P -l python`), both ratios, and whether
the sets of file:line matches agree. It also prints the peak memory of tether's process tree
(sum of proportional set sizes, sampled; shared pages of the forked workers counted once).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

PATTERNS = [
    "isinstance($X, $T)",
    "$A.append($B)",
    "print($$$ARGS)",
    "$X == $X",
    "len($X) == 0",
    "raise $E from $C",
    "super().__init__($$$A)",
    "$D[$K] = $D.get($K, $V)",
    "getattr($O, $N, None)",
    "sorted($$$A, key=$K, $$$B)",
    "if $X is None: $$$B",
]
# Searched first in the warm session so the run has parsed the corpus already.
WARMUP = ["import $M", "return $X", "self.$A = $B"]


def compile_bytecode() -> None:
    """Byte-compile tether and its dependencies, as pip does when it installs a package.

    Without it, a cold call in an environment without bytecode (uv installs none by default)
    and with PYTHONDONTWRITEBYTECODE set compiles every module it imports, every time: about
    0.16 s per call here, which measures the environment, not tether.
    """
    import compileall

    base = Path(sys.base_prefix).resolve()
    # sys.path[0] is this script's directory (or the current one): not an install.
    for entry in filter(None, sys.path[1:]):
        path = Path(entry).resolve()
        if path.is_dir() and base not in path.parents and path != base:
            compileall.compile_dir(path, quiet=1)


def copy_stdlib(dest: Path) -> Path:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for src in stdlib.rglob("*.py"):
        rel = src.relative_to(stdlib)
        if rel.parts[0] in ("site-packages", "dist-packages"):
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
    return dest


class PeakMemory:
    """Samples the summed PSS (falling back to RSS) of a process and its descendants."""

    def __init__(self, pid: int) -> None:
        self.proc = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> int:
        total = 0
        try:
            procs = [self.proc, *self.proc.children(recursive=True)]
        except psutil.Error:
            return 0
        for p in procs:
            try:
                info = p.memory_full_info()
                total += getattr(info, "pss", 0) or info.rss
            except psutil.Error:
                pass
        return total

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, self._sample())

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def tether_bin() -> str:
    return str(Path(sys.executable).parent / "tether")


def ast_grep_bin() -> str:
    found = shutil.which("ast-grep", path=str(Path(sys.executable).parent)) or shutil.which(
        "ast-grep"
    )
    if not found:
        sys.exit("ast-grep is not installed: uv sync --package tether-astgrep --group bench")
    return found


def run_ast_grep(pattern: str, corpus: Path) -> tuple[float, set[tuple[str, int]]]:
    start = time.perf_counter()
    out = subprocess.run(
        [ast_grep_bin(), "run", "-p", pattern, "-l", "python", "--json=stream"],
        cwd=corpus,
        capture_output=True,
        check=False,
        timeout=600,
    )
    wall = time.perf_counter() - start
    found = set()
    for line in out.stdout.decode().splitlines():
        m = json.loads(line)
        found.add((m["file"], m["range"]["start"]["line"] + 1))
    return wall, found


def _tether_matches(meta: dict[str, Any]) -> set[tuple[str, int]]:
    return {(m["path"], m["line"]) for m in meta.get("matches", [])}


def run_tether_cold(
    pattern: str, corpus: Path, *, sample_memory: bool = False
) -> tuple[float, set[tuple[str, int]], int]:
    """One fresh `tether call`: wall time, matches, and peak memory if `sample_memory`.

    Sampling reads every process's smaps several times a second, on the same cores: about
    0.1 s of a 1.4 s search here. So a sampled run's time is not one to report.
    """
    args = json.dumps({"pattern": pattern, "language": "python", "max_results": 1_000_000})
    start = time.perf_counter()
    proc = subprocess.Popen(
        [tether_bin(), "call", "ast_grep", args, "--workdir", str(corpus)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    peak = 0
    if sample_memory:
        with PeakMemory(proc.pid) as mem:
            out, _ = proc.communicate(timeout=600)
        peak = mem.peak
    else:
        out, _ = proc.communicate(timeout=600)
    wall = time.perf_counter() - start
    reply = json.loads(out)
    if reply["is_error"]:
        raise SystemExit(f"tether failed on {pattern!r}: {reply['content']}")
    return wall, _tether_matches(reply["meta"]), peak


class Session:
    def __init__(self, corpus: Path) -> None:
        self.proc = subprocess.Popen(
            [tether_bin(), "session", "--workdir", str(corpus)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.next_id = 0

    def ask(self, pattern: str) -> tuple[float, dict[str, Any]]:
        assert self.proc.stdin and self.proc.stdout
        self.next_id += 1
        request = {
            "id": self.next_id,
            "tool": "ast_grep",
            "args": {"pattern": pattern, "language": "python", "max_results": 1_000_000},
        }
        start = time.perf_counter()
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        wall = time.perf_counter() - start
        if reply["is_error"]:
            raise SystemExit(f"tether session failed on {pattern!r}: {reply['content']}")
        return wall, reply

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, help="default: a copy of this Python's stdlib")
    parser.add_argument(
        "--repeat", type=int, default=2, help="cold runs per tool and pattern (min)"
    )
    parser.add_argument("--warm-only", action="store_true", help="skip the cold tether runs")
    parser.add_argument(
        "--no-compile", action="store_true", help="do not byte-compile tether's environment first"
    )
    opts = parser.parse_args()
    if not opts.no_compile:
        compile_bytecode()
    tmp = None
    if opts.corpus is None:
        tmp = tempfile.TemporaryDirectory(prefix="tether-bench-")
        corpus = copy_stdlib(Path(tmp.name) / "stdlib")
    else:
        corpus = opts.corpus.resolve()
    n_files = sum(1 for _ in corpus.rglob("*.py"))
    print(f"corpus: {corpus} ({n_files} .py files), {os.cpu_count()} cores, repeat={opts.repeat}")

    rows = []
    cold_peak = 0
    for pattern in PATTERNS:
        ag_times, tc_times = [], []
        ag_set: set[tuple[str, int]] = set()
        tc_set: set[tuple[str, int]] = set()
        for _ in range(opts.repeat):  # interleaved, so background load hits both alike
            wall, ag_set = run_ast_grep(pattern, corpus)
            ag_times.append(wall)
            if opts.warm_only:
                tc_times.append(float("nan"))
                continue
            wall, tc_set, _ = run_tether_cold(pattern, corpus)
            tc_times.append(wall)
        if not opts.warm_only:  # one more run, untimed, for the peak memory
            _, _, peak = run_tether_cold(pattern, corpus, sample_memory=True)
            cold_peak = max(cold_peak, peak)
        rows.append(
            {
                "pattern": pattern,
                "ag": min(ag_times),
                "cold": min(tc_times),
                "ag_set": ag_set,
                "tc_set": tc_set,
            }
        )

    session = Session(corpus)
    with PeakMemory(session.proc.pid) as mem:
        warm_up = 0.0
        for pattern in WARMUP:
            warm_up += session.ask(pattern)[0]
        for row in rows:
            wall, reply = session.ask(row["pattern"])
            row["warm"] = wall
            row["warm_set"] = _tether_matches(reply["meta"])
            if opts.warm_only:
                row["tc_set"] = row["warm_set"]
        session.close()
    print(f"warm-up ({', '.join(WARMUP)}): {warm_up:.2f} s")

    header = f"{'pattern':<30} {'cold s':>7} {'warm s':>7} {'ast-grep s':>10} {'cold/ag':>8} {'warm/ag':>8}  matches (tether/ast-grep)"
    print(header)
    print("-" * len(header))
    for r in rows:
        agree = (
            "same"
            if r["tc_set"] == r["ag_set"]
            else (
                f"+{len(r['tc_set'] - r['ag_set'])} only tether, -{len(r['ag_set'] - r['tc_set'])} only ast-grep"
            )
        )
        assert r["warm_set"] == r["tc_set"], f"warm and cold disagree on {r['pattern']}"
        print(
            f"{r['pattern']:<30} {r['cold']:7.2f} {r['warm']:7.2f} {r['ag']:10.2f} "
            f"{r['cold'] / r['ag']:8.2f} {r['warm'] / r['ag']:8.2f}  "
            f"{len(r['tc_set'])}/{len(r['ag_set'])} {agree}"
        )
    cold_ratio = statistics.median(r["cold"] / r["ag"] for r in rows)
    warm_ratio = statistics.median(r["warm"] / r["ag"] for r in rows)
    print(
        f"median ratio: cold {cold_ratio:.2f} (target <= 1.0), warm {warm_ratio:.2f} (target <= 0.25)"
    )
    print(
        f"peak memory (PSS, process tree): cold {cold_peak / 2**20:.0f} MB, "
        f"warm session {mem.peak / 2**20:.0f} MB (target <= 1024 MB)"
    )
    for r in rows:
        if r["tc_set"] != r["ag_set"]:
            only_t = sorted(r["tc_set"] - r["ag_set"])[:3]
            only_a = sorted(r["ag_set"] - r["tc_set"])[:3]
            print(f"  {r['pattern']}: only tether {only_t}; only ast-grep {only_a}")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()

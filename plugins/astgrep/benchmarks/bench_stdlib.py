"""tether ast_grep vs the ast-grep CLI on Python corpora (not a test; not run in CI).

    uv sync --package tether-astgrep --group bench
    uv run python plugins/astgrep/benchmarks/bench_stdlib.py [--repeat 3] [--corpus DIR] [--big]

Corpora: a small project (every sixth file of this Python's stdlib, about 300 files; left out
with `--no-small` or `--corpus`), then a copy of the whole stdlib or `--corpus DIR`, and with
`--big` one of at least 18,000 `.py` files assembled at run time from real code already on the
machine (the pyenv interpreters' libraries and site-packages, /usr/lib/python3*, virtual
environments' site-packages; hard links where possible), deleted afterwards, never committed.

Per pattern it prints: tether cold (a fresh `tether call` process, as a user runs it), tether
warm (the pattern asked for the first time in a `tether session` that has already searched
the corpus with other patterns), ast-grep (`ast-grep run -p P -l python`), both ratios (the
median of `--repeat` interleaved runs each), the peak memory of each (tether: summed PSS of
its process and workers, sampled in one more, untimed, call; ast-grep: its maximum RSS, from
wait4; for the warm session, in a second, untimed pass over the same patterns), and both
match counts. Calls ask for `max_results` 50, as an agent does; the counts
are tether's `total` (every match, counted past the 50) and ast-grep's JSON lines. The load
average is printed before and after.

`--against DIR` (a checkout of another commit, e.g. `git worktree add /tmp/old COMMIT`) times
that commit's tether too, in the same run: its cold calls interleaved with this one's and
ast-grep's, its warm session beside this one's (each pattern asked of one, then the other), its
sources put first on `PYTHONPATH`. Both sets of ratios are printed ("before" is DIR's).
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

MAX_RESULTS = 50
PATTERNS = [
    "$A = $B",
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


def copy_stdlib(dest: Path, every: int = 1) -> Path:
    """This Python's stdlib, or every `every`-th of its files in path order (a small project:
    `every=6` gives about 300 files, 5 MB)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    sources = sorted(
        src
        for src in stdlib.rglob("*.py")
        if src.relative_to(stdlib).parts[0] not in ("site-packages", "dist-packages")
    )
    for src in sources[every - 1 :: every]:
        target = dest / src.relative_to(stdlib)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
    return dest


def _big_sources() -> Iterator[Path]:
    roots = sorted(Path("/root/.pyenv/versions").glob("*/lib/python3*"))
    roots += sorted(Path("/usr/lib").glob("python3*"))
    roots += sorted(Path("/work").glob("*/.venv/lib/python3*/site-packages"))
    seen: set[Path] = set()
    for root in roots:
        real = root.resolve()
        if real in seen or not real.is_dir():
            continue
        seen.add(real)
        yield real


def assemble_big(dest: Path, at_least: int) -> Path:
    """At least `at_least` real `.py` files from the machine, one directory per source root."""
    count = 0
    for k, root in enumerate(_big_sources()):
        for src in root.rglob("*.py"):
            if not src.is_file() or src.is_symlink():
                continue
            target = dest / f"{k:02}-{root.parent.name}-{root.name}" / src.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(src, target)
            except OSError:
                try:
                    shutil.copyfile(src, target)
                except OSError:
                    continue
            count += 1
        if count >= at_least:
            return dest
    sys.exit(f"only {count} .py files found on this machine; {at_least} wanted")


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


def run_ast_grep(pattern: str, corpus: Path) -> tuple[float, int, int]:
    """Wall time, match count, and ast-grep's maximum RSS (it is one process)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [ast_grep_bin(), "run", "-p", pattern, "-l", "python", "--json=stream"],
        cwd=corpus,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    count = sum(1 for _ in proc.stdout)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    return wall, count, usage.ru_maxrss * 1024


def _args(pattern: str) -> dict[str, Any]:
    return {"pattern": pattern, "language": "python", "max_results": MAX_RESULTS}


#: the environment of the other commit's tether (`--against`), or None
AGAINST: dict[str, str] | None = None


def against_env(checkout: Path) -> dict[str, str]:
    """This environment with `checkout`'s sources first on PYTHONPATH (its tether runs)."""
    dirs = [checkout / "core/src", *sorted(checkout.glob("plugins/*/src"))]
    dirs += sorted(checkout.glob("contrib/*/src"))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(str(d) for d in dirs if d.is_dir())}


def run_tether_cold(
    pattern: str,
    corpus: Path,
    *,
    sample_memory: bool = False,
    env: dict[str, str] | None = None,
) -> tuple[float, int, int]:
    """One fresh `tether call`: wall time, total matches, and peak memory if `sample_memory`.

    Sampling reads every process's smaps several times a second, on the same cores: about
    0.1 s of a 1.4 s search here. So a sampled run's time is not one to report.
    """
    start = time.perf_counter()
    proc = subprocess.Popen(
        [tether_bin(), "call", "ast_grep", json.dumps(_args(pattern)), "--workdir", str(corpus)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    peak = 0
    if sample_memory:
        with PeakMemory(proc.pid) as mem:
            out, _ = proc.communicate(timeout=1800)
        peak = mem.peak
    else:
        out, _ = proc.communicate(timeout=1800)
    wall = time.perf_counter() - start
    reply = json.loads(out)
    if reply["is_error"]:
        raise SystemExit(f"tether failed on {pattern!r}: {reply['content']}")
    if reply["meta"].get("stopped"):
        raise SystemExit(f"tether stopped early on {pattern!r}: {reply['content']}")
    return wall, int(reply["meta"]["total"]), peak


class Session:
    def __init__(self, corpus: Path, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [tether_bin(), "session", "--workdir", str(corpus)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.proc.stdout
        ready = json.loads(self.proc.stdout.readline())  # the session's first line
        if not ready.get("ready"):
            raise SystemExit(f"tether session did not start: {ready}")
        self.next_id = 0

    def ask(self, pattern: str) -> tuple[float, dict[str, Any]]:
        assert self.proc.stdin and self.proc.stdout
        self.next_id += 1
        request = {"id": self.next_id, "tool": "ast_grep", "args": _args(pattern)}
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
        self.proc.wait(timeout=120)


def bench(corpus: Path, repeat: int, warm_only: bool) -> dict[str, Any]:
    n_files = sum(1 for _ in corpus.rglob("*.py"))
    n_bytes = sum(p.stat().st_size for p in corpus.rglob("*.py"))
    load = os.getloadavg()
    print(
        f"\ncorpus: {corpus} ({n_files} .py files, {n_bytes / 2**20:.0f} MB), "
        f"{os.cpu_count()} cores, repeat={repeat}, load average {load[0]:.2f} {load[1]:.2f}",
        flush=True,
    )
    rows = []
    for pattern in PATTERNS:
        rows.append(_cold_row(pattern, corpus, repeat, warm_only))
        print(f"  {pattern}: done", flush=True)
    warm_up, warm_peak = _warm(corpus, rows, warm_only)
    load_after = os.getloadavg()
    print(f"warm-up ({', '.join(WARMUP)}): {warm_up:.2f} s")
    _print_table(rows)
    cold_ratio = statistics.median(r["cold"] / r["ag"] for r in rows)
    warm_ratio = statistics.median(r["warm"] / r["ag"] for r in rows)
    if AGAINST is not None:
        print(
            "before (--against): median ratio cold "
            f"{statistics.median(r['cold_b'] / r['ag'] for r in rows):.2f}, warm "
            f"{statistics.median(r['warm_b'] / r['ag'] for r in rows):.2f}; per pattern "
            "cold/warm s: "
            + "; ".join(f"{r['pattern']} {r['cold_b']:.2f}/{r['warm_b']:.2f}" for r in rows)
        )
    worst_cold = max(rows, key=lambda r: r["cold"] / r["ag"])
    print(
        f"median ratio: cold {cold_ratio:.2f} (target <= 1.0; worst "
        f"{worst_cold['cold'] / worst_cold['ag']:.2f}, {worst_cold['pattern']}), "
        f"warm {warm_ratio:.2f} (target <= 0.25 stdlib, <= 0.5 at 18k files)"
    )
    print(
        f"peak memory: tether cold {max(r['tc_peak'] for r in rows) / 2**20:.0f} MB "
        f"(PSS, process tree; target <= 500 MB), warm session {warm_peak / 2**20:.0f} MB "
        f"(target <= 1024 MB + the run itself), ast-grep {max(r['ag_peak'] for r in rows) / 2**20:.0f} MB"
    )
    print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f}", flush=True)
    return {"files": n_files, "rows": rows}


def _cold_row(pattern: str, corpus: Path, repeat: int, warm_only: bool) -> dict[str, Any]:
    """One pattern's ast-grep and cold tether runs, interleaved: median times, counts, peaks."""
    ag_times, tc_times, before_times = [], [], []
    ag_count = tc_count = 0
    ag_peak = 0
    for _ in range(repeat):  # interleaved, so background load hits both alike
        wall, ag_count, peak = run_ast_grep(pattern, corpus)
        ag_times.append(wall)
        ag_peak = max(ag_peak, peak)
        if not warm_only:
            wall, tc_count, _ = run_tether_cold(pattern, corpus)
            tc_times.append(wall)
            if AGAINST is not None:
                before_times.append(run_tether_cold(pattern, corpus, env=AGAINST)[0])
    tc_peak = 0
    if not warm_only:  # one more run, untimed, for the peak memory
        _, _, tc_peak = run_tether_cold(pattern, corpus, sample_memory=True)
    return {
        "pattern": pattern,
        "ag": statistics.median(ag_times),
        "cold": statistics.median(tc_times) if tc_times else float("nan"),
        "cold_b": statistics.median(before_times) if before_times else float("nan"),
        "ag_count": ag_count,
        "tc_count": tc_count,
        "ag_peak": ag_peak,
        "tc_peak": tc_peak,
    }


def _warm(corpus: Path, rows: list[dict[str, Any]], warm_only: bool) -> tuple[float, int]:
    """Each row's pattern searched in one warm session (`warm`, `warm_count` added to the
    rows): the warm-up's time and the session's peak memory."""
    session = Session(corpus)
    before = Session(corpus, AGAINST) if AGAINST is not None else None
    warm_up = 0.0
    for pattern in WARMUP:
        warm_up += session.ask(pattern)[0]
        if before is not None:
            before.ask(pattern)
    for row in rows:
        wall, reply = session.ask(row["pattern"])
        if before is not None:
            row["warm_b"] = before.ask(row["pattern"])[0]
        row["warm"] = wall
        row["warm_count"] = int(reply["meta"]["total"])
        if warm_only:
            row["tc_count"] = row["warm_count"]
    # The memory of the warm session, in a second pass over the same patterns, untimed:
    # reading the smaps of workers holding ~500 MB each takes their memory map's lock, and
    # slowed the timed searches by up to half when it ran beside them.
    with PeakMemory(session.proc.pid) as mem:
        for pattern in [*WARMUP, *(r["pattern"] for r in rows)]:
            session.ask(pattern)
    session.close()
    if before is not None:
        before.close()
    return warm_up, mem.peak


def _print_table(rows: list[dict[str, Any]]) -> None:
    header = (
        f"{'pattern':<28} {'cold s':>7} {'warm s':>7} {'ag s':>6} {'cold/ag':>8} "
        f"{'warm/ag':>8} {'cold MB':>8} {'ag MB':>6}  matches tether/ast-grep"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        assert r["warm_count"] == r["tc_count"], f"warm and cold disagree on {r['pattern']}"
        same = "same" if r["tc_count"] == r["ag_count"] else "differ"
        print(
            f"{r['pattern']:<28} {r['cold']:7.2f} {r['warm']:7.2f} {r['ag']:6.2f} "
            f"{r['cold'] / r['ag']:8.2f} {r['warm'] / r['ag']:8.2f} "
            f"{r['tc_peak'] / 2**20:8.0f} {r['ag_peak'] / 2**20:6.0f}  "
            f"{r['tc_count']}/{r['ag_count']} {same}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, help="default: a copy of this Python's stdlib")
    parser.add_argument(
        "--no-small", action="store_true", help="skip the small project (every 6th stdlib file)"
    )
    parser.add_argument("--big", action="store_true", help="also a corpus of >= 18,000 files")
    parser.add_argument("--big-only", action="store_true", help="only the >= 18,000-file one")
    parser.add_argument("--big-files", type=int, default=18_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per tool and pattern")
    parser.add_argument("--warm-only", action="store_true", help="skip the cold tether runs")
    parser.add_argument("--patterns", help="a subset of the patterns, separated by ';'")
    parser.add_argument(
        "--against", type=Path, help="a checkout of another commit, timed in the same run"
    )
    parser.add_argument(
        "--no-compile", action="store_true", help="do not byte-compile tether's environment first"
    )
    opts = parser.parse_args()
    if opts.patterns:
        PATTERNS[:] = opts.patterns.split(";")
    if opts.against:
        global AGAINST
        AGAINST = against_env(opts.against.resolve())
    if not opts.no_compile:
        compile_bytecode()
    with tempfile.TemporaryDirectory(prefix="tether-bench-") as tmp:
        corpora = []
        if not opts.big_only and not opts.corpus and not opts.no_small:
            corpora.append(copy_stdlib(Path(tmp) / "small", every=6))
        if not opts.big_only:
            corpora.append(
                opts.corpus.resolve() if opts.corpus else copy_stdlib(Path(tmp) / "stdlib")
            )
        if opts.big or opts.big_only:
            corpora.append(assemble_big(Path(tmp) / "big", opts.big_files))
        for corpus in corpora:
            bench(corpus, opts.repeat, opts.warm_only)


if __name__ == "__main__":
    main()

"""Cost of `import tether` + plugin discovery + opening and closing a run with every installed
plugin (no server started). Each sample is a fresh interpreter, as a CLI call would be.

    uv run python core/benchmarks/startup.py [--samples 15]

Targets: under 150 ms and under 60 MB RSS. Also prints the bare interpreter for reference, and
the CPU time, which does not depend on what else the machine is doing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

PROBE = r"""
import resource, sys, time, json
t0 = time.perf_counter()
import anyio
import tether
t1 = time.perf_counter()
async def main(workdir):
    async with tether.open_run(workdir, conversation_id="bench", vibe=True) as run:
        return len(run.tools), [i.name for i in run.pm.report if i.status == "loaded"]
tools, plugins = anyio.run(main, sys.argv[1])
t2 = time.perf_counter()
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"import": t1 - t0, "run": t2 - t1, "total": t2 - t0, "rss_mb": usage.ru_maxrss / 1024,
                  "cpu": usage.ru_utime + usage.ru_stime, "tools": tools, "plugins": plugins}))
"""
BARE = "import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=15)
    ns = parser.parse_args()
    # bytecode caches as an installed package has them (a developer shell may disable writing them)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as workdir:

        def sample() -> dict:
            out = subprocess.run(
                [sys.executable, "-c", PROBE, workdir],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            )
            return json.loads(out.stdout)

        sample()  # warm-up: writes the .pyc files
        rows = [sample() for _ in range(ns.samples)]
    bare_rss = float(
        subprocess.run([sys.executable, "-c", BARE], capture_output=True, text=True).stdout
    )
    med = {
        k: statistics.median(r[k] for r in rows)
        for k in ("import", "run", "total", "rss_mb", "cpu")
    }
    total_ok = "ok" if med["total"] < 0.150 else "OVER"
    rss_ok = "ok" if med["rss_mb"] < 60 else "OVER"
    print(f"plugins loaded: {', '.join(rows[0]['plugins'])}; tools registered: {rows[0]['tools']}")
    print(f"import tether      median {med['import'] * 1000:7.1f} ms")
    print(
        f"open+close a run   median {med['run'] * 1000:7.1f} ms   (plugin discovery, wiring, closing)"
    )
    print(
        f"total              median {med['total'] * 1000:7.1f} ms   target < 150 ms  -> {total_ok}"
    )
    print(
        f"CPU of the process median {med['cpu'] * 1000:7.1f} ms   (interpreter start-up included)"
    )
    print(
        f"peak RSS           median {med['rss_mb']:7.1f} MB   target < 60 MB   -> {rss_ok}  (bare interpreter {bare_rss:.1f} MB)"
    )


if __name__ == "__main__":
    main()

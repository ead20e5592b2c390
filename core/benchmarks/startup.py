"""Cost of starting tether: ``import tether``, loading every installed plugin, opening and closing
a run with all of them (no server started). Each sample is a fresh interpreter, as a CLI call
would be; the figures are medians.

    uv run python core/benchmarks/startup.py [--samples 15] [--bytecode cached|none]

Phases, each timed inside the process (the interpreter's own start is not in them):

- ``import tether``
- load plugins: entry-point discovery and importing every plugin's hook module
  (``tether.make_plugin_manager()``)
- open a run: ``open_run`` up to its body (its own discovery again, wiring every plugin's
  resources and tools) — the modules are already imported by then, as in a harness
- close the run

Each phase is shown as wall time (what the targets are about) and as the process's own CPU time,
which a shared, loaded machine inflates much less. Targets, on a quiet machine: ``import tether``
+ loading plugins <= 200 ms; opening + closing a run <= 150 ms; peak RSS < 60 MB. Side by side: the bare interpreter (``python -c pass``, wall time of the whole process)
and ``tether tools`` (wall time of the whole CLI process), what a user waits for.

``--bytecode cached`` (the default) measures what an installed package gives: ``.pyc`` files
present (the warm-up sample writes any that are missing, whatever ``PYTHONDONTWRITEBYTECODE``
says in the calling shell). ``--bytecode none`` measures a checkout whose caches were never
written (a shell with ``PYTHONDONTWRITEBYTECODE=1``): every module is compiled from source on
every start. The report says which one it measured and how many modules were loaded from a
``.pyc``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PROBE = r"""
import resource, sys, time, json
cpu = time.process_time
t0, c0 = time.perf_counter(), cpu()
import anyio
import tether
t1, c1 = time.perf_counter(), cpu()
pm = tether.make_plugin_manager()
t2, c2 = time.perf_counter(), cpu()
marks = {}
async def main(workdir):
    async with tether.open_run(workdir, conversation_id="bench", vibe=True) as run:
        marks["opened"], marks["cpu"] = time.perf_counter(), cpu()
        return len(run.tools), [i.name for i in run.pm.report if i.status == "loaded"]
tools, plugins = anyio.run(main, sys.argv[1])
t4, c4 = time.perf_counter(), cpu()
usage = resource.getrusage(resource.RUSAGE_SELF)
import importlib.util, os
loaded = [m for m in list(sys.modules.values())
          if getattr(getattr(m, "__spec__", None), "cached", None)
          and getattr(m.__spec__, "origin", "").endswith(".py")]
from_pyc = sum(os.path.exists(m.__spec__.cached) for m in loaded)
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "open": marks["opened"] - t2,
                  "close": t4 - marks["opened"], "rss_mb": usage.ru_maxrss / 1024,
                  "cpu_import": c1 - c0, "cpu_load": c2 - c1, "cpu_open": marks["cpu"] - c2,
                  "cpu_close": c4 - marks["cpu"],
                  "cpu": usage.ru_utime + usage.ru_stime, "tools": tools, "plugins": plugins,
                  "modules": len(loaded), "from_pyc": from_pyc}))
"""
BARE = "import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"


def _tether_cli() -> list[str]:
    exe = shutil.which("tether", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-m", "tether"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument(
        "--bytecode",
        choices=("cached", "none"),
        default="cached",
        help="cached: .pyc files present (written by the warm-up); none: never read nor written",
    )
    ns = parser.parse_args()
    rows, bare, tools_wall, bare_rss = _measure(ns.samples, ns.bytecode)
    _report(ns.bytecode, rows, bare, tools_wall, bare_rss)


def _measure(samples: int, bytecode: str) -> tuple[list[dict], float, float, float]:
    """The probe's rows, then the bare interpreter's and `tether tools --vibe`'s median wall
    times, and the bare interpreter's peak RSS."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as workdir, tempfile.TemporaryDirectory() as nocache:
        if bytecode == "none":
            # an empty cache tree that is never written to: every import compiles its source
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            env["PYTHONPYCACHEPREFIX"] = nocache

        def wall(argv: list[str], cwd: str | None = None) -> float:
            t0 = time.perf_counter()
            subprocess.run(argv, capture_output=True, check=True, env=env, cwd=cwd)
            return time.perf_counter() - t0

        def sample() -> dict:
            out = subprocess.run(
                [sys.executable, "-c", PROBE, workdir],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            )
            return json.loads(out.stdout)

        sample()  # warm-up: writes the .pyc files (--bytecode cached) and the OS file cache
        rows = [sample() for _ in range(samples)]
        wall([sys.executable, "-c", "pass"])
        bare = statistics.median(wall([sys.executable, "-c", "pass"]) for _ in range(samples))
        cli = [*_tether_cli(), "tools", "--vibe"]
        wall(cli, cwd=workdir)
        tools_wall = statistics.median(wall(cli, cwd=workdir) for _ in range(samples))
    bare_rss = float(
        subprocess.run([sys.executable, "-c", BARE], capture_output=True, text=True, env=env).stdout
    )
    return rows, bare, tools_wall, bare_rss


def _report(
    bytecode: str, rows: list[dict], bare: float, tools_wall: float, bare_rss: float
) -> None:
    phases = ("import", "load", "open", "close")
    keys = (*phases, *(f"cpu_{p}" for p in phases), "rss_mb", "cpu", "modules", "from_pyc")
    med = {k: statistics.median(r[k] for r in rows) for k in keys}

    def summed(*names: str) -> float:
        return statistics.median(sum(r[n] for n in names) for r in rows)

    startup, run = summed("import", "load"), summed("open", "close")
    total = summed(*phases)

    def verdict(ok: bool) -> str:
        return "ok" if ok else "OVER"

    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "unknown"
    print(
        f"bytecode: {bytecode} — {med['from_pyc']:.0f} of {med['modules']:.0f} modules "
        f"loaded from .pyc (median); {len(rows)} samples, fresh processes; load average {load}"
    )
    print(f"plugins loaded: {', '.join(rows[0]['plugins'])}; tools registered: {rows[0]['tools']}")
    print("median                  wall      CPU   (CPU: the process's own, less load-dependent)")

    def line(label: str, wall_s: float, cpu_s: float, note: str = "") -> None:
        print(f"{label:<20} {wall_s * 1000:7.1f} ms {cpu_s * 1000:7.1f} ms   {note}".rstrip())

    line("import tether", med["import"], med["cpu_import"])
    line("load plugins", med["load"], med["cpu_load"], "(discovery, hook modules)")
    line(
        "  import + load",
        startup,
        summed("cpu_import", "cpu_load"),
        f"target <= 200 ms -> {verdict(startup <= 0.200)}",
    )
    line("open a run", med["open"], med["cpu_open"], "(discovery, wiring)")
    line("close the run", med["close"], med["cpu_close"])
    line(
        "  open + close",
        run,
        summed("cpu_open", "cpu_close"),
        f"target <= 150 ms -> {verdict(run <= 0.150)}",
    )
    line("all four phases", total, summed(*(f"cpu_{p}" for p in phases)))
    print(
        f"CPU of the process   median {med['cpu'] * 1000:7.1f} ms   (interpreter start-up included)"
    )
    print(
        f"peak RSS             median {med['rss_mb']:7.1f} MB   target < 60 MB   -> "
        f"{verdict(med['rss_mb'] < 60)}  (bare interpreter {bare_rss:.1f} MB)"
    )
    print(
        f"wall, whole process: python -c pass {bare * 1000:.1f} ms; `tether tools --vibe` "
        f"{tools_wall * 1000:.1f} ms ({tools_wall / bare:.1f}x the bare interpreter)"
    )


if __name__ == "__main__":
    main()

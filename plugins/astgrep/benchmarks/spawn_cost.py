"""What a worker of ast_grep's pool would cost to start with ``spawn`` instead of ``fork`` (not a
test; not run in CI). macOS does not make ``fork`` safe in a threaded process; a spawned worker
starts a fresh interpreter and must import the engine and rebuild the grammar registry (its
grammars' loaders are closures, not picklable), then load a grammar to parse.

    uv run python plugins/astgrep/benchmarks/spawn_cost.py [--samples 7]

Prints the median wall time from start to "ready" (engine imported, registry rebuilt, Python's
grammar loaded) for a forked child and a spawned one.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import time


def _registry_and_parse() -> None:
    import tether
    from tether_astgrep.grammars import GrammarRegistry

    registry = GrammarRegistry()
    for found in tether.make_plugin_manager().hook.tether_astgrep_grammars():
        for grammar in found:
            registry.add(grammar)
    python = registry.get("python")
    assert python is not None
    python.language()


def _child(conn, rebuild: bool) -> None:  # type: ignore[no-untyped-def]
    if rebuild:
        _registry_and_parse()
    conn.send("ready")
    conn.close()


def once(method: str) -> float:
    ctx = multiprocessing.get_context(method)
    parent, child = ctx.Pipe()
    start = time.perf_counter()
    # a forked child inherits what the parent imported; a spawned one starts from nothing
    proc = ctx.Process(target=_child, args=(child, method != "fork"))
    proc.start()
    assert parent.recv() == "ready"
    took = time.perf_counter() - start
    proc.join()
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=7)
    args = parser.parse_args()
    _registry_and_parse()  # the parent, as a run that searched once: what fork inherits
    print(f"load average {os.getloadavg()[0]:.2f}; median of {args.samples}, wall to ready")
    for method in ("fork", "forkserver", "spawn"):
        times = [once(method) for _ in range(args.samples)]
        print(f"{method:<11} {statistics.median(times) * 1000:8.1f} ms per worker")


if __name__ == "__main__":
    main()

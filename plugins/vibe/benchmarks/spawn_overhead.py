"""Overhead of a vibe worker over starting the same process by hand.

Two measures, median of N runs each, side by side with what a harness would do without
tether-vibe (anyio.open_process / anyio.run_process):
  spawn → first output line   (sh -c 'echo ready; exec sleep 60', then killed)
  spawn → settled with result (/bin/echo BRIEF)
Run: uv run python plugins/vibe/benchmarks/spawn_overhead.py [N]
Not a test; not run in CI.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import anyio.lowlevel

import tether
import tether_vibe.hooks

N = int(sys.argv[1]) if len(sys.argv) > 1 else 30
FIRST_LINE = ["/bin/sh", "-c", "echo ready; exec sleep 60"]


async def raw_first_line() -> float:
    start = time.perf_counter()
    proc = await anyio.open_process(FIRST_LINE, start_new_session=True)
    assert proc.stdout is not None
    await proc.stdout.receive()
    elapsed = time.perf_counter() - start
    proc.kill()
    await proc.wait()
    return elapsed


async def raw_settled() -> float:
    start = time.perf_counter()
    done = await anyio.run_process(["/bin/echo", "hello"])
    assert done.stdout.strip() == b"hello"
    return time.perf_counter() - start


async def main() -> None:
    config = {
        "vibe": {
            "max_concurrent": 1000,
            "kill_grace_s": 0.2,
            "runners": {
                "fast": {"command": FIRST_LINE},
                "good": {"command": ["/bin/echo", "{brief}"]},
            },
        }
    }
    raw_first: list[float] = []
    raw_done: list[float] = []
    vibe_first: list[float] = []
    vibe_done: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with tether.open_run(
            Path(tmp), plugins=[tether_vibe.hooks], config=config, vibe=True, entry_points=False
        ) as run:
            roster = run.resources["vibe_roster"]
            # interleaved, so a load change on the shared machine hits both sides alike
            for _ in range(N):
                raw_first.append(await raw_first_line())
                start = time.perf_counter()
                result = await run.call("vibe_spawn", {"brief": "x", "label": "b"})
                worker = roster.get(result.meta["worker_id"])
                while not worker.output.text():
                    await anyio.lowlevel.checkpoint()
                vibe_first.append(time.perf_counter() - start)
                await run.call("vibe_kill", {"worker_id": worker.id})

                raw_done.append(await raw_settled())
                start = time.perf_counter()
                result = await run.call(
                    "vibe_spawn", {"brief": "hello", "label": "b", "tier": "good"}
                )
                waited = await run.call(
                    "vibe_wait", {"worker_id": result.meta["worker_id"], "timeout_seconds": 10}
                )
                assert "result:\nhello" in waited.text_content, waited.text_content
                vibe_done.append(time.perf_counter() - start)
    for name, raw, vibe in [
        ("spawn -> first output line", raw_first, vibe_first),
        ("spawn -> settled with result", raw_done, vibe_done),
    ]:
        r, v = statistics.median(raw) * 1000, statistics.median(vibe) * 1000
        print(
            f"{name:30s} raw {r:7.2f} ms   vibe {v:7.2f} ms   ratio {v / r:5.2f}x   "
            f"(+{v - r:.2f} ms, median of {N})"
        )


if __name__ == "__main__":
    anyio.run(main)

"""eval side by side with what a user would use instead (not a test; run by hand):

    uv run python plugins/eval/benchmarks/bench_eval.py [--cells 60] [--bridge 200]

Prints kernel start (raw AsyncKernelManager vs tether), the median round trip of a trivial cell
(eval vs raw ``execute_interactive``, in-process through ``run.call`` and through a ``tether
session`` subprocess over its stdio JSON lines), the bridge overhead per call (``tool()`` inside a cell vs
calling the tool directly) and the same for node (eval vs a raw JSON-lines ``vm`` round trip).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import attrs
from jupyter_client.manager import AsyncKernelManager

import tether
import tether_eval.hooks

AUTO = {"read": "auto", "write": "auto", "exec": "auto"}


@attrs.frozen
class NoArgs:
    pass


async def ping(call: tether.CallContext, args: NoArgs) -> str:
    return "pong"


PING = tether.ToolSpec("ping", tether.Tier.READ, NoArgs, ping, "Answer pong.")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


class RawKernel:
    """What a user would write instead: jupyter_client's AsyncKernelManager over IPC."""

    async def start(self) -> float:
        started = time.perf_counter()
        self.dir = Path(tempfile.mkdtemp(prefix="bench-", dir="/tmp"))
        self.manager = AsyncKernelManager(transport="ipc")
        self.manager.connection_file = str(self.dir / "k.json")
        self.manager.ip = str(self.dir / "k")
        await self.manager.start_kernel()
        self.client = self.manager.client()
        self.client.start_channels()
        await self.client.wait_for_ready(timeout=60)
        return time.perf_counter() - started

    async def cell(self) -> float:
        t = time.perf_counter()
        await self.client.execute_interactive("1", output_hook=lambda msg: None, timeout=30)
        return time.perf_counter() - t

    async def stop(self) -> None:
        self.client.stop_channels()
        await self.manager.shutdown_kernel(now=True)
        shutil.rmtree(self.dir, ignore_errors=True)


RAW_NODE = r"""
const vm = require('vm'); const ctx = vm.createContext({});
let buf = '';
process.stdin.on('data', d => { buf += d; let i;
  while ((i = buf.indexOf('\n')) >= 0) { const line = buf.slice(0, i); buf = buf.slice(i + 1);
    const m = JSON.parse(line);
    process.stdout.write(JSON.stringify({id: m.id, value: String(vm.runInContext(m.code, ctx))}) + '\n'); } });
"""


class RawNode:
    """A bare node process answering JSON lines with vm.runInContext (no tether)."""

    def __init__(self) -> None:
        node = shutil.which("node")
        assert node, "node is needed"
        self.proc = subprocess.Popen(
            [node, "-e", RAW_NODE], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def cell(self) -> float:
        assert self.proc.stdin and self.proc.stdout
        t = time.perf_counter()
        self.proc.stdin.write((json.dumps({"id": 0, "code": "1"}) + "\n").encode())
        self.proc.stdin.flush()
        self.proc.stdout.readline()
        return time.perf_counter() - t

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


class SessionClient:
    """``tether session`` as a harness drives it: a subprocess, one JSON line per request."""

    def __init__(self, workdir: Path) -> None:
        argv = [sys.executable, "-m", "tether", "session", "--approve", "exec"]
        self.proc = subprocess.Popen(
            [*argv, "--workdir", str(workdir)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert self.proc.stdout is not None
        ready = json.loads(self.proc.stdout.readline())
        assert ready.get("ready"), ready
        self.ids = 0

    def cell(self, code: str = "1") -> float:
        assert self.proc.stdin and self.proc.stdout
        self.ids += 1
        args = {"code": code, "description": "benchmark a trivial cell round trip"}
        t = time.perf_counter()
        self.proc.stdin.write(
            (json.dumps({"id": self.ids, "tool": "eval", "args": args}) + "\n").encode()
        )
        self.proc.stdin.flush()
        while True:
            reply = json.loads(self.proc.stdout.readline())
            if reply.get("id") == self.ids:
                break
        elapsed = time.perf_counter() - t
        assert not reply["is_error"], reply
        return elapsed

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


async def cell(run: tether.Run, code: str, language: str = "python") -> tether.ToolResult:
    return await run.call(
        "eval",
        {"code": code, "description": "benchmark a trivial cell round trip", "language": language},
    )


async def timed_cell(run: tether.Run, language: str = "python") -> float:
    t = time.perf_counter()
    await cell(run, "1", language)
    return time.perf_counter() - t


async def measure_starts(workdir: Path, starts: int) -> dict[str, float]:
    """A bare kernel's start and tether's python interpreter's, interleaved."""
    raw_starts, our_starts = [], []
    for _ in range(starts):
        raw = RawKernel()
        raw_starts.append(await raw.start())
        await raw.stop()
        async with tether.open_run(
            workdir,
            plugins=[tether_eval.hooks],
            config={"core": {"approval": AUTO}},
            entry_points=False,
        ) as run:
            t = time.perf_counter()
            await run.resources["eval_interpreters"].get("python")
            our_starts.append(time.perf_counter() - t)
    return {"raw_start": statistics.median(raw_starts), "py_start": statistics.median(our_starts)}


async def measure_python_cells(
    run: tether.Run, raw: RawKernel, workdir: Path, cells: int
) -> dict[str, float]:
    """A trivial cell's round trip: raw kernel vs eval in-process, then vs a ``tether session``."""
    out: dict[str, float] = {}
    await cell(run, "1")
    raw_samples, our_samples = [], []
    for _ in range(cells):
        raw_samples.append(await raw.cell())
        our_samples.append(await timed_cell(run))
    out["raw_cell"] = statistics.median(raw_samples)
    out["py_cell"] = statistics.median(our_samples)
    # The in-process kernel idles while the session's runs: two busy kernels would share
    # the cores.
    session = SessionClient(workdir)
    session.cell()
    raw_samples, session_samples = [], []
    for _ in range(cells):
        raw_samples.append(await raw.cell())
        session_samples.append(session.cell())
    session.stop()
    out["raw_cell_2"] = statistics.median(raw_samples)
    out["session_cell"] = statistics.median(session_samples)
    return out


async def measure_python_bridge(run: tether.Run, bridge_calls: int) -> dict[str, float]:
    """A tool called directly vs through ``tool()`` inside a python cell."""
    direct = []
    for _ in range(bridge_calls):
        t = time.perf_counter()
        await run.call("ping", {})
        direct.append(time.perf_counter() - t)
    timed = await cell(
        run,
        "import time, statistics\nsamples = []\n"
        f"for _ in range({bridge_calls}):\n"
        "    t = time.perf_counter(); tool('ping'); samples.append(time.perf_counter() - t)\n"
        "print(statistics.median(samples))",
    )
    return {"direct": statistics.median(direct), "py_bridge": float(timed.text_content.split()[0])}


async def measure_node(run: tether.Run, cells: int, bridge_calls: int) -> dict[str, float]:
    """node's start, a trivial cell vs a raw ``vm`` round trip, and the bridge from a cell."""
    out: dict[str, float] = {}
    t = time.perf_counter()
    await run.resources["eval_interpreters"].get("javascript")
    out["js_start"] = time.perf_counter() - t
    raw_node = RawNode()
    node_raw, node_ours = [], []
    for _ in range(cells):
        node_raw.append(raw_node.cell())
        node_ours.append(await timed_cell(run, "javascript"))
    raw_node.stop()
    out["raw_node"] = statistics.median(node_raw)
    out["js_cell"] = statistics.median(node_ours)
    timed = await cell(
        run,
        "const s = []; for (let i = 0; i < "
        f"{bridge_calls}"
        "; i++) { const t = performance.now(); await tool('ping'); s.push(performance.now() - t); }\n"
        "s.sort((a, b) => a - b); s[Math.floor(s.length / 2)] / 1000",
        "javascript",
    )
    out["js_bridge"] = float(timed.text_content.split()[0])
    return out


async def measure(cells: int, bridge_calls: int, starts: int) -> dict[str, float]:
    """Raw and tether samples interleaved, so the machine's load hits both alike."""
    workdir = Path(tempfile.mkdtemp(prefix="bench-wd-"))
    out = await measure_starts(workdir, starts)
    raw = RawKernel()
    await raw.start()
    async with tether.open_run(
        workdir,
        plugins=[tether_eval.hooks],
        config={"core": {"approval": AUTO}},
        entry_points=False,
    ) as run:
        run.register_host_tool(PING)
        out.update(await measure_python_cells(run, raw, workdir, cells))
        out.update(await measure_python_bridge(run, bridge_calls))
        # Only node runs in the node phase: two idle kernels would share the 2 cores.
        await raw.stop()
        await run.resources["eval_interpreters"].discard("python")
        out.update(await measure_node(run, cells, bridge_calls))
    shutil.rmtree(workdir, ignore_errors=True)
    return out


async def main(cells: int, bridge_calls: int, starts: int) -> None:
    m = await measure(cells, bridge_calls, starts)
    rows: list[tuple[str, str, str, str]] = [
        (
            "python kernel start (median)",
            ms(m["raw_start"]),
            ms(m["py_start"]),
            f"{m['py_start'] / m['raw_start']:.2f}x",
        ),
        (
            "python trivial cell (median)",
            ms(m["raw_cell"]),
            ms(m["py_cell"]),
            f"{m['py_cell'] / m['raw_cell']:.2f}x",
        ),
        (
            "python trivial cell, session",
            ms(m["raw_cell_2"]),
            ms(m["session_cell"]),
            f"{m['session_cell'] / m['raw_cell_2']:.2f}x",
        ),
        (
            "python bridge call vs direct",
            ms(m["direct"]),
            ms(m["py_bridge"]),
            f"+{ms(m['py_bridge'] - m['direct'])}",
        ),
        ("node start", "-", ms(m["js_start"]), ""),
        (
            "node trivial cell (median)",
            ms(m["raw_node"]),
            ms(m["js_cell"]),
            f"{m['js_cell'] / m['raw_node']:.2f}x",
        ),
        (
            "node bridge call vs direct",
            ms(m["direct"]),
            ms(m["js_bridge"]),
            f"+{ms(m['js_bridge'] - m['direct'])}",
        ),
    ]
    print(f"{'':32} {'raw / direct':>14} {'tether eval':>14} {'ratio':>12}")
    for name, raw, ours, ratio in rows:
        print(f"{name:32} {raw:>14} {ours:>14} {ratio:>12}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", type=int, default=60)
    parser.add_argument("--bridge", type=int, default=200)
    parser.add_argument("--starts", type=int, default=3)
    options: Any = parser.parse_args()
    anyio.run(main, options.cells, options.bridge, options.starts)

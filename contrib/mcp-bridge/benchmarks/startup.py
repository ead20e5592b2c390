"""How soon ``tether mcp`` answers, side by side with a bare ``mcp`` SDK server that lists one
tool: from starting the process to the ``initialize`` reply, and to the first ``tools/list``
reply (2025-11-25, the revision Codex and Claude Code start with).

    uv run python contrib/mcp-bridge/benchmarks/startup.py [--starts 7] [--before DIR]

``--before DIR`` adds a third server, interleaved with the others: ``tether mcp`` with the core
and the bridge imported from another checkout's sources (``git archive main core/src
contrib/mcp-bridge/src | tar -x -C DIR``), the rest from this environment — a before/after
under the same load.

A client that lists tools right after ``initialize`` (Codex does, with a start-up timeout) gets
tether's tools only once the run is open; the bare server is the floor any SDK server pays
(interpreter + importing the SDK). The raw client writes JSON lines to the pipes: no client SDK.
Medians; the load average is printed beside them (this machine may be shared).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from roundtrip import Pipe, mcp_argv

BARE_SERVER = """
import anyio, mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

async def list_tools(ctx, params):
    schema = {"type": "object", "properties": {"message": {"type": "string"}}}
    return types.ListToolsResult(tools=[types.Tool(name="echo", input_schema=schema)])

async def main():
    server = Server("bare", on_list_tools=list_tools)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""

INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"},
}


def one_start(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    t0 = time.perf_counter()
    pipe = Pipe(argv, env)
    pipe.rpc("initialize", INITIALIZE)
    initialized = time.perf_counter() - t0
    pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    tools = pipe.rpc("tools/list")["tools"]
    listed = time.perf_counter() - t0
    pipe.close()
    return initialized, listed, len(tools)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=7)
    parser.add_argument("--before", type=Path, help="a checkout whose core and bridge to time too")
    ns = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp) / "project"
        workdir.mkdir()
        (workdir / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
        bare = Path(tmp) / "bare_server.py"
        bare.write_text(BARE_SERVER)
        servers = {
            "bare mcp SDK server": ([sys.executable, str(bare)], env),
            "tether mcp": (mcp_argv(str(workdir)), env),
        }
        if ns.before is not None:
            src = [ns.before / "core" / "src", ns.before / "contrib" / "mcp-bridge" / "src"]
            path = os.pathsep.join(str(p.resolve()) for p in src)
            servers["tether mcp (before)"] = (mcp_argv(str(workdir)), {**env, "PYTHONPATH": path})
        results: dict[str, list[tuple[float, float, int]]] = {k: [] for k in servers}
        for _ in range(ns.starts):  # interleaved, so load drifts hit every server alike
            for name, (argv, server_env) in servers.items():
                results[name].append(one_start(argv, server_env))
    load = os.getloadavg()[0]
    print(f"start -> reply, median of {ns.starts} starts (load average {load:.1f}):")
    medians = {
        name: (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
        for name, runs in results.items()
    }
    base_init, base_list = medians["bare mcp SDK server"]
    for name, (init, listed) in medians.items():
        tools = results[name][0][2]
        print(
            f"  {name:<21} initialize {init * 1000:6.0f} ms (x{init / base_init:.2f})   "
            f"tools/list {listed * 1000:6.0f} ms (x{listed / base_list:.2f}, {tools} tools)"
        )


if __name__ == "__main__":
    main()

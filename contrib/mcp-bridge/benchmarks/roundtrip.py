"""A trivial tool's round trip (``echo``) over MCP, over ``tether session`` and by ``run.call``,
side by side, and the time from starting a server to its first tools list.

    uv run python contrib/mcp-bridge/benchmarks/roundtrip.py [--calls 300] [--starts 5]

The clients are minimal raw JSON-line writers/readers over pipes (no client SDK), so the figures
are what each server adds. MCP is measured on both revisions: 2025-11-25 (after ``initialize``)
and 2026-07-28 (every request carries the ``_meta`` envelope). Sequential calls; medians.
Needs tether-echo installed (the workspace's ``uv sync --all-packages --all-extras`` has it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import anyio

import tether

ECHO = {"message": "x"}
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


class Pipe:
    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, bufsize=1
        )
        self.ids = 0

    def send(self, obj: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the server exited")
        return json.loads(line)

    def rpc(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.ids += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.ids, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        while True:
            reply = self.read()
            if reply.get("id") == self.ids:
                if "error" in reply:
                    raise RuntimeError(reply["error"])
                return reply["result"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def mcp_argv(workdir: str) -> list[str]:
    return [sys.executable, "-m", "tether.cli", "mcp", "--workdir", workdir]


def session_argv(workdir: str) -> list[str]:
    return [sys.executable, "-m", "tether.cli", "session", "--workdir", workdir]


def legacy_open(pipe: Pipe) -> None:
    pipe.rpc(
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    )
    pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def time_calls(one: Any, n: int) -> float:
    for _ in range(20):  # warm-up
        one()
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        one()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def bench_mcp(workdir: str, env: dict[str, str], n: int, modern: bool) -> float:
    pipe = Pipe(mcp_argv(workdir), env)
    meta = {"_meta": ENVELOPE} if modern else {}
    if not modern:
        legacy_open(pipe)

    def one() -> None:
        result = pipe.rpc("tools/call", {"name": "echo", "arguments": ECHO, **meta})
        assert not result.get("isError"), result

    try:
        return time_calls(one, n)
    finally:
        pipe.close()


def bench_session(workdir: str, env: dict[str, str], n: int) -> float:
    pipe = Pipe(session_argv(workdir), env)
    assert pipe.read()["ready"] is True
    counter = iter(range(10**9))

    def one() -> None:
        request_id = next(counter)
        pipe.send({"id": request_id, "tool": "echo", "args": ECHO})
        reply = pipe.read()
        assert reply["id"] == request_id and not reply["is_error"], reply

    try:
        return time_calls(one, n)
    finally:
        pipe.close()


def bench_run_call(workdir: str, n: int) -> float:
    async def main() -> float:
        async with tether.open_run(workdir, conversation_id="bench") as run:
            samples = []
            for i in range(n + 20):
                t0 = time.perf_counter()
                result = await run.call("echo", ECHO)
                if i >= 20:
                    samples.append(time.perf_counter() - t0)
                assert not result.is_error
            return statistics.median(samples)

    return anyio.run(main)


def start_to_tools(workdir: str, env: dict[str, str], kind: str) -> float:
    t0 = time.perf_counter()
    if kind == "session":
        pipe = Pipe(session_argv(workdir), env)
        assert pipe.read()["ready"] is True
        pipe.send({"id": 1, "request": "tools"})
        assert pipe.read()["tools"]
    else:
        pipe = Pipe(mcp_argv(workdir), env)
        if kind == "mcp 2025-11-25":
            legacy_open(pipe)
            assert pipe.rpc("tools/list")["tools"]
        else:
            assert pipe.rpc("tools/list", {"_meta": ENVELOPE})["tools"]
    elapsed = time.perf_counter() - t0
    pipe.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--starts", type=int, default=5)
    ns = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as workdir:
        base = bench_run_call(workdir, ns.calls)
        session = bench_session(workdir, env, ns.calls)
        legacy = bench_mcp(workdir, env, ns.calls, modern=False)
        modern = bench_mcp(workdir, env, ns.calls, modern=True)
        print(f"echo round trip, median of {ns.calls} sequential calls:")
        print(f"  run.call (in-process)        {base * 1000:7.3f} ms")
        print(f"  tether session (JSON lines)  {session * 1000:7.3f} ms")
        for label, value in (("2025-11-25", legacy), ("2026-07-28", modern)):
            added = (value - session) * 1000
            print(
                f"  tether mcp {label}        {value * 1000:7.3f} ms   "
                f"{added:+.3f} ms over session (target < 2 ms: {'ok' if added < 2 else 'OVER'}), "
                f"x{value / session:.2f}"
            )
        print(f"server start -> first tools list reply, median of {ns.starts}:")
        for kind in ("session", "mcp 2025-11-25", "mcp 2026-07-28"):
            starts = [start_to_tools(workdir, env, kind) for _ in range(ns.starts)]
            print(f"  {kind:<16} {statistics.median(starts) * 1000:7.0f} ms")


if __name__ == "__main__":
    main()

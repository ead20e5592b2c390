"""Two served runs side by side, one from another checkout's sources: hover latency and the event
loop's CPU per hover for 1 and N connections, the rounds of each server alternated so both see
the same load (the machine is shared); beside them in every round, the bare LSP client's hovers
on basedpyright in the same shape (1 client, N clients each one hover at a time): the floor.

Run by hand (not in CI): ``uv run python contrib/mcp-bridge/benchmarks/serve_ab.py PATH/TO/click
PATH/TO/OTHER-CHECKOUT [N] [ROUNDS]`` (a checkout of pallets/click; the other checkout e.g. made
by ``git worktree add /tmp/base COMMIT``). The other server runs the same interpreter and
installed dependencies with the other checkout's ``core/src``, ``plugins/*/src`` and
``contrib/*/src`` first on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from serve import Conn, bare_server, clients, loop_cpu, quantile, serve, warm_up


def process_cpu(pid: int) -> float:
    """CPU seconds of process ``pid``, every thread of it (its worker threads' trips too)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ms(values: list[float]) -> str:
    """Median (p90) in ms, to a tenth: the bare server's hovers take under one."""
    return f"{statistics.median(values) * 1000:.1f} ms (p90 {quantile(values, 0.9) * 1000:.1f})"


def runtime_env(sources: Path | None) -> dict[str, str]:
    runtime = Path(tempfile.mkdtemp(prefix="tether-rt-"))
    runtime.chmod(0o700)
    env = {**os.environ, "TETHER_RUNTIME_DIR": str(runtime)}
    if sources is not None:
        dirs = [sources / "core" / "src", *sorted(sources.glob("plugins/*/src"))]
        dirs += sorted(sources.glob("contrib/*/src"))
        env["PYTHONPATH"] = os.pathsep.join(str(d) for d in dirs)
    return env


async def rounds_of(click: Path, servers: dict[str, tuple[Any, Path]], n: int, rounds: int) -> None:
    for name, (_, sock) in servers.items():
        await warm_up(sock)
        await clients(sock, n, 5)
        conn = await Conn.open(sock, "plan")
        _, reply = await conn.hover()
        await conn.stream.aclose()
        stale = "another process changed" in reply["content"][0]["text"]
        print(f"{name}: its hovers carry a stale-files note: {stale}")
    async with bare_server(click) as bare:
        for round_ in range(1, rounds + 1):
            order = list(servers.items())
            for name, (proc, sock) in order if round_ % 2 else order[::-1]:  # ABBA
                load = os.getloadavg()[0]
                row = []
                for k, hovers in ((1, 100), (n, 40)):
                    before, started = loop_cpu(proc.pid), time.perf_counter()
                    whole = process_cpu(proc.pid)
                    times = await clients(sock, k, hovers)
                    busy = loop_cpu(proc.pid) - before
                    cpu = busy / len(times) * 1000
                    every = (process_cpu(proc.pid) - whole) / len(times) * 1000
                    share = busy / (time.perf_counter() - started)
                    text = (
                        f"{ms(times)}, loop {cpu:.2f} ms CPU (busy {share:.0%} of the time), "
                        f"all threads {every:.2f} ms"
                    )
                    row.append((statistics.median(times), text))
                ratio = row[1][0] / row[0][0]
                print(
                    f"round {round_} {name} (load {load:.1f}): 1 connection {row[0][1]}; "
                    f"{n} connections {row[1][1]}; ratio {ratio:.1f}",
                    flush=True,
                )
            load = os.getloadavg()[0]
            one, many = await bare.run(1, 100), await bare.run(n, 40)
            ratio = statistics.median(many) / statistics.median(one)
            print(
                f"round {round_} bare (load {load:.1f}): 1 client {ms(one)}; {n} clients "
                f"{ms(many)}; ratio {ratio:.1f}",
                flush=True,
            )


def main() -> None:
    click, other = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    servers = {"other": serve(click, runtime_env(other)), "this": serve(click, runtime_env(None))}
    try:
        anyio.run(rounds_of, click, servers, n, rounds)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(60)


if __name__ == "__main__":
    main()

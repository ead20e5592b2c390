"""Benchmark: debugpy through tether's ``debug`` tool vs a minimal direct DAP client.

Both sides run the same program with the same launch arguments and interpreter, and do the same
DAP traffic per operation:
- launch -> first stop: spawn the adapter, initialize, launch, breakpoints, exception filters,
  configurationDone, wait for ``stopped``, one ``stackTrace`` to learn where it stopped;
- step: ``next``, wait for ``stopped``, one ``stackTrace``.

Each side also counts the DAP requests it sends per launch and per step (the tether side by
wrapping ``DapClient.send_request``): a count the machine's load cannot change.

Not a test and not run in CI. Run: ``uv run python plugins/debug/benchmarks/bench_debugpy.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio

import tether
import tether_debug.hooks
from tether.processes.availability import CommandProbe
from tether_debug.adapters import Debugpy, Resolution
from tether_debug.client import DapClient

#: every DAP request sent, in order, by whichever side is running (``None``: not counting)
SENT: list[str] = []

PROGRAM = """\
def work():
    total = 0
    for i in range(1000):
        total += i
        total -= 1
        total += 1
    return total


work()
"""
BREAK_LINE = 2


class DirectDap:
    """The smallest honest DAP client: blocking pipes, one reader thread."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.seq = 0
        self.responses: dict[int, dict[str, Any]] = {}
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            header = stream.readline()
            if not header:
                return
            length = int(header.split(b":")[1])
            stream.readline()
            message = json.loads(stream.read(length))
            if message["type"] == "response":
                with self.cv:
                    self.responses[message["request_seq"]] = message
                    self.cv.notify_all()
            elif message["type"] == "event":
                self.events.put(message)

    def send(self, command: str, arguments: dict[str, Any] | None = None) -> int:
        SENT.append(command)
        self.seq += 1
        body = json.dumps(
            {"seq": self.seq, "type": "request", "command": command, "arguments": arguments or {}}
        )
        data = body.encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(data), data))
        self.proc.stdin.flush()
        return self.seq

    def wait(self, seq: int, timeout: float = 20) -> dict[str, Any]:
        with self.cv:
            if not self.cv.wait_for(lambda: seq in self.responses, timeout):
                raise TimeoutError(seq)
            return self.responses.pop(seq)

    def request(self, command: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.wait(self.send(command, arguments))

    def event(self, name: str, timeout: float = 20) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            message = self.events.get(timeout=max(0.01, deadline - time.monotonic()))
            if message["event"] == name:
                return message

    def close(self) -> None:
        try:
            self.request("disconnect", {"terminateDebuggee": True})
        finally:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(10)


def counted(during: list[list[str]]) -> None:
    """Move what was sent since the last call into ``during`` (one list per launch or step)."""
    during.append(list(SENT))
    SENT.clear()


def direct_run(
    command: list[str], launch: dict[str, Any], program: Path, steps: int, sent: Sent
) -> tuple[float, list[float]]:
    SENT.clear()
    start = time.perf_counter()
    dap = DirectDap(command)
    dap.request(
        "initialize",
        {
            "adapterID": "debugpy",
            "linesStartAt1": True,
            "columnsStartAt1": True,
            "pathFormat": "path",
        },
    )
    launch_seq = dap.send("launch", launch)
    dap.event("initialized")
    dap.request(
        "setBreakpoints", {"source": {"path": str(program)}, "breakpoints": [{"line": BREAK_LINE}]}
    )
    dap.request("setExceptionBreakpoints", {"filters": ["uncaught"]})
    dap.request("configurationDone")
    dap.wait(launch_seq)
    thread = dap.event("stopped")["body"]["threadId"]
    dap.request("stackTrace", {"threadId": thread, "levels": 1})
    first_stop = time.perf_counter() - start
    counted(sent.launch)
    times = []
    for _ in range(steps):
        began = time.perf_counter()
        dap.request("next", {"threadId": thread})
        dap.event("stopped")
        dap.request("stackTrace", {"threadId": thread, "levels": 1})
        times.append(time.perf_counter() - began)
        counted(sent.step)
    dap.close()
    return first_stop, times


class Sent:
    """The requests of each launch (spawn -> first stop reported) and of each step."""

    def __init__(self) -> None:
        self.launch: list[list[str]] = []
        self.step: list[list[str]] = []

    def summary(self) -> str:
        def one(runs: list[list[str]]) -> str:
            shapes = {" ".join(run) for run in runs}
            counts = sorted({len(run) for run in runs})
            return f"{'/'.join(map(str, counts))} ({' | '.join(sorted(shapes))})"

        return f"launch {one(self.launch)}; step {one(self.step)}"


_send_request = DapClient.send_request


async def _counting_send_request(
    self: DapClient, command: str, arguments: dict[str, Any] | None = None
) -> int:
    SENT.append(command)
    return await _send_request(self, command, arguments)


async def tether_run(workdir: Path, steps: int, sent: Sent) -> tuple[float, list[float]]:
    config = {"core": {"approval": {"exec": "auto"}}}
    async with tether.open_run(
        workdir,
        conversation_id="bench",
        plugins=[tether_debug.hooks],
        entry_points=False,
        config=config,
    ) as run:
        await run.call("debug", {"op": "adapters"})  # resolves and caches the interpreter probe
        await run.call("debug", {"op": "breakpoints", "file": "prog.py", "lines": [BREAK_LINE]})
        SENT.clear()
        start = time.perf_counter()
        result = await run.call("debug", {"op": "launch", "program": "prog.py"})
        first_stop = time.perf_counter() - start
        counted(sent.launch)
        assert "Stopped (breakpoint)" in result.text_content, result.text_content
        times = []
        for _ in range(steps):
            began = time.perf_counter()
            result = await run.call("debug", {"op": "step_over"})
            times.append(time.perf_counter() - began)
            counted(sent.step)
            assert result.text_content.startswith("Stopped (step)"), result.text_content
        await run.call("debug", {"op": "terminate"})
    return first_stop, times


async def _resolve(adapter: Debugpy, workdir: Path) -> Resolution:
    async with tether.open_run(workdir, entry_points=False) as run:
        return await adapter.resolve(workdir, CommandProbe(run))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--launches", type=int, default=3)
    parser.add_argument("--steps", type=int, default=15)
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp).resolve()
        program = workdir / "prog.py"
        program.write_text(PROGRAM)
        (workdir / "pyproject.toml").write_text('[project]\nname = "bench"\nversion = "0"\n')
        # the same adapter command and launch arguments tether would use
        adapter = Debugpy()
        resolution = anyio.run(_resolve, adapter, workdir)
        assert resolution.command is not None, resolution.detail
        launch = adapter.launch_arguments(program, [], workdir, resolution, [program])

        rows: dict[str, tuple[list[float], list[float]]] = {"direct": ([], []), "tether": ([], [])}
        sent = {"direct": Sent(), "tether": Sent()}
        DapClient.send_request = _counting_send_request  # type: ignore[method-assign]
        for _ in range(options.launches):
            first, steps = direct_run(
                list(resolution.command), launch, program, options.steps, sent["direct"]
            )
            rows["direct"][0].append(first)
            rows["direct"][1].extend(steps)
            first, steps = anyio.run(tether_run, workdir, options.steps, sent["tether"])
            rows["tether"][0].append(first)
            rows["tether"][1].extend(steps)

    print(f"debugpy {resolution.detail}")
    print(f"{'':8} {'launch->first stop (median s)':>30} {'step_over (median ms)':>24}")
    medians = {}
    for name, (firsts, steps) in rows.items():
        medians[name] = (statistics.median(firsts), statistics.median(steps) * 1000)
        print(f"{name:8} {medians[name][0]:30.3f} {medians[name][1]:24.2f}")
    launch_ratio = medians["tether"][0] / medians["direct"][0]
    step_delta = medians["tether"][1] - medians["direct"][1]
    print(f"tether/direct launch->stop: {launch_ratio:.3f}x ({(launch_ratio - 1) * 100:+.1f}%)")
    print(f"tether - direct per step: {step_delta:+.2f} ms")
    for name, counts in sent.items():
        print(f"DAP requests {name:6}: {counts.summary()}")
    print(f"load average: {' '.join(f'{n:.2f}' for n in os.getloadavg())}")
    print(f"(pid {os.getpid()}, python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()

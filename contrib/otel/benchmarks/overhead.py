"""Per-call overhead of tracing: tether-echo's ``echo`` called N times in one run, without an
observer, with tether-otel's span observer (in-memory exporter, simple processor; and a batch
processor exporting to the console into /dev/null), and with the core's JSON call log.

    uv run python contrib/otel/benchmarks/overhead.py [N]
"""

from __future__ import annotations

import io
import os
import statistics
import sys
import tempfile
import time

import anyio
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tether
import tether_echo.hooks
from tether.cli.calllog import CallLog
from tether_otel import SpanObserver


class Observe:
    def __init__(self, observer):
        self.observer = observer

    @tether.hookimpl
    def tether_call_observers(self, run):
        return self.observer


async def per_call_us(observer, n: int) -> float:
    plugins = [tether_echo.hooks] + ([Observe(observer)] if observer is not None else [])
    with tempfile.TemporaryDirectory() as workdir:
        async with tether.open_run(workdir, entry_points=False, plugins=plugins) as run:
            for _ in range(200):  # warm-up
                await run.call("echo", {"message": "hi"})
            rounds = []
            for _ in range(5):
                start = time.perf_counter()
                for _ in range(n):
                    await run.call("echo", {"message": "hi"})
                rounds.append((time.perf_counter() - start) / n * 1e6)
            return statistics.median(rounds)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    memory = TracerProvider()
    memory.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    batch = TracerProvider()
    devnull = open(os.devnull, "w")
    batch.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(out=devnull)))
    cases = {
        "no observer": None,
        "otel, in-memory exporter (simple processor)": SpanObserver(memory.get_tracer("t")),
        "otel, console exporter to /dev/null (batch processor)": SpanObserver(
            batch.get_tracer("t")
        ),
        "core call log (--log-level info) to a buffer": CallLog("info", io.StringIO()),
    }
    base = None
    for name, observer in cases.items():
        us = anyio.run(per_call_us, observer, n)
        base = us if base is None else base
        print(f"{name:<55} {us:8.1f} µs/call  (+{us - base:6.1f})")
    batch.shutdown()


if __name__ == "__main__":
    main()

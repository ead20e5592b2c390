"""echo (read), echo_write (write), echo_exec (exec)."""

from __future__ import annotations

import anyio
import attrs

import tether
from tether.workdir.writing import FileChange, Plan, atomic_write_async


@attrs.frozen
class EchoArgs:
    message: str = tether.arg(description="Text to send back")
    delay_s: float = tether.arg(0.0, description="Seconds to wait first", minimum=0, maximum=60)


@attrs.frozen
class EchoWriteArgs:
    path: str = tether.arg(description="File to write, relative to the workdir")
    text: str = tether.arg(description="Content")


@attrs.frozen
class EchoExecArgs:
    argv: list[str] = tether.arg(description="Program and arguments", min_length=1)
    background: bool = tether.arg(False, description="Leave it running (the run kills it on close)")


async def echo(call: tether.CallContext, args: EchoArgs) -> str:
    if args.delay_s:
        await anyio.sleep(args.delay_s)
    return args.message


async def echo_write(call: tether.CallContext, args: EchoWriteArgs) -> tether.ToolResult:
    path = call.run.confine(args.path, "path")
    await atomic_write_async(path, args.text, root=call.run.workdir)
    return tether.ToolResult.text(f"wrote {args.path}", paths=[str(path)])


def describe_echo_write(call: tether.CallContext, args: EchoWriteArgs) -> Plan:
    """The file and its new text, for the approval card (a plan on the files as they are)."""
    path = call.run.confine(args.path, "path")
    return lambda current: [FileChange(path, current(path), args.text.encode())]


async def echo_exec(call: tether.CallContext, args: EchoExecArgs) -> tether.ToolResult:
    try:
        proc = await call.run.spawn(args.argv, cwd=call.run.workdir, stdin=False)
    except OSError as exc:
        raise tether.ArgumentError(
            "argv", f"cannot start {args.argv[0]!r}: {exc.strerror}"
        ) from None
    if args.background:
        return tether.ToolResult.text(f"started pid {proc.pid}", pid=proc.pid)
    chunks = []
    async for chunk in proc.stdout:
        chunks.append(chunk)
    code = await proc.wait()
    text = b"".join(chunks).decode("utf-8", "replace")
    return tether.ToolResult(
        content=(tether.Text(text),), is_error=code != 0, meta={"exit_code": code}
    )


def echo_tools() -> list[tether.ToolSpec]:
    return [
        tether.ToolSpec("echo", "read", EchoArgs, echo, "Send a message back."),
        tether.ToolSpec(
            "echo_write",
            "write",
            EchoWriteArgs,
            echo_write,
            "Write a text file in the workdir.",
            describe_change=describe_echo_write,
        ),
        tether.ToolSpec(
            "echo_exec",
            "exec",
            EchoExecArgs,
            echo_exec,
            "Run a program as a child of the run.",
            parallel_safe=False,
        ),
    ]

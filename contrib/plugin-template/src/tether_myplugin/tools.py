"""The ``count_lines`` tool: its arguments, its handler and its spec."""

from __future__ import annotations

import attrs

import tether
from tether.workdir import reading
from tether_myplugin.config import MypluginConfig


@attrs.frozen
class CountLinesArgs:
    path: str = tether.arg(description="A file in the workdir, relative to it")


async def handle_count_lines(call: tether.CallContext, args: CountLinesArgs) -> str:
    """The handler: arguments arrive validated; a ``tether.ToolError`` becomes an error result."""
    path = call.run.confine(args.path)  # refuses a path outside the workdir, naming the field
    # the core's reader (off the event loop, no symlink followed, regular files only, capped):
    # every workdir file is read through it
    data = await reading.read_bytes(call.run.workdir, path, shown=args.path)
    lines = data.decode(errors="replace").splitlines()
    if not call.run.config("myplugin", MypluginConfig).count_blank:
        lines = [line for line in lines if line.strip()]
    return f"{len(lines)} lines in {args.path}"


def tool_specs(run: tether.Run) -> list[tether.ToolSpec]:
    """This plugin's tools for ``run`` (every family has one ``tool_specs(run)``)."""
    # read now, so a wrong ``[myplugin]`` table stops the run's opening, naming the key
    run.config("myplugin", MypluginConfig)
    return [
        tether.ToolSpec(
            name="count_lines",
            tier="read",  # no side effect: visible on plan and read-only surfaces too
            args=CountLinesArgs,
            handler=handle_count_lines,
            description="Count the lines of a file in the workdir.",
            parallel_safe=True,
        )
    ]

"""Hook implementations only: what this plugin adds to a run (see tether's docs/plugin-api.md)."""

from __future__ import annotations

import attrs

import tether
from tether import reading


@attrs.frozen
class CountLinesArgs:
    path: str = tether.arg(description="A file in the workdir, relative to it")


async def count_lines(call: tether.CallContext, args: CountLinesArgs) -> str:
    """The handler: arguments arrive validated; a ``tether.ToolError`` becomes an error result."""
    path = call.run.confine(args.path)  # refuses a path outside the workdir, naming the field
    # the core's reader (off the event loop, no symlink followed, regular files only, capped):
    # every workdir file is read through it
    data = await reading.read_bytes(call.run.workdir, path, shown=args.path)
    lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    return f"{lines} lines in {args.path}"


@tether.hookimpl
def tether_tools(run: tether.Run) -> list[tether.ToolSpec]:
    return [
        tether.ToolSpec(
            name="count_lines",
            tier="read",  # no side effect: visible on plan and read-only surfaces too
            args=CountLinesArgs,
            handler=count_lines,
            description="Count the lines of a file in the workdir.",
            parallel_safe=True,
        )
    ]


@tether.hookimpl
def tether_process_result(call: tether.CallContext, result: tether.ToolResult) -> str | None:
    """A post-processor returns what to add (a text, a ``tether.ResultNote``, or an awaitable of
    one), never a new result: here every answer of this plugin's tool says who counted."""
    if call.tool != "count_lines" or result.is_error:
        return None
    return "(counted by tether-myplugin)"

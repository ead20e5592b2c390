"""The ``debug`` tool: its arguments, which fields each op needs, and the dispatch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import attrs

import tether
from tether.resources import ResourceKey
from tether_debug.config import DebugConfig

if TYPE_CHECKING:
    from tether_debug.supervisor import DebugSupervisor

#: the run resource this plugin wires (the supervisor is imported only when a run opens)
SUPERVISOR: ResourceKey[DebugSupervisor] = ResourceKey(
    "debug_supervisor", "tether_debug.supervisor:DebugSupervisor"
)

Op = Literal[
    "adapters",
    "status",
    "breakpoints",
    "launch",
    "attach",
    "continue",
    "pause",
    "step_over",
    "step_in",
    "step_out",
    "threads",
    "stack",
    "scopes",
    "variables",
    "evaluate",
    "output",
    "terminate",
]

DESCRIPTION = """\
Drive a debugger (Debug Adapter Protocol) on a program in the workdir. One session per \
conversation, with a hard TTL; a second launch/attach is refused until you terminate.
ops:
- adapters: which debug adapters are usable here, and why not
- status: whether a session runs, where it stopped, breakpoints
- breakpoints(file, lines[]): set a file's breakpoint lines (empty lines clears the file); \
allowed before launch
- launch(program, args[]?, adapter?): start the program stopped at your breakpoints
- attach(port | pid, adapter?): attach to a running program: one listening for a debugger on \
127.0.0.1:port, or a local process by pid (lldb, delve); reports its threads
- continue / pause / step_over / step_in / step_out (thread_id?): run and report where it stopped
- threads; stack(thread_id?) (30 frames); scopes(frame_id); variables(reference) (50 children, \
values cut at 400 chars)
- evaluate(expression, frame_id?): in that frame's scope (default: the top frame of the stop)
- output: the program's new stdout/stderr since the last call
- terminate: end the session: kill the launched program and the adapter (an attached program \
is detached, not killed)"""

# Which fields each op takes, enforced by the core: a missing one and one the op does not use are
# refused, naming the field and the op.
ACTIONS = tether.Actions(
    "op",
    {
        "adapters": tether.Action(),
        "status": tether.Action(),
        "breakpoints": tether.Action(required=("file", "lines")),
        "launch": tether.Action(required=("program",), optional=("args", "adapter")),
        "attach": tether.Action(
            optional=("adapter",),
            one_of=(
                (
                    "port",
                    "pid",
                    "port (a debug server listening on 127.0.0.1) or pid (a local process)",
                ),
            ),
        ),
        "continue": tether.Action(optional=("thread_id",)),
        "pause": tether.Action(optional=("thread_id",)),
        "step_over": tether.Action(optional=("thread_id",)),
        "step_in": tether.Action(optional=("thread_id",)),
        "step_out": tether.Action(optional=("thread_id",)),
        "threads": tether.Action(),
        "stack": tether.Action(optional=("thread_id",)),
        "scopes": tether.Action(required=("frame_id",)),
        "variables": tether.Action(required=("reference",)),
        "evaluate": tether.Action(required=("expression",), optional=("frame_id",)),
        "output": tether.Action(),
        "terminate": tether.Action(),
    },
)

_RESUME = {"continue": "continue", "step_over": "next", "step_in": "stepIn", "step_out": "stepOut"}


@attrs.frozen
class DebugArgs:
    op: Op = tether.arg(description="The operation (see the tool description)")
    file: str | None = tether.arg(
        None, description="breakpoints: source file, relative to the workdir"
    )
    lines: list[int] | None = tether.arg(
        None, description="breakpoints: 1-based line numbers; an empty list clears the file"
    )
    program: str | None = tether.arg(
        None, description="launch: the program (a .py script, a -g binary…)"
    )
    args: list[str] | None = tether.arg(
        None, description="launch: the program's command-line arguments"
    )
    port: int | None = tether.arg(
        None,
        description="attach: the local port the program's debug server listens on",
        minimum=1,
        maximum=65535,
    )
    pid: int | None = tether.arg(
        None,
        description="attach: the pid of a local process (lldb, delve); instead of port",
        minimum=1,
    )
    adapter: str | None = tether.arg(
        None,
        description="launch/attach: adapter id (see op adapters); default: chosen from the program",
    )
    thread_id: int | None = tether.arg(
        None, description="thread to act on; default: the stopped thread"
    )
    frame_id: int | None = tether.arg(
        None, description="scopes/evaluate: a frame_id from the current stop"
    )
    reference: int | None = tether.arg(
        None, description="variables: a reference from scopes/variables/evaluate"
    )
    expression: str | None = tether.arg(None, description="evaluate: the expression")


async def handle_debug(call: tether.CallContext, args: DebugArgs) -> str:
    supervisor = call.run.resource(SUPERVISOR)
    # a call that met the adapter's last timeout in a row says the session ended, and why
    return await supervisor.guarded(_dispatch(supervisor, args))


async def _dispatch(supervisor: DebugSupervisor, args: DebugArgs) -> str:
    op = args.op
    if op == "adapters":
        return await supervisor.op_adapters()
    if op == "status":
        return await supervisor.op_status()
    if op == "breakpoints":
        assert args.file is not None and args.lines is not None
        return await supervisor.op_breakpoints(args.file, args.lines)
    if op == "launch":
        assert args.program is not None
        return await supervisor.op_launch(args.program, args.args or [], args.adapter)
    if op == "attach":
        return await supervisor.op_attach(args.port, args.pid, args.adapter)
    if op in _RESUME:
        return await supervisor.op_resume(_RESUME[op], args.thread_id)
    if op == "pause":
        return await supervisor.op_pause(args.thread_id)
    if op == "threads":
        return await supervisor.op_threads()
    if op == "stack":
        return await supervisor.op_stack(args.thread_id)
    if op == "scopes":
        assert args.frame_id is not None
        return await supervisor.op_scopes(args.frame_id)
    if op == "variables":
        assert args.reference is not None
        return await supervisor.op_variables(args.reference)
    if op == "evaluate":
        assert args.expression is not None
        return await supervisor.op_evaluate(args.expression, args.frame_id)
    if op == "output":
        return await supervisor.op_output()
    assert op == "terminate"
    return await supervisor.op_terminate()


def debug_tool(config: DebugConfig) -> tether.ToolSpec:
    # launch may spend start + a build (delve) + configuration + the wait for the first stop
    budget = (
        config.start_timeout_s * 2
        + config.build_timeout_s
        + config.stop_timeout_s
        + config.request_timeout_s * 2
        + 10
    )
    return tether.ToolSpec(
        name="debug",
        tier=tether.Tier.EXEC,
        args=DebugArgs,
        handler=handle_debug,
        description=DESCRIPTION,
        requires=(SUPERVISOR,),
        parallel_safe=False,  # a session is state across calls
        timeout_s=budget,
        actions=ACTIONS,
    )

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
RESOURCE: ResourceKey[DebugSupervisor] = ResourceKey(
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
    "set_variable",
    "run_to",
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
allowed before launch. With condition / hit_condition / log_message the listed lines are added \
or updated with that setting (a log point does not stop: its output comes with the next \
answer); remove: true takes lines out. When a file with breakpoints changes (any write), \
they move with their lines (a symbol helps find an edited line) or are reported lost or \
ambiguous, never left on a line that now says something else; while a program runs, lines \
of a file edited since it started go to the same code in the text it runs, or are refused. \
breakpoints(function) sets a function breakpoint \
("pkg.f"); breakpoints(exceptions[]) chooses the exception filters. A setting the adapter does \
not support is refused by name (see the README's table)
- launch(program, args[]?, adapter?): start the program stopped at your breakpoints
- attach(port | pid, adapter?): attach to a running program: one listening for a debugger on \
127.0.0.1:port, or a local process by pid (debugpy, lldb, delve); reports its threads
- continue / pause / step_over / step_in / step_out (thread_id?): run and report where it stopped
- threads; stack(thread_id?) (30 frames); scopes(frame_id); variables(reference) (50 children, \
values cut at 400 chars)
- evaluate(expression, frame_id?): in that frame's scope (default: the top frame of the stop)
- set_variable(name, value, reference?, frame_id?): assign a variable (a child of reference, \
else a variable of the frame; default the top frame)
- run_to(file, line, thread_id?): continue to that line (a one-shot breakpoint, removed after)
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
        # which of file/function/exceptions, and what goes with each, is checked by
        # breakpoints.check_arguments (three ways, each named in its errors)
        "breakpoints": tether.Action(
            optional=(
                "file",
                "lines",
                "symbol",
                "function",
                "exceptions",
                "condition",
                "hit_condition",
                "log_message",
                "remove",
            )
        ),
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
        "set_variable": tether.Action(
            required=("name", "value"), optional=("reference", "frame_id")
        ),
        "run_to": tether.Action(required=("file", "line"), optional=("thread_id",)),
        "output": tether.Action(),
        "terminate": tether.Action(),
    },
)

_RESUME = {"continue": "continue", "step_over": "next", "step_in": "stepIn", "step_out": "stepOut"}


@attrs.frozen
class DebugArgs:
    op: Op = tether.arg(description="The operation (see the tool description)")
    file: str | None = tether.arg(
        None, description="breakpoints/run_to: source file, relative to the workdir"
    )
    lines: list[int] | None = tether.arg(
        None, description="breakpoints: 1-based line numbers; an empty list clears the file"
    )
    symbol: str | None = tether.arg(
        None,
        description="breakpoints: a substring of each line (like lsp's symbol): checked now, and "
        "when the file is edited the breakpoint follows its line or is reported lost",
        min_length=1,
    )
    condition: str | None = tether.arg(
        None, description="breakpoints: stop only when this expression is true", min_length=1
    )
    hit_condition: str | None = tether.arg(
        None,
        description=(
            "breakpoints: stop only on these hits, counted from 1, the same on every adapter: "
            "'N' or '== N' (only the Nth), '>= N', '> N', '<= N', '< N', '% N' (every Nth); "
            "one an adapter cannot express is refused by name"
        ),
        min_length=1,
    )
    log_message: str | None = tether.arg(
        None,
        description="breakpoints: a log point: print this ({expr} interpolated) and do not stop",
        min_length=1,
    )
    function: str | None = tether.arg(
        None, description="breakpoints: a function breakpoint, e.g. 'main.square'", min_length=1
    )
    exceptions: list[str] | None = tether.arg(
        None,
        description="breakpoints: the exception filters to enable (the adapter's ids); [] none",
    )
    remove: bool | None = tether.arg(
        None, description="breakpoints: true takes the given lines (or function) out"
    )
    line: int | None = tether.arg(None, description="run_to: the 1-based line", minimum=1)
    name: str | None = tether.arg(
        None, description="set_variable: the variable's name", min_length=1
    )
    value: str | None = tether.arg(
        None, description="set_variable: the new value, as an expression of the program's language"
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
        description="attach: the pid of a local process (debugpy, lldb, delve); instead of port",
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
        None, description="scopes/evaluate/set_variable: a frame_id from the current stop"
    )
    reference: int | None = tether.arg(
        None,
        description="variables/set_variable: a reference from scopes/variables/evaluate",
    )
    expression: str | None = tether.arg(None, description="evaluate: the expression")


async def handle_debug(call: tether.CallContext, args: DebugArgs) -> str:
    supervisor = call.run.resource(RESOURCE)
    # a call that met the adapter's last timeout in a row says the session ended, and why
    return await supervisor.guarded(_dispatch(supervisor, args))


async def _dispatch(supervisor: DebugSupervisor, args: DebugArgs) -> str:
    # the ops are imported by the first call (start-up imports none of the session machinery)
    from tether_debug.breakpoints import BreakpointSpec
    from tether_debug.ops import breakpoints, control, lifecycle

    op = args.op
    if op == "adapters":
        return await lifecycle.op_adapters(supervisor)
    if op == "status":
        return await lifecycle.op_status(supervisor)
    if op == "breakpoints":
        return await breakpoints.op_breakpoints(
            supervisor,
            file=args.file,
            lines=args.lines,
            function=args.function,
            exceptions=args.exceptions,
            spec=BreakpointSpec(args.condition, args.hit_condition, args.log_message),
            remove=bool(args.remove),
            symbol=args.symbol,
        )
    if op == "launch":
        assert args.program is not None
        return await lifecycle.op_launch(supervisor, args.program, args.args or [], args.adapter)
    if op == "attach":
        return await lifecycle.op_attach(supervisor, args.port, args.pid, args.adapter)
    if op in _RESUME:
        return await control.op_resume(supervisor, _RESUME[op], args.thread_id)
    if op == "pause":
        return await control.op_pause(supervisor, args.thread_id)
    if op == "run_to":
        assert args.file is not None and args.line is not None
        return await control.op_run_to(supervisor, args.file, args.line, args.thread_id)
    if op == "output":
        return await control.op_output(supervisor)
    if op == "terminate":
        return await control.op_terminate(supervisor)
    return await _inspect(supervisor, args)


async def _inspect(supervisor: DebugSupervisor, args: DebugArgs) -> str:
    """The ops that look at a stopped program."""
    from tether_debug.ops import inspection

    op = args.op
    if op == "threads":
        return await inspection.op_threads(supervisor)
    if op == "stack":
        return await inspection.op_stack(supervisor, args.thread_id)
    if op == "scopes":
        assert args.frame_id is not None
        return await inspection.op_scopes(supervisor, args.frame_id)
    if op == "variables":
        assert args.reference is not None
        return await inspection.op_variables(supervisor, args.reference)
    if op == "evaluate":
        assert args.expression is not None
        return await inspection.op_evaluate(supervisor, args.expression, args.frame_id)
    assert op == "set_variable" and args.name is not None and args.value is not None
    return await inspection.op_set_variable(
        supervisor, args.name, args.value, args.reference, args.frame_id
    )


def tool_specs(run: tether.Run) -> list[tether.ToolSpec]:
    config = run.config("debug", DebugConfig)
    # launch may spend start + a build (delve) + configuration + the wait for the first stop
    budget = (
        config.start_timeout_s * 2
        + config.build_timeout_s
        + config.stop_timeout_s
        + config.request_timeout_s * 2
        + 10
    )
    spec = tether.ToolSpec(
        name="debug",
        tier=tether.Tier.EXEC,
        args=DebugArgs,
        handler=handle_debug,
        description=DESCRIPTION,
        requires=(RESOURCE,),
        parallel_safe=False,  # a session is state across calls
        timeout_s=budget,
        actions=ACTIONS,
        continuation=tether.Continuation(next=_ask_for_less),
    )
    return [spec]


def _ask_for_less(call: tether.CallContext, cut: tether.Cut) -> str:
    """A debug answer cut by the result budget: the session is still where it was, so the
    rest is a narrower question to it."""
    if call.args.op == "evaluate":
        return (
            "the session is still stopped where it was: evaluate a narrower expression (a "
            "slice such as value[100:200], one field, len(value))"
        )
    if call.args.op == "variables":
        return "the session is still stopped where it was: expand one variable by its reference"
    return "the session is still where it was: ask about one frame, thread or variable at a time"

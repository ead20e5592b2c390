"""The ``eval`` tool: arguments, the handler and the bridge back into the run's pipeline."""

# No `from __future__ import annotations`: the argument class is built per set of languages
# and its Literal must be a real object, not a string the converter cannot resolve.

import functools
import math
import time
from typing import Any, Literal

import anyio
import attrs

import tether
from tether.resources import ResourceKey
from tether.text import duration
from tether_eval.config import EvalConfig
from tether_eval.interpreters import Interpreters
from tether_eval.kernels import Bridge, KernelDied
from tether_eval.output import CellOutput

RESOURCE: ResourceKey[Interpreters] = ResourceKey("eval_interpreters", Interpreters)

DESCRIPTION = """\
Run a cell of Python (an IPython kernel) or JavaScript (node) in a persistent interpreter: \
variables, imports and loaded data survive between calls until `reset`. The last expression \
is shown as a notebook would; display(), pandas tables and matplotlib figures (returned as \
images) work; IPython idioms %pip, %cd, !cmd, %%bash, %%timeit work. Inside a cell, \
`tool(name, args)` (JavaScript: `await tool(name, args)`) calls one of your other tools \
through the same approvals and returns its result; a failed call raises ToolError. A cell \
that prints nothing for {budget} is interrupted (the interpreter keeps its state; time spent \
in tool() calls does not count){ceiling}."""


@functools.cache
def eval_args_class(languages: tuple[str, ...]) -> type:
    """The argument class for a run whose registered languages are ``languages``."""
    language_type: Any = Literal[languages] if languages else str

    @attrs.frozen
    class EvalArgs:
        code: str = tether.arg(description="The cell to run")
        description: str = tether.arg(
            description="What the cell does, in 5 to 10 words (shown in the transcript)"
        )
        language: language_type = tether.arg(
            "python" if "python" in languages or not languages else languages[0],
            description=f"Interpreter: {', '.join(languages)}",
        )
        reset: bool = tether.arg(
            False,
            description="Discard this language's interpreter first and start clean "
            "(an empty `code` then only resets)",
        )

    return EvalArgs


def check_description(text: str) -> None:
    words = text.split()
    if not 5 <= len(words) <= 10:
        raise tether.ArgumentError(
            "description", f"5 to 10 words saying what the cell does, got {len(words)}"
        )


def make_bridge(call: tether.CallContext) -> Bridge:
    """Bridge calls go through ``run.call`` on the caller's surface: same gates and wrappers."""

    async def bridge(name: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await call.run.call(name, args, surface=call.surface)
        return result.to_json()

    return bridge


async def handle_eval(call: tether.CallContext, args: Any) -> tether.ToolResult:
    check_description(args.description)
    interpreters = call.run.resource(RESOURCE)
    config = interpreters.config
    language: str = args.language
    notes: list[str] = []
    if args.reset:
        had = await interpreters.discard(language)
        notes.append(
            f"the {language} interpreter was reset"
            if had
            else f"no {language} interpreter was running; starting clean"
        )
        if not args.code.strip():
            return tether.ToolResult.text(notes[0] + ".", language=language, reset=True)
    if not args.code.strip():
        raise tether.ArgumentError("code", "a non-empty cell (or reset: true to only reset)")
    started = time.monotonic()
    kernel, start_notes = await interpreters.get(language)
    notes.extend(start_notes)
    output = CellOutput(max_chars=config.max_output_chars, max_images=config.max_images)
    for note in notes:
        output.note(note)
    meta: dict[str, Any] = {"language": language}
    ceiling = config.max_cell_s or math.inf
    try:
        with anyio.move_on_after(ceiling) as over:
            await kernel.execute(
                args.code,
                output=output,
                bridge=make_bridge(call),
                idle_budget_s=config.idle_budget_s,
            )
        if over.cancelled_caught:
            await _stop_at_ceiling(interpreters, language, kernel, output, config.max_cell_s)
    except KernelDied as exc:
        tail = exc.stderr_tail.strip()
        output.error = True
        output.note(
            f"{exc}; its state is lost and the next call starts a fresh interpreter"
            + (f"\nlast stderr of the interpreter:\n{tail[-2000:]}" if tail else "")
        )
        await interpreters.died(language, exc)
        meta["kernel_died"] = True
    except BaseException as exc:
        # Cancelled mid-cell: a kernel that can stop the cell keeps its state; otherwise (or
        # after a bridge bug) the kernel is in an unknown state and is discarded.
        with anyio.CancelScope(shield=True):
            stop_cell = getattr(kernel, "stop_cell", None)
            cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
            if not (cancelled and stop_cell is not None and await stop_cell()):
                await interpreters.discard(
                    language, "the previous call was cancelled while its cell was running"
                )
        raise
    meta["duration_s"] = round(time.monotonic() - started, 3)
    if output.interrupted:
        meta["interrupted"] = True
    return output.result(**meta)


async def _stop_at_ceiling(
    interpreters: Interpreters, language: str, kernel: Any, output: CellOutput, ceiling: float
) -> None:
    """The cell ran past ``[eval] max_cell_s``: interrupt it as at the idle budget (a cell that
    prints forever never reaches that), keeping the interpreter when it stops."""
    with anyio.CancelScope(shield=True):
        stop_cell = getattr(kernel, "stop_cell", None)
        kept = stop_cell is not None and await stop_cell()
        if not kept:
            await interpreters.discard(
                language, "the previous cell ran past [eval] max_cell_s and did not stop"
            )
    state = (
        "the interpreter and its variables are kept"
        if kept
        else "the interpreter did not stop and was discarded: its state is lost"
    )
    output.interrupted = (
        f"interrupted: the cell ran for {duration(ceiling)}, the ceiling of one eval call "
        f"([eval] max_cell_s = {ceiling:g}; output does not extend it, unlike the idle budget); "
        f"{state}"
    )


def tool_specs(run: tether.Run) -> list[tether.ToolSpec]:
    # no kernel: no resource, and the core skips the tool saying so (`requires`)
    interpreters = run.resource(RESOURCE, None)
    languages = tuple(interpreters.languages) if interpreters is not None else ()
    config = run.config("eval", EvalConfig)
    idle_budget_s, max_cell_s = config.idle_budget_s, config.max_cell_s
    spec = tether.ToolSpec(
        name="eval",
        tier=tether.Tier.EXEC,
        args=eval_args_class(tuple(languages)),
        handler=handle_eval,
        description=DESCRIPTION.format(
            budget=duration(idle_budget_s),
            ceiling=(
                f", and so is one that runs longer than {duration(max_cell_s)} in all"
                if max_cell_s
                else ""
            ),
        ),
        requires=(RESOURCE,),
        parallel_safe=False,
        timeout_s=0,
        continuation=tether.Continuation(next=_print_less),
    )
    return [spec]


def _print_less(call: tether.CallContext, cut: tether.Cut) -> str:
    """A cell's output cut by the result budget: its values are still in the interpreter, so
    the rest is a cell that prints a part of them, not the same cell again."""
    return (
        f"the cell ran once and its variables are still defined; do not run it again: run a "
        f"cell that prints only what you need, e.g. its output from line {cut.items_kept() + 1} "
        "on (a slice), or a summary"
    )

"""The core hook specifications. A family adds its own with ``tether_addhooks``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import argparse

    from tether.run import Run
    from tether.tools import CallContext, ToolResult, ToolSpec

hookspec = pluggy.HookspecMarker("tether")
hookimpl = pluggy.HookimplMarker("tether")


@hookspec(historic=True)
def tether_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    """Add a family's own hook specifications (``pluginmanager.add_hookspecs(module)``).

    :param pluginmanager: the run's plugin manager.
    """


@hookspec
def tether_resources(run: Run) -> dict[str, Any] | None:
    """Resource availability: wire the live resources this plugin can back for ``run``.

    Return a mapping of resource name to object (a supervisor, a parser registry, a kernel
    factory, a question port…), or None. An object with ``async def aclose()`` is closed with the
    run. Two plugins wiring the same name is an error.

    :param run: the run being opened; ``run.resources`` holds what earlier plugins wired.
    """


@hookspec
def tether_tools(run: Run) -> list[ToolSpec] | None:
    """Tier declaration: the tool specs this plugin offers for ``run``.

    The core registers a tool only when every resource in its ``requires`` is wired.

    :param run: the run, with every resource already wired.
    """


@hookspec(firstresult=True)
def tether_process_result(call: CallContext, result: ToolResult) -> Any:
    """Result post-processing. Implement it as ``@hookimpl(wrapper=True)``: ``inner = yield``.

    ``inner`` is the result so far, or an awaitable of it; a wrapper returns a result or an
    awaitable (a coroutine), and the core awaits the whole chain.

    :param call: the call being answered (tool name, arguments, run, surface).
    :param result: the handler's result.
    """


@hookspec
def tether_cli_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add subcommands to the ``tether`` command line (after llm's ``register_commands``).

    Called only when the command line names a command the core does not own (or asks for the
    list of commands), so ``tether call``/``session``/``tools``/``plugins`` never pay for it.
    Add ``parser = subparsers.add_parser(NAME, help=…)`` and its flags
    (``tether.cli.add_run_options(parser)`` gives the shared ``--workdir``, ``--config``,
    ``--conversation``, ``--vibe``, ``--surface``, ``--approve``), then
    ``parser.set_defaults(tether_command=main)`` with ``async def main(ns) -> int``: the CLI
    awaits it under anyio, kills the orphans it leaves, and exits with its value. Keep the hooks
    module light: import heavy dependencies inside ``main``.

    :param subparsers: the ``tether`` parser's subcommand registry.
    """

"""The core hook specifications. A family adds its own with ``tether_addhooks``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import argparse

    from tether.cli.serve_http import HttpEndpoint
    from tether.preview import StagedChange
    from tether.resources import ResourceKey
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
def tether_resources(run: Run) -> Mapping[ResourceKey[Any] | str, Any] | None:
    """Resource availability: wire the live resources this plugin can back for ``run``.

    Return a mapping of key (a :class:`tether.resources.ResourceKey`, or its name) to object (a
    supervisor, a search service, the interpreters…), or None. A value may be a
    :class:`tether.resources.Default`: made only when nobody wires the key directly, after every
    direct resource and the defaults it names in ``after`` — so dependencies are explicit, not
    a matter of hook order. An object with ``async def aclose()`` is closed with the run, last
    wired first. Two plugins wiring the same key: the second is dropped and reported.

    :param run: the run being opened. A resource made from another plugin's is a ``Default``
        naming it in ``after``; reading ``run.resources`` here depends on hook order.
    """


@hookspec
def tether_tools(run: Run) -> list[ToolSpec] | None:
    """Tier declaration: the tool specs this plugin offers for ``run``.

    The core registers a tool only when every resource in its ``requires`` is wired.

    :param run: the run, with every resource already wired.
    """


@hookspec
def tether_process_result(call: CallContext, result: ToolResult) -> Any:
    """Result post-processing: what to add to a call's result.

    Return None (nothing to add), a text to append, or a :class:`tether.ResultNote` (text and/or
    meta) — or an awaitable of one (a coroutine). Every plugin's implementation is called, in the
    collector's order, with the handler's result (``result.written`` lists the files the call
    wrote; diagnostics-on-write keys on it); what each returns is added in that order. Each is
    bounded by ``[core] post_process_timeout_s``; one that raises or times out leaves the result
    as it was plus a line naming the plugin. A post-processor adds, it never replaces: returning
    a ``ToolResult`` (or implementing this hook as a wrapper) is refused and reported.

    :param call: the call being answered (tool name, arguments, run, surface).
    :param result: the handler's result.
    """


@hookspec
def tether_call_observers(run: Run) -> Any:
    """Observers of every call of ``run`` (a tracer, a call log): one
    :class:`tether.observe.CallObserver`, a list of them, or None.

    Each observer's ``observe_call(call)`` is entered when a call starts and left when it ends
    (``call.result`` set: tool, tier, surface, conversation, duration, outcome, result size);
    ``observe_wait(call, what, attributes)`` around each long wait a family marks inside a call
    with :func:`tether.waiting`. An observer that raises is reported and the call goes on.

    :param run: the run, with every resource wired.
    """


@hookspec
def tether_preview_diagnostics(run: Run, change: StagedChange) -> Any:
    """The diagnostics ``change`` would introduce, computed without writing it.

    Return None (this plugin checks none of its files), a text, or a :class:`tether.ResultNote`
    — or an awaitable of one. "Introduce" follows the rule of diagnostics on write: new against
    the diagnostics of each file's current text (``StagedFile.current``), and "baseline unknown"
    said when that is not known. Nothing may touch the disk, and whatever the plugin showed its
    checkers (unsaved document versions) is restored before it returns. Called by
    :meth:`tether.Run.preview_diagnostics`, every implementation, each bounded by
    ``[core] post_process_timeout_s``.

    :param run: the run whose workdir holds the files.
    :param change: the staged change: each file's current and proposed content.
    """


@hookspec
def tether_cli_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add subcommands to the ``tether`` command line (after llm's ``register_commands``).

    Called only when the command line names a command the core does not own (or asks for the
    list of commands), so ``tether call``/``session``/``tools``/``plugins`` never pay for it; a
    command indexed in the ``tether.commands`` entry-point group is looked for in its plugin
    alone first (see ``tether.plugins.COMMANDS_GROUP``).
    Add ``parser = subparsers.add_parser(NAME, help=…)`` and its flags
    (``tether.cli.add_run_options(parser)`` gives the shared ``--workdir``, ``--config``,
    ``--conversation``, ``--vibe``, ``--surface``, ``--approve``), then
    ``parser.set_defaults(tether_command=main)`` with ``async def main(ns) -> int``: the CLI
    awaits it under anyio, kills the orphans it leaves, and exits with its value. Keep the hooks
    module light: import heavy dependencies inside ``main``.

    :param subparsers: the ``tether`` parser's subcommand registry.
    """


@hookspec(firstresult=True)
def tether_serve_http(endpoint: HttpEndpoint) -> Any:
    """Serve a run over MCP streamable HTTP for ``tether serve --http`` (tether-mcp-bridge).

    Return ``async def serve() -> None``, which serves ``endpoint.listener`` until cancelled (the
    server's stop), or None. The core keeps the rules: it bound the address (loopback unless
    ``--allow-remote``), wrote each token's 0600 file, and removes them; the implementation
    answers a request without ``Authorization: Bearer <one of endpoint.tokens>`` with 401 and
    nothing else, and serves a request carrying a token through a connection attached to
    ``endpoint.socket`` with that token's surface (``endpoint.tokens[token]``) — never a surface
    a request names. The first implementation that answers serves; with none, ``--http`` is a
    usage error naming the package to install.

    :param endpoint: a :class:`tether.cli.serve_http.HttpEndpoint`.
    """

"""The ``tether`` command line: ``plugins``, ``tools``, ``call``, ``session``, ``serve`` and
``recover``."""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import traceback
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, get_args

import anyio

from _tether_attach import print_text
from tether.approval import policy_for_auto_up_to
from tether.cli.session import (
    CardStream,
    Terminal,
    internal_error,
    json_line,
    parse_json,
    run_session,
    utf8_stdout,
)
from tether.cli.signals import Stop
from tether.config import HarnessConfig, load_workdir_config, read_config_file
from tether.errors import ConfigError, PluginError, TetherError
from tether.hookspecs import hookimpl
from tether.person import CARD_STREAM, TERMINAL
from tether.plugins import (
    TetherPluginManager,
    core_version,
    indexed_command_plugins,
    make_plugin_manager,
)
from tether.processes.managed import become_subreaper, kill_orphans
from tether.registry import SchemaFormat
from tether.run import Run, open_run
from tether.terminal import say
from tether.tiers import Tier
from tether.tools import ToolResult
from tether.workdir.journal import WorkdirBusy, recover


class _CliResources:
    """The CLI's own plugin: the question transport of the current command, and the call log
    (``--log-level``)."""

    def __init__(self, resources: dict[Any, Any], log_level: str | None = None) -> None:
        self.resources = resources
        self.log_level = log_level

    @hookimpl
    def tether_resources(self, run: Any) -> dict[Any, Any]:
        return self.resources

    @hookimpl
    def tether_call_observers(self, run: Any) -> Any:
        if self.log_level is None:
            return None
        from tether.cli.calllog import CallLog

        return CallLog(self.log_level)


def add_run_options(
    p: argparse.ArgumentParser,
    *,
    surface: bool = True,
    approve: bool = False,
    workdir_default: str | None = ".",
    workdir_help: str = "the checkout the run works on (default: .)",
) -> None:
    """The flags every run-opening command shares (a plugin's command uses them too; one whose
    workdir comes from elsewhere when the flag is absent says so in ``workdir_help``)."""
    p.add_argument("--workdir", default=workdir_default, help=workdir_help)
    p.add_argument(
        "--config",
        type=Path,
        default=None,
        help="the harness's TOML configuration (it may set anything; the workdir's [tool.tether]"
        " or tether.toml may only set timeouts and caps and tighten approval and surfaces)",
    )
    p.add_argument(
        "--trust-workdir",
        action="store_true",
        help="let read-tier servers run from the workdir's .venv/bin, venv/bin, node_modules/.bin",
    )
    p.add_argument("--conversation", default=None, help="conversation id (default: a fresh one)")
    p.add_argument("--vibe", action="store_true", help="vibe mode: register the vibe_* tools")
    p.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default=None,
        help="log every call as a JSON line on stderr (info: each call; debug: also starts and waits)",
    )
    if surface:
        p.add_argument(
            "--surface", default="default", help="default, plan, readonly or a configured one"
        )
    if approve:
        p.add_argument(
            "--approve",
            choices=[t.value for t in Tier],
            default=None,
            help="auto-approve every tier up to this one",
        )


BUILTIN_COMMANDS = ("plugins", "tools", "call", "session", "serve", "recover")


class _VersionAction(argparse.Action):
    """``--version``: the core's version, then each installed plugin's (with its status)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print versions and exit", **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        lines = [f"tether {core_version() or '(no distribution metadata)'}"]
        for info in make_plugin_manager().report:
            lines.append(f"  {info.name} {info.version or '-'} ({info.status})")
        say("\n".join(lines), sys.stdout)
        parser.exit(0)


def _parser(plugins: TetherPluginManager | None = None) -> argparse.ArgumentParser:
    """The parser of the core's commands, and of the commands ``plugins`` add."""
    parser = argparse.ArgumentParser(
        prog="tether", description="Tools bound to the live resources of one run."
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plugins", help="list installed plugins and their status")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = sub.add_parser(
        "recover", help="finish or undo the file changes a killed run left on a workdir"
    )
    p.add_argument("--workdir", default=".", help="the checkout (default: .)")
    _add_tools_command(sub)
    _add_call_command(sub)
    _add_session_command(sub)
    _add_serve_command(sub)
    if plugins is not None:
        plugins.hook.tether_cli_commands(subparsers=sub)
    return parser


def _add_tools_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``tether tools``: the tools a session with these flags registers."""
    p = sub.add_parser("tools", help="list the tools a session with these flags registers")
    add_run_options(p)
    p.add_argument("--format", choices=get_args(SchemaFormat), default="json")
    # the session's own flags, accepted so `tether tools` takes a session's command line as is
    # (neither changes which tools are registered)
    p.add_argument("--interactive", action="store_true", help="accepted, as for session")
    p.add_argument(
        "--approve", choices=[t.value for t in Tier], default=None, help="accepted, as for session"
    )


def _add_call_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``tether call TOOL [ARGS]``: one tool call in a fresh run (or an attached one)."""
    p = sub.add_parser("call", help="one tool call in a fresh run")
    p.add_argument("tool")
    p.add_argument("args", nargs="?", default="{}", help="the arguments as a JSON object")
    p.add_argument(
        "--text",
        action="store_true",
        help="print the content blocks as text (for a person), not one JSON line",
    )
    add_run_options(p, approve=True)
    add_attach_options(p)


def _add_session_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``tether session``: a long run over stdio (JSON lines)."""
    p = sub.add_parser("session", help="a long run over stdio (JSON lines)")
    add_run_options(p, approve=True)
    p.add_argument(
        "--interactive", action="store_true", help="a person answers cards on this stream"
    )


def _add_serve_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``tether serve``: one run served to many clients over a Unix socket."""
    p = sub.add_parser(
        "serve", help="serve one run to many clients (a Unix socket; MCP over HTTP with --http)"
    )
    add_run_options(p, approve=True)
    p.set_defaults(surface="default")
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=0.0,
        metavar="S",
        help="close the run after S seconds with no client (default 0: never)",
    )
    p.add_argument(
        "--no-warm",
        dest="warm",
        action="store_false",
        help="prepare nothing before the first call (the workdir's language servers, searches)",
    )
    p.add_argument(
        "--http",
        default=None,
        metavar="HOST:PORT",
        help="also serve MCP streamable HTTP here (needs tether-mcp-bridge); each client sends "
        "a bearer token, read from the 0600 file the ready line names for its surface (the "
        "server then holds a connection per token: --idle-timeout does not end it)",
    )
    p.add_argument(
        "--http-surface",
        action="append",
        default=None,
        metavar="[NAME=]SURFACE",
        help="a token --http accepts and the surface it reaches (repeat for several: e.g. "
        "default and plan); the token alone chooses it, and each token is one connection with "
        "its own conversation: NAME=SURFACE gives two agents of one surface their own "
        "(default: one token for the server's --surface)",
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="let --http listen on an address other than loopback (a warning; tokens still needed)",
    )
    p.add_argument("--list", action="store_true", help="print the running servers (JSON) and exit")
    p.add_argument(
        "--stop", action="store_true", help="stop the server of this workdir and configuration"
    )


def add_attach_options(p: argparse.ArgumentParser) -> None:
    """``--attach [ENDPOINT]`` and ``--warm``: use a served run (``tether serve``) instead of
    opening one. ``--surface`` then chooses the connection's surface (default: the server's)."""
    p.set_defaults(surface=None)
    p.add_argument(
        "--attach",
        nargs="?",
        const="",
        default=None,
        metavar="SOCKET",
        help="use the served run of this workdir and configuration (or the one at SOCKET)",
    )
    p.add_argument(
        "--warm",
        action="store_true",
        help="as --attach, starting a server when there is none (one, however many ask at once)",
    )


def _command_parser(argv: list[str]) -> argparse.ArgumentParser:
    """The parser for this command line. A core command needs no plugin; a plugin's command
    indexed in ``tether.commands`` is looked for in its plugin alone first (its start-up pays
    for that plugin's hooks, not every plugin's); otherwise every plugin adds its commands."""
    first = next((a for a in argv if not a.startswith("-")), None)
    if first is None or "-h" in argv[: argv.index(first)] or "--help" in argv[: argv.index(first)]:
        return _parser(make_plugin_manager())
    if first in BUILTIN_COMMANDS:
        return _parser()
    indexed = indexed_command_plugins(first)
    if indexed:
        parser = _parser(make_plugin_manager(only=indexed))
        if first in _subcommands(parser):
            return parser
    return _parser(make_plugin_manager())


def _subcommands(parser: argparse.ArgumentParser) -> set[str]:
    return {
        name
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    }


def run_config(ns: argparse.Namespace) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """(workdir, harness layer, workdir layer): ``--config FILE`` and ``--approve`` are the
    harness's, wherever FILE lives; the workdir's own file is the workdir layer."""
    workdir = Path(ns.workdir).resolve()
    if not workdir.is_dir():
        raise ConfigError(f"--workdir: {str(workdir)!r} is not a directory")
    table = read_config_file(ns.config) if ns.config is not None else {}
    origin = f"--config {ns.config}" if ns.config is not None else "--config FILE"
    config = HarnessConfig(table, origin=origin)
    if getattr(ns, "approve", None):
        core = dict(config.get("core", {}))
        # the tiers are --approve's; per-tool and per-action entries of --config FILE stay
        tiers = policy_for_auto_up_to(Tier(ns.approve))
        core["approval"] = {**dict(core.get("approval", {})), **tiers}
        config["core"] = core
        config.set_by.update({f"core.approval.{tier}": f"--approve {ns.approve}" for tier in tiers})
    return workdir, config, load_workdir_config(workdir)


def _print(obj: Any) -> None:
    utf8_stdout()
    sys.stdout.write(json_line(obj))
    sys.stdout.flush()


def cmd_recover(ns: argparse.Namespace) -> int:
    workdir = Path(ns.workdir).resolve()
    if not workdir.is_dir():
        raise ConfigError(f"--workdir: {str(workdir)!r} is not a directory")
    try:
        report = recover(workdir)
    except WorkdirBusy as exc:  # a live change: nothing to recover until it is done
        say(f"tether recover: {exc}", sys.stderr)
        return 1
    for line in report:
        say(line, sys.stdout)  # a journal's paths are the checkout's
    if not report:
        say(f"nothing to recover in {workdir}", sys.stdout)
    return 1 if any("left alone" in line or "ignored" in line for line in report) else 0


async def _wired_report() -> list[dict[str, Any]]:
    """The plugins' report after a run was wired (with no configuration, so nothing starts): a
    plugin whose contribution the collector dropped shows ``failed`` with the reason, not only
    one that failed to import."""
    with tempfile.TemporaryDirectory(prefix="tether-plugins-") as workdir:
        async with open_run(workdir, conversation_id="plugins", config={}, vibe=True) as run:
            return [info.to_json() for info in run.pm.report]


def cmd_plugins(ns: argparse.Namespace) -> int:
    try:
        report = anyio.run(_wired_report)
    except Exception as exc:  # a run that cannot even open: say so, and list what loaded
        say(f"tether: a run could not be opened to check contributions: {exc}", sys.stderr)
        report = [info.to_json() for info in make_plugin_manager().report]
    if ns.json:
        _print(report)
    else:
        for info in report:
            extra = f" ({info['reason']})" if info["reason"] else ""
            accepts = f"tether{info['accepts_core']}" if info["accepts_core"] else "-"
            say(
                f"{info['name']:<16} {info['version'] or '-':<10} {accepts:<20} "
                f"{info['status']}{extra}",
                sys.stdout,
            )
    return 0


@asynccontextmanager
async def cli_run(ns: argparse.Namespace, resources: dict[Any, Any]) -> AsyncIterator[Run]:
    """The run of one CLI command, opened from its run options (``add_run_options``) with
    ``resources`` wired (a plugin's command uses it too)."""
    workdir, config, workdir_config = run_config(ns)
    async with open_run(
        workdir,
        conversation_id=ns.conversation or uuid.uuid4().hex,
        plugins=[_CliResources(resources, getattr(ns, "log_level", None))],
        config=config,
        vibe=ns.vibe,
        workdir_config=workdir_config,
        trust_workdir=ns.trust_workdir,
    ) as run:
        run.surface_tier(ns.surface)  # an unknown surface is a usage error, before any call
        yield run


async def cmd_tools(ns: argparse.Namespace, stop: Stop) -> int:
    # the resources a session would wire, so the list is what a session registers
    async with cli_run(ns, {CARD_STREAM: CardStream(lambda _: None, interactive=False)}) as run:
        _print(run.schemas(surface=ns.surface, format=ns.format))
    return 0


async def cmd_call(ns: argparse.Namespace, stop: Stop) -> int:
    try:
        args = parse_json(ns.args)
    except ValueError as exc:
        say(f"tether call: ARGS_JSON is not valid JSON: {exc}", sys.stderr)
        return 2
    if not isinstance(args, dict):
        say("tether call: ARGS_JSON must be a JSON object", sys.stderr)
        return 2
    if ns.attach is not None or ns.warm:
        if ns.approve is not None:
            print(
                "tether call: --approve: a connection cannot change a served run's approval "
                "policy; start the server with it (tether serve --approve TIER)",
                file=sys.stderr,
            )
            return 2
        from tether.cli.serve import call_attached

        reply = await call_attached(ns, stop, args)
        _print_reply(reply, text=ns.text)
        return stop.exit_code(1 if reply.get("is_error") else 0)
    ns.surface = ns.surface or "default"
    async with cli_run(ns, {TERMINAL: Terminal.from_stdio()}) as run:
        with stop.scope() as scope:
            try:
                reply = (await run.call(ns.tool, args, surface=ns.surface)).to_json()
            except Exception as exc:  # a bug in a tool: a result, as `tether session` answers it
                reply = internal_error(ns.tool, exc)
        if scope.cancelled_caught:
            reply = ToolResult.error(stop.reason(ns.tool)).to_json()
    _print_reply(reply, text=ns.text)
    return stop.exit_code(1 if reply["is_error"] else 0)


def _print_reply(reply: dict[str, Any], *, text: bool) -> None:
    """``tether call``'s output: one JSON line, or with ``--text`` the reply for a person."""
    if text:
        sys.stdout.flush()
        print_text(reply, sys.stdout.buffer)
    else:
        _print(reply)


async def cmd_session(ns: argparse.Namespace, stop: Stop) -> int:
    workdir, config, workdir_config = run_config(ns)
    return await run_session(
        workdir=workdir,
        config=config,
        workdir_config=workdir_config,
        trust_workdir=ns.trust_workdir,
        conversation_id=ns.conversation or uuid.uuid4().hex,
        surface=ns.surface,
        vibe=ns.vibe,
        interactive=ns.interactive,
        make_resources=functools.partial(_CliResources, log_level=ns.log_level),
        stop=stop,
    )


async def cmd_serve(ns: argparse.Namespace, stop: Stop) -> int:
    from tether.cli import serve

    if ns.list:
        return serve.list_servers()
    if ns.stop:
        workdir, _, _ = run_config(ns)
        key = serve.server_key(workdir, ns.config, trust_workdir=ns.trust_workdir, vibe=ns.vibe)
        return serve.stop_server(serve.ServerPaths.of(key))
    return await serve.serve(ns, stop)


async def _with_signals(command: Any, ns: argparse.Namespace) -> int:
    """Run ``command`` with SIGTERM/SIGHUP/SIGINT turned into a graceful stop (see signals)."""
    stop = Stop(ns.command)
    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        await tg.start(stop.watch)
        try:
            code = await command(ns, stop)
        except Exception as exc:  # raised as itself, not inside the task group's ExceptionGroup
            failure = exc
        tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return stop.exit_code(code)


#: how long the CLI waits, after its run closed, for a worker thread a timed-out call abandoned
THREAD_GRACE_S = 2.0


def leave_no_thread(command: str, code: int) -> None:
    """The run is closed and every answer written: a worker thread still running now belongs
    to a call that timed out and was abandoned (a host tool blocked on something). Python
    would wait for it forever at exit; give it a short grace, then exit without it, saying so."""
    import threading
    import time

    deadline = time.monotonic() + THREAD_GRACE_S
    for thread in threading.enumerate():
        if thread is threading.current_thread() or thread.daemon:
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
    left = [t.name for t in threading.enumerate() if t.is_alive() and not t.daemon]
    left = [name for name in left if name != threading.current_thread().name]
    if left:
        say(
            f"tether {command}: {len(left)} thread(s) of timed-out calls still blocked "
            f"({', '.join(sorted(set(left)))}); exiting without them",
            sys.stderr,
        )
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    ns = _command_parser(args).parse_args(args)
    become_subreaper()
    try:
        if ns.command == "plugins":
            return cmd_plugins(ns)
        if ns.command == "recover":
            return cmd_recover(ns)
        builtin = {
            "tools": cmd_tools,
            "call": cmd_call,
            "session": cmd_session,
            "serve": cmd_serve,
        }
        if ns.command not in builtin:
            # a plugin's command (tether_cli_commands) handles its own signals
            try:
                return int(anyio.run(ns.tether_command, ns))
            finally:
                kill_orphans()
        command = builtin[ns.command]
        try:
            code = anyio.run(_with_signals, command, ns)
        finally:
            # the CLI owns every child: orphans re-parented to it (it is a subreaper) go too
            kill_orphans()
        leave_no_thread(ns.command, code)
        return code
    except (ConfigError, PluginError, TetherError) as exc:
        say(f"tether {ns.command}: {exc}", sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception:  # pragma: no cover - a bug: show it
        traceback.print_exc()
        return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The ``tether mcp`` subcommand. Light on purpose: ``mcp`` is imported only when it runs, and
``argparse`` only by the CLI that calls the hook (a harness loading plugins never does)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import tether

if TYPE_CHECKING:
    import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    from tether.cli import add_attach_options, add_run_options

    # no --workdir: the single root the client offers (2025-11-25 clients only)
    add_run_options(
        p,
        approve=True,
        workdir_default=None,
        workdir_help="the checkout the run works on (default: the one root the client offers; "
        "clients of the 2025-11-25 revision offer none, so pass it)",
    )
    add_attach_options(p)
    p.add_argument(
        "--http",
        default=None,
        metavar="HOST:PORT",
        help="serve MCP streamable HTTP here instead of stdio (bearer token required)",
    )
    p.add_argument(
        "--token-file",
        default=None,
        metavar="FILE",
        help="where --http writes its bearer token (0600; default: the runtime directory)",
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="let --http listen on an address other than loopback",
    )


async def _main(ns: argparse.Namespace) -> int:
    from tether_mcp_bridge.server import serve

    return await serve(ns)


@tether.hookimpl
def tether_cli_commands(subparsers: argparse._SubParsersAction[Any]) -> None:
    p = subparsers.add_parser("mcp", help="serve the tools of one run to an MCP client over stdio")
    add_arguments(p)
    p.set_defaults(tether_command=_main)


@tether.hookimpl
def tether_serve_http(endpoint: Any) -> Any:
    """``tether serve --http``: MCP streamable HTTP in the server's process (``mcp`` imported
    when it serves, not when the plugin loads)."""
    import functools

    from tether_mcp_bridge.server import serve_endpoint

    return functools.partial(serve_endpoint, endpoint)


def console_main() -> None:
    """``tether-mcp-bridge [FLAGS]`` is ``tether mcp [FLAGS]``."""
    from tether.cli import main

    sys.exit(main(["mcp", *sys.argv[1:]]))

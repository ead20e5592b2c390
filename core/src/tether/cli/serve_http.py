"""``tether serve --http HOST:PORT``: the served run over MCP streamable HTTP as well.

The core holds the endpoint's rules and none of MCP: where it may listen (loopback unless
``--allow-remote``), its bearer tokens (one per surface, each in a fresh 0600 file in the
private runtime directory, never in the workdir) and which surface each token reaches. The
protocol comes from a plugin implementing ``tether_serve_http`` (tether-mcp-bridge), in the
server's own process: it gets the bound socket and the tokens, and each token's requests become
one connection of the served run attached with that token's surface, so the server's own
surface cap and per-connection rules apply to HTTP as to the socket. See docs/architecture.md
("One run, many clients") for why it is a hook and not a child process.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import socket
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from tether.errors import ConfigError, ToolError
from tether.terminal import say

#: the addresses ``--http`` listens on without ``--allow-remote``
LOOPBACK = ("127.0.0.1", "::1", "localhost")
#: what to install when no plugin speaks MCP over HTTP
INSTALL_HINT = "pip install tether-mcp-bridge"
#: a token's (or a surface's) name as it may appear in a token file's name
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def http_address(text: str, *, allow_remote: bool, flag: str = "--http") -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) checked: a non-loopback host needs
    ``allow_remote`` (then a warning goes to stderr)."""
    host, _, port = str(text).rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"{flag}: expected HOST:PORT (e.g. 127.0.0.1:8765), got {text!r}")
    if host not in LOOPBACK:
        if not allow_remote:
            raise ConfigError(
                f"{flag}: {host!r} is not a loopback address; pass --allow-remote to listen "
                "beyond this machine (every client still needs the bearer token)"
            )
        say(
            f"tether: warning: {flag} listens on {host}, beyond this machine (--allow-remote): "
            "any host that reaches it and holds a token gets that token's surface; nothing is "
            "encrypted (no TLS)",
            sys.stderr,
        )
    return host, int(port)


def bind(host: str, port: int, flag: str = "--http") -> socket.socket:
    """A listening TCP socket on ``host:port`` (bound before the ready line is printed, so a
    client that reads it can connect at once)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ConfigError(f"{flag}: cannot resolve {host!r}: {exc}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"{flag}: cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.set_inheritable(False)
    return sock


def write_token(path: Path) -> str:
    """A fresh bearer token in ``path``, a file only this user can read (0600, created anew:
    never a file or link someone left there)."""
    token = secrets.token_urlsafe(32)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token


@attrs.frozen
class HttpEndpoint:
    """What a ``tether_serve_http`` implementation serves: ``listener`` (bound and listening),
    ``tokens`` (each token's surface: a request's token alone chooses it), the served run's
    ``socket`` (each token's requests go through a connection of its own attached there with
    that token's surface, so its own conversation) and its ``workdir``. ``token_files`` and
    ``surfaces`` are keyed by the token's name (``--http-surface [NAME=]SURFACE``)."""

    host: str
    port: int
    listener: socket.socket
    tokens: Mapping[str, str]
    token_files: Mapping[str, Path]
    surfaces: Mapping[str, str]
    socket: Path
    workdir: Path

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/mcp"

    def record(self) -> dict[str, Any]:
        """The endpoint in the ready line and ``--list``: its URL, each token's file (the file,
        never the token) and surface, by the token's name."""
        return {
            "url": self.url,
            "token_files": {name: str(path) for name, path in self.token_files.items()},
            "surfaces": dict(self.surfaces),
        }


def token_names(ns: Any) -> dict[str, str]:
    """Each ``--http-surface [NAME=]SURFACE``'s token name and surface (the name is the
    surface's when not given; default: one token for the server's ``--surface``)."""
    named: dict[str, str] = {}
    for entry in ns.http_surface or [ns.surface]:
        name, _, surface = entry.rpartition("=")
        name = name or surface
        if not (_NAME.fullmatch(name) and _NAME.fullmatch(surface)):
            raise ConfigError(
                "--http-surface: expected SURFACE or NAME=SURFACE (letters, digits, _ and -), "
                f"got {entry!r}"
            )
        if named.get(name, surface) != surface:
            raise ConfigError(f"--http-surface: the token name {name!r} is given twice")
        named[name] = surface
    return named


def check_options(ns: Any) -> tuple[str, int] | None:
    """``--http``'s usage errors, before the run opens: the address, the surfaces' names."""
    if ns.http is None:
        if ns.http_surface or ns.allow_remote:
            flag = "--http-surface" if ns.http_surface else "--allow-remote"
            raise ConfigError(f"{flag}: only with --http HOST:PORT")
        return None
    token_names(ns)
    return http_address(ns.http, allow_remote=ns.allow_remote)


@contextlib.asynccontextmanager
async def http_endpoint(
    ns: Any, run: Any, socket_path: Path, base: Path
) -> AsyncIterator[tuple[dict[str, Any], Callable[[], Any] | None]]:
    """With ``--http``: the endpoint's record and the function that serves it (a plugin's
    ``tether_serve_http``), its socket bound and its token files written (removed at exit).
    Without: an empty record and None."""
    address = check_options(ns)
    if address is None:
        yield {}, None
        return
    surfaces = token_names(ns)
    max_tier = run.surface_tier(ns.surface)
    for surface in set(surfaces.values()):
        try:
            tier = run.surface_tier(surface)
        except ToolError as exc:
            raise ConfigError(f"--http-surface: {exc}") from None
        if tier > max_tier:
            raise ConfigError(
                f"--http-surface: {surface!r} reaches tier {tier.value}, above this server's "
                f"{ns.surface!r} (tier {max_tier.value}); widen --surface to allow it"
            )
    if not run.pm.hook.tether_serve_http.get_hookimpls():
        raise ConfigError(
            f"--http: no installed plugin serves MCP over HTTP; {INSTALL_HINT} (it adds "
            "`tether mcp` and this endpoint)"
        )
    files = {name: base.parent / f"{base.name}.{name}.token" for name in surfaces}
    listener = bind(*address)
    try:
        tokens = {write_token(path): surfaces[name] for name, path in files.items()}
        endpoint = HttpEndpoint(
            address[0], address[1], listener, tokens, files, surfaces, socket_path, run.workdir
        )
        serve = run.pm.hook.tether_serve_http(endpoint=endpoint)
        if serve is None:
            raise ConfigError(f"--http: no installed plugin serves MCP over HTTP; {INSTALL_HINT}")
        yield {"http": endpoint.record()}, serve
    finally:
        listener.close()
        remove_tokens(base)


def remove_tokens(base: Path) -> None:
    """The token files of the server at ``base`` (a killed server's too)."""
    for path in base.parent.glob(f"{base.name}.*.token"):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

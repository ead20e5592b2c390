"""``tether serve --http``: the core's half. Its usage errors come before the run opens, and
without a plugin that speaks MCP over HTTP (these tests load only echo and files) the command
fails naming the package to install, leaving no socket, record or token file behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tether.cli.serve_http import http_address
from tether.errors import ConfigError


def _env(runtime: Path) -> dict[str, str]:
    # echo and files only: no plugin serves MCP over HTTP (as where the core runs alone)
    return {**os.environ, "TETHER_LOAD_PLUGINS": "echo,files", "TETHER_RUNTIME_DIR": str(runtime)}


def serve(runtime, workdir, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether", "serve", "--workdir", str(workdir), "--no-warm", *flags],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(runtime),
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def dirs(tmp_path):
    runtime, workdir = tmp_path / "rt", tmp_path / "wd"
    runtime.mkdir(mode=0o700)
    workdir.mkdir()
    return runtime, workdir


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--http", "127.0.0.1:8765"], "pip install tether-mcp-bridge"),
        (["--http", "0.0.0.0:8765"], "'0.0.0.0' is not a loopback address; pass --allow-remote"),
        (["--http", "[::]:8765"], "'::' is not a loopback address; pass --allow-remote"),
        (["--http", "example.org:8765"], "is not a loopback address"),
        (["--http", "127.0.0.1"], "--http: expected HOST:PORT"),
        (["--http", "127.0.0.1:0"], "--http: expected HOST:PORT"),
        (["--http", "127.0.0.1:70000"], "--http: expected HOST:PORT"),
        (["--http", ":8765"], "--http: expected HOST:PORT"),
        (["--http-surface", "plan"], "--http-surface: only with --http"),
        (["--allow-remote"], "--allow-remote: only with --http"),
        (["--http", "127.0.0.1:8765", "--http-surface", "../x"], "--http-surface: expected"),
        (["--http", "127.0.0.1:8765", "--http-surface", "main="], "--http-surface: expected"),
        (["--http", "127.0.0.1:8765", "--http-surface", "a/b=plan"], "--http-surface: expected"),
        (
            ["--http", "127.0.0.1:8765", "--http-surface", "x=plan", "--http-surface", "x=default"],
            "--http-surface: the token name 'x' is given twice",
        ),
        (["--http", "127.0.0.1:8765", "--http-surface", "nosuch"], "--http-surface: "),
        (["--http", "127.0.0.1:8765", "--http-surface", "sub=nosuch"], "--http-surface: "),
        (
            ["--surface", "plan", "--http", "127.0.0.1:8765", "--http-surface", "default"],
            "--http-surface: 'default' reaches tier exec, above this server's 'plan'",
        ),
    ],
)
def test_usage_errors_name_the_flag_and_leave_nothing(dirs, flags, expected):
    runtime, workdir = dirs
    out = serve(runtime, workdir, *flags)
    assert out.returncode == 2 and expected in out.stderr, out.stderr
    assert not out.stdout  # no ready line
    left = {p.suffix for p in runtime.iterdir()}
    assert left <= {".lock"}, left  # no socket, record or token file


def test_allow_remote_warns_and_still_needs_a_plugin(dirs):
    runtime, workdir = dirs
    out = serve(runtime, workdir, "--http", "0.0.0.0:8765", "--allow-remote")
    assert "beyond this machine (--allow-remote)" in out.stderr
    assert out.returncode == 2 and "pip install tether-mcp-bridge" in out.stderr


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "[::1]", "localhost"])
def test_loopback_needs_no_flag(host):
    assert http_address(f"{host}:8765", allow_remote=False) == (host.strip("[]"), 8765)


def test_a_remote_address_is_refused_without_the_flag():
    with pytest.raises(ConfigError, match=r"--http: '10\.0\.0\.1' is not a loopback"):
        http_address("10.0.0.1:8765", allow_remote=False)


def test_hook_tether_serve_http(tmp_path):
    """The first plugin that answers serves the endpoint the core bound, with one 0600 token
    file per surface, which the core removes when the endpoint closes; None is no answer."""
    import argparse
    import socket as socketlib
    import stat

    import anyio

    import tether
    from tether.cli.serve_http import http_endpoint

    seen = []

    class Server:
        @tether.hookimpl
        def tether_serve_http(self, endpoint):
            seen.append(endpoint)

            async def serve() -> None:
                return None

            return serve

    class Declines:
        @tether.hookimpl(tryfirst=True)
        def tether_serve_http(self, endpoint):
            return None

    with socketlib.socket() as probe:  # a free loopback port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ns = argparse.Namespace(
        http=f"127.0.0.1:{port}",
        http_surface=["main=default", "sub=plan"],
        allow_remote=False,
        surface="default",
    )
    base = tmp_path / "server"

    async def main(plugins) -> tuple[dict, object]:
        async with tether.open_run(
            tmp_path, conversation_id="c", plugins=plugins, entry_points=False
        ) as run:
            async with http_endpoint(ns, run, tmp_path / "server.sock", base) as (record, serve):
                endpoint = seen[-1]
                assert endpoint.listener.getsockname()[1] == port
                assert endpoint.surfaces == {"main": "default", "sub": "plan"}
                for name, path in endpoint.token_files.items():
                    assert stat.S_IMODE(path.stat().st_mode) == 0o600
                    assert endpoint.tokens[path.read_text().strip()] == endpoint.surfaces[name]
                return record, serve

    record, serve = anyio.run(main, [Declines(), Server()])
    assert record["http"]["url"] == f"http://127.0.0.1:{port}/mcp"
    assert set(record["http"]["token_files"]) == {"main", "sub"}
    assert callable(serve) and len(seen) == 1
    assert not list(tmp_path.glob("server.*.token"))  # removed with the endpoint

    with pytest.raises(ConfigError, match="pip install tether-mcp-bridge"):
        anyio.run(main, [Declines()])
    assert not list(tmp_path.glob("server.*.token"))

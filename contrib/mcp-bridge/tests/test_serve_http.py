"""`tether serve --http`: the served run over MCP streamable HTTP, in the server's process (the
`tether_serve_http` hook), one bearer token per surface. Real clients: the `mcp` SDK's
streamable HTTP client, and raw HTTP for what a client must not get."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

TETHER = [sys.executable, "-m", "tether"]
WRITES = {"echo_write", "write", "edit", "apply_patch", "ast_edit", "lsp_rename"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env_of(runtime: Path) -> dict[str, str]:
    return {**os.environ, "TETHER_RUNTIME_DIR": str(runtime)}


def start(runtime: Path, workdir: Path, *flags: str) -> tuple[subprocess.Popen[str], dict]:
    proc = subprocess.Popen(
        [*TETHER, "serve", "--workdir", str(workdir), "--no-warm", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env_of(runtime),
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else ""
    return proc, json.loads(line)


def token_of(ready: dict, surface: str) -> str:
    return Path(ready["endpoints"]["http"]["token_files"][surface]).read_text().strip()


def use(url: str, token: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The `mcp` SDK's streamable HTTP client with ``token``: its tool list, then each call's
    result text (or the MCP error it got)."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def session() -> dict[str, Any]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            results: list[Any] = []
            for name, args in calls:
                try:
                    result = await client.call_tool(name, args)
                except Exception as exc:  # the MCP error a refused call gets
                    results.append({"error": str(exc)})
                    continue
                text = "".join(getattr(b, "text", "") for b in result.content)
                results.append({"is_error": result.is_error, "text": text})
            return {"tools": names, "results": results}

    return anyio.run(session)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One server for the module: a default and a plan token on one HTTP endpoint, writes
    approved by the server's policy."""
    base = tmp_path_factory.mktemp("serve-http")
    runtime, workdir = base / "rt", base / "wd"
    workdir.mkdir()
    (workdir / "a.py").write_text("def foo():\n    return 1\n")
    flags = ["--approve", "write", "--http", f"127.0.0.1:{free_port()}"]
    proc, ready = start(
        runtime, workdir, *flags, "--http-surface", "default", "--http-surface", "plan"
    )
    yield ready, workdir, runtime
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)


def test_the_ready_line_names_the_endpoint_and_list_shows_it(served):
    ready, workdir, runtime = served
    http = ready["endpoints"]["http"]
    assert ready["endpoints"]["socket"] == ready["socket"]
    assert http["url"].startswith("http://127.0.0.1:") and http["url"].endswith("/mcp")
    assert set(http["token_files"]) == {"default", "plan"}
    tokens = set()
    for path in map(Path, http["token_files"].values()):
        info = path.lstat()
        assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
        assert path.parent == runtime and not path.is_relative_to(workdir)
        tokens.add(path.read_text().strip())
    assert len(tokens) == 2 and all(len(t) >= 32 for t in tokens)
    assert not any(t in json.dumps(ready) for t in tokens)  # files, never the tokens
    out = subprocess.run(
        [*TETHER, "serve", "--list"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env_of(runtime),
    )
    (listed,) = json.loads(out.stdout)
    assert listed["endpoints"]["http"] == http


@pytest.mark.parametrize("surface", ["default", "plan"])
def test_tools_listed_over_http_follow_the_tokens_surface(served, surface):
    ready, workdir, _ = served
    url = ready["endpoints"]["http"]["url"]
    target = f"by-{surface}.txt"
    seen = use(
        url,
        token_of(ready, surface),
        [
            ("ast_grep", {"pattern": "def $F(): $$$", "language": "python"}),
            ("echo_write", {"path": target, "text": surface}),
        ],
    )
    grep, write = seen["results"]
    assert "foo" in grep["text"]
    if surface == "plan":
        assert not seen["tools"] & WRITES and "lsp" in seen["tools"]
        assert "unknown tool 'echo_write' on surface 'plan'" in write["error"]
        assert not (workdir / target).exists()
    else:
        assert WRITES - {"lsp_rename"} <= seen["tools"]
        assert write.get("is_error") is False, write
        assert (workdir / target).read_text() == "default"


def test_stop_ends_the_http_endpoint_and_removes_its_token_files(tmp_path):
    runtime, workdir = tmp_path / "rt", tmp_path / "wd"
    workdir.mkdir()
    port = free_port()
    address = f"[::1]:{port}" if _ipv6() else f"localhost:{port}"
    proc, ready = start(runtime, workdir, "--http", address)
    files = [Path(p) for p in ready["endpoints"]["http"]["token_files"].values()]
    assert [f.name.rsplit(".", 2)[1] for f in files] == ["default"]
    assert "tools" in use(ready["endpoints"]["http"]["url"], files[0].read_text().strip(), [])
    out = subprocess.run(
        [*TETHER, "serve", "--stop", "--workdir", str(workdir)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env_of(runtime),
    )
    assert out.returncode == 0, out.stderr
    assert proc.wait(30) in (0, 128 + signal.SIGTERM)
    assert not any(f.exists() for f in files)
    with pytest.raises(OSError), socket.create_connection(("localhost", port), timeout=5):
        pass


def _ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False

"""`tether mcp --attach`: real MCP clients (the `mcp` 2.x SDK, the `mcp<2` SDK) share one served
run (`tether serve`), each with its own surface; cards go to the client whose call raised them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_clients import ECHO_ALLOW, Server, run_client, text_of

from tether.processes.managed import descendants


@pytest.fixture
def served(tmp_path: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch):
    """A `tether serve` on ``workdir`` (its language servers started ahead), and its socket."""
    runtime = tmp_path / "rt"
    monkeypatch.setenv("TETHER_RUNTIME_DIR", str(runtime))
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether", "serve", "--workdir", str(workdir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else ""
    proc.started = started  # type: ignore[attr-defined]
    yield proc, json.loads(line)["socket"]
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)


def _server_names(pid: int) -> list[str]:
    names = []
    for child in descendants(pid):
        try:
            names.append(Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return names


def test_two_mcp_clients_of_different_surfaces_share_one_run(client_envs, workdir, served):
    proc, sock = served
    hover = ["lsp", {"action": "hover", "file": "a.py", "line": 5, "symbol": "foo"}]
    plan = Server(None, "--attach", sock, "--surface", "plan")
    seen = run_client(client_envs, "mcp2", plan, "tools")
    names = {t["name"] for t in seen["tools"]}
    assert "lsp" in names and "ast_grep" in names
    assert not names & {"eval", "debug", "echo_write"}
    seen = run_client(
        client_envs,
        "mcp2",
        plan,
        "calls",
        calls=[hover, ["echo_write", {"path": "x", "text": "y"}]],
    )
    answer, refused = seen["results"]
    assert not answer.get("isError") and "def foo()" in text_of(answer)
    assert "unknown tool 'echo_write' on surface 'plan'" in refused["mcp_error"]
    # a default-surface client over the older protocol: its approval card comes to it
    main = Server(None, "--attach", sock)
    seen = run_client(
        client_envs,
        "mcp1",
        main,
        "calls",
        calls=[hover, ["echo_write", {"path": "ok.txt", "text": "written"}]],
        answers=[ECHO_ALLOW],
    )
    answer, wrote = seen["results"]
    assert not answer.get("isError") and "def foo()" in text_of(answer)
    assert not wrote.get("isError"), wrote
    assert (workdir / "ok.txt").read_text() == "written"
    assert len(seen["elicitations"]) == 1
    # one language server for both clients: the run's
    assert sum("basedpyright" in n or "pyright" in n for n in _server_names(proc.pid)) >= 1
    assert proc.poll() is None  # the clients left; the served run stays


def test_attach_refuses_a_surface_above_the_servers(tmp_path, workdir, monkeypatch):
    runtime = tmp_path / "rt"
    env = {**os.environ, "TETHER_RUNTIME_DIR": str(runtime)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether", "serve", "--workdir", str(workdir), "--surface", "plan"],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        sock = json.loads(proc.stdout.readline())["socket"]
        out = subprocess.run(
            [sys.executable, "-m", "tether", "mcp", "--attach", sock, "--surface", "default"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        assert out.returncode == 2 and "above this server's 'plan'" in out.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_mcp_over_http_needs_the_token_and_keeps_its_endpoints_surface(served, tmp_path):
    """`tether mcp --attach SOCKET --http`: without the bearer token 401 and no tool list; the
    `mcp` SDK's streamable HTTP client with it sees the endpoint's (plan) tools and calls one."""
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    _, sock = served
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tether",
            "mcp",
            "--attach",
            sock,
            "--surface",
            "plan",
            "--http",
            f"127.0.0.1:{port}",
        ],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        token_file = Path(ready["token_file"])
        assert (token_file.stat().st_mode & 0o777) == 0o600
        token = token_file.read_text().strip()
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
            answer = httpx2.post(ready["url"], json=listing, headers=headers, timeout=30)
            assert answer.status_code == 401 and "lsp" not in answer.text

        async def use() -> tuple[set[str], str]:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with http, Client(streamable_http_client(ready["url"], http_client=http)) as c:
                names = {tool.name for tool in (await c.list_tools()).tools}
                result = await c.call_tool(
                    "ast_grep", {"pattern": "def $F(): $$$", "language": "python"}
                )
                return names, "".join(getattr(b, "text", "") for b in result.content)

        names, text = anyio.run(use)
        assert "lsp" in names and not names & {"eval", "debug", "echo_write"}
        assert "foo" in text
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    assert not token_file.exists()


def test_http_beyond_loopback_needs_a_flag(served):
    _, sock = served
    out = subprocess.run(
        [sys.executable, "-m", "tether", "mcp", "--attach", sock, "--http", "0.0.0.0:8765"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 2 and "--allow-remote" in out.stderr


def test_the_agents_sdk_first_lsp_call_ten_seconds_after_the_server_started(
    client_envs, workdir, served
):
    """The OpenAI Agents SDK with its default 5 s session timeout: basedpyright needs longer
    than that to start, but a served run started it ahead, so the first call answers."""
    proc, sock = served
    time.sleep(max(0.0, proc.started + 10 - time.monotonic()))
    # a machine slower than the 10 s (a loaded CI runner): wait for the server the run started
    # ahead to say it is ready (`lsp status` from another connection: no query of a.py)
    deadline = time.monotonic() + 180
    while True:
        status = subprocess.run(
            [
                sys.executable,
                "-m",
                "tether",
                "call",
                "lsp",
                '{"action": "status"}',
                "--attach",
                sock,
                "--surface",
                "plan",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        if "): ready" in status.stdout:
            break
        assert time.monotonic() < deadline, status.stdout
        time.sleep(1)
    hover = ["lsp", {"action": "hover", "file": "a.py", "line": 5, "symbol": "foo"}]
    server = Server(None, "--attach", sock)
    config = {"server": server.argv, "env": server.env, "calls": [hover]}
    out = subprocess.run(
        [
            str(client_envs["openai-agents"] / "bin" / "python"),
            str(Path(__file__).parent / "clients" / "agents_sdk_client.py"),
            json.dumps(config),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["timeout_s"] == 5 and "lsp" in seen["tools"]
    (answer,) = seen["results"]
    assert "error" not in answer and not answer["is_error"], answer
    assert "def foo()" in answer["text"]

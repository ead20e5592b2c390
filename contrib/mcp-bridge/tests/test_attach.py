"""`tether mcp --attach`: real MCP clients (the `mcp` 2.x SDK, the `mcp<2` SDK) share one served
run (`tether serve`), each with its own surface; cards go to the client whose call raised them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_clients import ECHO_ALLOW, Server, run_client, text_of

from tether.process import descendants


@pytest.fixture
def served(tmp_path: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch):
    """A `tether serve` on ``workdir`` (its language servers started ahead), and its socket."""
    runtime = tmp_path / "rt"
    monkeypatch.setenv("TETHER_RUNTIME_DIR", str(runtime))
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

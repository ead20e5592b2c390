"""Attacks on a served run's HTTP endpoint (``tether serve --http``, tether-mcp-bridge): a token
that is missing, empty, a prefix, in another case, in another place; a request field, header,
query or session id that tries to reach a wider surface than its token's; SIGKILL of the
server with an HTTP client's kernel running. Tallied under ``serve-http`` (``kills`` for the
kill)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

httpx = pytest.importorskip("httpx2", reason="tether-mcp-bridge's HTTP client (the mcp SDK)")

TETHER = [sys.executable, "-m", "tether"]
WRITES = {"echo_write", "write", "edit", "apply_patch", "ast_edit", "lsp_rename", "eval", "debug"}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
PROTOCOL = "2025-11-25"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(base: Path, *flags: str, env: dict[str, str] | None = None) -> tuple[Any, dict]:
    runtime, workdir = base / "rt", base / "wd"
    workdir.mkdir(exist_ok=True)
    proc = subprocess.Popen(
        [*TETHER, "serve", "--workdir", str(workdir), "--no-warm", *flags],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {}), "TETHER_RUNTIME_DIR": str(runtime)},
    )
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A server approving writes, with a default and a plan token on one endpoint."""
    base = tmp_path_factory.mktemp("serve-http")
    http = ["--http", f"127.0.0.1:{_free_port()}", "--http-surface", "default"]
    proc, ready = _start(base, "--approve", "write", *http, "--http-surface", "plan")
    files = ready["endpoints"]["http"]["token_files"]
    tokens = {s: Path(f).read_text().strip() for s, f in files.items()}
    yield ready["endpoints"]["http"]["url"], tokens, base / "wd"
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)


def _messages(answer: Any) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a streamable HTTP answer (JSON, or server-sent events)."""
    if answer.headers.get("content-type", "").startswith("application/json"):
        return [answer.json()]
    return [json.loads(line[5:]) for line in answer.text.splitlines() if line.startswith("data:")]


class Raw:
    """An MCP session over raw HTTP (what a client may put anywhere in a request)."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.url, self.headers = url, {**ACCEPT, **headers}
        self.session: str | None = None
        self.ids = iter(range(1, 1000))

    def post(self, body: dict[str, Any], **extra: str) -> Any:
        headers = dict(self.headers)
        if self.session:
            headers["mcp-session-id"] = self.session
        headers.update(extra)
        return httpx.post(self.url, json=body, headers=headers, timeout=60)

    def request(self, method: str, params: dict[str, Any], **extra: Any) -> Any:
        return self.post(
            {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params, **extra}
        )

    def open(self) -> Raw:
        answer = self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "attack", "version": "0"},
            },
        )
        assert answer.status_code == 200, answer.text
        self.session = answer.headers.get("mcp-session-id")
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self


def _listing(url: str, headers: dict[str, str]) -> tuple[int, str]:
    """A tools/list as the bytes say (http.client sends a header value httpx would refuse)."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        conn.request("POST", path, body=body, headers={**ACCEPT, **headers})
        answer = conn.getresponse()
        return answer.status, answer.read().decode(errors="replace")
    finally:
        conn.close()


# every way a request can carry something that is not the token, or not all of it
TOKEN_VARIANTS = {
    "missing": lambda t: ({}, ""),
    "empty": lambda t: ({"Authorization": "Bearer "}, ""),
    "scheme-only": lambda t: ({"Authorization": "Bearer"}, ""),
    "prefix": lambda t: ({"Authorization": f"Bearer {t[:-1]}"}, ""),
    "half": lambda t: ({"Authorization": f"Bearer {t[: len(t) // 2]}"}, ""),
    "extended": lambda t: ({"Authorization": f"Bearer {t}A"}, ""),
    "other-case": lambda t: ({"Authorization": f"Bearer {t.swapcase()}"}, ""),
    "second-word": lambda t: ({"Authorization": f"Bearer {t} {t}"}, ""),
    "no-scheme": lambda t: ({"Authorization": t}, ""),
    "basic": lambda t: ({"Authorization": f"Basic {t}"}, ""),
    "query": lambda t: ({}, f"?token={t}&access_token={t}"),
    "cookie": lambda t: ({"Cookie": f"token={t}"}, ""),
    "other-header": lambda t: ({"X-Auth-Token": t, "Proxy-Authorization": f"Bearer {t}"}, ""),
}

#: the variants the `mcp` SDK's HTTP client can send as well (the rest: raw HTTP only)
SDK_VARIANTS = {"prefix", "other-case", "extended", "no-scheme", "basic", "missing"}


@pytest.mark.parametrize("variant", sorted(TOKEN_VARIANTS))
def test_without_the_token_401_and_no_tool_list(tally, served, variant):
    url, tokens, _ = served
    headers, query = TOKEN_VARIANTS[variant](tokens["default"])
    status, text = _listing(url + query, headers)
    held = status == 401 and not any(name in text for name in ("lsp", "echo"))
    # and the `mcp` SDK's own client with that header gets no session
    if held and variant in SDK_VARIANTS:
        held = _sdk_refused(url + query, headers)
    tally.record("serve-http", held=held)
    assert held, (status, text[:300])


def _sdk_refused(url: str, headers: dict[str, str]) -> bool:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def attempt() -> bool:
        http = create_mcp_http_client(headers=headers)
        try:
            with anyio.fail_after(60):
                async with http, Client(streamable_http_client(url, http_client=http)) as client:
                    await client.list_tools()
        except Exception:
            return True
        return False

    return anyio.run(attempt)


def _plan_session(url: str, tokens: dict[str, str]) -> Raw:
    return Raw(url, {"Authorization": f"Bearer {tokens['plan']}"}).open()


# a plan-token request that names a wider surface every way a request can
RAISES = {
    "args-surface": ({"surface": "default", "tier": "exec"}, {}, {}, ""),
    "params-surface": ({}, {"surface": "default", "tier": "exec"}, {}, ""),
    "meta-surface": ({}, {"_meta": {"surface": "default", "tether/surface": "default"}}, {}, ""),
    "header": ({}, {}, {"X-Tether-Surface": "default", "X-Surface": "default"}, ""),
    "query": ({}, {}, {}, "?surface=default&tier=exec"),
}


@pytest.mark.parametrize("variant", sorted(RAISES))
def test_no_request_field_raises_a_tokens_surface(tally, served, variant):
    url, tokens, workdir = served
    in_args, in_params, headers, query = RAISES[variant]
    raw = _plan_session(url + query, tokens)
    target = f"raise-{variant}.txt"
    listing = raw.post(
        {"jsonrpc": "2.0", "id": 50, "method": "tools/list", "params": dict(in_params)},
        **headers,
    )
    args = {"path": target, "text": "x", **in_args}
    call = raw.post(
        {
            "jsonrpc": "2.0",
            "id": 51,
            "method": "tools/call",
            "params": {"name": "echo_write", "arguments": args, **in_params},
        },
        **headers,
    )
    (tools,) = _messages(listing)
    names = {t["name"] for t in tools["result"]["tools"]}
    (answer,) = [m for m in _messages(call) if m.get("id") == 51]
    refused = "error" in answer or answer["result"].get("isError")
    held = bool(names) and not names & WRITES and refused and not (workdir / target).exists()
    tally.record("serve-http", held=held)
    assert held, (names, answer)


def test_another_tokens_session_id_is_not_its_surface(tally, served):
    """A plan token with the session id of a default-token session: the token's endpoint has
    no such session (404), so the default session's tools never answer it."""
    url, tokens, workdir = served
    default = Raw(url, {"Authorization": f"Bearer {tokens['default']}"}).open()
    plan = Raw(url, {"Authorization": f"Bearer {tokens['plan']}"})
    plan.session = default.session
    call = plan.request(
        "tools/call", {"name": "echo_write", "arguments": {"path": "stolen.txt", "text": "x"}}
    )
    listing = plan.request("tools/list", {})
    held = (
        default.session is not None
        and call.status_code == 404
        and listing.status_code == 404
        and "echo_write" not in listing.text
        and not (workdir / "stolen.txt").exists()
    )
    tally.record("serve-http", held=held)
    assert held, (call.status_code, call.text[:300], listing.status_code)


def test_a_token_cannot_reach_another_tokens_kernel(tally, tmp_path):
    """Two agents of one surface, each with its own named token: each token is a connection
    with its own conversation, so one's eval interpreter is not the other's."""
    proc, ready = _start(
        tmp_path,
        "--approve",
        "exec",
        "--http",
        f"127.0.0.1:{_free_port()}",
        "--http-surface",
        "main=default",
        "--http-surface",
        "helper=default",
    )
    try:
        http = ready["endpoints"]["http"]
        assert http["surfaces"] == {"main": "default", "helper": "default"}
        main, helper = (
            Raw(http["url"], {"Authorization": f"Bearer {Path(f).read_text().strip()}"}).open()
            for f in (http["token_files"]["main"], http["token_files"]["helper"])
        )
        why = "set or print a secret number here"
        mine = main.request(
            "tools/call", {"name": "eval", "arguments": {"code": "secret = 41", "description": why}}
        )
        theirs = helper.request(
            "tools/call",
            {"name": "eval", "arguments": {"code": "print(secret)", "description": why}},
        )
        again = main.request(
            "tools/call",
            {"name": "eval", "arguments": {"code": "print(secret + 1)", "description": why}},
        )
        held = (
            "NameError" in theirs.text
            and "42" in again.text
            and all(a.status_code == 200 for a in (mine, theirs, again))
        )
        tally.record("serve-http", held=held)
        assert held, (mine.text[-300:], theirs.text[-300:], again.text[-300:])
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


@pytest.mark.parametrize("address", ["0.0.0.0", "[::]", "192.0.2.1", "example.org"])
def test_beyond_loopback_is_refused_without_the_flag(tally, tmp_path, address):
    out = subprocess.run(
        [*TETHER, "serve", "--workdir", str(tmp_path), "--http", f"{address}:8765"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TETHER_RUNTIME_DIR": str(tmp_path / "rt")},
        stdin=subprocess.DEVNULL,
    )
    held = out.returncode == 2 and "--allow-remote" in out.stderr and not out.stdout
    tally.record("serve-http", held=held)
    assert held, out.stderr


def test_sigkill_of_the_server_leaves_no_process(tally, tmp_path, survivors):
    """An HTTP client's eval kernel and a background command are running; the server gets
    SIGKILL: nothing of it survives, and its port is free."""
    mark = f"TETHER_HTTP_KILL_{uuid.uuid4().hex}"
    port = _free_port()
    proc, ready = _start(
        tmp_path, "--approve", "exec", "--http", f"127.0.0.1:{port}", env={mark: "1"}
    )
    token = Path(ready["endpoints"]["http"]["token_files"]["default"]).read_text().strip()
    raw = Raw(ready["endpoints"]["http"]["url"], {"Authorization": f"Bearer {token}"}).open()
    started = [
        raw.request(
            "tools/call",
            {
                "name": "eval",
                "arguments": {"code": "x = 1", "description": "start a kernel to be killed"},
            },
        ),
        raw.request(
            "tools/call",
            {"name": "echo_exec", "arguments": {"argv": ["sleep", "300"], "background": True}},
        ),
    ]
    assert all(a.status_code == 200 for a in started), [a.text for a in started]
    before = survivors(mark)
    proc.kill()
    proc.wait(10)
    deadline = time.monotonic() + 20
    while survivors(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = survivors(mark)
    with socket.socket() as s:
        free = s.connect_ex(("127.0.0.1", port)) != 0
    held = len(before) >= 3 and not left and free
    tally.record("kills", held=held, orphans=len(left))
    assert held, (before, left, free)

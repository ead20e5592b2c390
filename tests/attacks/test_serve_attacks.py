"""Attacks on a served run (``tether serve``): a socket or runtime directory someone else could
own or open, a request field that tries to raise a connection's surface, one connection
reaching another's calls, cards, kernel or debug session. Each is tallied under ``serve``."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

TETHER = [sys.executable, "-m", "tether"]
NOBODY = 65534


def _env(runtime: Path) -> dict[str, str]:
    return {**os.environ, "TETHER_RUNTIME_DIR": str(runtime)}


class Conn:
    """One session-protocol connection on a server's socket."""

    def __init__(self, path: Path, **attach: Any) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(str(path))
        self.file = self.sock.makefile("rwb")
        self.send({"attach": attach})
        self.ready = self.receive()

    def send(self, message: dict[str, Any]) -> None:
        self.file.write((json.dumps(message) + "\n").encode())
        self.file.flush()

    def receive(self) -> dict[str, Any]:
        line = self.file.readline()
        assert line, "the server closed the connection"
        return json.loads(line)

    def reply(self, request_id: Any) -> dict[str, Any]:
        while True:
            message = self.receive()
            if message.get("id") == request_id:
                return message

    def close(self) -> None:
        self.file.close()
        self.sock.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One server for the module (plan-and-default connections on it), approving exec."""
    base = tmp_path_factory.mktemp("serve")
    runtime, workdir = base / "rt", base / "wd"
    workdir.mkdir()
    (workdir / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    (workdir / "loop.py").write_text("import time\nfor i in range(600):\n    time.sleep(0.1)\n")
    proc = subprocess.Popen(
        [*TETHER, "serve", "--workdir", str(workdir), "--approve", "exec", "--no-warm"],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=_env(runtime),
    )
    assert proc.stdout is not None
    ready = json.loads(proc.stdout.readline())
    yield Path(ready["socket"]), workdir, runtime
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)


def _attach(runtime: Path, socket_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TETHER, "call", "echo", '{"message": "x"}', "--attach", str(socket_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(runtime),
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("change", ["socket mode 0666", "directory mode 0755", "socket link"])
def test_a_socket_others_could_reach_is_never_used(tally, served, tmp_path, change):
    sock, _, runtime = served
    if change == "socket mode 0666":
        os.chmod(sock, 0o666)
        target = sock
    elif change == "directory mode 0755":
        os.chmod(runtime, 0o755)
        target = sock
    else:
        target = runtime / "link.sock"
        os.symlink(sock, target)
    try:
        out = _attach(runtime, target)
        held = out.returncode == 2 and "refused" in out.stderr and not out.stdout
        tally.record("serve", held=held)
        assert held, (out.returncode, out.stdout, out.stderr)
    finally:
        os.chmod(sock, 0o600)
        os.chmod(runtime, 0o700)
        if target != sock:
            target.unlink()


@pytest.mark.parametrize("what", ["socket", "directory"])
def test_a_socket_of_another_owner_is_never_used(tally, served, what):
    if os.getuid() != 0:
        pytest.skip("changing a file's owner needs root")
    sock, _, runtime = served
    path = sock if what == "socket" else runtime
    os.chown(path, NOBODY, NOBODY)
    try:
        out = _attach(runtime, sock)
        held = out.returncode == 2 and f"owned by uid {NOBODY}" in out.stderr
        tally.record("serve", held=held)
        assert held, out.stderr
    finally:
        os.chown(path, 0, 0)


@pytest.mark.parametrize(
    "line",
    [
        {"id": 1, "tool": "echo_write", "args": {"path": "w", "text": "x"}, "surface": "default"},
        {"id": 1, "tool": "echo_write", "args": {"path": "w", "text": "x"}, "tier": "exec"},
        {"id": 1, "tool": "echo_write", "args": {"path": "w", "text": "x", "surface": "default"}},
        {"attach": {"surface": "default"}},
        {"id": 1, "request": "tools", "surface": "default"},
    ],
    ids=["surface-key", "tier-key", "surface-in-args", "second-attach", "tools-surface"],
)
def test_no_request_field_raises_a_connections_surface(tally, served, line):
    sock, workdir, _ = served
    conn = Conn(sock, surface="plan")
    try:
        conn.send(line)
        reply = conn.receive()
        held = reply["is_error"] is True and not (workdir / "w").exists()
        conn.send({"id": "t", "request": "tools"})
        names = {t["name"] for t in conn.reply("t")["tools"]}
        held = held and "echo_write" not in names
        tally.record("serve", held=held)
        assert held, reply
    finally:
        conn.close()


def test_a_client_cannot_cancel_another_connections_call(tally, served):
    sock, _, _ = served
    a, b = Conn(sock), Conn(sock)
    try:
        b.send({"id": 7, "tool": "echo", "args": {"message": "b's", "delay_s": 2}})
        a.send({"cancel": 7})
        refused = a.receive()
        answer = b.reply(7)
        held = (
            "no request 7 in flight on this connection" in refused["content"][0]["text"]
            and answer["is_error"] is False
            and answer["content"][0]["text"] == "b's"
        )
        tally.record("serve", held=held)
        assert held, (refused, answer)
    finally:
        a.close()
        b.close()


def test_a_client_cannot_answer_another_connections_card(tally, tmp_path):
    """A server that asks before writing: b's approval card goes to b alone; a's answer with
    b's card id finds no such card on a."""
    runtime, workdir = tmp_path / "rt", tmp_path / "wd"
    workdir.mkdir()
    proc = subprocess.Popen(
        [*TETHER, "serve", "--workdir", str(workdir), "--no-warm"],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=_env(runtime),
    )
    assert proc.stdout is not None
    sock = Path(json.loads(proc.stdout.readline())["socket"])
    a, b = Conn(sock, interactive=True), Conn(sock, interactive=True)
    try:
        b.send({"id": 1, "tool": "echo_write", "args": {"path": "w.txt", "text": "x"}})
        card = b.receive()
        assert card.get("kind") == "approval", card
        a.send({"card": card["card"], "choices": [card["options"][0]["label"]]})
        refused = a.receive()
        b.send({"card": card["card"], "skip": True})
        answer = b.reply(1)
        held = (
            "no open card" in refused["content"][0]["text"]
            and answer["is_error"] is True
            and not (workdir / "w.txt").exists()
        )
        tally.record("serve", held=held)
        assert held, (refused, answer)
    finally:
        a.close()
        b.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def test_a_client_cannot_reach_another_connections_kernel_or_debug_session(tally, served):
    sock, _, _ = served
    a, b = Conn(sock), Conn(sock)
    try:
        a.send(
            {
                "id": 1,
                "tool": "eval",
                "args": {"code": "secret = 41", "description": "set or print a secret number here"},
            }
        )
        first = a.reply(1)
        assert first["is_error"] is False, first
        b.send(
            {
                "id": 1,
                "tool": "eval",
                "args": {
                    "code": "print(secret)",
                    "description": "set or print a secret number here",
                },
            }
        )
        theirs = b.reply(1)
        a.send({"id": 2, "tool": "debug", "args": {"op": "launch", "program": "loop.py"}})
        launched = a.reply(2)
        b.send({"id": 2, "tool": "debug", "args": {"op": "stack"}})
        stack = b.reply(2)
        a.send({"id": 3, "tool": "debug", "args": {"op": "threads"}})
        mine = a.reply(3)
        held = (
            "NameError" in json.dumps(theirs)
            and launched["is_error"] is False
            and stack["is_error"] is True
            and "no debug session in this conversation" in stack["content"][0]["text"]
            and mine["is_error"] is False
        )
        tally.record("serve", held=held)
        assert held, (theirs, launched, stack, mine)
    finally:
        a.close()
        b.close()


def test_a_conversation_held_by_a_live_connection_cannot_be_joined(tally, served):
    sock, _, _ = served
    a = Conn(sock)
    try:
        b = Conn(sock, conversation=a.ready["conversation"])
        held = b.ready.get("is_error") is True and "held by another" in json.dumps(b.ready)
        b.close()
        tally.record("serve", held=held)
        assert held, b.ready
    finally:
        a.close()

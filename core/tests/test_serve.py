"""``tether serve``: one run, many connections, each with its own surface; ``tether call
--attach`` / ``--warm``; cancel and progress lines; the lifecycle (stale sockets, SIGKILL,
idle timeout). Real processes: the server is ``python -m tether serve``, clients are the CLI
or raw sockets speaking the session protocol."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tether.processes.managed import is_alive

ENV_PLUGINS = {"TETHER_LOAD_PLUGINS": "echo,files"}


def _env(runtime: Path) -> dict[str, str]:
    return {**os.environ, **ENV_PLUGINS, "TETHER_RUNTIME_DIR": str(runtime)}


def tether(runtime: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(runtime),
        stdin=subprocess.DEVNULL,
    )


class Served:
    def __init__(self, proc: subprocess.Popen[str], ready: dict) -> None:
        self.proc = proc
        self.ready = ready
        self.socket = Path(ready["socket"])


def start_server(runtime: Path, workdir: Path, *extra: str) -> Served:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether", "serve", "--workdir", str(workdir), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=_env(runtime),
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else ""
    return Served(proc, json.loads(line))


def stop(served: Served) -> None:
    if served.proc.poll() is None:
        served.proc.send_signal(signal.SIGTERM)
        served.proc.wait(30)


@pytest.fixture
def runtime(tmp_path):
    path = tmp_path / "rt"
    path.mkdir(mode=0o700)
    return path


@pytest.fixture
def workdir(tmp_path):
    path = tmp_path / "wd"
    path.mkdir()
    return path


@pytest.fixture
def server(runtime, workdir):
    served = start_server(runtime, workdir, "--approve", "exec")
    yield served
    stop(served)


class Conn:
    """A raw session-protocol connection on the server's socket."""

    def __init__(self, path: Path, **attach) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(str(path))
        self.file = self.sock.makefile("rwb")
        self.send({"attach": attach})
        self.ready = self.receive()

    def send(self, message: dict) -> None:
        self.file.write((json.dumps(message) + "\n").encode())
        self.file.flush()

    def receive(self) -> dict:
        line = self.file.readline()
        assert line, "the server closed the connection"
        return json.loads(line)

    def until(self, pred) -> tuple[dict, list[dict]]:
        seen = []
        while True:
            message = self.receive()
            if pred(message):
                return message, seen
            seen.append(message)

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def test_serve_ready_line_socket_mode_and_list(server, runtime, workdir):
    assert server.ready["ready"] is True and server.ready["workdir"] == str(workdir)
    assert server.socket.parent == runtime
    assert (server.socket.stat().st_mode & 0o777) == 0o600
    assert (runtime.stat().st_mode & 0o777) == 0o700
    assert not any(workdir.iterdir())  # nothing in the workdir
    listed = json.loads(tether(runtime, "serve", "--list").stdout)
    assert [s["pid"] for s in listed] == [server.proc.pid]


def test_call_attach_finds_the_server_and_shares_one_run(server, runtime, workdir):
    out = tether(
        runtime, "call", "echo", '{"message": "hi"}', "--workdir", str(workdir), "--attach"
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["content"][0]["text"] == "hi"
    # the same server, named explicitly
    out = tether(
        runtime,
        "call",
        "echo_write",
        '{"path": "f.txt", "text": "x"}',
        "--attach",
        str(server.socket),
    )
    assert out.returncode == 0, out.stdout
    assert (workdir / "f.txt").read_text() == "x"


@pytest.mark.parametrize(
    ("surface", "tool", "allowed"),
    [
        ("plan", "echo", True),
        ("plan", "echo_write", False),
        ("plan", "echo_exec", False),
        ("readonly", "echo_write", False),
        ("default", "echo_write", True),
    ],
)
def test_each_connection_has_its_own_surface(server, surface, tool, allowed):
    conn = Conn(server.socket, surface=surface)
    try:
        assert conn.ready["surface"] == surface
        conn.send({"id": "t", "request": "tools"})
        names = {t["name"] for t in conn.receive()["tools"]}
        assert (tool in names) is allowed
        args = {"echo": {"message": "m"}, "echo_write": {"path": "g.txt", "text": "y"}}
        conn.send({"id": 1, "tool": tool, "args": args.get(tool, {"argv": ["true"]})})
        reply = conn.receive()
        assert reply["is_error"] is (not allowed), reply
        if not allowed:
            assert f"not available on surface {surface!r}" in reply["content"][0]["text"]
    finally:
        conn.close()


def test_a_connection_cannot_exceed_the_servers_surface(runtime, workdir):
    served = start_server(runtime, workdir, "--surface", "plan")
    try:
        out = tether(
            runtime,
            "call",
            "echo",
            '{"message": "x"}',
            "--attach",
            str(served.socket),
            "--surface",
            "default",
        )
        assert out.returncode == 2
        assert "above this server's 'plan'" in out.stderr
        # the server's own surface is the default of a connection that names none
        out = tether(
            runtime,
            "call",
            "echo_write",
            '{"path": "a", "text": "b"}',
            "--attach",
            str(served.socket),
        )
        assert "not available on surface 'plan'" in json.loads(out.stdout)["content"][0]["text"]
    finally:
        stop(served)


def test_cancel_stops_only_that_request_and_progress_lines_flow(server):
    conn = Conn(server.socket)
    try:
        conn.send(
            {
                "id": "slow",
                "tool": "echo",
                "args": {"message": "s", "delay_s": 30},
                "progress": True,
            }
        )
        conn.send({"id": "other", "tool": "echo", "args": {"message": "o", "delay_s": 1.5}})
        progress, _ = conn.until(lambda m: "progress" in m)
        assert progress["progress"] == "slow" and "still running" in progress["message"]
        conn.send({"cancel": "slow"})
        reply, _ = conn.until(lambda m: m.get("id") == "slow")
        assert reply["is_error"] and "cancelled by the client" in reply["content"][0]["text"]
        assert reply["meta"] == {"cancelled": True}
        other, _ = conn.until(lambda m: m.get("id") == "other")
        assert other["is_error"] is False and other["content"][0]["text"] == "o"
        conn.send({"cancel": "nope"})
        error = conn.receive()
        assert (
            error["is_error"]
            and "no request 'nope' in flight on this connection" in error["content"][0]["text"]
        )
    finally:
        conn.close()


def test_a_disconnect_cancels_that_clients_calls_only(server, workdir):
    first, second = Conn(server.socket), Conn(server.socket)
    try:
        started = workdir / "started"
        # echo_exec is not parallel-safe: while first's call runs, nobody else's can
        first.send(
            {
                "id": 1,
                "tool": "echo_exec",
                "args": {"argv": ["sh", "-c", f"touch {started}; sleep 60"]},
            }
        )
        second.send({"id": 2, "tool": "echo", "args": {"message": "kept", "delay_s": 2}})
        deadline = time.monotonic() + 20
        while not started.exists():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        first.close()  # first goes away: its call is cancelled, the tool's lock released
        t0 = time.monotonic()
        second.send({"id": 3, "tool": "echo_exec", "args": {"argv": ["echo", "free"]}})
        replies = {m["id"]: m for m in (second.receive(), second.receive())}
        assert replies[2]["content"][0]["text"] == "kept"  # the other client's call went on
        assert replies[3]["content"][0]["text"] == "free\n"
        assert time.monotonic() - t0 < 30  # not after first's 60 s sleep
    finally:
        second.close()


def test_ten_concurrent_warm_calls_start_one_server(runtime, workdir):
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tether",
                "call",
                "echo",
                json.dumps({"message": str(i)}),
                "--workdir",
                str(workdir),
                "--warm",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=_env(runtime),
        )
        for i in range(10)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    try:
        for i, (out, err) in enumerate(outs):
            assert json.loads(out)["content"][0]["text"] == str(i), err
        listed = json.loads(tether(runtime, "serve", "--list").stdout)
        assert len(listed) == 1
        assert len(list(runtime.glob("*.sock"))) == 1
    finally:
        assert tether(runtime, "serve", "--stop", "--workdir", str(workdir)).returncode == 0
    assert json.loads(tether(runtime, "serve", "--list").stdout) == []


def test_sigkill_leaves_no_process_and_a_stale_socket_is_replaced(runtime, workdir):
    served = start_server(runtime, workdir, "--approve", "exec")
    conn = Conn(served.socket)
    conn.send(
        {"id": 1, "tool": "echo_exec", "args": {"argv": ["sleep", "300"], "background": True}}
    )
    child = conn.receive()["meta"]["pid"]
    assert is_alive(child)
    served.proc.kill()
    served.proc.wait(10)
    conn.close()
    deadline = time.monotonic() + 20
    while is_alive(child):
        assert time.monotonic() < deadline, "the killed server's child survived"
        time.sleep(0.1)
    assert served.socket.exists()  # left behind by SIGKILL
    out = tether(runtime, "call", "echo", '{"message": "x"}', "--workdir", str(workdir), "--attach")
    assert out.returncode == 2 and "no server for workdir" in out.stderr
    again = start_server(runtime, workdir)  # detects the stale socket and replaces it
    try:
        out = tether(
            runtime, "call", "echo", '{"message": "back"}', "--workdir", str(workdir), "--attach"
        )
        assert json.loads(out.stdout)["content"][0]["text"] == "back"
    finally:
        stop(again)


def test_a_second_server_for_the_same_key_is_refused(server, runtime, workdir):
    out = tether(runtime, "serve", "--workdir", str(workdir))
    assert out.returncode == 2 and "running already" in out.stderr


def test_idle_timeout_closes_the_server(runtime, workdir):
    served = start_server(runtime, workdir, "--idle-timeout", "1")
    assert served.proc.wait(30) == 0
    assert not served.socket.exists()


def test_conversations_are_per_connection_unless_named(server):
    a, b = Conn(server.socket), Conn(server.socket)
    try:
        assert a.ready["conversation"] != b.ready["conversation"]
        named = Conn(server.socket, conversation="shared-cli")
        try:
            refused = Conn(server.socket, conversation="shared-cli")
            assert refused.ready["is_error"]
            assert "held by another live connection" in refused.ready["content"][0]["text"]
            refused.close()
        finally:
            named.close()
    finally:
        a.close()
        b.close()


def test_cancel_and_progress_over_stdio_too(tmp_path, runtime):
    """The same lines on `tether session`: a request asking for progress gets progress lines,
    a cancel stops it (answered, marked cancelled), the session goes on."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether", "session", "--workdir", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_env(runtime),
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict) -> None:
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    try:
        assert json.loads(proc.stdout.readline())["protocol"] == 2
        send({"id": 1, "tool": "echo", "args": {"message": "m", "delay_s": 30}, "progress": True})
        progress = json.loads(proc.stdout.readline())
        assert progress["progress"] == 1 and progress["elapsed_s"] >= 0.5
        send({"cancel": 1})
        line = json.loads(proc.stdout.readline())
        while "progress" in line:
            line = json.loads(proc.stdout.readline())
        assert line["id"] == 1 and line["meta"] == {"cancelled": True}
        send({"id": 2, "tool": "echo", "args": {"message": "after"}})
        assert json.loads(proc.stdout.readline())["content"][0]["text"] == "after"
    finally:
        proc.stdin.close()
        assert proc.wait(60) == 0


def test_a_line_over_the_limit_is_answered_and_the_connection_goes_on(server, monkeypatch):
    from tether.cli.session import MAX_REQUEST_LINE_BYTES

    conn = Conn(server.socket)
    try:
        conn.file.write(b'{"id": 1, "tool": "echo", "args": {"message": "')
        conn.file.write(b"x" * (MAX_REQUEST_LINE_BYTES + 10))
        conn.file.write(b'"}}\n')
        conn.send({"id": 2, "tool": "echo", "args": {"message": "next"}})
        error = conn.receive()
        assert error["is_error"] and "over the limit" in error["content"][0]["text"]
        assert conn.receive()["content"][0]["text"] == "next"
    finally:
        conn.close()

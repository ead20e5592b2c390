"""Drivers for the real CLI: a `tether session` client over JSON lines, and the `tether` binary."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["tether.testing"]  # tether's test kit: opt-in, never loaded on its own

TETHER = str(Path(sys.executable).with_name("tether"))


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    # Only this plugin and the contrib helpers its tests declare; another family installed in a
    # shared dev env must not change what the session shows.
    env["TETHER_LOAD_PLUGINS"] = "ask,echo"
    env.pop("TETHER_TRACE_PLUGINS", None)
    return env


class SessionClient:
    """A client of `tether session`: writes request/answer lines, reads replies and cards."""

    def __init__(self, args: list[str], workdir: Path) -> None:
        self.proc = subprocess.Popen(
            [TETHER, "session", "--workdir", str(workdir), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            env=cli_env(),
        )
        self._lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._held: list[dict[str, Any]] = []
        self.raw: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        #: the session's first line: protocol version, plugins (docs/session-protocol.md)
        self.ready = self.expect(lambda m: m.get("ready") is True)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.raw.append(line)
            self._lines.put(json.loads(line))
        self._lines.put(None)

    def send(self, message: dict[str, Any] | str) -> None:
        assert self.proc.stdin is not None
        line = message if isinstance(message, str) else json.dumps(message)
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def request(self, request_id: str, tool: str, args: dict[str, Any]) -> None:
        self.send({"id": request_id, "tool": tool, "args": args})

    def expect(
        self, match: Callable[[dict[str, Any]], bool], timeout: float = 20.0
    ) -> dict[str, Any]:
        """The next line satisfying `match` (lines read meanwhile are kept for later)."""
        for index, message in enumerate(self._held):
            if match(message):
                return self._held.pop(index)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no matching line within {timeout} s; seen {self.raw!r}")
            try:
                message = self._lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if message is None:
                stderr = self.proc.stderr.read() if self.proc.stderr else ""
                raise AssertionError(f"session ended; seen {self.raw!r}; stderr {stderr}")
            if match(message):
                return message
            self._held.append(message)

    def card(self, timeout: float = 20.0) -> dict[str, Any]:
        return self.expect(lambda m: "card" in m and "kind" in m, timeout)

    def reply(self, request_id: str | None, timeout: float = 20.0) -> dict[str, Any]:
        return self.expect(lambda m: "id" in m and m["id"] == request_id, timeout)

    def unread(self) -> list[dict[str, Any]]:
        time.sleep(0.2)
        while True:
            try:
                message = self._lines.get_nowait()
            except queue.Empty:
                break
            if message is not None:
                self._held.append(message)
        return list(self._held)

    def close(self) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
            raise AssertionError("tether session did not exit after EOF") from None


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Callable[..., SessionClient]]:
    started: list[SessionClient] = []

    def start(*args: str, config: str | None = None) -> SessionClient:
        extra = list(args)
        if config is not None:
            path = tmp_path / "tether.toml"
            path.write_text(config)
            extra += ["--config", str(path)]
        client = SessionClient(extra, tmp_path)
        started.append(client)
        return client

    yield start
    for client in started:
        if client.proc.poll() is None:
            client.close()


class TerminalCall:
    """`tether call` on a real pseudo-terminal (pexpect): the person types at the card."""

    def __init__(self, tool: str, args: dict[str, Any], workdir: Path, *extra: str) -> None:
        import pexpect

        self.child = pexpect.spawn(
            TETHER,
            ["call", tool, json.dumps(args), "--workdir", str(workdir), *extra],
            env=cli_env(),
            encoding="utf-8",
            timeout=20,
            dimensions=(40, 200),
        )

    def expect(self, text: str) -> None:
        self.child.expect_exact(text)

    def answer(self, line: str) -> None:
        self.child.expect_exact("> ")
        self.child.sendline(line)

    def result(self) -> tuple[dict[str, Any], int]:
        """The JSON `tether call` printed, and its exit status."""
        import pexpect

        self.child.expect(pexpect.EOF)
        self.child.close()
        lines = [line for line in self.child.before.splitlines() if line.startswith('{"is_error"')]
        assert lines, f"no result printed; output was {self.child.before!r}"
        return json.loads(lines[-1]), self.child.exitstatus

    def kill(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


@pytest.fixture
def terminal_call(tmp_path: Path) -> Iterator[Callable[..., TerminalCall]]:
    started: list[TerminalCall] = []

    def start(
        tool: str, args: dict[str, Any], *extra: str, config: str | None = None
    ) -> TerminalCall:
        flags = list(extra)
        if config is not None:
            path = tmp_path / "tether.toml"
            path.write_text(config)
            flags += ["--config", str(path)]
        call = TerminalCall(tool, args, tmp_path, *flags)
        started.append(call)
        return call

    yield start
    for call in started:
        call.kill()


@pytest.fixture
def plain_call(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`tether call` with stdin that is not a terminal (no person attached)."""

    def run(tool: str, args: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [TETHER, "call", tool, json.dumps(args), "--workdir", str(tmp_path)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            env=cli_env(),
        )

    return run

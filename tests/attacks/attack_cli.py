"""Driving the real CLI for the attack suite: ``tether call`` and ``tether session`` as subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TETHER = [sys.executable, "-m", "tether.cli"]


def call(
    tool: str, args: dict[str, Any], workdir: Path, *flags: str, timeout: float = 120
) -> tuple[dict[str, Any] | None, subprocess.CompletedProcess[str]]:
    """``tether call``: (the parsed result, or None when none was printed; the process)."""
    out = subprocess.run(
        [*TETHER, "call", tool, json.dumps(args), "--workdir", str(workdir), *flags],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUTF8": "1"},
    )
    try:
        return json.loads(out.stdout), out
    except ValueError:
        return None, out


class Session:
    """A ``tether session`` whose stdout lines are read one at a time."""

    def __init__(self, workdir: Path, *flags: str) -> None:
        self.proc = subprocess.Popen(
            [*TETHER, "session", "--workdir", str(workdir), *flags],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        ready = self.line()  # the session's first line announces it is up
        assert ready.get("ready") is True, ready

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def line(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        raw = self.proc.stdout.readline()
        assert raw, "the session ended"
        return json.loads(raw.decode("utf-8"))

    def close(self, timeout: float = 60) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=timeout)


def utf8_json_lines(out: bytes) -> list[dict[str, Any]]:
    """Every line of a session's stdout: each must be valid UTF-8 and one JSON object."""
    lines = out.split(b"\n")
    assert lines[-1] == b"", "the output does not end with a newline"
    parsed = [json.loads(line.decode("utf-8")) for line in lines[:-1]]
    assert all(isinstance(obj, dict) for obj in parsed)
    # the first line is the session's ready line; the rest are replies and cards
    assert parsed and parsed[0].get("ready") is True, parsed[:1]
    return parsed[1:]

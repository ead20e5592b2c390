"""No input line can end ``tether session`` or corrupt its output (issue 11, item 4)."""

from __future__ import annotations

import json
import subprocess
import sys


def session(tmp_path, payload: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", "session", "--workdir", str(tmp_path)],
        input=payload,
        capture_output=True,
        timeout=60,
    )


def replies(out: bytes) -> list[dict]:
    """Every stdout line, each required to be valid UTF-8 and one JSON object."""
    lines = out.split(b"\n")
    assert lines[-1] == b""
    return [json.loads(line.decode("utf-8")) for line in lines[:-1]]


def request(rid, tool, **args) -> bytes:
    return json.dumps({"id": rid, "tool": tool, "args": args}).encode() + b"\n"


def test_hostile_lines_get_error_lines_and_the_session_goes_on(tmp_path):
    deep = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    deep_object = b'{"id": 2, "tool": "echo", "args": {"message": ' + b"[" * 100_000 + b"\n"
    payload = b"".join(
        [
            request(1, "echo", message="before"),
            deep,
            deep_object,
            b'{"id": 3, "tool": "echo", "args": {"message": "caf\xe9"}}\n',  # not UTF-8
            b'{"id": 4, "tool": "echo", "args": {"message": "x", "delay_s": NaN}}\n',
            b'{"id": 5, "tool": "echo", "args": {"message": "x", "delay_s": Infinity}}\n',
            b'{"id": 6, "tool": "echo", "args": {"message": "\\ud800"}}\n',  # lone surrogate
            b'{"id": 7, "tool": "\\udcff"}\n',
            b"\xff\xfe\x00garbage\n",
            request(8, "echo", message="after"),
        ]
    )
    out = session(tmp_path, payload)
    assert out.returncode == 0, out.stderr.decode()
    ready, *got = replies(out.stdout)
    assert ready["ready"] is True  # the session's first line
    by_id = {r["id"]: r for r in got if r["id"] is not None}
    nulls = [r["content"][0]["text"] for r in got if r["id"] is None]
    assert by_id[1]["content"][0]["text"] == "before"
    assert by_id[8]["content"][0]["text"] == "after"
    # the echoed lone surrogate comes back as itself, written as a JSON escape
    assert by_id[6]["is_error"] is False and by_id[6]["content"][0]["text"] == "\ud800"
    assert by_id[7]["is_error"] and "unknown tool" in by_id[7]["content"][0]["text"]
    assert sum("nested too deeply" in text for text in nulls) == 2
    assert sum("not valid UTF-8" in text for text in nulls) == 2
    assert sum("NaN is not JSON" in text for text in nulls) == 1
    assert sum("Infinity is not JSON" in text for text in nulls) == 1
    assert len(nulls) == 6
    assert 4 not in by_id and 5 not in by_id


def test_call_refuses_nan_and_writes_utf8(tmp_path):
    nan = subprocess.run(
        [sys.executable, "-m", "tether.cli", "call", "echo", '{"message": "x", "delay_s": NaN}'],
        capture_output=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert nan.returncode == 2 and b"NaN is not JSON" in nan.stderr
    lone = subprocess.run(
        [sys.executable, "-m", "tether.cli", "call", "echo", '{"message": "\\ud800"}'],
        capture_output=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert lone.returncode == 0, lone.stderr.decode()
    assert json.loads(lone.stdout.decode("utf-8"))["content"][0]["text"] == "\ud800"

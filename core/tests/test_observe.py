"""Watching calls: observers see every call (tool, tier, surface, conversation, duration,
outcome, result size) and the waits families mark inside it; the CLI's call log is one."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import contextmanager

import attrs
import pytest

import tether
import tether_echo.hooks
import tether_files.hooks
from tether.cli.calllog import CallLog

pytestmark = pytest.mark.anyio


class Recorder:
    def __init__(self):
        self.events: list[tuple] = []

    @tether.hookimpl
    def tether_call_observers(self, run):
        return self

    @contextmanager
    def observe_call(self, call):
        self.events.append(("start", call.tool, call.tier, call.surface, call.conversation_id))
        yield
        self.events.append(("end", call.tool, call.outcome, call.result_chars, call.uncut_chars))

    @contextmanager
    def observe_wait(self, call, what, attributes):
        self.events.append(("wait", call.tool, what, dict(attributes)))
        yield


@attrs.frozen
class NoArgs:
    pass


async def waits(call, args):
    with tether.waiting("server start", server="demo"):
        pass
    return "x" * 500


WAITS = tether.ToolSpec("waits", "read", NoArgs, waits, "marks a wait")


class Tools:
    @tether.hookimpl
    def tether_tools(self, run):
        return [WAITS]


def run_with(tmp_path, *plugins, **kwargs):
    return tether.open_run(
        tmp_path,
        conversation_id="c9",
        entry_points=False,
        plugins=[tether_echo.hooks, tether_files.hooks, Tools(), *plugins],
        **kwargs,
    )


async def test_hook_tether_call_observers(tmp_path):
    recorder = Recorder()
    config = {"core": {"result_budget": {"max_chars": 300}}}
    async with run_with(tmp_path, recorder, config=config) as run:
        await run.call("echo", {"message": "hi"})
        await run.call("read", {"path": "missing.txt"})
        await run.call("waits", {})
        await run.call("nope", {})
    assert recorder.events == [
        ("start", "echo", "read", "default", "c9"),
        ("end", "echo", "ok", 2, 2),
        ("start", "read", "read", "default", "c9"),
        ("end", "read", "error", recorder.events[3][3], recorder.events[3][3]),
        ("start", "waits", "read", "default", "c9"),
        ("wait", "waits", "server start", {"server": "demo"}),
        ("end", "waits", "ok", recorder.events[6][3], 500),
        ("start", "nope", None, "default", "c9"),
        ("end", "nope", "error", recorder.events[8][3], recorder.events[8][3]),
    ]
    assert recorder.events[6][3] <= 300  # the size after the budget; uncut: 500


async def test_waiting_outside_a_call_or_without_observers_does_nothing(tmp_path):
    with tether.waiting("anything"):
        pass
    async with run_with(tmp_path) as run:
        assert run.observers == ()
        assert (await run.call("waits", {})).text_content.startswith("xxx")


async def test_a_broken_observer_is_reported_and_the_call_goes_on(tmp_path):
    class Broken:
        @tether.hookimpl
        def tether_call_observers(self, run):
            return [self, "not an observer"]

        def observe_call(self, call):
            raise RuntimeError("boom")

        def observe_wait(self, call, what, attributes):
            raise RuntimeError("boom")

    broken = Broken()
    async with run_with(tmp_path, broken) as run:
        result = await run.call("waits", {})
        assert not result.is_error
        failed = {info.name: info.reason for info in run.pm.report if info.status == "failed"}
    assert any("boom" in reason for reason in failed.values()), failed
    assert any("no observe_call" in reason for reason in failed.values()), failed


async def test_the_call_log_writes_one_json_line_per_call(tmp_path):
    stream = io.StringIO()
    async with run_with(tmp_path, CallLogPlugin(CallLog("debug", stream))) as run:
        await run.call("waits", {})
        await run.call("read", {"path": "missing.txt"})
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(x["event"], x["level"], x.get("tool")) for x in lines] == [
        ("call_start", "debug", "waits"),
        ("wait", "debug", "waits"),
        ("call", "info", "waits"),
        ("call_start", "debug", "read"),
        ("call", "warning", "read"),
    ]
    call = lines[2]
    assert call["outcome"] == "ok" and call["result_chars"] == 500 and call["tier"] == "read"
    assert call["conversation"] == "c9" and call["duration_s"] >= 0
    assert lines[1]["what"] == "server start" and lines[1]["server"] == "demo"
    assert lines[4]["outcome"] == "error"


class CallLogPlugin:
    def __init__(self, log):
        self.log = log

    @tether.hookimpl
    def tether_call_observers(self, run):
        return self.log


def test_cli_log_level_writes_json_lines_on_stderr(tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    out = subprocess.run(
        [sys.executable, "-m", "tether.cli", "call", "read", '{"path": "a.txt"}'],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and out.stderr == ""
    logged = subprocess.run(
        [
            sys.executable,
            "-m",
            "tether.cli",
            "call",
            "read",
            '{"path": "a.txt"}',
            "--log-level",
            "info",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert logged.returncode == 0 and json.loads(logged.stdout)["content"][0]["text"] == "hello\n"
    (line,) = [json.loads(x) for x in logged.stderr.splitlines()]
    assert line["event"] == "call" and line["tool"] == "read" and line["outcome"] == "ok"
    assert line["result_chars"] == 6

"""Spans of real calls (tether-echo's tools, a host tool marking a wait) through the SDK's
in-memory exporter; and nothing at all when tracing is not configured."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import attrs
import pytest
from opentelemetry.trace import StatusCode

import tether
import tether_echo.hooks
import tether_otel.hooks

pytestmark = pytest.mark.anyio


@attrs.frozen
class NoArgs:
    pass


async def starts_a_server(call, args):
    with tether.waiting("server start", server="demo"):
        with tether.waiting("readiness", index=True):
            pass
    return "ready\n" * 200


class HostTools:
    @tether.hookimpl
    def tether_tools(self, run):
        return [tether.ToolSpec("starts", "read", NoArgs, starts_a_server, "waits, then answers")]


def otel_run(tmp_path, **kwargs):
    return tether.open_run(
        tmp_path,
        conversation_id="conv-7",
        entry_points=False,
        plugins=[tether_otel.hooks, tether_echo.hooks, HostTools()],
        **kwargs,
    )


async def test_one_span_per_call_with_its_attributes(spans, tmp_path) -> None:
    config = {"core": {"result_budget": {"max_chars": 500}}}
    async with otel_run(tmp_path, config=config) as run:
        await run.call("echo", {"message": "hello"})
        await run.call("echo", {"message": 3})
        await run.call("starts", {})
    finished = spans.get_finished_spans()
    calls = [s for s in finished if s.name.startswith("execute_tool ")]
    assert [s.name for s in calls] == [
        "execute_tool echo",
        "execute_tool echo",
        "execute_tool starts",
    ]
    ok, bad, started = calls
    assert dict(ok.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "echo",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.conversation.id": "conv-7",
        "tether.tool": "echo",
        "tether.tier": "read",
        "tether.surface": "default",
        "tether.call_id": "call_1",
        "tether.conversation_id": "conv-7",
        "tether.outcome": "ok",
        "tether.duration_s": ok.attributes["tether.duration_s"],
        "tether.result.chars": 5,
    }
    assert ok.status.status_code is StatusCode.UNSET
    assert ok.attributes["tether.duration_s"] * 1e9 <= ok.end_time - ok.start_time + 1e6
    assert bad.attributes["tether.outcome"] == "error"
    assert bad.status.status_code is StatusCode.ERROR
    assert bad.status.description.startswith("invalid arguments for echo")
    # the budget cut the answer: both sizes are on the span
    assert started.attributes["tether.result.uncut_chars"] == 1200
    assert started.attributes["tether.result.chars"] <= 500


async def test_waits_inside_a_call_are_its_child_spans(spans, tmp_path) -> None:
    async with otel_run(tmp_path) as run:
        await run.call("starts", {})
    by_name = {s.name: s for s in spans.get_finished_spans()}
    call = by_name["execute_tool starts"]
    start = by_name["wait server start"]
    ready = by_name["wait readiness"]
    assert start.parent.span_id == call.context.span_id
    assert ready.parent.span_id == start.context.span_id  # nested waits nest
    assert start.context.trace_id == call.context.trace_id
    assert start.attributes["tether.server"] == "demo" and ready.attributes["tether.index"] is True
    assert call.start_time <= start.start_time <= start.end_time <= call.end_time


async def test_a_call_inside_the_harness_span_is_its_child(spans, tmp_path) -> None:
    from opentelemetry import trace

    tracer = trace.get_tracer("harness")
    async with otel_run(tmp_path) as run:
        with tracer.start_as_current_span("agent turn") as turn:
            await run.call("echo", {"message": "hi"})
    call = next(s for s in spans.get_finished_spans() if s.name == "execute_tool echo")
    assert call.parent.span_id == turn.get_span_context().span_id


def _in_fresh_process(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


OBSERVERS = """
    import tempfile, anyio, tether, tether_otel.hooks, tether_echo.hooks
    async def main():
        with tempfile.TemporaryDirectory() as workdir:
            async with tether.open_run(workdir, entry_points=False,
                    plugins=[tether_otel.hooks, tether_echo.hooks]) as run:
                print(len(run.observers))
                await run.call("echo", {"message": "to the console"})
    anyio.run(main)
"""


def test_off_unless_configured() -> None:
    assert _in_fresh_process(OBSERVERS) == "0\n"
    assert _in_fresh_process(OBSERVERS, OTEL_TRACES_EXPORTER="none") == "0\n"
    assert (
        _in_fresh_process(OBSERVERS, OTEL_SDK_DISABLED="true", OTEL_TRACES_EXPORTER="console")
        == "0\n"
    )


def test_the_standard_environment_configures_the_exporter() -> None:
    """``OTEL_TRACES_EXPORTER=console`` and ``OTEL_SERVICE_NAME``: the span is printed at exit."""
    out = _in_fresh_process(OBSERVERS, OTEL_TRACES_EXPORTER="console", OTEL_SERVICE_NAME="my-agent")
    assert out.startswith("1\n")
    assert '"name": "execute_tool echo"' in out and '"service.name": "my-agent"' in out

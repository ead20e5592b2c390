"""tether-otel through a real call of every family: one span per call with its attributes, and
the child spans of the waits each family marks (lsp's server start, the debugger's launch, the
kernel's start). The SDK's in-memory exporter, behind a provider of this test's own (not the
process's global one, so no other test is traced)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tether
from tether.testing import require_real
from tether_ask import Answer, CallbackPort
from tether_otel import SpanObserver

pytestmark = pytest.mark.anyio


class Harness:
    def __init__(self, observer: SpanObserver) -> None:
        self.observer = observer

    @tether.hookimpl
    def tether_resources(self, run):
        async def person(card):
            return Answer(text="blue")

        return {"question_port": CallbackPort(person)}

    @tether.hookimpl
    def tether_call_observers(self, run):
        return self.observer


CALLS = [
    ("lsp", {"action": "diagnostics", "file": "app.py"}, {"server start"}),
    ("ast_grep", {"pattern": "print($A)"}, set()),
    (
        "eval",
        {"code": "print(6 * 7)", "description": "print a product for the trace test"},
        {"kernel start"},
    ),
    ("debug", {"op": "launch", "program": "app.py"}, {"debugger launch"}),
    ("ask_user", {"question": "Which colour?", "allow_free_text": True}, set()),
    ("vibe_spawn", {"brief": "say hi", "label": "tracer"}, set()),
    ("read", {"path": "app.py"}, set()),
]


async def test_a_real_call_of_every_family_is_a_span_with_its_waits(tmp_path: Path) -> None:
    import shutil

    require_real(shutil.which("basedpyright-langserver") is not None, "basedpyright")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "traced"\nversion = "0"\n')
    (tmp_path / "app.py").write_text("value: int = 'text'\nprint(value)\n")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observer = SpanObserver(provider.get_tracer("tether"))
    config = {
        "core": {"approval": {"read": "auto", "write": "auto", "exec": "auto"}},
        "vibe": {
            "runners": {"fast": {"command": [sys.executable, "-c", "print('hi')", "{brief}"]}}
        },
    }
    async with tether.open_run(
        tmp_path, conversation_id="traced", config=config, vibe=True, plugins=[Harness(observer)]
    ) as run:
        for tool, args, _ in CALLS:
            result = await run.call(tool, args)
            assert not result.is_error, (tool, result.text_content)
        with anyio.fail_after(30):
            await run.call("vibe_wait", {"worker_id": "w1", "timeout_seconds": 20})
    spans = exporter.get_finished_spans()
    calls = [s for s in spans if s.name.startswith("execute_tool ")]
    assert [s.attributes["tether.tool"] for s in calls] == [t for t, _, _ in CALLS] + ["vibe_wait"]
    for span in calls:
        attributes = span.attributes
        assert attributes["tether.outcome"] == "ok"
        assert attributes["tether.conversation_id"] == "traced"
        assert attributes["tether.surface"] == "default"
        assert attributes["tether.tier"] in ("read", "write", "exec")
        assert attributes["tether.result.chars"] > 0
        assert attributes["tether.duration_s"] > 0
    by_id = {span.context.span_id: span for span in spans}
    for (tool, _, waits), span in zip(CALLS, calls, strict=False):
        children = {
            s.attributes["tether.wait"]
            for s in spans
            if s.name.startswith("wait ") and _root(s, by_id) is span
        }
        assert waits <= children, (tool, children)


def _root(span, by_id):
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
    return span

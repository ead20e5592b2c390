"""Spans of tether calls, after OpenTelemetry's GenAI conventions (``execute_tool {tool}``).

Configured means: the harness set a tracer provider (``trace.set_tracer_provider``), or the
standard environment names an exporter (``OTEL_TRACES_EXPORTER``, or an OTLP endpoint in
``OTEL_EXPORTER_OTLP_ENDPOINT``/``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``). Otherwise, or with
``OTEL_SDK_DISABLED=true``, there is no observer and a call costs nothing more. A provider made
from the environment is this process's global one; its spans are flushed at exit.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from tether.observe import CallRecord

TRACER_NAME = "tether"
_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def _host_provider() -> bool:
    """Whether the harness (or an earlier run of this process) set a tracer provider."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def configured() -> bool:
    """Whether spans go anywhere (see the module's docstring)."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporters == "none":
        return False
    return _host_provider() or bool(exporters) or any(os.environ.get(v) for v in _ENDPOINTS)


def _exporter_names() -> list[str]:
    names = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if names:
        return [n.strip() for n in names.split(",") if n.strip() and n.strip() != "none"]
    return ["otlp"]  # an OTLP endpoint was given: OpenTelemetry's default exporter


def _provider_from_environment() -> None:
    """An SDK tracer provider built from the standard ``OTEL_*`` variables (service name,
    resource attributes, sampler, batch settings and each exporter's own), set as the global one.
    Exporters are found by name in the ``opentelemetry_traces_exporter`` entry-point group, as
    OpenTelemetry's own auto-configuration does (``console`` comes with the SDK; ``otlp`` with
    ``opentelemetry-exporter-otlp``)."""
    from importlib.metadata import entry_points

    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create(
        {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "tether"}
    )
    provider = TracerProvider(resource=resource)
    found = {ep.name: ep for ep in entry_points(group="opentelemetry_traces_exporter")}
    for name in _exporter_names():
        if name not in found:
            import logging

            hint = " (pip install opentelemetry-exporter-otlp)" if name.startswith("otlp") else ""
            logging.getLogger("tether").warning(
                "tether-otel: no trace exporter named %r is installed%s; known: %s",
                name,
                hint,
                ", ".join(sorted(found)) or "none",
            )
            continue
        provider.add_span_processor(BatchSpanProcessor(found[name].load()()))
    trace.set_tracer_provider(provider)
    atexit.register(provider.shutdown)


def observer() -> SpanObserver | None:
    """The observer of every run, or None when tracing is not configured."""
    if not configured():
        return None
    if not _host_provider():
        _provider_from_environment()
    return SpanObserver(trace.get_tracer(TRACER_NAME))


def _attributes(call: CallRecord) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.tool,
        "gen_ai.tool.call.id": call.call_id,
        "tether.tool": call.tool,
        "tether.surface": call.surface,
        "tether.call_id": call.call_id,
    }
    if call.tier is not None:
        attributes["tether.tier"] = call.tier
    if call.conversation_id is not None:
        attributes["gen_ai.conversation.id"] = call.conversation_id
        attributes["tether.conversation_id"] = call.conversation_id
    return attributes


class SpanObserver:
    """One span per call (``execute_tool {tool}``) and a child span per wait inside it
    (``wait {what}``)."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self.tracer = tracer
        self._spans: dict[int, Span] = {}

    @contextmanager
    def observe_call(self, call: CallRecord) -> Iterator[None]:
        with self.tracer.start_as_current_span(
            f"execute_tool {call.tool}",
            kind=SpanKind.INTERNAL,
            attributes=_attributes(call),
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            self._spans[id(call)] = span
            try:
                yield
            finally:
                del self._spans[id(call)]
                span.set_attribute("tether.outcome", call.outcome)
                span.set_attribute("tether.duration_s", call.duration_s)
                span.set_attribute("tether.result.chars", call.result_chars)
                if call.uncut_chars != call.result_chars:
                    span.set_attribute("tether.result.uncut_chars", call.uncut_chars)
                if call.error is not None:
                    span.record_exception(call.error)
                    span.set_attribute("error.type", type(call.error).__qualname__)
                    span.set_status(Status(StatusCode.ERROR, type(call.error).__name__))
                elif call.outcome == "error":
                    span.set_attribute("error.type", "tool_error")
                    first = call.result.text_content.splitlines() if call.result else []
                    span.set_status(Status(StatusCode.ERROR, first[0][:200] if first else None))

    @contextmanager
    def observe_wait(
        self, call: CallRecord, what: str, attributes: Mapping[str, Any]
    ) -> Iterator[None]:
        parent = self._spans.get(id(call))
        current = trace.get_current_span().get_span_context()
        # inside the call's own trace (a wait within a wait) the current span is the parent;
        # a wait in a task the call did not start gets the call's span explicitly
        context = None
        if parent is not None and current.trace_id != parent.get_span_context().trace_id:
            context = trace.set_span_in_context(parent)
        fields = {"tether.wait": what, "tether.call_id": call.call_id, "tether.tool": call.tool}
        fields.update({f"tether.{key}": _value(value) for key, value in attributes.items()})
        with self.tracer.start_as_current_span(f"wait {what}", context=context, attributes=fields):
            yield


def _value(value: Any) -> Any:
    return value if isinstance(value, str | bool | int | float) else str(value)


__all__ = ["SpanObserver", "configured", "observer"]

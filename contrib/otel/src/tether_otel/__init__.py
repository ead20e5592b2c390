"""tether-otel: OpenTelemetry traces of tether tool calls (off unless configured)."""

from tether_otel.tracing import SpanObserver, configured

__all__ = ["SpanObserver", "configured"]

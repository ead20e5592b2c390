"""tether-otel: OpenTelemetry traces of tether tool calls (off unless configured).

OpenTelemetry is imported when a run asks for its observer, not when the plugin is loaded: a
run that does not trace never pays for it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tether_otel.tracing import SpanObserver, configured

__all__ = ["SpanObserver", "configured"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tether_otel import tracing

        return getattr(tracing, name)
    raise AttributeError(f"module 'tether_otel' has no attribute {name!r}")

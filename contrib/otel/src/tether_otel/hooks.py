"""The plugin's one hook: a span observer for every run, when tracing is configured."""

from __future__ import annotations

from typing import Any

import tether


@tether.hookimpl
def tether_call_observers(run: tether.Run) -> Any:
    from tether_otel.tracing import observer

    return observer()

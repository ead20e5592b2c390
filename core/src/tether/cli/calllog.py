"""``--log-level``: a structured log of calls, one JSON object per line on stderr, for a harness
without OpenTelemetry. ``info``: one line per call when it ends; ``debug``: also when it starts
and each wait inside it; ``warning``: only calls that failed; ``error``: only calls that raised."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any

from tether.hookspecs import hookimpl
from tether.observe import CallRecord

LEVELS = ("debug", "info", "warning", "error")


class CallLog:
    """A call observer writing JSON lines (and the CLI's plugin offering it)."""

    def __init__(self, level: str, stream: IO[str] | None = None) -> None:
        self.level = LEVELS.index(level)
        self.stream = stream

    @hookimpl
    def tether_call_observers(self, run: Any) -> CallLog:
        return self

    def _write(self, level: str, event: str, **fields: Any) -> None:
        if LEVELS.index(level) < self.level:
            return
        line = {"ts": round(time.time(), 3), "level": level, "event": event, **fields}
        stream = self.stream or sys.stderr
        stream.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
        stream.flush()

    @staticmethod
    def _call_fields(call: CallRecord) -> dict[str, Any]:
        return {
            "call_id": call.call_id,
            "tool": call.tool,
            "tier": call.tier,
            "surface": call.surface,
            "conversation": call.conversation_id,
        }

    @contextmanager
    def observe_call(self, call: CallRecord) -> Iterator[None]:
        self._write("debug", "call_start", **self._call_fields(call))
        try:
            yield
        finally:
            outcome = call.outcome
            level = {"ok": "info", "error": "warning"}.get(outcome, "error")
            fields = self._call_fields(call)
            fields.update(
                outcome=outcome,
                duration_s=round(call.duration_s, 4),
                result_chars=call.result_chars,
            )
            if call.uncut_chars != call.result_chars:
                fields["uncut_chars"] = call.uncut_chars
            if call.error is not None:
                fields["error"] = f"{type(call.error).__name__}: {call.error}"
            self._write(level, "call", **fields)

    @contextmanager
    def observe_wait(
        self, call: CallRecord, what: str, attributes: Mapping[str, Any]
    ) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self._write(
                "debug",
                "wait",
                call_id=call.call_id,
                tool=call.tool,
                what=what,
                duration_s=round(time.monotonic() - started, 4),
                **dict(attributes),
            )

"""Watching calls: what a tracer (tether-otel) or a call log (``tether --log-level``) sees.

A plugin answers the core hook ``tether_call_observers(run)`` with observers; every call of the
run then goes through each one's :meth:`CallObserver.observe_call` (entered before the call's
surface lookup, left with :attr:`CallRecord.result` set), and every long wait a family marks
inside a call with :func:`waiting` ("server start", "readiness", "debugger launch") through
:meth:`CallObserver.observe_wait`. Without an observer both cost one context-variable lookup.
An observer that raises is reported and left out; the call goes on.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

if TYPE_CHECKING:
    from tether.run import Run
    from tether.tools import ToolResult


@attrs.define
class CallRecord:
    """One call as observers see it; ``result``/``error`` are set before ``observe_call`` exits."""

    run: Run
    tool: str
    surface: str
    call_id: str
    #: the tool's tier, None when the tool is unknown to the run
    tier: str | None
    started: float = attrs.field(factory=time.monotonic)
    result: ToolResult | None = None
    #: an exception the call raised (a bug in a tool, a cancellation)
    error: BaseException | None = None
    ended: float | None = None

    #: the calling conversation (a served run's connection's), else the run's
    conversation_id: str | None = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        from tether.resources import calling_conversation

        self.conversation_id = calling_conversation(self.run)

    @property
    def duration_s(self) -> float:
        return (self.ended if self.ended is not None else time.monotonic()) - self.started

    @property
    def outcome(self) -> str:
        """``ok``, ``error`` (an error result), or ``raised`` (an exception, a cancellation)."""
        if self.result is None:
            return "raised"
        return "error" if self.result.is_error else "ok"

    @property
    def result_chars(self) -> int:
        """Characters of text the result gives the model (after the budget)."""
        from tether.tools import Text

        if self.result is None:
            return 0
        return sum(len(c.text) for c in self.result.content if isinstance(c, Text))

    @property
    def uncut_chars(self) -> int:
        """Characters of text before the result budget cut it (``result_chars`` when it did not)."""
        budget = self.result.meta.get("budget") if self.result is not None else None
        return int(budget["total_chars"]) if isinstance(budget, Mapping) else self.result_chars


@runtime_checkable
class CallObserver(Protocol):
    """What ``tether_call_observers`` returns (one object, or a list of them)."""

    def observe_call(self, call: CallRecord) -> AbstractContextManager[Any]:
        """Entered when the call starts, left when it ends (``call.result`` or ``call.error``
        set)."""
        ...

    def observe_wait(
        self, call: CallRecord, what: str, attributes: Mapping[str, Any]
    ) -> AbstractContextManager[Any]:
        """Entered and left around one wait inside ``call`` (:func:`waiting`)."""
        ...


# the call the current task works for, with its run's observers
_current: contextvars.ContextVar[tuple[CallRecord, tuple[CallObserver, ...]] | None] = (
    contextvars.ContextVar("tether_observed_call", default=None)
)


def _report(run: Run, observer: object, exc: Exception) -> None:
    from tether.contributions import plugin_name, report_failure

    name = plugin_name(run.pm, observer) if run.pm.is_registered(observer) else repr(observer)
    report_failure(run.pm, name, "tether_call_observers", f"{type(exc).__name__}: {exc}")


@contextmanager
def _entered(
    stack: ExitStack, run: Run, observers: tuple[CallObserver, ...], enter: Any
) -> Iterator[None]:
    for observer in observers:
        try:
            stack.enter_context(enter(observer))
        except Exception as exc:  # an observer's failure never fails the call
            _report(run, observer, exc)
    yield


@contextmanager
def observing(record: CallRecord, observers: tuple[CallObserver, ...]) -> Iterator[CallRecord]:
    """The core's side: every observer around one call, and the call current for
    :func:`waiting`. A no-op without observers."""
    if not observers:
        yield record
        return
    token = _current.set((record, observers))
    try:
        with (
            ExitStack() as stack,
            _entered(stack, record.run, observers, lambda o: o.observe_call(record)),
        ):
            try:
                yield record
            except BaseException as exc:
                record.error = exc
                raise
            finally:
                record.ended = time.monotonic()
    finally:
        _current.reset(token)


@contextmanager
def waiting(what: str, **attributes: Any) -> Iterator[None]:
    """Mark a long wait inside the current call (``with tether.waiting("server start",
    server="basedpyright"):``): observers see it as a child of the call (tether-otel: a child
    span). Outside a call, or with no observer, it does nothing."""
    current = _current.get()
    if current is None:
        yield
        return
    record, observers = current
    with (
        ExitStack() as stack,
        _entered(stack, record.run, observers, lambda o: o.observe_wait(record, what, attributes)),
    ):
        yield


__all__ = ["CallObserver", "CallRecord", "observing", "waiting"]

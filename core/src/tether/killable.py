"""Python work in a thread of the run's own process that the caller's cancellation ends.

A thread cannot be killed, and ``anyio.to_thread.run_sync(..., abandon_on_cancel=True)`` only
stops *waiting* for it: work whose cost the model or the checkout controls (matching a rule
over a file) would go on using a core long after its call timed out, and share its state with
the next call. :func:`run_killable` raises :class:`Killed` inside the thread when the awaiting
task is cancelled: the interpreter delivers it at the thread's next bytecode, so pure-Python
work ends within a bytecode, and work inside one C call ends when that call returns (tether
gives such calls bounded inputs: RE2, a tree-sitter parse of a capped file). The state the
work touched may be half-updated; the caller drops it.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread

T = TypeVar("T")


class Killed(BaseException):
    """Raised inside a thread of :func:`run_killable` whose caller was cancelled; a
    BaseException, so that no ``except Exception`` of the work swallows it."""


class _Job:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: int | None = None
        self._finished = False
        self.killed = False

    def start(self) -> None:
        with self._lock:
            if self.killed:
                raise Killed
            self._thread = threading.get_ident()

    def finish(self) -> None:
        # Under the lock: once finished, no Killed can be sent to this thread (it goes on to
        # other work of the thread pool); one sent before lands at the next bytecode here.
        with self._lock:
            self._finished = True

    def kill(self) -> None:
        with self._lock:
            self.killed = True
            if self._thread is None or self._finished:
                return
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(self._thread), ctypes.py_object(Killed)
            )


async def run_killable(work: Callable[[], T]) -> T:
    """``work()`` in a worker thread; when the awaiting task is cancelled (the call's timeout,
    the run's close) the thread gets :class:`Killed` and the cancellation goes on at once."""
    job = _Job()

    def run() -> T:
        job.start()
        try:
            return work()
        finally:
            job.finish()

    try:
        return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
    except BaseException:
        job.kill()
        raise

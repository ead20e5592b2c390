"""SIGTERM, SIGHUP and SIGINT for ``tether call`` and ``tether session``: the first one stops
the command gracefully (every call in flight is cancelled and answered with an error naming the
signal, the run closes and kills its children, the process exits with 128 + the signal's
number); a second one exits at once, whatever the process is doing (the run's watchdog then
kills the children), and so does the process :data:`HARD_EXIT_S` after the first.

SIGKILL runs no code here: :mod:`tether.processes.watchdog` covers it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextlib import contextmanager
from typing import TypeVar

import anyio
import anyio.abc
import anyio.to_thread

from tether.terminal import say
from tether.wire.framing import LineReader

T = TypeVar("T")
SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
#: the longest a stopping command lives after its first signal: its run's close is bounded
#: (``[core] close_timeout_s`` for every resource at once, then the process trees are killed);
#: this ends the process even if something holds that close up
HARD_EXIT_S = 30.0


def _exit_now(signum: int, frame: object) -> None:
    """End the process at once (the run's watchdog kills what it leaves)."""
    sys.stderr.flush()
    os._exit(128 + signum)


class Stop:
    """The stop request of one command: which signal came, and the scopes it cancels."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.signum: int | None = None
        self._scopes: set[anyio.CancelScope] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum is not None else ""

    def reason(self, what: str) -> str:
        """The error text of a call the stop cancelled."""
        return (
            f"{what} was stopped: tether {self.command} received {self.name} and is closing its run"
        )

    def exit_code(self, code: int) -> int:
        return 128 + self.signum if self.signum is not None else code

    @contextmanager
    def scope(self) -> Iterator[anyio.CancelScope]:
        """A cancel scope the stop cancels (at once, if the stop was already requested)."""
        with anyio.CancelScope() as scope:
            self._scopes.add(scope)
            if self.requested:
                scope.cancel()
            try:
                yield scope
            finally:
                self._scopes.discard(scope)

    def until_stopped(self, source: AsyncIterable[T]) -> AsyncIterator[T]:
        """``source``, ending as soon as the stop is requested (a pending read is cancelled)."""
        return _UntilStopped(self, source)

    def trigger(self, signum: int) -> None:
        """A signal came. Runs in the main thread between two bytecodes (a Python-level handler),
        so it counts signals even while the event loop is busy: the second one always ends the
        process at once. The graceful part, cancelling the scopes, goes to the loop."""
        if self.requested:
            _exit_now(signum, None)  # the second signal: no more grace
        self.signum = signum
        for sig in SIGNALS:
            signal.signal(sig, _exit_now)
        # and whatever the close waits on, the process ends within HARD_EXIT_S (the run's
        # watchdog then kills its children, as after a second signal)
        timer = threading.Timer(HARD_EXIT_S, _exit_now, args=(signum, None))
        timer.daemon = True
        timer.start()
        say(
            f"tether {self.command}: {self.name} received, closing the run "
            "(send it again to exit at once)",
            sys.stderr,
        )
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._cancel_scopes)
        else:
            self._cancel_scopes()

    def _cancel_scopes(self) -> None:
        for scope in list(self._scopes):
            scope.cancel()

    async def watch(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Receive the signals until cancelled (must run in the main thread). The handlers are
        Python-level ones, not the loop's: a loop busy with synchronous work (a run opening,
        a plugin importing) cannot hold a signal back."""
        self._loop = asyncio.get_running_loop()
        previous = {
            sig: signal.signal(sig, lambda signum, _: self.trigger(signum)) for sig in SIGNALS
        }
        try:
            task_status.started()
            await anyio.sleep_forever()
        finally:
            if not self.requested:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)


class _UntilStopped(AsyncIterator[T]):
    def __init__(self, stop: Stop, source: AsyncIterable[T]) -> None:
        self.stop = stop
        self.source = source.__aiter__()

    async def __anext__(self) -> T:
        if not self.stop.requested:
            with self.stop.scope():
                return await self.source.__anext__()
        raise StopAsyncIteration


class _FdReceiveStream(anyio.abc.ByteReceiveStream):
    """The bytes of ``fd``, read without a blocked thread so that a stop cancels the wait at
    once. A regular file (``< requests.jsonl``), which cannot be polled, is read in a worker
    thread; it never blocks for long."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pollable = True

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            if self._pollable:
                try:
                    await anyio.wait_readable(self._fd)
                    chunk = os.read(self._fd, max_bytes)
                except (PermissionError, ValueError, NotImplementedError):
                    self._pollable = False
                    continue
            else:
                chunk = await anyio.to_thread.run_sync(
                    os.read, self._fd, max_bytes, abandon_on_cancel=True
                )
            if not chunk:
                raise anyio.EndOfStream
            return chunk

    async def aclose(self) -> None:
        pass  # the fd belongs to the process (stdin)


def lines(fd: int, *, max_line_bytes: int) -> LineReader:
    """The lines of ``fd`` (without their newline); a line over ``max_line_bytes`` raises
    :class:`~tether.wire.framing.LineTooLong` and is skipped (:class:`~tether.wire.framing.LineReader`)."""
    return LineReader(_FdReceiveStream(fd), max_line_bytes=max_line_bytes)

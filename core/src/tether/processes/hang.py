"""Telling a hung server from a busy one, and saying so.

A long-lived child that tether talks to (a language server, a debug adapter) can stop answering
while it still runs: stopped (SIGSTOP, a tracer), deadlocked, swapped out. A request to it then
waits out its whole timeout, and without a rule every later call does the same while ``status``
still calls it healthy. :class:`HangWatch` is that rule, kept by whoever owns the connection:

- :meth:`HangWatch.timed_out` after each request that timed out, with what the child's processes
  did meanwhile (:func:`activity`): it is judged unresponsive at once when its processes are
  stopped, or at the second timeout in a row when they used almost no CPU time since the first
  (under :data:`BUSY_SHARE` of one core: reading the requests, an idle timer or a debugger's poll
  cost a few ticks); a child that computes is busy, never hung;
- :meth:`HangWatch.heard` on every message from it: it answers, the count starts over;
- :meth:`HangWatch.due` once ``limit`` timeouts in a row met an unresponsive child: the owner acts
  (tether-lsp restarts the server, tether-debug ends the session);
- :meth:`HangWatch.describe` is the wording every ``status`` uses.

The judgement reads each process's state and CPU time through :mod:`tether.processes.procinfo` (``/proc``
on Linux, psutil elsewhere).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from tether.processes import procinfo
from tether.text import clock

STOPPED = "its processes are stopped"
SILENT = "nothing was heard from it since the first of them"
#: the share of one core above which a child that does not answer counts as computing: far
#: below what a busy process gets even on a saturated machine (2 cores at load 12: ~1/6),
#: far above what an idle one spends (a stopped debugpy session: 1 tick in 6 s)
BUSY_SHARE = 0.02
_TICKS_PER_S = procinfo.TICKS_PER_S


def activity(pids: Iterable[int]) -> tuple[bool, int]:
    """(every process of ``pids`` that still exists is stopped, CPU ticks they used so far):
    a busy process burns CPU, a hung one (SIGSTOP, a deadlock) does not. Processes that are
    gone are skipped; when none is left, nothing is stopped."""
    stopped, ticks, seen = True, 0, 0
    for pid in set(pids):
        stat = procinfo.stat(pid)
        if stat is None:
            continue
        seen += 1
        stopped = stopped and stat.stopped
        ticks += stat.cpu_ticks
    return stopped and seen > 0, ticks


class HangWatch:
    """Requests in a row that timed out with nothing heard meanwhile, and since when the child
    looks hung (see the module's docstring)."""

    def __init__(self) -> None:
        self.timeouts_in_row = 0
        #: wall-clock time since which the child looks hung (None: it answers, or is busy)
        self.since: float | None = None
        self.why = ""
        self._ticks_at_first: int | None = 0
        self._first_at = 0.0

    @property
    def unresponsive(self) -> bool:
        return self.since is not None

    def timed_out(self, stopped: bool, ticks: int | None, *, stopped_why: str = STOPPED) -> None:
        """Count a timeout; ``stopped`` and ``ticks`` are what :func:`activity` says now
        (``ticks`` None: no process of the child can be seen, e.g. an adapter inside the program
        a debugger attached to over TCP; then two timeouts in a row are the verdict)."""
        now = time.monotonic()
        self.timeouts_in_row += 1
        if self.timeouts_in_row == 1:
            self._ticks_at_first, self._first_at = ticks, now
        if self.since is not None:
            return
        if stopped:
            why = stopped_why
        elif self.timeouts_in_row < 2:
            return  # one timeout proves nothing: it may be computing
        elif ticks is None or self._ticks_at_first is None:
            why = SILENT
        else:
            cpu_s = (ticks - self._ticks_at_first) / _TICKS_PER_S
            elapsed = now - self._first_at
            if cpu_s > BUSY_SHARE * elapsed:
                return  # working: a busy child is left alone
            why = f"it used {cpu_s:.2f} s of CPU in the {elapsed:.0f} s since the first of them"
        self.since = time.time()
        self.why = why

    def heard(self) -> None:
        """A message came: the child is alive and reading."""
        self.timeouts_in_row = 0
        self.since = None
        self.why = ""

    def due(self, limit: int) -> bool:
        """``limit`` timeouts in a row, and the child judged unresponsive: time to act."""
        return self.since is not None and self.timeouts_in_row >= limit

    def describe(self) -> str:
        """``unresponsive since 14:03:09 UTC (2 requests in a row timed out; <why>)``."""
        assert self.since is not None, "describe() of a child that answers"
        count = self.timeouts_in_row
        return (
            f"unresponsive since {clock(self.since)} ({count} request{'s' if count != 1 else ''} "
            f"in a row timed out; {self.why})"
        )

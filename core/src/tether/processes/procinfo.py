"""Facts about other processes, from one of two backends: the only place tether reads them.

- ``proc``: direct reads of Linux's ``/proc`` (fast, no dependency): the default on Linux;
- ``psutil``: the portable backend (macOS and other POSIX systems), psutil imported only then.

``TETHER_PORTABLE=1`` in the environment selects the psutil backend on Linux too, and keeps
the CLI from becoming a subreaper (:func:`tether.processes.managed.become_subreaper` returns False): Linux
then behaves as macOS would, so the portable path is exercised where macOS cannot run.

Start times are comparable only with each other (the same backend): clock ticks since boot
from ``/proc``, microseconds since the epoch from psutil.
"""

from __future__ import annotations

import os
import sys
from typing import Any, NamedTuple

#: the environment variable that selects the portable (psutil) backend on Linux
PORTABLE_ENV = "TETHER_PORTABLE"


def portable() -> bool:
    """True when the psutil backend is in use (not Linux, or ``TETHER_PORTABLE=1``)."""
    return not sys.platform.startswith("linux") or os.environ.get(PORTABLE_ENV, "") not in (
        "",
        "0",
    )


class Stat(NamedTuple):
    """What tether needs of one live (or zombie) process."""

    #: one letter as in ``ps``: R running, S sleeping, T stopped, Z zombie…
    state: str
    ppid: int
    pgid: int
    sid: int
    #: when it started (see the module: comparable within one backend only)
    started: int
    #: CPU time used so far, user + system, in clock ticks (:data:`TICKS_PER_S`)
    cpu_ticks: int

    @property
    def zombie(self) -> bool:
        return self.state == "Z"

    @property
    def stopped(self) -> bool:
        return self.state in ("T", "t")


TICKS_PER_S: int = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


# --- the /proc backend ---------------------------------------------------------------------


def _proc_pids() -> list[int]:
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


def _proc_stat(pid: int) -> Stat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            f = fh.read().rsplit(b")", 1)[1].split()
        return Stat(
            f[0].decode("ascii", "replace"),
            int(f[1]),
            int(f[2]),
            int(f[3]),
            int(f[19]),
            int(f[11]) + int(f[12]),
        )
    except (OSError, IndexError, ValueError):
        return None


def _proc_environ(pid: int) -> list[bytes] | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return fh.read().split(b"\0")
    except OSError:
        return None


def _proc_cmdline(pid: int) -> list[bytes] | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return [a for a in fh.read().split(b"\0") if a]
    except OSError:
        return None


def _proc_rss() -> int:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


# --- the psutil backend --------------------------------------------------------------------

_STATES = {
    "running": "R",
    "sleeping": "S",
    "disk-sleep": "D",
    "stopped": "T",
    "tracing-stop": "t",
    "zombie": "Z",
    "dead": "X",
    "idle": "I",
    "waking": "S",
    "parked": "S",
    "locked": "S",
    "waiting": "S",
}


def _psutil() -> Any:
    import psutil  # only the portable backend pays for it

    return psutil


def _ps_pids() -> list[int]:
    return list(_psutil().pids())


def _ps_stat(pid: int) -> Stat | None:
    psutil = _psutil()
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            state = _STATES.get(proc.status(), "S")
            ppid = proc.ppid()
            started = round(proc.create_time() * 1_000_000)
            try:
                times = proc.cpu_times()
                ticks = round((times.user + times.system) * TICKS_PER_S)
            except psutil.Error:
                ticks = 0  # a zombie on macOS
        pgid, sid = os.getpgid(pid), os.getsid(pid)
    except (psutil.Error, OSError):
        return None
    return Stat(state, ppid, pgid, sid, started, ticks)


def _ps_environ(pid: int) -> list[bytes] | None:
    psutil = _psutil()
    try:
        env = psutil.Process(pid).environ()
    except (psutil.Error, OSError):
        return None
    return [f"{k}={v}".encode("utf-8", "surrogateescape") for k, v in env.items()]


def _ps_cmdline(pid: int) -> list[bytes] | None:
    psutil = _psutil()
    try:
        argv = psutil.Process(pid).cmdline()
    except (psutil.Error, OSError):
        return None
    return [a.encode("utf-8", "surrogateescape") for a in argv if a]


def _ps_rss() -> int:
    try:
        return int(_psutil().Process().memory_info().rss)
    except Exception:  # memory reading is advisory: 0 means "unknown"
        return 0


# --- the interface -------------------------------------------------------------------------


def pids() -> list[int]:
    """Every pid on the system (as far as this user may see)."""
    return _ps_pids() if portable() else _proc_pids()


def stat(pid: int) -> Stat | None:
    """``pid``'s state, parent, group, session, start time and CPU time; None when it is gone
    (or cannot be read)."""
    return _ps_stat(pid) if portable() else _proc_stat(pid)


def environ(pid: int) -> list[bytes] | None:
    """``pid``'s environment as ``NAME=value`` items; None when it cannot be read."""
    return _ps_environ(pid) if portable() else _proc_environ(pid)


def cmdline(pid: int) -> list[bytes] | None:
    """``pid``'s non-empty arguments; None when it cannot be read."""
    return _ps_cmdline(pid) if portable() else _proc_cmdline(pid)


def started_floor() -> int:
    """A start time no process started from now on is below (a little in the past), in the
    units :func:`stat` reports: for a child whose own start time could not be read because it
    had already exited and been reaped by the time anyone looked."""
    import time

    if portable():
        # psutil's create_time on Linux is boot time (whole seconds) + ticks: up to 1 s early
        return round((time.time() - 1.0) * 1_000_000)
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * TICKS_PER_S) - 1


def rss_bytes() -> int:
    """This process's resident memory in bytes (0 when unknown)."""
    return _ps_rss() if portable() else _proc_rss()


if portable():
    # imported now, not at the first read: a child's start time is read right after it is
    # spawned, and an import then (tens of ms) lets a short-lived child exit and be reaped first
    _psutil()

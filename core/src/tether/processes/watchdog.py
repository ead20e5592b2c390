"""A run's watchdog: the process that kills the run's children when the run's own process dies
in a way that runs no code (SIGKILL, a crash, the OOM killer).

:func:`start` launches this file as a script (``python -I -S watchdog.py OWNER PGID``) in its own
session, with the read end of a pipe as its stdin; the run keeps the only write end. When the
run's process dies, the kernel closes that end, the watchdog reads end-of-file and SIGKILLs every
process whose environment carries the run's ``TETHER_OWNER=<owner>/…`` marker, the process groups
they lead and their descendants, sweeping until none is left (bounded), then exits. A run that
closes normally kills its children itself and then stops the watchdog with :func:`stop`.

The script imports only the standard library (it runs with ``-S``: no site-packages), so it
starts in a few milliseconds and nothing waits for it to be ready: the pipe already exists.
On Linux it reads ``/proc``. Under the portable backend (macOS and other POSIX systems, or
``TETHER_PORTABLE=1``: see :mod:`tether.processes.procinfo`) it runs without ``-S`` and reads the same facts
through psutil (a start-up of some tens of milliseconds more, on another core).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the script itself does not pay for importing subprocess
    import subprocess

_SWEEP_S = 1.5


def _stat_fields(pid: str) -> list[bytes] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _scan_psutil(
    needle: bytes, parents: dict[int, int], groups: dict[int, int], marked: set[int]
) -> None:
    import psutil

    me = os.getpid()
    for proc in psutil.process_iter():
        try:
            if proc.pid == me or proc.status() == psutil.STATUS_ZOMBIE:
                continue
            parents[proc.pid], groups[proc.pid] = proc.ppid(), os.getpgid(proc.pid)
            environ = proc.environ()
        except (psutil.Error, OSError):
            continue
        if any(f"{k}={v}".encode().startswith(needle) for k, v in environ.items()):
            marked.add(proc.pid)


def _sweep(needle: bytes, spare_groups: set[int], portable: bool = False) -> int:
    """SIGKILL every live marked process, the groups they lead and their descendants; return
    how many marked processes were found alive."""
    me = os.getpid()
    parents: dict[int, int] = {}
    groups: dict[int, int] = {}
    marked: set[int] = set()
    if portable:
        _scan_psutil(needle, parents, groups, marked)
    for entry in [] if portable else os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        fields = _stat_fields(entry)
        if fields is None or fields[0] == b"Z":
            continue
        pid = int(entry)
        parents[pid], groups[pid] = int(fields[1]), int(fields[2])
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        if any(item.startswith(needle) for item in environ.split(b"\0")):
            marked.add(pid)
    doomed = set(marked)
    doomed |= {pid for pid, group in groups.items() if group in marked}  # members of their groups
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    stack = list(doomed)
    while stack:  # descendants, even those that dropped the marker from their environment
        for child in children.get(stack.pop(), []):
            if child not in doomed:
                doomed.add(child)
                stack.append(child)
    for group in {groups[p] for p in doomed if p in groups} - spare_groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return len(marked)


def kill_marked(owner: str, spare_groups: Iterable[int] = (), portable: bool = False) -> None:
    """Sweep until no process carries ``TETHER_OWNER=<owner>/…`` (at most ~1.5 s)."""
    needle = f"TETHER_OWNER={owner}/".encode()
    spare = set(spare_groups) | {os.getpgrp()}
    deadline = time.monotonic() + _SWEEP_S
    while _sweep(needle, spare, portable) and time.monotonic() < deadline:
        time.sleep(0.02)


def _main(argv: list[str]) -> int:
    owner, run_group = argv[1], int(argv[2])
    portable = argv[3:] == ["psutil"]
    if portable:
        import psutil  # noqa: F401 - loaded now, not after the run's process died
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    while True:
        try:
            if not os.read(0, 64):
                break  # the run's process is gone
        except InterruptedError:
            continue
        except OSError:
            break
    kill_marked(owner, {run_group}, portable)
    return 0


class Watchdog:
    """The handle a run keeps: the watchdog's process and the write end of its pipe."""

    def __init__(self, process: subprocess.Popen[bytes], fd: int) -> None:
        self.process = process
        self.fd = fd


def start(owner: str) -> Watchdog | None:
    """Launch the watchdog of the run whose children carry ``TETHER_OWNER=<owner>/…``.

    Returns None where it cannot run (no interpreter path)."""
    if not sys.executable:
        return None
    import subprocess

    from tether.processes import procinfo

    # the portable backend needs site-packages (psutil): no -S then
    argv = [sys.executable, "-I", "-S", __file__, owner, str(os.getpgrp())]
    if procinfo.portable():
        argv = [sys.executable, "-I", __file__, owner, str(os.getpgrp()), "psutil"]

    read_end, write_end = os.pipe()  # both non-inheritable: no child of the run holds them
    try:
        process = subprocess.Popen(
            argv,
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a terminal's ^C or hang-up for the run does not reach it
        )
    except OSError:
        os.close(write_end)
        return None
    finally:
        os.close(read_end)
    return Watchdog(process, write_end)


def stop(watchdog: Watchdog | None) -> None:
    """The run closed and killed its children itself: end the watchdog without a sweep."""
    if watchdog is None:
        return
    import subprocess

    try:
        watchdog.process.kill()
        watchdog.process.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        pass
    os.close(watchdog.fd)


if __name__ == "__main__":
    sys.exit(_main(sys.argv))

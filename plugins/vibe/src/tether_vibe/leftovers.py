"""Finding what a worker left behind: its process group, and processes carrying its env marker.

The core kills a process's tree while the process lives. Two kinds of leftovers escape that: the
members of a worker's process group once the worker itself has exited (they are no longer its
descendants), and double-forked daemons (reparented away at once). Every process a worker starts
inherits ``TETHER_VIBE_WORKER=<token>`` in its environment, so both are found in /proc.
(Requested from the core in /work/requests/vibe.md; this module goes when the core does it.)
"""

from __future__ import annotations

import os
import secrets

import tether.process

MARKER_ENV = "TETHER_VIBE_WORKER"


def new_token() -> str:
    return secrets.token_hex(8)


def find(pgid: int, token: str) -> list[int]:
    """Live pids in process group ``pgid`` or whose environment carries ``token``."""
    marker = f"{MARKER_ENV}={token}".encode()
    own = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == own:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            if len(fields) < 3 or fields[0] == b"Z":
                continue
            if int(fields[2]) == pgid:
                found.append(int(entry))
                continue
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read()
        except (OSError, ValueError):
            continue
        if marker in environ.split(b"\0"):
            found.append(int(entry))
    return found


async def terminate(pgid: int, token: str, grace_s: float) -> list[int]:
    """Terminate every leftover (and its descendants); return the pids that were found."""
    pids = find(pgid, token)
    for pid in pids:
        await tether.process.terminate_tree(pid, grace_s)
    return pids

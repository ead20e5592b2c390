"""Finding a worker's double-forked daemons through the environment marker they inherit.

The core kills a worker's tree and process group (``terminate_tree``). A double-forked daemon
escapes both: it is reparented away at once and sits in a session of its own. Every process a
worker starts inherits ``TETHER_VIBE_WORKER=<token>`` in its environment, so such daemons are
found in /proc. (Requested from the core in /work/requests/vibe.md; this module goes when the
core does it.)
"""

from __future__ import annotations

import os
import secrets

import tether.process

MARKER_ENV = "TETHER_VIBE_WORKER"


def new_token() -> str:
    return secrets.token_hex(8)


def marked(token: str) -> list[int]:
    """Live pids whose environment carries ``TETHER_VIBE_WORKER=<token>``."""
    marker = f"{MARKER_ENV}={token}".encode()
    own = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == own:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        if marker in environ.split(b"\0") and tether.process.is_alive(int(entry)):
            found.append(int(entry))
    return found


async def terminate(token: str, grace_s: float) -> list[int]:
    """Terminate every process carrying ``token`` (and its tree); return the pids found."""
    pids = marked(token)
    for pid in pids:
        await tether.process.terminate_tree(pid, grace_s)
    return pids

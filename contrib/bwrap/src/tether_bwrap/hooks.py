"""Offers the bubblewrap enclosure to tether-eval when ``[bwrap] enabled = true``.

Linux only (bubblewrap is built on Linux namespaces): elsewhere, and under ``TETHER_PORTABLE=1``
(Linux simulating another POSIX system), loading this plugin fails with a reason that says so,
and ``tether plugins`` reports it ``failed``.
"""

from __future__ import annotations

import sys

from tether.processes import procinfo

if not sys.platform.startswith("linux") or procinfo.portable():
    raise ImportError(
        "tether-bwrap runs on Linux only (bubblewrap is built on Linux namespaces); this is "
        + (
            f"{sys.platform!r}"
            if not sys.platform.startswith("linux")
            else f"Linux simulating another POSIX system ({procinfo.PORTABLE_ENV}=1)"
        )
    )

import tether
from tether_bwrap.enclosure import BwrapConfig, BwrapEnclosure


@tether.hookimpl
def tether_eval_enclosure(run: tether.Run) -> BwrapEnclosure | None:
    config = run.config("bwrap", BwrapConfig)
    return BwrapEnclosure(config) if config.enabled else None

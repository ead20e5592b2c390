"""Offers the bubblewrap enclosure to tether-eval when ``[bwrap] enabled = true``."""

from __future__ import annotations

import tether
from tether_bwrap.enclosure import BwrapConfig, BwrapEnclosure


@tether.hookimpl
def tether_enclosure(run: tether.Run) -> BwrapEnclosure | None:
    config = run.config("bwrap", BwrapConfig)
    return BwrapEnclosure(config) if config.enabled else None

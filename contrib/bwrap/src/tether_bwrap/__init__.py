"""tether-bwrap: run tether-eval's kernels inside bubblewrap.

Enable it for every run with ``[bwrap] enabled = true``, or, from a harness, pass the plugin
object: ``tether.open_run(workdir, plugins=[BwrapPlugin()])``.
"""

from __future__ import annotations

import tether
from tether_bwrap.enclosure import BwrapConfig, BwrapEnclosure


class BwrapPlugin:
    """A harness's plugin object that puts the run's kernels in bubblewrap."""

    def __init__(self, config: BwrapConfig = BwrapConfig(enabled=True)) -> None:
        self.config = config

    @tether.hookimpl
    def tether_eval_enclosure(self, run: tether.Run) -> BwrapEnclosure:
        return BwrapEnclosure(self.config)


__all__ = ["BwrapConfig", "BwrapEnclosure", "BwrapPlugin"]

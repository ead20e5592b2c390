"""The debug family's own hook: contribute debug adapters."""

from __future__ import annotations

from typing import TYPE_CHECKING

import tether

if TYPE_CHECKING:
    from tether_debug.adapters import DebugAdapter


@tether.hookspec
def tether_debug_adapters() -> list[DebugAdapter] | None:
    """Debug adapters this plugin contributes (subclasses of :class:`tether_debug.DebugAdapter`).

    Ids must be unique across plugins: a second adapter with a taken id is dropped and its plugin
    reported, naming the holder (the core's collector; plugins registered later are asked first).
    """

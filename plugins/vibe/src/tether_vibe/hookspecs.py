"""Hook specifications the vibe family adds to tether's plugin manager."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import tether

if TYPE_CHECKING:
    from tether_vibe.runners import Runner


@tether.hookspec
def tether_vibe_runners() -> Mapping[str, Runner] | None:
    """Contribute worker runners: a mapping of tier ("fast" or "good") to a :class:`Runner`.

    A tier given by two plugins is an error naming both; a tier configured in
    ``[vibe.runners.<tier>]`` overrides what plugins contribute for it.
    """

"""The ``[myplugin]`` configuration table (``open_run(config={"myplugin": {...}})``)."""

from __future__ import annotations

import attrs


@attrs.frozen
class MypluginConfig:
    """The ``[myplugin]`` table: the core loads it strictly (an unknown key or a wrong type is an
    error naming it)."""

    #: Whether blank lines count.
    count_blank: bool = True

"""Registers the reference file tools with every run."""

from __future__ import annotations

import tether
from tether_files.tools import file_tools


@tether.hookimpl
def tether_tools(run: tether.Run) -> list[tether.ToolSpec]:
    return file_tools()

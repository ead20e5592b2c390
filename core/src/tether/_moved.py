"""The core's modules that moved into subpackages, still importable by their old names.

A plugin written against tether 0.2's flat layout (``from tether import reading``,
``import tether.fsutil``) keeps working: the old name is the *same module object* as the new
one, imported through a finder placed last on :data:`sys.meta_path` (consulted only for a name
nothing else found, so it costs nothing at start-up), with a :class:`DeprecationWarning` naming
the new path. ``tests`` in the core import every old name and check both.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

#: old name -> where the module lives now
MOVED = {
    "tether.reading": "tether.workdir.reading",
    "tether.fsutil": "tether.workdir.writing",
    "tether.journal": "tether.workdir.journal",
    "tether.paths": "tether.workdir.paths",
    "tether.process": "tether.processes.managed",
    "tether.owner": "tether.processes.owner",
    "tether.launch": "tether.processes.launch",
    "tether.confine": "tether.processes.confine",
    "tether.watchdog": "tether.processes.watchdog",
    "tether.procinfo": "tether.processes.procinfo",
    "tether.hang": "tether.processes.hang",
    "tether.availability": "tether.processes.availability",
    "tether.framing": "tether.wire.framing",
    "tether.positions": "tether.wire.positions",
}


class _OldNames:
    """A meta-path finder and loader that answers an old name with the module at its new one."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        return ModuleSpec(name, cast("Loader", self)) if name in MOVED else None

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        new = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new}: import it from there (the old name goes in tether 0.3)",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """The module is already executed under its new name."""


def install() -> None:
    if not any(isinstance(finder, _OldNames) for finder in sys.meta_path):
        sys.meta_path.append(_OldNames())

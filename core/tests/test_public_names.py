"""The core's public names, and its folders against the map in ``docs/architecture.md``.

Moving a module must not move a name a harness or a plugin uses: ``tether``'s own names are
listed here exactly, every module ``docs/api.md`` makes public imports, and every flat name of
tether 0.2 still imports as the same module (with a warning naming the new path).
"""

from __future__ import annotations

import importlib
import re
import sys
import warnings
from pathlib import Path

import pytest

import tether
from tether import _moved

HERE = Path(__file__).resolve()
#: docs/ at the repository's root; in the core's sdist, docs/ beside tests/
DOCS = next(p for p in (HERE.parents[1] / "docs", HERE.parents[2] / "docs") if p.is_dir())

PUBLIC = {
    "Action", "Actions", "ApprovalRequest", "Approver", "ArgumentError", "ArgumentErrors",
    "CallContext", "ConfigError", "Content", "Continuation", "Cut", "Decision", "Image",
    "NoPerson", "PathError", "PluginError", "PluginInfo", "ResultNote", "Run", "StagedChange",
    "StagedFile", "SyncRun", "TetherError", "Text", "Tier", "ToolError", "ToolResult",
    "ToolSpec", "arg", "hookimpl", "hookspec", "make_plugin_manager", "object_schema",
    "open_run", "open_run_sync", "structure_args", "waiting",
}  # fmt: skip


def test_tethers_own_names_are_unchanged() -> None:
    assert set(tether.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(tether, name) is not None


def _api_modules() -> set[str]:
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    return set(re.findall(r"^\| `(tether(?:\.\w+)+)`", text, re.M))


def test_every_name_docs_api_makes_public_resolves() -> None:
    names = _api_modules()
    assert "tether.workdir.reading" in names
    for name in sorted(names):
        try:
            importlib.import_module(name)
        except ModuleNotFoundError:  # a name inside a module: `tether.contributions.collect`
            parent, _, leaf = name.rpartition(".")
            assert getattr(importlib.import_module(parent), leaf) is not None, name


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_a_flat_name_of_0_2_is_the_same_module_with_a_warning(old: str) -> None:
    new = _moved.MOVED[old]
    importlib.import_module(new)
    sys.modules.pop(old, None)  # a fresh import of the old name, as a plugin's first one
    with pytest.warns(DeprecationWarning, match=re.escape(new)):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    leaf = old.rpartition(".")[2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(f"from tether import {leaf} as imported", namespace := {})
    assert namespace["imported"] is module


def _map_in_architecture() -> set[str]:
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    block = text.split("```text\ncore/src/tether/\n", 1)[1].split("```", 1)[0]
    files: set[str] = set()
    folder = ""
    for line in block.splitlines():
        depth = (len(line) - len(line.lstrip())) // 2
        name = line.split()[0]
        if name.endswith("/"):
            folder = name
        elif depth == 1:
            files.add(name)
        else:
            files.add(folder + name)
    return files


def test_the_core_folders_are_the_architecture_map() -> None:
    core = Path(tether.__file__).parent  # the installed package: the source tree, or the wheel's
    on_disk = {str(p.relative_to(core)) for p in core.rglob("*.py")}
    documented = _map_in_architecture()
    on_disk -= {f for f in on_disk if f.endswith("/__init__.py") and f != "cli/__init__.py"}
    assert sorted(on_disk - documented) == [], "modules missing from docs/architecture.md's map"
    assert sorted(documented - on_disk) == [], "docs/architecture.md's map names modules not there"

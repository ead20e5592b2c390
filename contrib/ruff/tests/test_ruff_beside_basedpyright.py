"""ruff (this plugin, found through its entry point) beside basedpyright: diagnostics from both,
every query from basedpyright, both in `lsp status`. Real servers, no fakes."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tether
from tether.testing import require_real

WRITE_AUTO = {"approval": {"read": "auto", "write": "auto", "exec": "ask"}}
SHAPES = '''"""Shapes."""


def make_square(side: float) -> float:
    """Build a square of the given side."""
    return side * side
'''
USE = "from pkg.shapes import make_square\n\narea = make_square(2.0)\n"
#: one lint finding (ruff: F401) and one type error (basedpyright) in one write
BOTH = "import os\n\nfrom pkg.shapes import make_square\n\narea: str = make_square(2.0)\n"


def need(binary: str) -> None:
    found = shutil.which(binary) or shutil.which(binary, path=str(Path(sys.executable).parent))
    require_real(found is not None, f"{binary} (a real language server)")


def text(result: Any) -> str:
    assert not result.is_error, result.text_content
    return str(result.text_content)


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Any]:
    need("ruff")
    need("basedpyright-langserver")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "shapes.py").write_text(SHAPES)
    (tmp_path / "pkg" / "use.py").write_text(USE)
    # ruff first in the order: it answers no query, so the order cannot make it hide one
    config = {"core": WRITE_AUTO, "lsp": {"servers": {"python": ["ruff", "basedpyright"]}}}
    with tether.open_run_sync(tmp_path, config=config) as opened:
        yield opened


def test_the_plugin_is_found_through_its_entry_point(run: Any) -> None:
    supervisor = run.run.resources["lsp_supervisor"]
    assert supervisor.specs["ruff"].roles == frozenset({"diagnostics"})


def test_a_write_gets_both_servers_diagnostics(run: Any) -> None:
    # both servers started and past their first look at the project (a cold start on a loaded
    # machine may take longer than one write's wait; that write would say so)
    text(run.call("lsp", {"action": "diagnostics", "file": "pkg/use.py"}))
    written = text(run.call("write", {"path": "pkg/use.py", "content": BOTH}))
    # basedpyright's own unused-import warning and ruff's F401 say the same in two words: both
    # kept, each tagged with its source (their keys differ)
    assert "New diagnostics from basedpyright, ruff (3):" in written, written
    assert "pkg/use.py:1:8 warning [F401]: `os` imported but unused" in written, written
    assert "[reportUnusedImport]" in written, written
    assert "error [reportAssignmentType]" in written, written
    listed = text(run.call("lsp", {"action": "diagnostics", "file": "pkg/use.py"}))
    assert "diagnostics for pkg/use.py (basedpyright, ruff):" in listed, listed
    assert "[F401]" in listed and "(Ruff)" in listed and "(basedpyright)" in listed, listed
    # fixing the lint finding only: nothing new, and ruff's finding is gone from the listing
    fixed = text(
        run.call("write", {"path": "pkg/use.py", "content": BOTH.replace("import os\n", "")})
    )
    assert "New diagnostics" not in fixed, fixed
    listed = text(run.call("lsp", {"action": "diagnostics", "file": "pkg/use.py"}))
    assert "[F401]" not in listed and "reportAssignmentType" in listed, listed


def test_queries_go_to_the_navigation_server(run: Any) -> None:
    args = {"file": "pkg/use.py", "line": 3, "symbol": "make_square"}
    definition = text(run.call("lsp", {"action": "definition", **args}))
    assert "pkg/shapes.py:4:5: def make_square(side: float) -> float:" in definition
    hover = text(run.call("lsp", {"action": "hover", **args}))
    assert "Build a square of the given side." in hover
    symbols = text(run.call("lsp", {"action": "symbols", "query": "make_square"}))
    assert "function make_square — pkg/shapes.py:4:5" in symbols
    renamed = text(run.call("lsp_rename", {**args, "new_name": "square_area"}))
    assert renamed.startswith(
        "renamed `make_square` to `square_area`: 3 edits in 2 files (basedpyright)"
    )


def test_status_lists_both(run: Any) -> None:
    text(run.call("write", {"path": "pkg/use.py", "content": USE}))
    status = text(run.call("lsp", {"action": "status"}))
    assert "  ruff for . (pid " in status and "  basedpyright for . (pid " in status, status
    assert "ruff [python] can answer — usable" in status, status
    assert "Order for python: ruff, basedpyright" in status, status

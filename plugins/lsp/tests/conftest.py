"""Makes ``lsp_testkit`` importable (pytest runs with --import-mode=importlib in CI) and
shares the Python fixture project."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from lsp_testkit import copy_project


@pytest.fixture(scope="module")
def python_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_project("pyproj", tmp_path_factory.mktemp("py"))

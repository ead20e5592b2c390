"""Makes ``lsp_testkit`` importable (pytest runs with --import-mode=importlib in CI) and
shares the Python fixture project."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from lsp_testkit import copy_project

pytest_plugins = ["tether.testing"]  # tether's test kit: opt-in, never loaded on its own


@pytest.fixture(autouse=True, scope="module")
def _without_contrib_ruff() -> Iterator[None]:
    """The expectations here are tether-lsp's own servers': a diagnostics plugin installed beside
    it (contrib/ruff in the workspace environment) would add its findings to every Python answer
    (contrib/ruff's own tests run the two together). Set for these modules only, so that another
    suite collected in the same process (``pytest`` from the root) sees the environment as is."""
    saved = os.environ.get("TETHER_DISABLE_PLUGINS")
    os.environ["TETHER_DISABLE_PLUGINS"] = ",".join(filter(None, [saved, "ruff"]))
    yield
    if saved is None:
        os.environ.pop("TETHER_DISABLE_PLUGINS", None)
    else:
        os.environ["TETHER_DISABLE_PLUGINS"] = saved


@pytest.fixture(scope="module")
def python_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_project("pyproj", tmp_path_factory.mktemp("py"))


@pytest.fixture(autouse=True)
def _fake_server_unconfined(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake server (``fake_lsp_server.py``) logs what it was sent to a file its test reads,
    a write the confinement (``tether.processes.confine``) denies: the modules that start it test
    supervision and connections, not writes, and run with it off."""
    if getattr(request.module, "FAKE", None):
        monkeypatch.setenv("TETHER_CONFINEMENT", "none")

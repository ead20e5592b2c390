"""Every test keeps tether's journals (``$XDG_STATE_HOME/tether``) in its own directory."""

from __future__ import annotations

import pytest

pytest_plugins = ["tether.testing"]  # tether's test kit: opt-in, never loaded on its own


@pytest.fixture(autouse=True)
def private_state_home(tmp_path_factory, monkeypatch):
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state

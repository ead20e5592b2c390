"""Fixtures for the vibe tests: a run with the vibe plugin loaded."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import tether_vibe.hooks

# The suite runs with --import-mode=importlib, which puts no test directory on sys.path; the
# shared helpers (vibe_testlib.py, next to this file) are imported by name from every test module.
sys.path.insert(0, str(Path(__file__).parent))
from vibe_testlib import command_config, describe_process, stray_processes

pytest_plugins = ["tether.testing"]  # tether's test kit: opt-in, never loaded on its own

VibeRun = Callable[..., AbstractAsyncContextManager[Any]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def no_stray_processes() -> Iterator[None]:
    """Every test must leave no test agent (or anything it started) running."""
    yield
    stray = stray_processes()
    described = {pid: describe_process(pid) for pid in stray}
    for pid in stray:
        os.kill(pid, signal.SIGKILL)
    assert not stray, f"processes outlived the test: {described}"


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Default worktrees (tether's state directory) go under the test's own directory."""
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


@pytest.fixture
def vibe_run(open_test_run: Any) -> VibeRun:
    """``async with vibe_run(config=..., plugins=[...], vibe=True) as run``: the vibe plugin loaded."""

    @asynccontextmanager
    async def factory(
        *,
        config: dict[str, Any] | None = None,
        plugins: tuple[Any, ...] = (),
        vibe: bool = True,
        **kw: Any,
    ) -> AsyncIterator[Any]:
        async with open_test_run(
            plugins=[tether_vibe.hooks, *plugins],
            config=command_config() if config is None else config,
            vibe=vibe,
            entry_points=False,
            **kw,
        ) as run:
            yield run

    return factory

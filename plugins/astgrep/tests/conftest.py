from __future__ import annotations

import sys
import textwrap
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import tether
import tether_astgrep.hooks
from tether_astgrep.grammars import GrammarRegistry, all_grammars

pytest_plugins = ["tether.testing"]  # tether's test kit: opt-in, never loaded on its own

# The suite runs with --import-mode=importlib, which puts no test directory on sys.path; test
# modules share helpers (test_match's find/captures) by name.
sys.path.insert(0, str(Path(__file__).parent))

AUTO = {"core": {"approval": {"read": "auto", "write": "auto", "exec": "auto"}}}


@pytest.fixture(scope="session")
def registry() -> GrammarRegistry:
    return GrammarRegistry(all_grammars())


def write_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content).lstrip("\n"))


@pytest.fixture
def astgrep_run(
    open_test_run: Callable[..., AbstractAsyncContextManager[tether.Run]],
    tether_workdir: Path,
) -> Callable[..., AbstractAsyncContextManager[tether.Run]]:
    """`async with astgrep_run({"a.py": "..."}, config={...}) as run`: only this plugin loaded."""

    @asynccontextmanager
    async def factory(
        files: dict[str, str | bytes] | None = None, config: dict[str, Any] | None = None, **kw: Any
    ) -> AsyncIterator[tether.Run]:
        write_tree(tether_workdir, files or {})
        merged: dict[str, Any] = {**AUTO, **(config or {})}
        plugins = [tether_astgrep.hooks, *kw.pop("plugins", [])]
        async with open_test_run(entry_points=False, plugins=plugins, config=merged, **kw) as run:
            yield run

    return factory


@pytest.fixture(params=["fork", "spawn"])
def worker_start(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each worker start method in turn: ``fork`` (Linux's) and ``spawn`` (where fork is unsafe:
    macOS, and ``TETHER_PORTABLE=1``), whatever this machine would choose."""
    from tether_astgrep import engine

    start: str = request.param
    monkeypatch.setattr(engine, "default_start_method", lambda: start)
    return start

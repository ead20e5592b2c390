"""The core's result budget over the debug tool: a long value is cut with a notice, and its
continuation (a narrower expression in the same stopped session) gives the part asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

import tether_debug.hooks

pytestmark = pytest.mark.anyio


async def test_a_long_value_is_cut_and_a_narrower_expression_gives_the_rest(
    dbg, open_test_run, py_workdir: Path
) -> None:
    config = {
        "core": {
            "approval": {"read": "auto", "write": "auto", "exec": "auto"},
            "result_budget": {"tools": {"debug": 1200}},
        },
        "debug": {"stop_timeout_s": 20.0},
    }
    async with open_test_run(
        workdir=py_workdir, plugins=[tether_debug.hooks], entry_points=False, config=config
    ) as run:
        await dbg.ok(run, op="breakpoints", file="deep.py", lines=[3])
        assert "Stopped (breakpoint)" in await dbg.ok(run, op="launch", program="deep.py")
        long_value = "'-'.join(str(i) for i in range(1000))"
        result = await run.call("debug", {"op": "evaluate", "expression": long_value})
        assert not result.is_error, result.text_content
        texts = [block.text for block in result.content]
        assert sum(len(t) for t in texts) <= 1200
        assert texts[0].startswith("'0-1-2-3-")
        notice = texts[-1]
        assert notice.startswith("[tether cut this result to its budget:"), notice
        assert "evaluate a narrower expression (a slice" in notice
        # the session is still stopped there: the slice the notice suggests answers whole
        part = await dbg.ok(run, op="evaluate", expression=f"({long_value})[2000:2100]")
        assert part.startswith("'") and "budget" not in part
        assert len(part.splitlines()[0]) > 100

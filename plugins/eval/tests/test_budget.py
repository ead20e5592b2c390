"""The core's result budget over eval: a cell's long output is cut on whole lines, and the
continuation (the values stay in the interpreter: print the rest of them) gives the rest."""

from __future__ import annotations

import re

import pytest


@pytest.mark.anyio
async def test_a_long_output_is_cut_and_the_rest_is_printed_from_the_interpreter(
    eval_run, run_cell
) -> None:
    core = {"result_budget": {"tools": {"eval": 900}}}
    async with eval_run(core=core) as run:
        result = await run_cell(
            run, "rows = [f'row {i}' for i in range(400)]\nprint('\\n'.join(rows))"
        )
        seen: list[str] = []
        for _ in range(40):
            assert not result.is_error, result.text_content
            texts = [block.text for block in result.content]
            assert sum(len(t) for t in texts) <= 900
            seen += texts[0].splitlines()
            if "budget" not in result.meta:
                break
            notice = texts[-1]
            assert notice.startswith("[tether cut this result to its budget:"), notice
            line = int(re.search(r"its output from line (\d+) on", notice).group(1))
            assert line == len(texts[0].splitlines()) + 1
            start = len(seen)
            result = await run_cell(run, f"print('\\n'.join(rows[{start}:]))")
        else:
            pytest.fail("the continuation never reached the end")
    assert seen == [f"row {i}" for i in range(400)]

"""The core's result budget over ast_grep: a large result is cut on whole lines, and the notice's
continuation (a narrower path) gives the matches that were not shown."""

from __future__ import annotations

import json
import re

import pytest

NOTICE = "[tether cut this result to its budget:"


@pytest.mark.anyio
async def test_a_large_search_is_cut_and_its_continuation_narrows_the_path(astgrep_run) -> None:
    files = {f"m{i}.py": "".join(f"print({i}, {j})\n" for j in range(40)) for i in range(6)}
    config = {"core": {"result_budget": {"tools": {"ast_grep": 2500}}}}
    async with astgrep_run(files, config=config) as run:
        args = {"pattern": "print($A, $B)", "max_results": 500}
        result = await run.call("ast_grep", args)
        assert not result.is_error, result.text_content
        texts = [block.text for block in result.content]
        assert sum(len(t) for t in texts) <= 2500
        notice = texts[-1]
        assert notice.startswith(NOTICE) and "[core.result_budget.tools] ast_grep" in notice
        # whole lines only: every match line kept is one ast_grep wrote
        kept = texts[0].splitlines()
        assert all(
            re.fullmatch(r"m\d\.py:\d+:1: print\(\d, \d+\)|    \$[AB] = \d+|.*searched.*", line)
            for line in kept
        ), kept
        shown = {line.split(":")[0] for line in kept if line.startswith("m")}
        found = re.search(
            r"To get the rest: call ast_grep with (\{.*?\}), then the next file", notice
        )
        assert found, notice
        narrower = json.loads(found.group(1))
        assert narrower == {**args, "path": narrower["path"]}
        assert narrower["path"] not in shown - {max(shown)}  # a file not shown whole
        for i in range(6):
            assert f"m{i}.py" in notice or f"m{i}.py" in shown
        rest = await run.call("ast_grep", narrower)
        assert not rest.is_error and "budget" not in rest.meta, rest.text_content
        assert rest.text_content.startswith("40 matches in 1 file")

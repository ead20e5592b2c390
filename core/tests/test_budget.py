"""The result budget: one cut, after every post-processor, with a notice and a continuation."""

from __future__ import annotations

import json
import re

import attrs
import pytest

import tether
import tether_echo.hooks
import tether_files.hooks
from tether.budget import budget_for
from tether.config import CoreConfig, ResultBudget

pytestmark = pytest.mark.anyio

HOST_PLUGINS = [tether_echo.hooks, tether_files.hooks]
NOTICE = re.compile(r"^\[tether cut this result to its budget: (\d+) of (\d+) characters shown")


def hermetic_run(workdir, *, plugins=(), **kwargs):
    return tether.open_run(workdir, entry_points=False, plugins=[*HOST_PLUGINS, *plugins], **kwargs)


@attrs.frozen
class PagedArgs:
    offset: int = tether.arg(0, description="First item to show", minimum=0)
    count: int = tether.arg(400, description="Items in all", minimum=0)


def paged_tool(separator: str, item_lines: int = 1) -> tether.ToolSpec:
    """A tool whose items (of ``item_lines`` lines each) it pages by ``offset``, and says so."""

    async def handler(call, args):
        items = [
            "\n".join(f"item {i} line {j} " + "x" * (i % 17) for j in range(item_lines))
            for i in range(args.offset, args.count)
        ]
        return separator.join(items)

    def next_page(call, cut):
        return {"offset": call.args.offset + cut.items_kept()}

    return tether.ToolSpec(
        "paged",
        "read",
        PagedArgs,
        handler,
        "Items, a page at a time",
        continuation=tether.Continuation(next=next_page, separator=separator),
    )


class Tools:
    def __init__(self, *specs):
        self.specs = list(specs)

    @tether.hookimpl
    def tether_tools(self, run):
        return self.specs


def notice_of(result: tether.ToolResult) -> str:
    last = result.content[-1].text
    assert NOTICE.match(last), last
    return last


def next_args(notice: str) -> dict:
    found = re.search(r"To get the rest: call \w+ with (\{.*\})\]$", notice)
    assert found, notice
    return json.loads(found.group(1))


@pytest.mark.parametrize("budget", [700, 1500, 5000])
@pytest.mark.parametrize(("separator", "item_lines"), [("\n", 1), ("\n\n", 3)])
async def test_a_large_result_is_cut_on_item_boundaries_and_its_continuation_gives_the_rest(
    tmp_path, budget, separator, item_lines
):
    spec = paged_tool(separator, item_lines)
    config = {"core": {"result_budget": {"max_chars": budget}}}
    async with hermetic_run(tmp_path, plugins=[Tools(spec)], config=config) as run:
        seen: list[str] = []
        args: dict = {}
        for _ in range(200):
            result = await run.call("paged", args)
            texts = [c.text for c in result.content]
            total = sum(len(t) for t in texts)
            assert total <= budget, (total, budget)
            if "budget" not in result.meta:
                seen.append(texts[0])
                break
            notice = notice_of(result)
            shown = texts[0]
            assert len(texts) == 2
            # whole items only: every kept item is one the tool produced
            items = shown.split(separator)
            assert all(item.count("\n") == item_lines - 1 for item in items), items[-1]
            meta = result.meta["budget"]
            assert meta["budget"] == budget and meta["shown_chars"] == len(shown)
            assert "[core.result_budget] max_chars" in notice
            seen.append(shown)
            args = next_args(notice)
        else:
            pytest.fail("the continuation never reached the end")
    # the pages, put together, are the uncut result, item for item, in several pages
    assert len(seen) > 2
    assert separator.join(seen) == (await _uncut(tmp_path, spec))


async def _uncut(tmp_path, spec) -> str:
    config = {"core": {"result_budget": {"max_chars": 0}}}  # 0: no limit
    async with hermetic_run(tmp_path, plugins=[Tools(spec)], config=config) as run:
        result = await run.call("paged", {})
        assert "budget" not in result.meta
        return result.text_content


async def test_post_processing_sees_the_uncut_result_and_its_note_is_kept_whole(tmp_path):
    seen: list[int] = []

    class Counts:
        @tether.hookimpl
        def tether_process_result(self, call, result):
            seen.append(len(result.text_content))
            return f"(post-processing saw {len(result.text_content)} characters)"

    spec = paged_tool("\n")
    config = {"core": {"result_budget": {"max_chars": 1000}}}
    async with hermetic_run(tmp_path, plugins=[Tools(spec), Counts()], config=config) as run:
        result = await run.call("paged", {})
    uncut = result.meta["budget"]["total_chars"]
    assert seen and seen[0] > 1000
    # the plugin saw the handler's whole text; the model gets its note whole after the cut
    texts = [c.text for c in result.content]
    assert texts[1] == f"(post-processing saw {seen[0]} characters)"
    assert uncut == seen[0] + len(texts[1])
    notice_of(result)


async def test_a_tool_without_a_continuation_gets_the_generic_advice(tmp_path):
    async with hermetic_run(
        tmp_path, config={"core": {"result_budget": {"max_chars": 300}}}
    ) as run:
        result = await run.call("echo", {"message": "\n".join(["word " * 8] * 40)})
    notice = notice_of(result)
    assert notice.endswith("ask for less (a narrower path, query, range or fewer results)]")
    assert not result.is_error


async def test_tether_files_read_continues_by_offset(tmp_path):
    """The contrib read tool declares its continuation: the next ``offset``."""
    lines = [f"line {i} " + "y" * (i % 23) for i in range(1, 801)]
    (tmp_path / "big.txt").write_text("\n".join(lines) + "\n")
    got: list[str] = []
    config = {"core": {"result_budget": {"max_chars": 2000}}}
    async with hermetic_run(tmp_path, config=config) as run:
        args: dict = {"path": "big.txt", "limit": 2000}
        for _ in range(100):
            result = await run.call("read", args)
            assert not result.is_error, result.text_content
            body = result.content[0].text
            got += [line for line in body.splitlines() if line.startswith("line ")]
            if "budget" not in result.meta:
                break
            args = next_args(notice_of(result))
    numbers = [int(line.split()[1]) for line in got]
    assert numbers == list(range(1, 801))


@pytest.mark.parametrize(
    ("table", "tool", "surface", "expected"),
    [
        ({}, "x", "default", (60_000, "[core.result_budget] max_chars")),
        ({"max_chars": 0}, "x", "default", (0, "[core.result_budget] max_chars")),
        ({"tools": {"x": 100}}, "x", "default", (100, "[core.result_budget.tools] x")),
        ({"tools": {"x": 100}}, "y", "default", (60_000, "[core.result_budget] max_chars")),
        ({"surfaces": {"plan": 50}}, "x", "plan", (50, "[core.result_budget.surfaces] plan")),
        (
            {"max_chars": 0, "surfaces": {"plan": 50}},
            "x",
            "plan",
            (50, "[core.result_budget.surfaces] plan"),
        ),
        (
            {"tools": {"x": 10}, "surfaces": {"plan": 50}},
            "x",
            "plan",
            (10, "[core.result_budget.tools] x"),
        ),
    ],
)
def test_the_budget_of_a_call(table, tool, surface, expected):
    config = tether.args.structure_config({"result_budget": table}, CoreConfig, "core")
    assert isinstance(config.result_budget, ResultBudget)
    assert budget_for(config.result_budget, tool, surface) == expected


async def test_a_workdir_file_may_lower_the_budget_never_raise_it(tmp_path):
    config = {"core": {"result_budget": {"max_chars": 10_000}}}
    async with hermetic_run(
        tmp_path, config=config, workdir_config={"core": {"result_budget": {"max_chars": 50_000}}}
    ) as run:
        assert run.core.result_budget.max_chars == 10_000
    async with hermetic_run(
        tmp_path, config=config, workdir_config={"core": {"result_budget": {"max_chars": 4000}}}
    ) as run:
        assert run.core.result_budget.max_chars == 4000
    # under the floor (2,000 characters) a workdir would leave the model nothing readable: the
    # harness's value stands
    async with hermetic_run(
        tmp_path, config=config, workdir_config={"core": {"result_budget": {"max_chars": 400}}}
    ) as run:
        assert run.core.result_budget.max_chars == 10_000

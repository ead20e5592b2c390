"""Per-action fields: declared once on the ToolSpec, enforced by the core, shown in schemas."""

from __future__ import annotations

from typing import Literal

import attrs
import pytest

import tether

pytestmark = pytest.mark.anyio


@attrs.frozen
class Args:
    op: Literal["launch", "status", "evaluate"] = tether.arg(description="the operation")
    program: str | None = tether.arg(None, description="launch: the program")
    args: list[str] | None = tether.arg(None, description="launch: its arguments")
    expression: str | None = tether.arg(None, description="evaluate: an expression")
    verbose: bool = tether.arg(False, description="any: say more")


ACTIONS = tether.Actions(
    "op",
    {
        "launch": tether.Action(required=("program",), optional=("args", "verbose")),
        "status": tether.Action(optional=("verbose",)),
        "evaluate": ("expression",),
    },
)


async def handler(call, args):
    return f"ran {args.op}"


class Provides:
    def __init__(self, spec):
        self.spec = spec

    @tether.hookimpl
    def tether_tools(self, run):
        return [self.spec]


def spec(actions=ACTIONS):
    return tether.ToolSpec("dbg", "read", Args, handler, "A debugger.", actions=actions)


async def call(tmp_path, args):
    async with tether.open_run(tmp_path, entry_points=False, plugins=[Provides(spec())]) as run:
        return await run.call("dbg", args)


async def test_a_missing_required_field_names_it_and_the_action(tmp_path):
    result = await call(tmp_path, {"op": "launch"})
    assert result.is_error
    assert result.text_content == 'invalid arguments for dbg:\nprogram: required for op "launch"'


async def test_a_field_the_action_does_not_use_is_refused_by_name(tmp_path):
    result = await call(tmp_path, {"op": "status", "program": "x.py", "expression": "1"})
    assert result.text_content.splitlines()[1:] == [
        'program: not used by op "status"; leave it out',
        'expression: not used by op "status"; leave it out',
    ]


async def test_an_explicit_null_counts_as_absent(tmp_path):
    # what a client with OpenAI-style strict schemas sends for every unused field
    nulls = {"program": None, "args": None, "expression": None}
    assert (await call(tmp_path, {"op": "status", **nulls})).text_content == "ran status"
    result = await call(tmp_path, {"op": "launch", **nulls})
    assert 'program: required for op "launch"' in result.text_content


async def test_valid_calls_run_and_type_errors_come_first(tmp_path):
    assert (await call(tmp_path, {"op": "launch", "program": "p"})).text_content == "ran launch"
    result = await call(tmp_path, {"op": "launch", "program": 3})
    assert result.text_content == "invalid arguments for dbg:\nprogram: expected string, got 3"


async def test_the_table_is_in_every_schema_format(tmp_path):
    async with tether.open_run(tmp_path, entry_points=False, plugins=[Provides(spec())]) as run:
        line = "Fields per op ([optional]): launch: program, [args], [verbose]; status: [verbose]; evaluate: expression."
        for fmt, get in (
            ("json", lambda s: s["description"]),
            ("anthropic", lambda s: s["description"]),
            ("openai", lambda s: s["function"]["description"]),
        ):
            [schema] = run.schemas(format=fmt)
            assert get(schema).endswith(line), fmt


async def test_a_table_naming_a_field_the_class_lacks_drops_the_tool(tmp_path):
    bad = spec(tether.Actions("op", {"launch": ("progam",)}))
    async with tether.open_run(tmp_path, entry_points=False, plugins=[Provides(bad)]) as run:
        assert "dbg" not in run.tools
        [reason] = [i.reason for i in run.pm.report if i.status == "failed"]
        assert "actions name fields the argument class lacks: progam" in reason

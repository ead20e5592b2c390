"""tool() inside a cell: the run's own pipeline, over the kernel's channel."""

from __future__ import annotations

import anyio
import attrs
import pytest

import tether

pytestmark = pytest.mark.anyio


@attrs.frozen
class NapArgs:
    seconds: float = tether.arg(description="how long to sleep")


async def nap(call: tether.CallContext, args: NapArgs) -> str:
    await anyio.sleep(args.seconds)
    return f"slept {args.seconds:g} on surface {call.surface}"


NAP = tether.ToolSpec("nap", tether.Tier.READ, NapArgs, nap, "Sleep, then say where it ran.")


async def test_python_cell_reads_a_file_through_the_read_tool(eval_run, run_cell) -> None:
    async with eval_run() as run:
        (run.workdir / "notes.txt").write_text("alpha\nbeta\n")
        result = await run_cell(
            run,
            "r = tool('read', {'path': 'notes.txt'})\n"
            "print(type(r).__name__, r.is_error)\n"
            "print('beta' in str(r))",
        )
        assert not result.is_error, result.text_content
        assert result.text_content.splitlines() == ["ToolResult False", "True"]


async def test_a_failed_tool_call_raises_tool_error_in_the_cell(eval_run, run_cell) -> None:
    async with eval_run() as run:
        result = await run_cell(
            run,
            "try:\n    tool('read', {'path': 'missing.txt'})\n"
            "except ToolError as e:\n    print('caught:', e)\n"
            "tool('read', {'path': 'missing.txt'})\nprint('never reached')",
        )
        assert result.is_error
        assert result.text_content.startswith("caught:")
        assert "missing.txt" in result.text_content
        assert "\nnever reached\n" not in result.text_content
        assert "_tether_boot" not in result.text_content
        bad = await run_cell(run, "tool('read', {'path': 3})")
        assert bad.is_error and "path: expected string, got 3" in bad.text_content


async def test_bridge_refuses_what_the_model_would_be_refused(eval_run, run_cell) -> None:
    async with eval_run(approval={"read": "auto", "write": "ask", "exec": "auto"}) as run:
        write = await run_cell(run, "tool('write', {'path': 'x.txt', 'content': 'hi'})")
        assert write.is_error
        assert "no approver attached (fail closed)" in write.text_content
        assert not (run.workdir / "x.txt").exists()
        unknown = await run_cell(run, "tool('lsp', {'action': 'status'})")
        assert unknown.is_error and "unknown tool 'lsp'" in unknown.text_content
        nested = await run_cell(
            run, "tool('eval', {'code': '1', 'description': 'a cell inside a cell here'})"
        )
        assert nested.is_error
        assert "cannot be called from inside a running 'eval' call" in nested.text_content
        # The interpreter is fine afterwards.
        assert (await run_cell(run, "40 + 2")).text_content.strip() == "42"


async def test_bridge_uses_the_callers_surface(eval_run, run_cell) -> None:
    async with eval_run(core={"surfaces": {"worker": "exec"}}) as run:
        run.register_host_tool(NAP)
        result = await run_cell(run, "print(tool('nap', {'seconds': 0}))", surface="worker")
        assert result.text_content.strip() == "slept 0 on surface worker"


async def test_three_threads_calling_tool_at_once(eval_run, run_cell) -> None:
    async with eval_run() as run:
        for name in "abc":
            (run.workdir / f"{name}.txt").write_text(f"content of {name}\n")
        result = await run_cell(
            run,
            "from concurrent.futures import ThreadPoolExecutor\n"
            "def read(name):\n"
            "    return [str(tool('read', {'path': f'{name}.txt'})) for _ in range(5)]\n"
            "with ThreadPoolExecutor(3) as pool:\n"
            "    results = list(pool.map(read, 'abc'))\n"
            "print(all(f'content of {n}' in r for n, rs in zip('abc', results) for r in rs))\n"
            "print(sum(len(rs) for rs in results))",
        )
        assert not result.is_error, result.text_content
        assert result.text_content.split() == ["True", "15"]


async def test_a_long_bridge_call_does_not_count_against_the_idle_budget(
    eval_run, run_cell
) -> None:
    async with eval_run(idle_budget_s=1.0) as run:
        run.register_host_tool(NAP)
        waited = await run_cell(run, "print(tool('nap', {'seconds': 2}))")
        assert not waited.is_error, waited.text_content
        assert "slept 2" in waited.text_content
        silent = await run_cell(
            run, "import time\nprint('a', flush=True)\ntime.sleep(2)\nprint('b')"
        )
        assert silent.is_error
        assert silent.text_content.startswith("a\n")
        assert "b\n" not in silent.text_content
        assert "no output for 1 s (the idle budget)" in silent.text_content
        assert silent.meta["interrupted"] is True


async def test_javascript_bridge(eval_run, run_cell) -> None:
    async with eval_run() as run:
        (run.workdir / "notes.txt").write_text("gamma\n")
        result = await run_cell(
            run,
            "const r = await tool('read', {path: 'notes.txt'});\n"
            "let caught = null;\n"
            "try { await tool('read', {path: 'nope.txt'}) } catch (e) { caught = e.name }\n"
            "[String(r).includes('gamma'), r.isError, caught]",
            "javascript",
        )
        assert not result.is_error, result.text_content
        assert result.text_content.strip() == "[ true, false, 'ToolError' ]"
        parallel = await run_cell(
            run,
            "const all = await Promise.all(['a','b','c'].map(() => tool('read', {path: 'notes.txt'})));\n"
            "all.every(x => String(x).includes('gamma'))",
            "javascript",
        )
        assert parallel.text_content.strip() == "true"
        refused = await run_cell(run, "await tool('nope', {})", "javascript")
        assert refused.is_error and "ToolError: unknown tool 'nope'" in refused.text_content

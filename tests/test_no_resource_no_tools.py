"""No resource, no tools — one way for every family: a family's ``tool_specs`` declares what its
tools need (``ToolSpec.requires``) and the core skips a tool whose resource the run did not wire,
saying which (``run.registry.skipped``, and "unknown tool" names it). No family decides it in
its own code (``return []``, an ``isinstance``): each family's tools are asked for here from a
run where its resource hook is left out."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

import tether

pytestmark = pytest.mark.anyio

FAMILIES = {
    "tether_lsp": ["lsp", "lsp_rename"],
    "tether_astgrep": ["ast_grep", "ast_edit", "resolve"],
    "tether_debug": ["debug"],
    "tether_eval": ["eval"],
    "tether_ask": ["ask_user"],
    "tether_vibe": ["vibe_spawn"],
}


def _tools_only(package: str) -> ModuleType:
    """The family's plugin with every hook but ``tether_resources``: its tools, no resource."""
    hooks = importlib.import_module(f"{package}.hooks")
    plugin = ModuleType(f"{package}_without_resources")
    for name in dir(hooks):
        if name.startswith("tether_") and name != "tether_resources":
            setattr(plugin, name, getattr(hooks, name))
    return plugin


@pytest.mark.parametrize("package", sorted(FAMILIES))
async def test_a_tool_whose_resource_is_not_wired_is_skipped_by_the_core(
    package: str, tmp_path
) -> None:
    config = {"vibe": {"mode": True}} if package == "tether_vibe" else None
    async with tether.open_run(
        tmp_path,
        conversation_id="c",
        plugins=[_tools_only(package)],
        entry_points=False,
        config=config,
    ) as run:
        assert not any(report.status == "failed" for report in run.pm.report), run.pm.report
        for name in FAMILIES[package]:
            assert name not in run.tools
            assert "needs resource" in run.registry.skipped[name], run.registry.skipped
            result = await run.call(name, {})
            assert result.is_error and "needs resource" in result.text_content


async def test_ask_user_without_a_conversation_is_skipped_naming_it(tmp_path) -> None:
    from tether_ask import CallbackPort
    from tether_ask import hooks as ask_hooks

    class Harness:
        @tether.hookimpl
        def tether_resources(self, run: tether.Run) -> dict:
            return {"question_port": CallbackPort(lambda card: None)}

    async with tether.open_run(
        tmp_path, conversation_id=None, plugins=[Harness(), ask_hooks], entry_points=False
    ) as run:
        assert "ask_user" not in run.tools
        assert "conversation" in run.registry.skipped["ask_user"]

"""The plugin's tests, with tether's test kit (``tether.testing``, a pytest plugin installed with
the core and asked for in ``conftest.py``): fixtures ``open_test_run``, ``tether_workdir`` and ``check_plugin_contract``."""

from __future__ import annotations

from pathlib import Path

import pytest

import tether
import tether_myplugin.hooks
from tether.testing import check_plugin_contract

pytestmark = pytest.mark.anyio


async def test_the_plugin_keeps_the_contract(open_test_run) -> None:
    # only this plugin, not whatever else is installed in the environment
    async with open_test_run(plugins=[tether_myplugin.hooks], entry_points=False) as run:
        await check_plugin_contract(run)


async def test_count_lines(open_test_run, tether_workdir: Path) -> None:
    (tether_workdir / "a.txt").write_text("one\ntwo\nthree\n")
    async with open_test_run(plugins=[tether_myplugin.hooks], entry_points=False) as run:
        result = await run.call("count_lines", {"path": "a.txt"})
        assert not result.is_error
        assert result.text_content == "3 lines in a.txt\n(counted by tether-myplugin)"
        outside = await run.call("count_lines", {"path": "../etc/passwd"})
        assert outside.is_error and "path" in outside.text_content
        assert "count_lines" in {s["name"] for s in run.schemas(surface="plan")}


async def test_the_configuration_table(open_test_run, tether_workdir: Path) -> None:
    (tether_workdir / "a.txt").write_text("one\n\ntwo\n")
    config = {"myplugin": {"count_blank": False}}
    async with open_test_run(
        plugins=[tether_myplugin.hooks], entry_points=False, config=config
    ) as run:
        result = await run.call("count_lines", {"path": "a.txt"})
        assert result.text_content.startswith("2 lines in a.txt"), result.text_content
    wrong = {"myplugin": {"count_blanks": False}}
    with pytest.raises(tether.ConfigError, match=r"myplugin\.count_blanks: unknown key"):
        async with open_test_run(plugins=[tether_myplugin.hooks], entry_points=False, config=wrong):
            pass


def test_the_installed_entry_point_loads() -> None:
    """Installed (not only imported): the core finds it and accepts its core range."""
    from tether.plugins import make_plugin_manager

    info = next(i for i in make_plugin_manager().report if i.name == "myplugin")
    assert info.status == "loaded", info.reason
    assert info.accepts_core == "<0.3,>=0.2"

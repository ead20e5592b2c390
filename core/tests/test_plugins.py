"""Plugin discovery, env-var controls, broken plugins skipped with their reason."""

from __future__ import annotations

import sys
import textwrap

import pytest

import tether
from tether import hookspecs
from tether.plugins import make_plugin_manager


def statuses(pm):
    return {info.name: (info.status, info.reason) for info in pm.report}


def test_installed_plugins_load_from_entry_points():
    pm = make_plugin_manager()
    report = statuses(pm)
    assert report["echo"] == ("loaded", None)
    assert report["files"] == ("loaded", None)
    echo = next(i for i in pm.report if i.name == "echo")
    assert echo.version == "0.1.0" and echo.hooks == ["tether_tools"]


def test_load_and_disable_env_vars(monkeypatch):
    monkeypatch.setenv("TETHER_LOAD_PLUGINS", "echo")
    assert set(statuses(make_plugin_manager())) == {"echo"}
    monkeypatch.setenv("TETHER_LOAD_PLUGINS", "")
    assert statuses(make_plugin_manager()) == {}
    monkeypatch.delenv("TETHER_LOAD_PLUGINS")
    monkeypatch.setenv("TETHER_DISABLE_PLUGINS", "files")
    pm = make_plugin_manager()
    assert statuses(pm)["files"] == ("blocked", "TETHER_DISABLE_PLUGINS")
    assert pm.get_plugin("files") is None


@pytest.fixture
def broken_distribution(tmp_path, monkeypatch):
    """A real installed distribution whose plugin module raises on import."""
    dist = tmp_path / "broken_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[tether]\nbroken = broken_tether_plugin\n")
    (tmp_path / "broken_tether_plugin.py").write_text("import no_such_module_anywhere\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("broken_tether_plugin", None)


def test_a_plugin_that_fails_to_import_is_reported_and_skipped(broken_distribution, tmp_path):
    pm = make_plugin_manager()
    status, reason = statuses(pm)["broken"]
    assert status == "failed"
    assert "ModuleNotFoundError" in reason and "no_such_module_anywhere" in reason
    assert statuses(pm)["echo"][0] == "loaded"  # the host keeps working


@pytest.mark.anyio
async def test_the_host_keeps_working_with_a_broken_plugin(broken_distribution, tmp_path):
    async with tether.open_run(tmp_path) as run:
        assert "echo" in run.tools
        assert (await run.call("echo", {"message": "still here"})).text_content == "still here"


def test_a_misspelled_hook_fails_its_plugin_only():
    class Typo:
        @tether.hookimpl
        def tether_toolz(self, run):  # misspelled
            return []

    class Fine:
        @tether.hookimpl
        def tether_tools(self, run):
            return []

    pm = make_plugin_manager(entry_points_group=None, plugins=[Typo(), Fine()])
    report = {i.name: i for i in pm.report}
    typo = report["Typo-0"]
    assert typo.status == "failed" and "tether_toolz" in typo.reason
    assert report["Fine-1"].status == "loaded" and report["Fine-1"].hooks == ["tether_tools"]


def test_family_hookspecs_are_added_with_tether_addhooks():
    module = type(sys)("family_specs")
    exec(
        textwrap.dedent(
            """
            import tether
            @tether.hookspec
            def tether_widgets():
                '''A family hook.'''
            """
        ),
        module.__dict__,
    )

    class Family:
        @tether.hookimpl
        def tether_addhooks(self, pluginmanager):
            pluginmanager.add_hookspecs(module)

    class ThirdParty:
        @tether.hookimpl
        def tether_widgets(self):
            return ["w"]

    pm = make_plugin_manager(entry_points_group=None, plugins=[Family(), ThirdParty()])
    assert all(i.status == "loaded" for i in pm.report), pm.report
    assert pm.hook.tether_widgets() == [["w"]]


def test_every_core_hook_is_documented_and_tested():
    """Documentation and tests cannot drift from the specs (after datasette)."""
    from pathlib import Path

    names = [n for n in dir(hookspecs) if n.startswith("tether_")]
    assert names == [
        "tether_addhooks",
        "tether_cli_commands",
        "tether_process_result",
        "tether_resources",
        "tether_tools",
    ]
    docs = (Path(__file__).parents[2] / "docs" / "plugin-api.md").read_text()
    tests = "".join(p.read_text() for p in Path(__file__).parent.glob("test_*.py"))
    for name in names:
        assert f"def {name}" in docs, f"{name} is not documented in docs/plugin-api.md"
        assert f"def test_hook_{name}" in tests, f"{name} has no test_hook_{name}"


def test_hook_tether_addhooks():
    # historic: a plugin registered after the family is still checked against its specs
    module = type(sys)("late_specs")
    exec("import tether\n@tether.hookspec\ndef tether_gadgets():\n    'late'\n", module.__dict__)

    class Family:
        @tether.hookimpl
        def tether_addhooks(self, pluginmanager):
            pluginmanager.add_hookspecs(module)

    pm = make_plugin_manager(entry_points_group=None, plugins=[Family()])

    class Late:
        @tether.hookimpl
        def tether_gadgets(self):
            return "g"

    pm.register(Late())
    pm.check_pending()  # the late plugin's hook has a spec: no error
    assert pm.hook.tether_gadgets() == ["g"]


def test_trace_env_var_prints_hook_calls(monkeypatch, capsys):
    monkeypatch.setenv("TETHER_TRACE_PLUGINS", "1")
    pm = make_plugin_manager()
    pm.hook.tether_tools(run=None)
    assert "tether_tools" in capsys.readouterr().err

"""Plugin discovery, env-var controls, broken plugins skipped with their reason."""

from __future__ import annotations

import sys
import textwrap
from importlib.metadata import version

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
    assert echo.version == version("tether-echo") and echo.hooks == ["tether_tools"]
    assert echo.accepts_core == "<0.3,>=0.2"  # from its distribution's metadata, as built


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


def fake_distribution(where, name, version, *, requires=(), entry_points=""):
    """A throwaway installed distribution: a dist-info directory on a path entry."""
    dist = where / f"{name.replace('-', '_')}-{version}.dist-info"
    dist.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (dist / "METADATA").write_text("\n".join(lines) + "\n")
    if entry_points:
        (dist / "entry_points.txt").write_text(entry_points)


def test_a_plugin_built_for_another_core_is_refused_before_import(tmp_path, monkeypatch):
    fake_distribution(
        tmp_path,
        "tether-future",
        "9.1.0",
        requires=["tether<9.2,>=9.1", 'pytest>=8; extra == "test"'],
        entry_points="[tether]\nfuture = tether_future_plugin\n",
    )
    # importing it would fail: a version mismatch must be named before anything is imported
    (tmp_path / "tether_future_plugin.py").write_text("from tether import renamed_in_9\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    pm = make_plugin_manager()
    info = next(i for i in pm.report if i.name == "future")
    assert info.status == "failed"
    assert info.reason == (
        "built for another core: tether-future 9.1.0 requires tether<9.2,>=9.1, "
        f"the running core is tether {version('tether')}"
    )
    assert info.accepts_core == "<9.2,>=9.1"
    assert "tether_future_plugin" not in sys.modules
    assert statuses(pm)["echo"] == ("loaded", None)


def test_a_core_of_another_minor_is_refused_by_every_installed_plugin(tmp_path, monkeypatch):
    # a core 0.99 shadows the real one (first on sys.path wins, as in any environment)
    fake_distribution(tmp_path, "tether", "0.99.0")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert version("tether") == "0.99.0"
    pm = make_plugin_manager()
    for name in ("echo", "files"):
        info = next(i for i in pm.report if i.name == name)
        assert info.status == "failed", info
        assert info.reason == (
            f"built for another core: tether-{name} {version(f'tether-{name}')} requires "
            "tether<0.3,>=0.2, the running core is tether 0.99.0"
        )
        assert pm.get_plugin(name) is None


def test_a_plugin_without_a_core_range_still_loads(tmp_path, monkeypatch):
    fake_distribution(
        tmp_path,
        "tether-loose",
        "1.0",
        requires=["tether"],
        entry_points="[tether]\nloose = tether_loose_plugin\n",
    )
    (tmp_path / "tether_loose_plugin.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        info = next(i for i in make_plugin_manager().report if i.name == "loose")
    finally:
        sys.modules.pop("tether_loose_plugin", None)
    assert (info.status, info.accepts_core) == ("loaded", None)


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
        "tether_call_observers",
        "tether_cli_commands",
        "tether_preview_diagnostics",
        "tether_process_result",
        "tether_resources",
        "tether_serve_http",
        "tether_tools",
    ]
    here = Path(__file__).resolve()
    # docs/ at the repository's root; in the core's sdist, docs/ beside tests/
    docs_file = next(
        p
        for p in (
            here.parents[1] / "docs" / "plugin-api.md",
            here.parents[2] / "docs" / "plugin-api.md",
        )
        if p.is_file()
    )
    docs = docs_file.read_text()
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


@pytest.mark.anyio
async def test_trace_env_var_prints_hook_calls(monkeypatch, capsys, tmp_path):
    # a real run and a real call: the trace must show the hooks the way the core calls them
    import tether_echo.hooks

    class Wrap:
        @tether.hookimpl
        def tether_process_result(self, call, result):
            return None

    class Resources:
        @tether.hookimpl
        def tether_resources(self, run):
            return {"thing": 1}

    monkeypatch.setenv("TETHER_TRACE_PLUGINS", "1")
    plugins = [tether_echo.hooks, Wrap(), Resources()]
    async with tether.open_run(tmp_path, entry_points=False, plugins=plugins) as run:
        assert (await run.call("echo", {"message": "m"})).text_content == "m"
    err = capsys.readouterr().err
    for hook in ("tether_resources", "tether_tools", "tether_process_result"):
        assert f"{hook} [hook]" in err, hook

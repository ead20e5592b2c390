"""`tether plugins` reports a plugin whose contribution the collector dropped, not only one that
failed to import — the culprit is named while every other plugin keeps working."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def test_plugins_names_a_plugin_whose_contribution_was_dropped(tmp_path):
    dist = tmp_path / "half_broken-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: half-broken\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[tether]\nhalfbroken = half_broken_plugin\n")
    (tmp_path / "half_broken_plugin.py").write_text(
        "import tether\n\n@tether.hookimpl\ndef tether_tools(run):\n"
        "    raise RuntimeError('a bug in a third-party plugin')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "tether", "plugins", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
        cwd=tmp_path,
    ).stdout
    report = {p["name"]: p for p in json.loads(out)}
    assert report["halfbroken"]["status"] == "failed"
    assert report["halfbroken"]["reason"] == (
        "tether_tools: raised RuntimeError: a bug in a third-party plugin"
    )
    assert report["files"]["status"] == "loaded"  # the others keep working


COMMAND_PLUGIN = """
import json, sys
import tether


@tether.hookimpl
def tether_cli_commands(subparsers):
    for name in {names!r}:
        p = subparsers.add_parser(name)

        async def main(ns):
            loaded = sorted(m for m in sys.modules if m.endswith("_cmdplugin"))
            print(json.dumps({{"command": ns.command, "loaded": loaded}}))
            return 0

        p.set_defaults(tether_command=main)
"""


def _dist(site, name: str, entry_points: str, names: list[str]) -> None:
    dist = site / f"{name}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(entry_points)
    (site / f"{name}_cmdplugin.py").write_text(COMMAND_PLUGIN.format(names=names))


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        # indexed: built from its plugin alone, no other plugin imported
        (["fast"], {}, {"command": "fast", "loaded": ["fast_cmdplugin"]}),
        # not indexed: every plugin adds its commands
        (["plain"], {}, {"command": "plain", "loaded": ["fast_cmdplugin", "plain_cmdplugin"]}),
        # indexed to a plugin that does not add it: every plugin is asked after all
        (
            ["misfiled"],
            {},
            {"command": "misfiled", "loaded": ["fast_cmdplugin", "plain_cmdplugin"]},
        ),
        # the index never loads a plugin the environment blocks
        (["fast"], {"TETHER_DISABLE_PLUGINS": "fast"}, None),
        (["fast"], {"TETHER_LOAD_PLUGINS": "plain"}, None),
    ],
)
def test_a_command_indexed_in_tether_commands_starts_with_its_plugin_alone(
    tmp_path, argv, env, expected
):
    _dist(
        tmp_path,
        "fast",
        "[tether]\nfast = fast_cmdplugin\n"
        "[tether.commands]\nfast = fast_cmdplugin\nmisfiled = fast_cmdplugin\n",
        ["fast"],
    )
    _dist(tmp_path, "plain", "[tether]\nplain = plain_cmdplugin\n", ["plain", "misfiled"])
    out = subprocess.run(
        [sys.executable, "-m", "tether", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path), **env},
        timeout=120,
        cwd=tmp_path,
    )
    if expected is None:
        assert out.returncode == 2 and "invalid choice: 'fast'" in out.stderr, out.stderr
    else:
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == expected

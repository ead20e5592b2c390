"""`tether plugins` reports a plugin whose contribution the collector dropped, not only one that
failed to import — the culprit is named while every other plugin keeps working."""

from __future__ import annotations

import json
import os
import subprocess
import sys


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

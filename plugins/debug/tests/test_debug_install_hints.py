"""The debugpy hint names the extra of this distribution that really installs debugpy."""

from __future__ import annotations

import re
import sys
from importlib.metadata import distribution
from pathlib import Path

import anyio
import pytest

from tether_debug.adapters import Debugpy


async def probe(argv: list[str]) -> tuple[bool, str]:
    """A real probe: runs the command."""
    done = await anyio.run_process(argv, check=False)
    return done.returncode == 0, done.stderr.decode()


@pytest.mark.anyio
async def test_debugpy_not_importable_names_the_extra(tmp_path: Path, monkeypatch) -> None:
    bare = tmp_path / "bare-venv"
    # an interpreter without debugpy
    await anyio.run_process([sys.executable, "-m", "venv", "--without-pip", str(bare)])
    monkeypatch.setattr("sys.executable", str(bare / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))  # and no python3 on PATH
    resolution = await Debugpy().resolve(tmp_path, probe)
    assert resolution.command is None
    assert "pip install 'tether-debug[debugpy]'" in resolution.detail
    requires = distribution("tether-debug").requires or []
    assert any(re.match(r"debugpy\b.*extra == .debugpy.", r) for r in requires), requires

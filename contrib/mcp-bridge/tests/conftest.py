"""tether's test kit (fixtures, the contract check) is a pytest plugin a suite asks for; the
real MCP clients' environments and the demo workdir are shared by the suites here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["tether.testing"]  # tether's test kit: opt-in, never loaded on its own

sys.path.insert(0, str(Path(__file__).parent / "clients"))
import setup_clients  # noqa: E402


@pytest.fixture(scope="session")
def client_envs() -> dict[str, Path]:
    from tether.testing import require_real  # after pytest_plugins registered the kit

    envs: dict[str, Path] = {}
    for name in setup_clients.CLIENTS:
        try:
            envs[name] = setup_clients.ensure(name)
        except (OSError, subprocess.CalledProcessError) as exc:
            require_real(False, f"the {name} MCP client ({exc})")
    return envs


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    wd = tmp_path / "project"
    wd.mkdir()
    (wd / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    (wd / "a.py").write_text("def foo():\n    return 1\n\n\nfoo()\n")
    return wd

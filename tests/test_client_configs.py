"""The documented way to put `tether` on PATH from this checkout, and the client configurations
that use it, run as written: the README's `uv tool install` line (offline, from uv's cache of
the workspace's own sync: nothing is fetched), then Claude Code's `claude mcp add` and
`claude mcp list` (Claude Code from npm, as the bridge's client tests install their clients),
and the `mcp` SDK's configuration page."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tether.testing import require_real

ROOT = Path(__file__).resolve().parents[1]
CLIENT_PAGES = ROOT / "contrib" / "mcp-bridge" / "docs" / "clients"

pytestmark = pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed")


def documented_lines(page: Path, start: str) -> list[str]:
    """The lines of ``page``'s sh blocks that start with ``start``."""
    blocks = re.findall(r"```sh\n(.*?)```", page.read_text(), flags=re.S)
    return [line for block in blocks for line in block.splitlines() if line.startswith(start)]


@pytest.fixture(scope="module")
def tool_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`tether` installed by the README's line into a tool directory of this test's own."""
    (line,) = documented_lines(ROOT / "README.md", "uv tool install --from ./core tether")
    root = tmp_path_factory.mktemp("uv-tool")
    env = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
    }
    env |= {
        "UV_TOOL_DIR": str(root / "tools"),
        "UV_TOOL_BIN_DIR": str(root / "bin"),
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_OFFLINE": "1",  # from the cache the workspace's sync filled: nothing is fetched
    }
    out = subprocess.run(
        shlex.split(line), cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    assert (root / "bin" / "tether").is_file()
    return root / "bin"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    workdir = tmp_path / "project"
    workdir.mkdir()
    (workdir / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    (workdir / "notes.txt").write_text("hello from the notes\n")
    return workdir


def on_path(tool_bin: Path, home: Path | None = None) -> dict[str, str]:
    """An environment where only the installed `tether` is found (not the workspace's)."""
    path = [p for p in os.environ["PATH"].split(os.pathsep) if not Path(p, "tether").exists()]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV",)}
    env["PATH"] = os.pathsep.join([str(tool_bin), *path])
    if home is not None:
        env["HOME"] = str(home)
    return env


def test_the_installed_tether_has_the_chosen_families(tool_bin: Path, project: Path) -> None:
    out = subprocess.run(
        ["tether", "plugins"],
        cwd=project,
        env=on_path(tool_bin),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    loaded = {line.split()[0] for line in out.stdout.splitlines() if line.endswith("loaded")}
    assert loaded == {"files", "lsp", "mcp-bridge"}


def test_claude_code_mcp_add_and_list_as_documented(
    tool_bin: Path, project: Path, tmp_path: Path
) -> None:
    sys.path.insert(0, str(ROOT / "contrib" / "mcp-bridge" / "tests" / "clients"))
    import setup_clients

    try:
        claude_env = setup_clients.ensure("claude-code")
    except (OSError, subprocess.CalledProcessError) as exc:
        require_real(False, f"Claude Code from npm ({exc})")
    claude = claude_env / "node_modules" / ".bin" / "claude"
    page = CLIENT_PAGES / "claude-code.md"
    (add,) = documented_lines(page, "claude mcp add")
    (listing,) = documented_lines(page, "claude mcp list")
    home = tmp_path / "home"
    home.mkdir()
    env = on_path(tool_bin, home)
    for line in (add, listing):
        argv = [str(claude), *shlex.split(line)[1:]]
        out = subprocess.run(
            argv, cwd=project, env=env, capture_output=True, text=True, timeout=180
        )
        assert out.returncode == 0, f"{line}\n{out.stdout}\n{out.stderr}"
    assert "tether: tether mcp --workdir . - ✔ Connected" in out.stdout, out.stdout


def test_the_mcp_sdk_page_runs_as_written(tool_bin: Path, project: Path) -> None:
    (code,) = re.findall(r"```python\n(.*?)```", (CLIENT_PAGES / "mcp-sdk.md").read_text(), re.S)
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=project,
        env=on_path(tool_bin),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    tools, text = out.stdout.splitlines()[:2]
    assert "'read'" in tools and "'lsp'" in tools
    assert text == "hello from the notes"

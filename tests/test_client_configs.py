"""The documented way to put `tether` on PATH from this checkout, and the client configurations
that use it, run as written: the README's `uv tool install` line (the workspace's locked
versions as constraints: what CI's sync installed, its wheels from uv's cache; the registry
asked only for what a fresh cache lacks), then Claude Code's `claude mcp add` and
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
    # Offline, a resolution needs the registry's index pages in uv's cache, which a `--frozen`
    # sync never fetches (a fresh machine's CI failed so): the lock's versions as constraints
    # instead, so the tool gets what CI tested and its wheels come from the cache.
    exported = subprocess.run(
        ["uv", "export", "--frozen", "--all-packages", "--all-extras", "--no-hashes", "-q"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    pins = [line for line in exported.splitlines() if re.match(r"[A-Za-z0-9][^ ]*==", line)]
    constraints = root / "constraints.txt"
    constraints.write_text("\n".join(pins) + "\n")
    env |= {
        "UV_TOOL_DIR": str(root / "tools"),
        "UV_TOOL_BIN_DIR": str(root / "bin"),
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_CONSTRAINT": str(constraints),
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


def client_cli(name: str, binary: str) -> Path:
    """A client's CLI from npm, installed as the bridge's client tests install theirs."""
    sys.path.insert(0, str(ROOT / "contrib" / "mcp-bridge" / "tests" / "clients"))
    import setup_clients

    try:
        env = setup_clients.ensure(name)
    except (OSError, subprocess.CalledProcessError) as exc:
        require_real(False, f"{name} from npm ({exc})")
    return env / "node_modules" / ".bin" / binary


def run_line(line: str, binary: Path, tool_bin: Path, project: Path, home: Path) -> str:
    """One documented line of a client's page, run with ``home`` as HOME; its output."""
    home.mkdir(exist_ok=True)
    out = subprocess.run(
        [str(binary), *shlex.split(line)[1:]],
        cwd=project,
        env=on_path(tool_bin, home),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, f"{line}\n{out.stdout}\n{out.stderr}"
    return out.stdout + out.stderr


def run_page(page: str, binary: Path, tool_bin: Path, project: Path, home: Path) -> str:
    """The page's `<client> mcp add`, then its `<client> mcp list`: what the list said."""
    (add,) = documented_lines(CLIENT_PAGES / page, f"{binary.name} mcp add")
    (listing,) = documented_lines(CLIENT_PAGES / page, f"{binary.name} mcp list")
    run_line(add, binary, tool_bin, project, home)
    return run_line(listing, binary, tool_bin, project, home)


def test_claude_code_mcp_add_and_list_as_documented(
    tool_bin: Path, project: Path, tmp_path: Path
) -> None:
    claude = client_cli("claude-code", "claude")
    said = run_page("claude-code.md", claude, tool_bin, project, tmp_path / "home")
    assert "tether: tether mcp --workdir . - ✔ Connected" in said, said


def test_codex_mcp_add_writes_the_documented_configuration(
    tool_bin: Path, project: Path, tmp_path: Path
) -> None:
    import tomllib

    codex = client_cli("codex", "codex")
    home = tmp_path / "home"
    said = run_page("codex.md", codex, tool_bin, project, home)
    assert re.search(r"^tether\s+tether\s+mcp --workdir \.\s.*enabled", said, re.M), said
    (documented,) = re.findall(r"```toml\n(.*?)```", (CLIENT_PAGES / "codex.md").read_text(), re.S)
    written = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert written["mcp_servers"]["tether"] == tomllib.loads(documented)["mcp_servers"]["tether"]


def test_gemini_cli_disables_the_server_until_the_folder_is_trusted(
    tool_bin: Path, project: Path, tmp_path: Path
) -> None:
    import json

    gemini = client_cli("gemini-cli", "gemini")
    home = tmp_path / "home"
    said = run_page("gemini-cli.md", gemini, tool_bin, project, home)
    assert "disabled because this folder is untrusted" in said, said
    assert "tether: tether mcp --workdir . (stdio) - Disabled" in said
    # the page's way out, headless: the folder's entry in trustedFolders.json
    trusted = json.dumps({str(project): "TRUST_FOLDER"})
    (home / ".gemini" / "trustedFolders.json").write_text(trusted)
    (listing,) = documented_lines(CLIENT_PAGES / "gemini-cli.md", "gemini mcp list")
    said = run_line(listing, gemini, tool_bin, project, home)
    assert "untrusted" not in said and "Disabled" not in said and "tether: tether mcp" in said


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


def test_the_openai_agents_page_connects_as_written(tool_bin: Path, project: Path) -> None:
    """The page's `MCPServerStdio(...)` exactly as written, in the Agents SDK's own environment:
    it connects to `tether mcp` and lists tether's tools within the timeout the page sets. (The
    page's `Runner.run` needs a model, which is not here; the connection is what the page
    configures.)"""
    sys.path.insert(0, str(ROOT / "contrib" / "mcp-bridge" / "tests" / "clients"))
    import setup_clients

    try:
        env = setup_clients.ensure("openai-agents")
    except (OSError, subprocess.CalledProcessError) as exc:
        require_real(False, f"the OpenAI Agents SDK ({exc})")
    (code,) = re.findall(
        r"```python\n(.*?)```", (CLIENT_PAGES / "openai-agents.md").read_text(), re.S
    )
    assert "client_session_timeout_seconds=120" in code
    configured = code.split("\n\nasync def main")[0]
    check = (
        configured
        + "\n\nimport asyncio\n\n\nasync def listed() -> None:\n"
        + "    async with tether:\n"
        + "        print(sorted(t.name for t in await tether.list_tools()))\n\n\n"
        + "asyncio.run(listed())\n"
    )
    out = subprocess.run(
        [str(env / "bin" / "python"), "-c", check],
        cwd=project,
        env=on_path(tool_bin),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "'lsp'" in out.stdout and "'read'" in out.stdout, out.stdout

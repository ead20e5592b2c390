"""The README's install section, run as written against the wheels built from this checkout
(``--no-index --find-links``: never an index, where unrelated projects hold ``tether-*`` names),
and a core of another minor, built here, refused by every plugin with both versions named.

The archives come from ``TETHER_DISTS`` (CI builds them once); else they are built here."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
CORE_VERSION = tomllib.loads((ROOT / "core" / "pyproject.toml").read_text())["project"]["version"]
# the plugin each distribution registers (its entry point in group "tether")
PLUGIN_OF = {
    "tether-lsp": "lsp",
    "tether-astgrep": "astgrep",
    "tether-debug": "debug",
    "tether-eval": "eval",
    "tether-ask": "ask",
    "tether-vibe": "vibe",
    "tether-files": "files",
    "tether-bwrap": "bwrap",
}
ALL = {"lsp", "astgrep", "debug", "eval", "ask", "vibe", "files"}

pytestmark = pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed")


def uv(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
    }
    out = subprocess.run(
        ["uv", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**base, "UV_PYTHON_DOWNLOADS": "never", **(env or {})},
    )
    assert out.returncode == 0, f"uv {' '.join(args)}\n{out.stdout}\n{out.stderr}"
    return out


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("TETHER_DISTS")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_dists.py"), "--out", str(out)],
        check=True,
        capture_output=True,
    )
    return out


def seeded_env(where: Path) -> Path:
    """A fresh venv holding the lock's third-party packages and no tether distribution (what an
    index would have provided), so installs below can run with --no-index."""
    uv(
        "sync",
        "--frozen",
        "--no-dev",
        "-q",
        "--all-packages",
        "--all-extras",
        "--no-install-workspace",
        "--no-install-local",
        env={"UV_PROJECT_ENVIRONMENT": str(where)},
    )
    return where


def plugins(env: Path) -> dict[str, dict]:
    out = subprocess.run(
        [str(env / "bin" / "tether"), "plugins", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return {p["name"]: p for p in json.loads(out.stdout)}


def install_commands() -> list[str]:
    section = README.split("<!-- install:", 1)[1]
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S)[:3]:
        for line in block.splitlines():
            if line.startswith("pip install "):
                commands.append(line)
    return commands


def expected_plugins(args: list[str]) -> set[str]:
    wanted: set[str] = set()
    for arg in args:
        name = re.split(r"[\[<>=]", Path(arg).name.split("-0")[0].replace("_", "-"))[0]
        if name == "tether" and "[all]" in arg:
            wanted |= ALL
        elif name in PLUGIN_OF:
            wanted.add(PLUGIN_OF[name])
    return wanted


def test_the_readme_has_install_commands() -> None:
    commands = install_commands()
    assert len(commands) >= 4, commands
    assert any("'tether[all]'" in c for c in commands)
    assert any("dist/" in c for c in commands)  # the built-wheels form


def test_the_readme_leads_with_what_works_and_marks_index_installs_as_once_published() -> None:
    """Nothing is on an index under these names: the first install a reader meets is from this
    checkout's wheels, and every by-name install comes after the words "once published"."""
    commands = install_commands()
    assert "dist/" in commands[0], commands[0]
    section = README.split("<!-- install:", 1)[1].split("\n## ", 1)[0]
    published = section.lower().index("once published")
    for command in commands:
        if "dist/" not in command:
            assert section.index(command) > published, command


@pytest.mark.parametrize("command", install_commands())
def test_an_install_command_works_as_written(command: str, dists: Path, tmp_path: Path) -> None:
    env = seeded_env(tmp_path / "env")
    args = shlex.split(command, comments=True)[2:]
    args = [str(dists / a.removeprefix("dist/")) if a.startswith("dist/") else a for a in args]
    uv(
        "pip",
        "install",
        "-q",
        "--no-cache",  # else uv may reuse a cached wheel of the same name from an earlier build
        "--python",
        str(env / "bin" / "python"),
        "--no-index",
        "--find-links",
        str(dists),
        *args,
    )
    found = plugins(env)
    wanted = expected_plugins(args)
    assert wanted and wanted <= set(found), (wanted, found)
    assert all(found[name]["status"] == "loaded" for name in wanted), found
    assert "echo" not in found  # the test-only plugin never comes with an install command
    version = subprocess.run(
        [str(env / "bin" / "python"), "-m", "tether", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert version.stdout.splitlines()[0] == f"tether {CORE_VERSION}"


def test_a_core_of_another_minor_is_refused_by_every_plugin(dists: Path, tmp_path: Path) -> None:
    major, minor = CORE_VERSION.split(".")[:2]
    other = f"{major}.{int(minor) + 1}.0"
    source = tmp_path / "core"
    shutil.copytree(ROOT / "core", source, ignore=shutil.ignore_patterns("__pycache__", "tests"))
    pyproject = source / "pyproject.toml"
    text = pyproject.read_text()
    pyproject.write_text(text.replace(f'version = "{CORE_VERSION}"', f'version = "{other}"', 1))
    uv("build", "-q", "--wheel", "--out-dir", str(tmp_path / "other"), str(source))
    env = seeded_env(tmp_path / "env")
    wheels = [str(p) for p in dists.glob("*.whl") if not p.name.startswith("tether-")]
    # --no-deps: the plugins' own requirement would refuse this core; a person gets here by
    # upgrading the core alone, and the core must then say what happened
    uv(
        "pip",
        "install",
        "-q",
        "--no-cache",  # else uv may reuse a cached wheel of the same name from an earlier build
        "--python",
        str(env / "bin" / "python"),
        "--no-deps",
        *map(str, (tmp_path / "other").glob("*.whl")),
        *wheels,
    )
    found = plugins(env)
    assert set(PLUGIN_OF.values()) | {"echo"} <= set(found)
    for dist, name in [*PLUGIN_OF.items(), ("tether-echo", "echo")]:
        info = found[name]
        assert info["status"] == "failed", info
        assert info["reason"] == (
            f"built for another core: {dist} {CORE_VERSION} requires "
            f"tether<{major}.{int(minor) + 1},>={major}.{minor}, the running core is tether {other}"
        ), info

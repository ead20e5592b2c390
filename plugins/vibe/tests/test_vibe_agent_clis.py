"""The bundled runner setups, with the real agent CLIs (Claude Code, Codex) driven offline by a
scripted model server on loopback (``model_server.py``): each CLI edits a file with its own edit
tool in the worker's worktree, the live tail shows what it did, and its result reads well.

The CLIs come from npm (``ci/install.sh``); ``TETHER_REQUIRE_REAL=1`` makes a missing one fail.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from model_server import Script, model_server

from tether.testing import require_real
from tether_vibe.runners import bundled_runner

pytestmark = pytest.mark.anyio


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tether_workdir: Path) -> Path:
    require_real(shutil.which("git") is not None, "git (ci/install.sh installs it)")
    git(tether_workdir, "init", "-q", "-b", "main")
    (tether_workdir / "README.md").write_text("hello\n")
    git(tether_workdir, "add", "-A")
    git(tether_workdir, "commit", "-q", "-m", "initial")
    return tether_workdir


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    with model_server() as running:
        yield running


@pytest.fixture
def codex_home() -> Iterator[Path]:
    # Codex refuses to set up its sandbox helper under a temporary directory: its home lives
    # under the user's cache for the test, and goes with it.
    base = Path.home() / ".cache"
    base.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="tether-vibe-test-codex-", dir=base))
    yield home
    shutil.rmtree(home, ignore_errors=True)


def offline(cli: str, url: str, home: Path, codex_home: Path) -> tuple[list[str], dict[str, str]]:
    """What a test adds to the bundled setup so the CLI talks to the scripted server only."""
    if cli == "claude":
        return [], {
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "sk-test-offline",
            "HOME": str(home),
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
    provider = (
        f'model_providers.scripted={{name="scripted", base_url="{url}/v1", '
        'wire_api="responses", env_key="SCRIPTED_KEY"}'
    )
    return [
        "-c",
        provider,
        "-c",
        "model_provider=scripted",
        "-m",
        "gpt-5-codex",
    ], {"CODEX_HOME": str(codex_home), "SCRIPTED_KEY": "sk-test-offline", "HOME": str(home)}


@pytest.mark.parametrize("cli", ["claude", "codex"])
async def test_each_bundled_cli_edits_in_its_worktree_with_its_own_tool(
    vibe_run: Any,
    repo: Path,
    tmp_path: Path,
    server: tuple[str, Script],
    codex_home: Path,
    cli: str,
) -> None:
    require_real(shutil.which(cli) is not None, f"{cli} (ci/install.sh installs it from npm)")
    url, script = server
    runner = bundled_runner(cli)
    extra, env = offline(cli, url, tmp_path / "home", codex_home)
    end = runner["command"].index("--")
    command = [*runner["command"][:end], *extra, *runner["command"][end:]]
    config = {
        "vibe": {
            "isolation": "worktree",
            "kill_grace_s": 0.5,
            "idle_timeout_s": 120,
            "runners": {"fast": {**runner, "command": command, "env": env}},
        }
    }
    async with vibe_run(config=config) as run:
        spawned = await run.call(
            "vibe_spawn", {"brief": "EDIT wt.txt written by {label}", "label": "editor"}
        )
        assert not spawned.is_error, spawned.text_content
        tree = Path(spawned.meta["worktree"])
        waited = await run.call(
            "vibe_wait", {"worker_id": spawned.meta["worker_id"], "timeout_seconds": 120}
        )
        text = waited.text_content
        assert waited.meta["status"] == "done", text
        assert (tree / "wt.txt").read_text().strip() == "written by {label}", text
        assert "result:\nDONE wt.txt" in text, "the result is the CLI's last message"
        assert "in it now: 0 commits since it started, 1 uncommitted change" in text
        listed = run.resources["vibe_roster"].get(spawned.meta["worker_id"]).output.render()
        edit_line = "[tool Write]" if cli == "claude" else "[edit add "
        assert edit_line in listed, f"the live tail shows the edit:\n{listed}"
    assert script.requests, "the CLI talked to the scripted server"
    assert any("written by {label}" in str(r) for r in script.requests), "brief as written"


async def test_codex_progress_on_stderr_is_shown_while_it_runs(
    vibe_run: Any, tmp_path: Path, codex_home: Path
) -> None:
    """Without --json, codex reports progress on stderr only; a dead endpoint keeps it retrying
    silently on stdout: the live tail shows its stderr lines."""
    require_real(shutil.which("codex") is not None, "codex (ci/install.sh installs it from npm)")
    dead = "http://127.0.0.1:9"  # discard port: nothing listens
    _, env = offline("codex", dead, tmp_path / "home", codex_home)
    command = [
        "codex",
        "exec",
        "--skip-git-repo-check",
        "-c",
        f'model_providers.scripted={{name="scripted", base_url="{dead}/v1", '
        'wire_api="responses", env_key="SCRIPTED_KEY"}',
        "-c",
        "model_provider=scripted",
        "-m",
        "gpt-5-codex",
        "--",
        "{brief}",
    ]
    config = {"vibe": {"kill_grace_s": 0.5, "runners": {"fast": {"command": command, "env": env}}}}
    async with vibe_run(config=config) as run:
        spawned = await run.call("vibe_spawn", {"brief": "say hello", "label": "quiet"})
        waited = await run.call(
            "vibe_wait", {"worker_id": spawned.meta["worker_id"], "timeout_seconds": 8}
        )
        listed = await run.call("vibe_list", {})
        await run.call("vibe_kill", {"worker_id": spawned.meta["worker_id"]})
    assert "no output yet" not in listed.text_content, listed.text_content
    assert "[stderr]" in listed.text_content and "[stderr]" in waited.text_content


def test_the_readme_shows_the_bundled_setups_as_tested() -> None:
    """The README's runner tables are the bundled setups the tests above run (as written)."""
    import re
    import tomllib

    from tether_vibe.runners import BUNDLED_RUNNERS

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    block = re.search(r"```toml\n(\[vibe\]\nmax_concurrent.*?)```", readme, re.S)
    assert block is not None
    runners = tomllib.loads(block[1])["vibe"]["runners"]
    assert runners["fast"] == BUNDLED_RUNNERS["codex"]
    assert runners["good"] == BUNDLED_RUNNERS["claude"]

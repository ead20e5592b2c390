"""isolation = "worktree": one git worktree per worker, removed unless it holds commits."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from vibe_testlib import command_config

from tether.testing import require_real

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


def worktrees(repo: Path) -> list[str]:
    return [
        line[len("worktree ") :]
        for line in git(repo, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]


async def test_worktree_per_worker(vibe_run: Any, repo: Path) -> None:
    async with vibe_run(config=command_config(isolation="worktree")) as run:
        roster = run.resources["vibe_roster"]
        scratch = await run.call(
            "vibe_spawn", {"brief": "write: notes.txt=draft\nsay: ok", "label": "scratch"}
        )
        committer = await run.call(
            "vibe_spawn",
            {"brief": "write: feature.py=x = 1\ncommit: add feature\nsay: committed", "label": "c"},
        )
        killed = await run.call("vibe_spawn", {"brief": "write: tmp.txt=1\nhang", "label": "k"})
        ids = [r.meta["worker_id"] for r in (scratch, committer, killed)]
        paths = [Path(r.meta["worktree"]) for r in (scratch, committer, killed)]
        assert len(set(paths)) == 3 and all(p.is_dir() for p in paths)
        assert "worktree:" in scratch.text_content
        assert git(repo, "status", "--porcelain") == "", "worktrees live outside the checkout"

        for worker in ids[:2]:
            waited = await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": 15})
            assert waited.meta["status"] == "done", waited.text_content
        assert (paths[0] / "notes.txt").read_text() == "draft"
        assert not (repo / "notes.txt").exists(), "the worker wrote in its own worktree"
        assert not (repo / "feature.py").exists()

        await run.call("vibe_kill", {"worker_id": ids[2]})
        assert not paths[2].exists(), "a killed worker's worktree without commits is removed"
        assert str(paths[2]) not in worktrees(repo)
        assert roster.get(ids[0]).tree is not None  # settled workers keep theirs until run close

    assert not paths[0].exists(), "removed at run close: no commits"
    assert paths[1].is_dir(), "kept at run close: it holds a commit"
    assert (paths[1] / "feature.py").read_text() == "x = 1"
    assert git(paths[1], "log", "-1", "--format=%s") == "add feature"
    assert roster.get(ids[1]).tree_kept
    git(repo, "worktree", "remove", "--force", str(paths[1]))


async def test_worktree_needs_a_repository(vibe_run: Any, tether_workdir: Path) -> None:
    require_real(shutil.which("git") is not None, "git (ci/install.sh installs it)")
    async with vibe_run(config=command_config(isolation="worktree")) as run:
        result = await run.call("vibe_spawn", {"brief": "say: hi", "label": "x"})
        assert result.is_error
        assert "needs a git repository" in result.text_content
        assert not run.resources["vibe_roster"].workers


async def test_worktree_from_a_subdirectory(vibe_run: Any, repo: Path) -> None:
    sub = repo / "pkg"
    sub.mkdir()
    (sub / "mod.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pkg")
    (repo / "untracked").mkdir()
    config = command_config(isolation="worktree")
    async with vibe_run(config=config, workdir=sub) as run:
        spawned = await run.call(
            "vibe_spawn", {"brief": "write: here.txt=1\nsay: ok", "label": "s"}
        )
        waited = await run.call(
            "vibe_wait", {"worker_id": spawned.meta["worker_id"], "timeout_seconds": 15}
        )
        assert waited.meta["status"] == "done"
        tree = Path(spawned.meta["worktree"])
        assert (tree / "pkg" / "here.txt").read_text() == "1", "runs in the workdir's counterpart"
        assert (tree / "pkg" / "mod.py").exists()
    async with vibe_run(config=config, workdir=repo / "untracked") as run:
        refused = await run.call("vibe_spawn", {"brief": "say: hi", "label": "u"})
        assert refused.is_error and "not in the last commit" in refused.text_content
    assert len(worktrees(repo)) == 1, "no worktree left behind"

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


async def test_worktree_per_worker(vibe_run: Any, repo: Path, state_home: Path) -> None:
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
        for path in paths:
            assert path.is_relative_to(state_home), "the default root is tether's state directory"
            assert ".git" not in path.parts, "where every agent CLI edits freely"
        assert "worktree:" in scratch.text_content
        assert "uncommitted edits are not there" in scratch.text_content, "says it starts at HEAD"
        assert "nothing is dropped" in scratch.text_content
        assert git(repo, "status", "--porcelain") == "", "worktrees live outside the checkout"

        for worker in ids[:2]:
            waited = await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": 15})
            assert waited.meta["status"] == "done", waited.text_content
            if worker == ids[0]:
                assert "in it now: 0 commits since it started, 1 uncommitted change" in (
                    waited.text_content
                ), waited.text_content
        assert (paths[0] / "notes.txt").read_text() == "draft"
        assert not (repo / "notes.txt").exists(), "the worker wrote in its own worktree"
        assert not (repo / "feature.py").exists()

        killed_answer = await run.call("vibe_kill", {"worker_id": ids[2]})
        assert not paths[2].exists(), "a killed worker's worktree is removed"
        assert str(paths[2]) not in worktrees(repo)
        branch = killed_answer.meta["branch"]
        assert branch and branch in killed_answer.text_content, killed_answer.text_content
        assert "1 uncommitted change committed there first" in killed_answer.text_content
        assert git(repo, "show", f"{branch}:tmp.txt") == "1", "its uncommitted file is kept"
        assert roster.get(ids[0]).tree is not None  # settled workers keep theirs until run close

    assert not any(p.exists() for p in paths), "every worktree the run created is removed"
    assert worktrees(repo) == [str(repo)]
    branches = git(repo, "branch", "--format=%(refname:short)").split()
    scratch_branch, commit_branch = (roster.get(i).released.branch for i in ids[:2])
    assert {scratch_branch, commit_branch, branch} <= set(branches)
    assert git(repo, "show", f"{commit_branch}:feature.py") == "x = 1"
    assert git(repo, "log", "-1", "--format=%s", f"{commit_branch}") == "add feature"
    assert git(repo, "show", f"{scratch_branch}:notes.txt") == "draft"
    assert "saved by tether-vibe" in git(repo, "log", "-1", "--format=%s", scratch_branch)
    assert git(repo, "rev-parse", "HEAD") == git(repo, "rev-parse", "main"), "main untouched"


async def test_a_worker_with_nothing_left_leaves_no_branch(vibe_run: Any, repo: Path) -> None:
    async with vibe_run(config=command_config(isolation="worktree")) as run:
        spawned = await run.call("vibe_spawn", {"brief": "say: only talk", "label": "t"})
        await run.call("vibe_wait", {"worker_id": spawned.meta["worker_id"]})
        killed = await run.call("vibe_kill", {"worker_id": spawned.meta["worker_id"]})
    assert "no commits, no changes" in killed.text_content
    assert git(repo, "branch", "--format=%(refname:short)").split() == ["main"]


async def test_start_from_the_main_checkouts_current_state(vibe_run: Any, repo: Path) -> None:
    """A worker started from "worktree" sees the main checkout's uncommitted edits, deletions
    and untracked files (what an eval cell just wrote), and the main checkout is left as it was."""
    (repo / "gone.txt").write_text("old\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "gone")
    (repo / "README.md").write_text("edited, not committed\n")
    (repo / "gone.txt").unlink()
    (repo / "data").mkdir()
    (repo / "data" / "fresh.csv").write_text("a,b\n")
    (repo / ".gitignore").write_text("ignored.log\n")
    (repo / "ignored.log").write_text("noise\n")
    before = git(repo, "status", "--porcelain")
    async with vibe_run(config=command_config(isolation="worktree")) as run:
        spawned = await run.call(
            "vibe_spawn", {"brief": "say: look", "label": "w", "start_from": "worktree"}
        )
        assert not spawned.is_error, spawned.text_content
        assert "uncommitted edits included" in spawned.text_content
        tree = Path(spawned.meta["worktree"])
        assert (tree / "README.md").read_text() == "edited, not committed\n"
        assert not (tree / "gone.txt").exists()
        assert (tree / "data" / "fresh.csv").read_text() == "a,b\n"
        assert (tree / ".gitignore").exists() and not (tree / "ignored.log").exists()
        assert git(tree, "rev-parse", "HEAD") == git(repo, "rev-parse", "HEAD")
        head = await run.call("vibe_spawn", {"brief": "say: look", "label": "h"})
        assert (Path(head.meta["worktree"]) / "README.md").read_text() == "hello\n"
    assert git(repo, "status", "--porcelain") == before, "the main checkout is left as it was"


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

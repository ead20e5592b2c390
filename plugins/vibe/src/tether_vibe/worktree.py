"""Per-worker git worktrees (``isolation = "worktree"``).

git runs through ``run.run_command``: on an untrusted workdir the core's sanitised launch
applies (no fsmonitor, hooks or other configured program; see ``tether.launch``).

A worker gets a detached worktree at the run's current HEAD. When the worker is killed or the
run closes the worktree is removed — unless the worker committed something there, in which
case it is kept (and reported) so no work is lost.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import attrs

import tether

GIT_TIMEOUT_S = 30.0


class GitRefused(tether.ToolError):
    """The sanitised launch would not run git on this (untrusted) workdir; the message says why."""


@attrs.frozen
class Worktree:
    path: Path
    base_commit: str
    prefix: str = ""  # the workdir's place inside the repository ("" at its top level)

    @property
    def cwd(self) -> Path:
        """Where the worker runs: the worktree's counterpart of the run's workdir."""
        return self.path / self.prefix if self.prefix else self.path


async def _git(run: tether.Run, args: list[str], cwd: Path) -> str:
    """Run one short git command as a child of the run; a failure is a ToolError carrying git's
    own message."""
    try:
        done = await run.run_command(["git", *args], cwd=cwd, timeout_s=GIT_TIMEOUT_S)
    except FileNotFoundError:
        raise tether.ToolError('isolation = "worktree" needs git, which is not on PATH') from None
    except OSError as exc:  # the sanitised launch refused git on this (untrusted) workdir
        raise GitRefused(f'isolation = "worktree": {exc}') from None
    if done.timed_out:
        raise tether.ToolError(
            f"git {' '.join(args)} took more than {GIT_TIMEOUT_S:.0f} s"
        ) from None
    if not done.ok:
        raise tether.ToolError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.text().strip()


async def default_root(run: tether.Run, workdir: Path) -> Path:
    """``<git common dir>/tether-vibe``: out of the checkout, so ``git status`` stays clean."""
    common = await _git(run, ["rev-parse", "--path-format=absolute", "--git-common-dir"], workdir)
    return Path(common) / "tether-vibe"


async def create(run: tether.Run, workdir: Path, root: Path | None, name: str) -> Worktree:
    """A detached worktree at HEAD under ``root`` (default: :func:`default_root`) / ``name``."""
    try:
        prefix = await _git(run, ["rev-parse", "--show-prefix"], workdir)
    except GitRefused:
        raise
    except tether.ToolError:
        raise tether.ToolError(
            f'isolation = "worktree" needs a git repository; {workdir} is not inside one'
        ) from None
    try:
        base = await _git(run, ["rev-parse", "--verify", "HEAD^{commit}"], workdir)
    except tether.ToolError:
        raise tether.ToolError(
            f'isolation = "worktree" needs a commit to branch from; the repository at {workdir} has none'
        ) from None
    if root is None:
        root = await default_root(run, workdir)
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    await _git(run, ["worktree", "add", "--detach", str(path), base], workdir)
    tree = Worktree(path=path, base_commit=base, prefix=prefix.rstrip("/"))
    if not tree.cwd.is_dir():
        await _git(run, ["worktree", "remove", "--force", str(path)], workdir)
        raise tether.ToolError(
            f"the workdir ({tree.prefix}) is not in the last commit, so a worktree at HEAD has no "
            'such directory; commit it first or use isolation = "none"'
        )
    return tree


async def holds_commits(run: tether.Run, tree: Worktree) -> bool:
    if not tree.path.exists():
        return False
    head = await _git(run, ["rev-parse", "HEAD"], tree.path)
    return head != tree.base_commit


async def remove_unless_committed(run: tether.Run, workdir: Path, tree: Worktree) -> bool:
    """Remove the worktree unless it holds commits; return True when it was kept."""
    if await holds_commits(run, tree):
        return True
    if tree.path.exists():
        await _git(run, ["worktree", "remove", "--force", str(tree.path)], workdir)
    else:
        await _git(run, ["worktree", "prune"], workdir)
    with contextlib.suppress(OSError):  # the run's folder, once its last worktree is gone
        tree.path.parent.rmdir()
    return False


__all__ = ["Worktree", "create", "default_root", "holds_commits", "remove_unless_committed"]

"""Per-worker git worktrees (``isolation = "worktree"``).

git runs through ``run.run_command``: on an untrusted workdir the core's sanitised launch
applies (no fsmonitor, hooks or other configured program; see ``tether.processes.launch``).

A worker gets a detached worktree under the worktree root (default: tether's state directory,
outside the checkout and outside ``.git``, where every agent CLI edits freely), at the run's
HEAD — or, with ``from: "worktree"``, at the main checkout's current state (its uncommitted
edits and untracked files copied in). When the worker is killed or the run closes the worktree
is removed; what the worker left there is never dropped silently: changes it did not commit
are committed first ("uncommitted changes of worker w1, saved by tether-vibe"), and a worktree
holding commits leaves a branch ``tether-vibe/<run>/<worker>`` behind, so nothing piles up but
branches the answers named.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from pathlib import Path

import anyio
import attrs

import tether
from tether.text import plural

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


def default_root(common_dir: Path) -> Path:
    """``$XDG_STATE_HOME/tether-vibe/<repository>-<hash>``: outside the checkout (``git status``
    stays clean) and outside ``.git`` (Claude Code refuses to edit a file under ``.git`` even
    in its own working directory)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    key = hashlib.sha256(os.fsencode(str(common_dir))).hexdigest()[:12]
    name = common_dir.parent.name if common_dir.name == ".git" else common_dir.name
    return Path(base) / "tether-vibe" / f"{name or 'repo'}-{key}"


async def create(
    run: tether.Run, workdir: Path, root: Path | None, name: str, *, from_worktree: bool = False
) -> Worktree:
    """A detached worktree at HEAD under ``root`` (default: :func:`default_root`) / ``name``;
    ``from_worktree``: with the main checkout's uncommitted changes and untracked files."""
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
        common = await _git(
            run, ["rev-parse", "--path-format=absolute", "--git-common-dir"], workdir
        )
        root = default_root(Path(common))
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    await _git(run, ["worktree", "add", "--detach", str(path), base], workdir)
    tree = Worktree(path=path, base_commit=base, prefix=prefix.rstrip("/"))
    try:
        if from_worktree:
            await _copy_changes(run, workdir, tree)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await _git(run, ["worktree", "remove", "--force", str(path)], workdir)
        raise
    if not tree.cwd.is_dir():
        await _git(run, ["worktree", "remove", "--force", str(path)], workdir)
        raise tether.ToolError(
            f"the workdir ({tree.prefix}) is not in the last commit, so a worktree at HEAD has no "
            'such directory; commit it first, start from "worktree", or use isolation = "none"'
        )
    return tree


async def _copy_changes(run: tether.Run, workdir: Path, tree: Worktree) -> None:
    """The main checkout's state as the worker's starting point: its tracked changes (staged or
    not, deletions included: ``git stash create`` records them without touching the checkout)
    checked out unstaged, and its untracked files (not ignored) copied."""
    top = Path(await _git(run, ["rev-parse", "--show-toplevel"], workdir))
    snapshot = await _git(run, ["stash", "create"], top)
    if snapshot:
        await _git(run, ["read-tree", "-u", "--reset", f"{snapshot}^{{tree}}"], tree.path)
        await _git(run, ["reset", "-q"], tree.path)  # the changes stay uncommitted, as they were
    listed = await _git(run, ["ls-files", "-z", "--others", "--exclude-standard"], top)
    for relative in filter(None, listed.split("\0")):
        source, target = top / relative, tree.path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        elif source.is_file():
            shutil.copy2(source, target)


@attrs.frozen
class TreeState:
    """What a worker left in its worktree: commits on top of its start, uncommitted changes."""

    commits: int
    uncommitted: int

    def describe(self) -> str:
        parts = [
            f"{plural(self.commits, 'commit')} since it started",
            f"{plural(self.uncommitted, 'uncommitted change')}",
        ]
        return ", ".join(parts)


async def state(run: tether.Run, tree: Worktree) -> TreeState | None:
    """The worktree's commits and uncommitted changes (None once it is gone)."""
    if not tree.path.exists():
        return None
    commits = await _git(run, ["rev-list", "--count", f"{tree.base_commit}..HEAD"], tree.path)
    status = await _git(run, ["status", "--porcelain", "--untracked-files=all"], tree.path)
    return TreeState(int(commits or 0), len([line for line in status.splitlines() if line]))


async def holds_commits(run: tether.Run, tree: Worktree) -> bool:
    if not tree.path.exists():
        return False
    head = await _git(run, ["rev-parse", "HEAD"], tree.path)
    return head != tree.base_commit


SAVE_IDENTITY = ["-c", "user.name=tether-vibe", "-c", "user.email=tether-vibe@localhost"]


async def release(run: tether.Run, workdir: Path, tree: Worktree, branch: str) -> Released:
    """Remove the worktree, keeping what the worker left: uncommitted changes are committed
    first, and when it then holds commits a branch ``branch`` (or ``branch-2``…) points at them."""
    saved = 0
    kept: str | None = None
    if tree.path.exists():
        now = await state(run, tree)
        if now is not None and now.uncommitted:
            saved = now.uncommitted
            await _git(run, ["add", "-A"], tree.path)
            message = f"uncommitted changes of {tree.path.name}, saved by tether-vibe"
            await _git(
                run, [*SAVE_IDENTITY, "commit", "-q", "--no-verify", "-m", message], tree.path
            )
        if await holds_commits(run, tree):
            head = await _git(run, ["rev-parse", "HEAD"], tree.path)
            kept = await _free_branch(run, workdir, branch)
            await _git(run, ["branch", kept, head], workdir)
        await _git(run, ["worktree", "remove", "--force", str(tree.path)], workdir)
    else:
        await _git(run, ["worktree", "prune"], workdir)
    with contextlib.suppress(OSError):  # the run's folder, once its last worktree is gone
        tree.path.parent.rmdir()
    return Released(branch=kept, saved_changes=saved)


@attrs.frozen
class Released:
    """What removing a worktree kept: the branch holding the worker's commits (None: it made
    none), and how many uncommitted changes were committed onto it first."""

    branch: str | None
    saved_changes: int = 0

    def describe(self) -> str:
        if self.branch is None:
            return "its worktree (no commits, no changes) was removed"
        saved = (
            f" (its {plural(self.saved_changes, 'uncommitted change')} committed there first)"
            if self.saved_changes
            else ""
        )
        return f"its worktree was removed; its commits are on branch {self.branch}{saved}"


async def _free_branch(run: tether.Run, workdir: Path, branch: str) -> str:
    for n in range(1, 100):
        name = branch if n == 1 else f"{branch}-{n}"
        try:
            await _git(run, ["rev-parse", "--verify", "--quiet", f"refs/heads/{name}"], workdir)
        except tether.ToolError:
            return name
    raise tether.ToolError(f"branches {branch} to {branch}-99 all exist")


__all__ = ["Released", "TreeState", "Worktree", "create", "default_root", "release", "state"]

"""Which files a search covers: `git ls-files` in a checkout, else a walk honouring .gitignore."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    import pathspec


GIT_TIMEOUT_S = 30.0


@attrs.frozen
class FileListing:
    """The files a search covers, and the .gitignore files whose rules could not be applied."""

    names: list[str]
    unreadable_ignores: list[str] = attrs.field(factory=list)


def _regular(path: Path | str) -> bool:
    """A regular file, not a symlink (which could lead outside the workdir)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)  # one system call, not two
    except (OSError, ValueError):
        return False


def _git_files(root: Path) -> list[str] | None:
    """Tracked plus untracked-not-ignored files under `root`, relative to it; None if no git."""
    try:
        proc = subprocess.run(
            ["git", "ls-files", "-z", "-co", "--exclude-standard", "--", "."],
            cwd=root,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    names = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    files = sorted({n for n in names if n and _regular(os.path.join(root, n))})
    if not files and _ignored_by_git(root):
        # The directory itself lies in an ignored part of an enclosing checkout (a venv, a
        # vendored tree, pyenv's versions/): git lists nothing there, so walk it instead,
        # honouring its own .gitignore files.
        return None
    return files


def _ignored_by_git(root: Path) -> bool:
    try:
        proc = subprocess.run(
            ["git", "check-ignore", "-q", "--", "."],
            cwd=root,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def _walk_files(root: Path) -> FileListing:
    import pathspec  # only a checkout without git pays for it

    out: list[str] = []
    unreadable: list[str] = []
    # (directory relative to root, spec) for every .gitignore seen on the way down
    specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []

    def ignored(rel: str, is_dir: bool) -> bool:
        for base, spec in specs:
            if base and not rel.startswith(base + "/"):
                continue
            sub = rel[len(base) + 1 :] if base else rel
            if spec.match_file(sub + ("/" if is_dir else "")):
                return True
        return False

    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
        if ".gitignore" in filenames:
            try:
                lines = (Path(dirpath) / ".gitignore").read_text("utf-8", "replace").splitlines()
                specs.append((rel_dir, pathspec.GitIgnoreSpec.from_lines(lines)))
            except OSError:
                # Its rules stay unapplied; the caller must say so, or ignored files would be
                # searched (and edited) without a word.
                unreadable.append(f"{rel_dir}/.gitignore" if rel_dir else ".gitignore")
        keep = []
        for d in sorted(dirnames):
            rel = f"{rel_dir}/{d}" if rel_dir else d
            if d == ".git" or ignored(rel, True):
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            rel = f"{rel_dir}/{f}" if rel_dir else f
            if not ignored(rel, False) and _regular(os.path.join(dirpath, f)):
                out.append(rel)
    return FileListing(out, unreadable)


def list_files(workdir: Path, target: Path) -> FileListing:
    """Files under `target` (a file or directory inside `workdir`), relative to `workdir`."""
    if target.is_file():
        return FileListing([target.relative_to(workdir).as_posix()])
    names = _git_files(target)
    listing = FileListing(names) if names is not None else _walk_files(target)
    prefix = target.relative_to(workdir).as_posix()
    if prefix in ("", "."):
        return listing
    return FileListing(
        [f"{prefix}/{n}" for n in listing.names],
        [f"{prefix}/{n}" for n in listing.unreadable_ignores],
    )

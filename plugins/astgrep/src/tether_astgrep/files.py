"""Which files a search covers: `git ls-files` in a checkout, else a walk honouring .gitignore.

git runs through the run's own `run.run_command` (a child of the run, bounded in time and
output), never a subprocess of its own.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from tether.workdir.reading import Reader, UnreadableFile, off_loop

if TYPE_CHECKING:
    import pathspec

    from tether.processes.managed import CommandResult

#: `run.run_command`'s shape
RunCommand = Callable[..., Awaitable["CommandResult"]]


GIT_TIMEOUT_S = 30.0
#: `git ls-files` output kept (a 100,000-file checkout lists ~5 MB); past it, walk instead
GIT_MAX_OUTPUT_BYTES = 256 * 1024 * 1024


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


async def _git(run_command: RunCommand, root: Path, *args: str) -> CommandResult | None:
    try:
        return await run_command(
            ["git", *args],
            timeout_s=GIT_TIMEOUT_S,
            cwd=root,
            max_output_bytes=GIT_MAX_OUTPUT_BYTES,
        )
    except OSError:  # no git here
        return None


def outside_any_checkout(root: Path) -> bool:
    """Whether git would find no repository from `root`: no `.git` in it or in a directory
    above it, and no `GIT_DIR` or `GIT_WORK_TREE` in the environment it inherits. `git
    ls-files` there only fails (two processes started on an untrusted workdir: a search's
    largest cost once its trees are warm), so it is not asked."""
    if "GIT_DIR" in os.environ or "GIT_WORK_TREE" in os.environ:
        return False
    real = root.resolve()  # git looks up from the physical directory
    return not any(os.path.lexists(d / ".git") for d in (real, *real.parents))


async def _git_files(run_command: RunCommand, root: Path) -> list[str] | None:
    """Tracked plus untracked-not-ignored files under `root`, relative to it; None if no git."""
    if outside_any_checkout(root):
        return None
    proc = await _git(run_command, root, "ls-files", "-z", "-co", "--exclude-standard", "--", ".")
    if proc is None or not proc.ok or proc.stdout_dropped:
        return None
    names = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    files = sorted({n for n in names if n and _regular(os.path.join(root, n))})
    if not files:
        ignored = await _git(run_command, root, "check-ignore", "-q", "--", ".")
        if ignored is not None and ignored.ok:
            # The directory itself lies in an ignored part of an enclosing checkout (a venv, a
            # vendored tree, pyenv's versions/): git lists nothing there, so walk it instead,
            # honouring its own .gitignore files.
            return None
    return files


def _walk_files(reader: Reader) -> FileListing:
    """The regular files under the reader's root, top down, each directory's files and then
    its subdirectories by name, honouring every .gitignore met on the way down; neither a
    symlink (to a file or a directory) nor what a directory that cannot be listed holds.

    Each directory is listed once with ``os.scandir``, whose entries say their type without a
    system call per file (the kernel's ``d_type``; a filesystem that gives none is asked by
    ``lstat``, as before): 300 ``lstat`` calls were 1.5 ms of every warm search."""
    root = reader.root
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

    pending: list[tuple[str, str]] = [(str(root), "")]  # (directory, relative to root)
    while pending:
        dirpath, rel_dir = pending.pop()
        reader.check()
        try:
            with os.scandir(dirpath) as listing:
                entries = list(listing)
        except OSError:
            continue  # as os.walk: a directory that cannot be listed holds nothing
        dirnames, filenames = [], []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    dirnames.append(entry.name)
                elif not (entry.is_symlink() and entry.is_dir()):  # a link to a directory
                    # is neither walked nor a file (nor a `.gitignore` to read)
                    filenames.append((entry.name, entry.is_file(follow_symlinks=False)))
            except OSError:
                filenames.append((entry.name, False))
        if any(name == ".gitignore" for name, _ in filenames):
            _read_ignore(reader, dirpath, rel_dir, specs, unreadable)
        for f, regular in sorted(filenames):
            rel = f"{rel_dir}/{f}" if rel_dir else f
            if regular and not ignored(rel, False):
                out.append(rel)
        kept = []
        for d in sorted(dirnames):
            rel = f"{rel_dir}/{d}" if rel_dir else d
            if d == ".git" or ignored(rel, True):
                continue
            kept.append((os.path.join(dirpath, d), rel))
        pending.extend(reversed(kept))  # the first by name is walked next
    return FileListing(out, unreadable)


def _read_ignore(
    reader: Reader,
    dirpath: str,
    rel_dir: str,
    specs: list[tuple[str, pathspec.GitIgnoreSpec]],
    unreadable: list[str],
) -> None:
    """The rules of `dirpath`'s .gitignore added to `specs`, or its name to `unreadable`."""
    import pathspec  # only a directory with a .gitignore and no git pays for it
    import re2

    try:
        text = reader.read_text(Path(dirpath) / ".gitignore", errors="replace")
        # RE2, not pathspec's default backtracking backend: the globs are the checkout's, and
        # `a**********b` against a file named `a`*60 never ends there
        spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines(), backend="re2")
        specs.append((rel_dir, spec))
    except (UnreadableFile, ValueError, re2.error):
        # Its rules stay unapplied; the caller must say so, or ignored files would be
        # searched (and edited) without a word.
        unreadable.append(f"{rel_dir}/.gitignore" if rel_dir else ".gitignore")


async def list_files(workdir: Path, target: Path, run_command: RunCommand) -> FileListing:
    """Files under `target` (a file or directory inside `workdir`), relative to `workdir`;
    git runs through `run_command` (the run's `run.run_command`)."""
    if target.is_file():
        return FileListing([target.relative_to(workdir).as_posix()])
    names = await _git_files(run_command, target)
    if names is not None:
        listing = FileListing(names)
    else:
        # in the reader's thread: a .gitignore that is a FIFO is refused, a cancel stops the walk
        listing = await off_loop(target, _walk_files)
    prefix = target.relative_to(workdir).as_posix()
    if prefix in ("", "."):
        return listing
    return FileListing(
        [f"{prefix}/{n}" for n in listing.names],
        [f"{prefix}/{n}" for n in listing.unreadable_ignores],
    )

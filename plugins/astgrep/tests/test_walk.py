"""The walk that lists a search's files outside any git checkout (`files._walk_files`): each
directory listed once, its entries' types taken from the listing, no `lstat` per file (1.5 ms
of every warm search of 300 files). Generated over trees of every kind of entry, it lists what
the walk by `os.walk` and an `lstat` per file listed (kept here as the reference)."""

from __future__ import annotations

import itertools
import os
import stat
from pathlib import Path

import pathspec
import pytest

from tether.workdir.reading import Reader, UnreadableFile
from tether_astgrep import files
from tether_astgrep.files import FileListing, _walk_files


def _reference(reader: Reader) -> FileListing:
    """The walk as it was: `os.walk`, then an `lstat` per file."""
    root = reader.root
    out: list[str] = []
    unreadable: list[str] = []
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
                text = reader.read_text(Path(dirpath) / ".gitignore", errors="replace")
                specs.append((rel_dir, pathspec.GitIgnoreSpec.from_lines(text.splitlines())))
            except (UnreadableFile, ValueError):
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
            path = os.path.join(dirpath, f)
            if not ignored(rel, False) and stat.S_ISREG(os.lstat(path).st_mode):
                out.append(rel)
    return FileListing(out, unreadable)


NAMES = ["a.py", "a-b.py", "a.b.py", "B.py", "_x.py", "gen.py", "z"]
#: what each generated directory may hold besides its files
EXTRAS = ["link_file", "link_dir", "dangling", "fifo", "git_dir", "ignore", "ignore_link_dir"]


def _build(root: Path, extras: tuple[str, ...], depth: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        (root / name).write_text("x = 1\n")
    for extra in extras:
        if extra == "link_file":
            (root / "l.py").symlink_to(root / "a.py")
        elif extra == "link_dir":
            (root / "ld").symlink_to(root)
        elif extra == "dangling":
            (root / "d.py").symlink_to(root / "nowhere.py")
        elif extra == "fifo":
            os.mkfifo(root / "f.py")
        elif extra == "git_dir":
            (root / ".git").mkdir()
            (root / ".git" / "HEAD.py").write_text("x\n")
        elif extra == "ignore":
            (root / ".gitignore").write_text("gen.py\nbuild/\n!keep.py\n*.b.py\n")
            (root / "build").mkdir()
            (root / "build" / "keep.py").write_text("x\n")
        elif extra == "ignore_link_dir":
            (root / "sub_ignore").mkdir()
            (root / "sub_ignore" / ".gitignore").symlink_to(root)
    if depth:
        for sub in ("pkg", "Pkg2"):
            _build(root / sub, extras, depth - 1)


CASES = [combo for n in (0, 1, 2, len(EXTRAS)) for combo in itertools.combinations(EXTRAS, n)][:40]


@pytest.mark.parametrize("extras", CASES, ids=["+".join(c) or "plain" for c in CASES])
def test_the_walk_lists_what_os_walk_and_lstat_listed(
    tmp_path: Path, extras: tuple[str, ...]
) -> None:
    _build(tmp_path / "w", extras, depth=2)
    with Reader(tmp_path / "w") as reader:
        assert _walk_files(reader) == _reference(reader)


def test_the_walk_looks_at_no_file_by_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _build(tmp_path / "w", ("ignore",), depth=2)
    looked: list[str] = []
    real = os.lstat

    def counted(path: object, *args: object, **kwargs: object) -> os.stat_result:
        looked.append(str(path))
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(files.os, "lstat", counted)
    with Reader(tmp_path / "w") as reader:
        listing = _walk_files(reader)
    # 7 directories, each with .gitignore, B.py, _x.py, a-b.py, a.py and z (gen.py and a.b.py
    # ignored, build/ with them)
    assert len(listing.names) == 7 * 6
    # (the reader's own look at each .gitignore it reads aside)
    listed = {str(tmp_path / "w" / name) for name in listing.names}
    assert not set(looked) & {p for p in listed if not p.endswith(".gitignore")}

"""Path confinement and atomic (multi-)file writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.errors import PathError
from tether.workdir.paths import confine, is_within
from tether.workdir.writing import FileChange, StaleFiles, apply_changes, atomic_write


def test_confine_accepts_paths_inside(tmp_path):
    (tmp_path / "a").mkdir()
    assert confine(tmp_path, "a/b.txt") == tmp_path.resolve() / "a" / "b.txt"
    assert confine(tmp_path, "a/../c.txt") == tmp_path.resolve() / "c.txt"
    assert confine(tmp_path, str(tmp_path / "a")) == tmp_path.resolve() / "a"


@pytest.mark.parametrize("path", ["../x", "a/../../x", "/etc/passwd", ""])
def test_confine_refuses_escapes(tmp_path, path):
    with pytest.raises(PathError) as info:
        confine(tmp_path, path, field="file")
    assert str(info.value).startswith("file: ")


def test_confine_refuses_escaping_symlink(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    (work / "link").symlink_to(outside)
    with pytest.raises(PathError, match="symlink"):
        confine(work, "link/secret.txt")
    (work / "inner").mkdir()
    (work / "ok").symlink_to(work / "inner")
    assert confine(work, "ok/x") == (work / "inner" / "x").resolve()


def test_atomic_write_keeps_mode_and_leaves_no_temp(tmp_path):
    target = tmp_path / "f.sh"
    target.write_text("old")
    os.chmod(target, 0o755)
    atomic_write(target, "new")
    assert target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o755
    assert [p.name for p in tmp_path.iterdir()] == ["f.sh"]


def test_apply_changes_rejects_stale_files_and_writes_nothing(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("A")
    b.write_text("B changed behind our back")
    with pytest.raises(StaleFiles) as info:
        apply_changes([FileChange(a, b"A", b"A2"), FileChange(b, b"B", b"B2")])
    assert info.value.paths == [b]
    assert a.read_text() == "A"


@pytest.mark.parametrize("step", ["temp", "commit", "rename"])
def test_apply_changes_restores_earlier_files_when_a_write_fails(tmp_path, step):
    files = [tmp_path / f"f{i}" for i in range(4)]
    for i, f in enumerate(files):
        f.write_text(f"old{i}")
    new_file = tmp_path / "new" / "dir" / "created"
    seen = []

    def fault(kind, path):
        if kind == step:
            seen.append(path)
            if len(seen) == 3 or kind == "commit":
                raise OSError("disk full")

    changes = [
        FileChange(f, f"old{i}".encode(), f"new{i}".encode()) for i, f in enumerate(files[:2])
    ]
    changes.append(FileChange(new_file, None, b"fresh"))
    changes.extend(FileChange(f, f"old{i + 2}".encode(), b"x") for i, f in enumerate(files[2:]))
    with pytest.raises(OSError, match="disk full"):
        apply_changes(changes, root=tmp_path, fault=fault)
    assert [f.read_text() for f in files] == ["old0", "old1", "old2", "old3"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f0", "f1", "f2", "f3"]  # no temp, no dir


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 5), st.sets(st.integers(0, 5)), st.integers(-1, 5))
def test_never_a_partial_application(tmp_path_factory, count, touched, fail_at):
    """Whatever changes behind our back and wherever a write fails: all files new, or all old."""
    root = tmp_path_factory.mktemp("p")
    files = [root / f"f{i}" for i in range(count)]
    for f in files:
        f.write_text("old")
    for i in touched:
        if i < count:
            files[i].write_text("touched")
    calls = []

    def fault(kind, path):
        if kind == "rename":
            if len(calls) == fail_at:
                raise OSError("boom")
            calls.append(path)

    try:
        apply_changes([FileChange(f, b"old", b"new") for f in files], root=root, fault=fault)
        applied = True
    except (StaleFiles, OSError):
        applied = False
    contents = [f.read_text() for f in files]
    expected_before = ["touched" if i in touched else "old" for i in range(count)]
    assert contents == (["new"] * count if applied else expected_before)
    assert sorted(p.name for p in root.iterdir()) == sorted(f.name for f in files)


def test_confine_refuses_a_lone_surrogate_naming_the_field(tmp_path):
    with pytest.raises(PathError, match="lone surrogate") as info:
        confine(tmp_path, "a\ud800.txt", "file")
    assert info.value.field == "file"


def test_confine_refuses_a_name_too_long_for_a_file_system(tmp_path):
    with pytest.raises(PathError, match="is 300 bytes long; a file name holds at most 255") as info:
        confine(tmp_path, "sub/" + "n" * 300)
    assert info.value.field == "path"
    assert confine(tmp_path, "n" * 255) == tmp_path.resolve() / ("n" * 255)


_TREE = ["/", "/a", "/a/b", "/a/bc", "/a/b/c", "/ab", "/a/b/c/d.py", "/x/a/b"]


@pytest.mark.parametrize("root", _TREE)
def test_is_within_is_the_parents_rule(root: str) -> None:
    # every pair of a small tree, names that only start like the root's (/a/bc, /ab) included
    for path in _TREE:
        expected = Path(path) == Path(root) or Path(root) in Path(path).parents
        assert is_within(Path(path), Path(root)) is expected, (path, root)

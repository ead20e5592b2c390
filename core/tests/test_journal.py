"""Writes confined at the moment of writing, and multi-file changes that survive a kill."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tether
from tether.errors import PathError
from tether.workdir.journal import recover, state_dir, temp_name
from tether.workdir.paths import confine
from tether.workdir.writing import FileChange, apply_changes, atomic_write


def tree(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root``: file contents, directories and symlinks."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = f"-> {os.readlink(path)}"
            elif path.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = path.read_bytes()
    return out


@pytest.fixture
def work_and_outside(tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "a.py").write_text("old\n")
    (work / "top.py").write_text("top\n")
    shutil.copytree(work / "sub", outside)
    return work.resolve(), outside.resolve()


def swap_for_symlink(directory: Path, target: Path) -> None:
    shutil.rmtree(directory)
    directory.symlink_to(target)


def test_a_directory_swapped_for_a_symlink_after_the_proposal_is_refused(work_and_outside):
    work, outside = work_and_outside
    path = confine(work, "sub/a.py")  # the proposal: checked and resolved while sub/ was real
    swap_for_symlink(work / "sub", outside)
    before = tree(work), tree(outside)
    with pytest.raises(PathError, match="symlink"):
        apply_changes(
            [FileChange(work / "top.py", b"top\n", b"TOP\n"), FileChange(path, b"old\n", b"new\n")],
            root=work,
        )
    assert (tree(work), tree(outside)) == before


def test_a_swap_right_before_the_rename_is_refused_and_undone(work_and_outside):
    work, outside = work_and_outside
    changes = [FileChange(work / "top.py", b"top\n", b"TOP\n")]
    changes.append(FileChange(work / "sub" / "a.py", b"old\n", b"new\n"))
    real_sub = work.parent / "moved-away"

    def fault(step, path):
        if step == "rename" and path.name == "a.py":  # top.py is renamed already
            (work / "sub").rename(real_sub)
            (work / "sub").symlink_to(outside)

    with pytest.raises(PathError, match="symlink"):
        apply_changes(changes, root=work, fault=fault)
    assert (work / "top.py").read_text() == "top\n"  # put back
    assert (outside / "a.py").read_text() == "old\n"
    assert sorted(p.name for p in real_sub.iterdir()) == ["a.py"]  # its temp file was removed


def test_a_file_swapped_for_a_symlink_is_refused(work_and_outside):
    work, outside = work_and_outside
    (work / "sub" / "a.py").unlink()
    (work / "sub" / "a.py").symlink_to(outside / "a.py")
    with pytest.raises(PathError, match="symlink"):
        atomic_write(work / "sub" / "a.py", "new\n", root=work)
    assert (outside / "a.py").read_text() == "old\n"


def test_a_new_file_follows_the_umask_and_its_directories_are_created(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "d" / "e" / "f.txt", "x", root=tmp_path)
    finally:
        os.umask(old)
    assert (tmp_path / "d" / "e" / "f.txt").stat().st_mode & 0o777 == 0o644


KILLER = r"""
import os, signal, sys
from pathlib import Path
from tether.workdir.writing import FileChange, apply_changes
root, step, nth = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
seen = []
def fault(kind, path):
    if kind == step:
        seen.append(path)
        if len(seen) == nth:
            os.kill(os.getpid(), signal.SIGKILL)
changes = [FileChange(root / f"f{i}.txt", f"old{i}".encode(), f"new{i}".encode()) for i in range(5)]
changes += [FileChange(root / "fresh" / "deep" / f"n{i}.txt", None, b"created") for i in range(2)]
apply_changes(changes, root=root, fault=fault)
"""


@pytest.mark.parametrize(
    ("step", "nth"),
    [
        ("temp", 1),
        ("temp", 4),
        ("temp", 7),
        ("commit", 1),
        ("rename", 1),
        ("rename", 4),
        ("rename", 7),
    ],
)
def test_a_change_killed_at_any_step_is_recovered_whole(tmp_path, step, nth):
    for i in range(5):
        (tmp_path / f"f{i}.txt").write_text(f"old{i}")
    old = tree(tmp_path)
    killed = subprocess.run([sys.executable, "-c", KILLER, str(tmp_path), step, str(nth)])
    assert killed.returncode == -9
    report = recover(tmp_path)
    assert len(report) == 1, report
    after = tree(tmp_path)
    if step == "rename":  # past the commit mark: rolled forward
        assert "rolled forward (7 of 7 files)" in report[0]
        assert {k: v for k, v in after.items() if k.endswith(".txt") and "/" not in k} == {
            f"f{i}.txt": f"new{i}".encode() for i in range(5)
        }
        assert after["fresh/deep/n0.txt"] == b"created"
        assert not any(".tether-" in name for name in after)
    else:
        assert "rolled back" in report[0]
        assert after == old  # no temp file, no created directory
    assert recover(tmp_path) == []  # the journal is gone


def test_the_next_run_on_the_workdir_recovers_first(tmp_path):
    (tmp_path / "f0.txt").write_text("old0")
    for i in range(1, 5):
        (tmp_path / f"f{i}.txt").write_text(f"old{i}")
    subprocess.run([sys.executable, "-c", KILLER, str(tmp_path), "rename", "2"])
    assert (tmp_path / "f0.txt").read_text() == "new0" and (
        tmp_path / "f3.txt"
    ).read_text() == "old3"

    async def open_and_close():
        async with tether.open_run(tmp_path, entry_points=False):
            pass

    import anyio

    anyio.run(open_and_close)
    assert [(tmp_path / f"f{i}.txt").read_text() for i in range(5)] == [f"new{i}" for i in range(5)]


def sha(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def forge(workdir: Path, change_id: str, entries: list[dict], dirs=(), committed=True) -> None:
    directory = state_dir(workdir.resolve())
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    directory.parent.chmod(0o700)
    directory.chmod(0o700)
    record = {"version": 1, "id": change_id, "root": str(workdir.resolve()), "dirs": list(dirs)}
    record["entries"] = entries
    (directory / f"{change_id}.json").write_text(json.dumps(record))
    if committed:
        (directory / f"{change_id}.committed").touch()


def test_a_forged_journal_is_re_confined_and_checked(work_and_outside):
    work, outside = work_and_outside
    victim = outside / "a.py"
    payload = b"import os; os.system('touch PWNED')\n"
    # 1. a path climbing out, with a planted temp file holding exactly the recorded content
    (work / temp_name("forged1", 0)).write_bytes(payload)
    forge(
        work,
        "forged1",
        [{"path": "../outside/a.py", "before": sha(b"old\n"), "after": sha(payload)}],
    )
    # 2. a path through a symlink to the outside
    (work / "link").symlink_to(outside)
    forge(work, "forged2", [{"path": "link/a.py", "before": sha(b"old\n"), "after": sha(payload)}])
    # 3. an entry inside whose before-state does not match: not applied
    (work / "sub" / temp_name("forged3", 0)).write_bytes(payload)
    forge(
        work,
        "forged3",
        [{"path": "sub/a.py", "before": sha(b"something else\n"), "after": sha(payload)}],
    )
    # 4. a matching before-state but a temp file that is not the recorded content
    (work / temp_name("forged4", 0)).write_bytes(b"another payload")
    forge(work, "forged4", [{"path": "top.py", "before": sha(b"top\n"), "after": sha(payload)}])
    # 5. a journal naming another workdir, and one that is not JSON at all
    forge(work, "forged5", [{"path": "top.py", "before": sha(b"top\n"), "after": sha(payload)}])
    record = json.loads((state_dir(work) / "forged5.json").read_text())
    record["root"] = str(outside)
    (state_dir(work) / "forged5.json").write_text(json.dumps(record))
    (state_dir(work) / "forged6.json").write_text("{not json")
    report = recover(work)
    assert len(report) == 6, report
    assert all("0 of 1 files" in line or "ignored" in line for line in report), report
    assert victim.read_text() == "old\n" and not (outside / "PWNED").exists()
    assert (work / "sub" / "a.py").read_text() == "old\n"
    assert (work / "top.py").read_text() == "top\n"
    assert not state_dir(work).exists()  # every journal handled, the directory removed


def test_a_journal_directory_others_can_write_is_not_trusted(tmp_path):
    forge(tmp_path, "x", [{"path": "a", "before": None, "after": sha(b"a")}])
    state_dir(tmp_path.resolve()).chmod(0o777)
    assert "not private" in recover(tmp_path)[0]
    with pytest.raises(tether.ToolError, match="0700"):
        atomic_write(tmp_path / "b", "b", root=tmp_path)
    assert not (tmp_path / "b").exists()


def test_a_live_change_is_left_to_its_process(tmp_path):
    from tether.workdir.journal import Journal

    journal = Journal.begin(tmp_path.resolve(), "live", {"id": "live", "entries": [], "dirs": []})
    try:
        code = "import sys; from tether.workdir.journal import recover; print(recover(sys.argv[1]))"
        out = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True
        )
        assert out.stdout.strip() == "[]"
        assert (state_dir(tmp_path.resolve()) / "live.json").exists()
    finally:
        journal.end()


def test_tether_recover_rolls_a_killed_change_back(tmp_path):
    for i in range(5):
        (tmp_path / f"f{i}.txt").write_text(f"old{i}")
    old = tree(tmp_path)
    subprocess.run([sys.executable, "-c", KILLER, str(tmp_path), "temp", "6"])
    assert tree(tmp_path) != old  # temp files and the new directories are there
    cli = [sys.executable, "-m", "tether.cli", "recover", "--workdir", str(tmp_path)]
    done = subprocess.run(cli, capture_output=True, text=True)
    assert done.returncode == 0 and "rolled back (7 of 7 files)" in done.stdout, done
    assert tree(tmp_path) == old
    again = subprocess.run(cli, capture_output=True, text=True)
    assert again.returncode == 0 and "nothing to recover" in again.stdout


def test_a_name_too_long_is_an_error_naming_the_path(tmp_path):
    with pytest.raises(PathError, match=r"^path: the name 'xxx.*300 bytes long"):
        atomic_write(tmp_path / ("x" * 300), "data", root=tmp_path)
    assert list(tmp_path.iterdir()) == []

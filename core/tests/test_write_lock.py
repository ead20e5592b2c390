"""The workdir's write lock: other processes' changes and recovery take turns with a change, a
wait is bounded and names the holder, a cancelled wait writes nothing and never holds up the
event loop, and a change killed while its journal was being removed stays whole."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from tether.workdir.journal import WorkdirBusy, lock_path, recover, state_dir
from tether.workdir.writing import (
    FileChange,
    StaleFiles,
    apply_changes,
    apply_changes_async,
    atomic_write,
)

HOLDER = r"""
import sys, time
from pathlib import Path
from tether.workdir.journal import workdir_lock
with workdir_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""


def hold_lock(work: Path) -> subprocess.Popen[str]:
    """Another process holding ``work``'s write lock, as a change in progress does."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(work)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "held\n"
    return proc


def test_a_change_waits_for_another_process_and_names_it_when_it_gives_up(tmp_path):
    work = tmp_path.resolve()
    (work / "a.txt").write_text("old\n")
    holder = hold_lock(work)
    try:
        started = time.monotonic()
        with pytest.raises(WorkdirBusy) as caught:
            apply_changes([FileChange(work / "a.txt", b"old\n", b"new\n")], lock_timeout=0.5)
        assert 0.5 <= time.monotonic() - started < 5
        assert f"process {holder.pid}" in str(caught.value), caught.value
        assert str(caught.value).startswith("nothing was written")
        with pytest.raises(WorkdirBusy):  # recovery takes turns with a live change too
            recover(work, lock_timeout=0.2)
        assert (work / "a.txt").read_text() == "old\n"
    finally:
        holder.kill()  # SIGKILL: the kernel lets go of the lock
        holder.wait()
    apply_changes([FileChange(work / "a.txt", b"old\n", b"new\n")], root=work, lock_timeout=5)
    assert (work / "a.txt").read_text() == "new\n"
    assert not lock_path(work).exists()  # the holder removes the lock file as it lets go


def test_a_cancelled_wait_for_the_lock_writes_nothing_and_keeps_the_loop_running(tmp_path):
    work = tmp_path.resolve()
    (work / "a.txt").write_text("old\n")
    holder = hold_lock(work)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    async def main() -> float:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            started = time.monotonic()
            with anyio.move_on_after(0.5):
                await apply_changes_async(
                    [FileChange(work / "a.txt", b"old\n", b"new\n")], root=work, lock_timeout=30
                )
            waited = time.monotonic() - started
            tg.cancel_scope.cancel()
        return waited

    try:
        waited = anyio.run(main)
    finally:
        holder.kill()
        holder.wait()
    assert waited < 3, waited  # the cancellation reached the wait, not the 30 s timeout
    assert ticks >= 10, ticks  # the event loop ran while the worker thread waited
    assert (work / "a.txt").read_text() == "old\n"


KILLED_CHANGE = r"""
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
changes += [FileChange(root / "fresh" / f"n{i}.txt", None, b"created") for i in range(2)]
apply_changes(changes, root=root, fault=fault)
"""


def test_a_change_first_finishes_the_change_a_dead_process_left(tmp_path):
    work = tmp_path.resolve()
    for i in range(5):
        (work / f"f{i}.txt").write_text(f"old{i}")
    killed = subprocess.run([sys.executable, "-c", KILLED_CHANGE, str(work), "rename", "3"])
    assert killed.returncode == -signal.SIGKILL
    assert (work / "f0.txt").read_text() == "new0" and (work / "f4.txt").read_text() == "old4"
    # an edit prepared on the half-done state must not land on top of it: the dead change is
    # rolled forward first, under the lock, and the edit is then stale
    with pytest.raises(StaleFiles):
        apply_changes([FileChange(work / "f4.txt", b"old4", b"mine")], root=work)
    assert [(work / f"f{i}.txt").read_text() for i in range(5)] == [f"new{i}" for i in range(5)]
    assert (work / "fresh" / "n1.txt").read_text() == "created"
    assert not state_dir(work).exists()


# a whole change, then a kill at the n-th file removed from the journal directory
KILLED_WHILE_FORGETTING = r"""
import os, pathlib, signal, sys
from tether.workdir.writing import FileChange, apply_changes
from tether.workdir.journal import state_dir
root, nth = pathlib.Path(sys.argv[1]), int(sys.argv[2])
journals, removed, unlink = state_dir(root), [], pathlib.Path.unlink
def unlink_then_die(self, missing_ok=False):
    unlink(self, missing_ok=missing_ok)
    if self.parent == journals:
        removed.append(self.name)
        if len(removed) == nth:
            os.kill(os.getpid(), signal.SIGKILL)
pathlib.Path.unlink = unlink_then_die
changes = [FileChange(root / f"f{i}.txt", f"old{i}".encode(), f"new{i}".encode()) for i in range(5)]
changes += [FileChange(root / "fresh" / f"n{i}.txt", None, b"created") for i in range(2)]
apply_changes(changes, root=root)
"""


@pytest.mark.parametrize("nth", [1, 2])
def test_a_change_killed_while_its_journal_is_removed_stays_whole(tmp_path, nth):
    work = tmp_path.resolve()
    for i in range(5):
        (work / f"f{i}.txt").write_text(f"old{i}")
    killed = subprocess.run([sys.executable, "-c", KILLED_WHILE_FORGETTING, str(work), str(nth)])
    assert killed.returncode == -signal.SIGKILL
    recover(work)
    assert [(work / f"f{i}.txt").read_text() for i in range(5)] == [f"new{i}" for i in range(5)]
    assert sorted(os.listdir(work / "fresh")) == ["n0.txt", "n1.txt"]  # the created files stay
    assert not state_dir(work).exists()  # what the kill left in the journal directory is swept


def test_a_write_leaves_no_lock_file_and_waits_for_nothing(tmp_path):
    work = tmp_path.resolve()
    started = time.monotonic()
    for i in range(5):
        atomic_write(work / "a.txt", f"{i}\n", root=work)
    assert (work / "a.txt").read_text() == "4\n"
    assert not lock_path(work).exists() and not state_dir(work).exists()
    assert time.monotonic() - started < 10

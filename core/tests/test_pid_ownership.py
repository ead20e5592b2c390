"""Every kill goes through one judge, :class:`tether.processes.managed.Lineage` (issue 22, section 4): a
process the run did not spawn or adopt — a stranger, its children, pid 1, the caller, a pid
number reused after the run's process exited — is never signalled."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import anyio
import pytest

import tether
from tether.processes.managed import Lineage, is_alive, kill_tree, start_time

pytestmark = pytest.mark.anyio

_PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 36, 37


@pytest.fixture(autouse=True)
def a_harness_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """These tests are about a harness's process, which is no subreaper. An earlier test that
    ran the CLI in this pytest process made it one, and the kernel keeps that: orphans (the
    stranger below) would be re-parented here and count as this process's own. Undone for the
    test, restored after it."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    was = ctypes.c_int(0)
    libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(was), 0, 0, 0)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
    monkeypatch.setattr(tether.processes.managed, "_subreaper", False)
    yield
    libc.prctl(_PR_SET_CHILD_SUBREAPER, was.value, 0, 0, 0)


@pytest.fixture
def stranger() -> Iterator[int]:
    """A daemon outside any run and outside this process's tree (double-forked, re-parented
    away): the pid of someone else's process, as an adapter might report it."""
    shell = subprocess.run(
        ["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"],
        capture_output=True,
        text=True,
        check=True,
        start_new_session=True,
    )
    pid = int(shell.stdout)
    try:
        yield pid
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def variants(stranger: int) -> dict[str, int]:
    return {"stranger": stranger, "pid 1": 1, "the caller": os.getpid()}


@pytest.mark.parametrize("who", ["stranger", "pid 1", "the caller"])
async def test_a_run_neither_adopts_nor_kills_a_process_it_does_not_own(
    open_test_run, stranger: int, who: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid = variants(stranger)[who]
    async with open_test_run() as run:
        owner = run.process_owner
        assert not run.adopt_pid(pid)
        assert not owner.owns(pid)
        assert owner.kill_tree(pid, signal.SIGTERM) == set()
        own = await run.spawn(["sleep", "60"])
        assert owner.owns(own.pid) and owner.kill_tree(own.pid, signal.SIGTERM) == {own.pid}
    await anyio.sleep(0.1)
    assert is_alive(stranger)


async def test_a_library_child_is_adopted_and_killed_at_close(open_test_run) -> None:
    async with open_test_run() as run:
        child = subprocess.Popen(  # noqa: ASYNC220 - a library starting its own child
            ["sleep", "60"], env={**os.environ, **run.child_env()}
        )
        assert run.adopt_pid(child.pid)
    assert child.wait(timeout=5) == -signal.SIGKILL


def test_a_pid_reused_after_exit_is_not_the_owners(stranger: int) -> None:
    """The root recorded at spawn/adopt is (pid, start time): the same number with another
    start time is another process. (Forcing the kernel to hand the number out again is not
    possible in a test; the stranger stands in for the process that got it.)"""
    started = start_time(stranger)
    assert started is not None
    lineage = Lineage()
    lineage.add_root(stranger, started - 1)  # the run's process had this number earlier
    assert not lineage.owns(stranger)
    assert kill_tree(stranger, lineage=lineage) == set()
    time.sleep(0.1)
    assert is_alive(stranger)
    lineage.add_root(stranger, started)
    assert lineage.owns(stranger)


def test_a_group_holding_a_stranger_is_not_signalled_whole() -> None:
    """killpg only for a group whose every member is owned: an owned process that joined the
    group of someone else's does not take that group down."""
    other = subprocess.Popen(["sleep", "60"], process_group=0)
    mine = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], process_group=other.pid
    )
    try:
        assert os.getpgid(mine.pid) == other.pid
        assert kill_tree(mine.pid) == {mine.pid}
        assert mine.wait(timeout=5) == -signal.SIGKILL
        time.sleep(0.1)
        assert other.poll() is None
    finally:
        for proc in (mine, other):
            proc.kill()
            proc.wait()


def test_every_kill_in_the_sources_names_its_judge() -> None:
    """A plugin's kill of a pid it learnt from someone else would be the bug again: in every
    distribution's sources, ``kill_tree``/``terminate_tree`` go through the run's process owner
    or name a lineage; only a process the caller forked itself (astgrep's workers) may be
    killed with the default lineage of that one pid."""
    import re
    from pathlib import Path

    root = Path(tether.__file__).resolve().parents[3]
    allowed = {"plugins/astgrep/src/tether_astgrep/engine.py"}  # its own os.fork() children
    bad = []
    for path in root.glob("*/*/src/**/*.py"):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("core/src/tether/") or rel in allowed:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"(?<![.\w])(kill_tree|terminate_tree)\(", line) or re.search(
                r"process\.(kill_tree|terminate_tree)\(", line
            ):
                window = "\n".join(path.read_text().splitlines()[number - 1 : number + 3])
                if "lineage=" not in window:
                    bad.append(f"{rel}:{number}: {line.strip()}")
    assert not bad, "kills without a lineage:\n" + "\n".join(bad)

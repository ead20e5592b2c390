"""Both process backends tell the same facts about real processes (the portable one is what
macOS and other POSIX systems use; on Linux ``TETHER_PORTABLE=1`` selects it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tether.processes import procinfo

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="compares psutil with /proc: Linux only"
)


@pytest.fixture
def child():
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "marked-arg"],
        env={**os.environ, "TETHER_OWNER": "procinfo-test/1"},
        start_new_session=True,
    )
    time.sleep(0.2)
    yield proc
    proc.kill()
    proc.wait()


def test_both_backends_agree_on_a_live_process(child):
    proc_stat, ps_stat = procinfo._proc_stat(child.pid), procinfo._ps_stat(child.pid)
    assert proc_stat is not None and ps_stat is not None
    assert (ps_stat.ppid, ps_stat.pgid, ps_stat.sid) == (os.getpid(), child.pid, child.pid)
    assert (proc_stat.ppid, proc_stat.pgid, proc_stat.sid) == (
        ps_stat.ppid,
        ps_stat.pgid,
        ps_stat.sid,
    )
    assert proc_stat.state == ps_stat.state == "S"
    assert b"TETHER_OWNER=procinfo-test/1" in procinfo._proc_environ(child.pid)
    assert b"TETHER_OWNER=procinfo-test/1" in procinfo._ps_environ(child.pid)
    assert procinfo._proc_cmdline(child.pid) == procinfo._ps_cmdline(child.pid)
    assert procinfo._ps_cmdline(child.pid)[-1] == b"marked-arg"
    assert child.pid in procinfo._ps_pids() and child.pid in procinfo._proc_pids()


def test_both_backends_see_stopped_and_gone_processes(child):
    os.kill(child.pid, signal.SIGSTOP)
    time.sleep(0.1)
    assert procinfo._proc_stat(child.pid).stopped and procinfo._ps_stat(child.pid).stopped
    os.kill(child.pid, signal.SIGKILL)
    time.sleep(0.1)
    assert procinfo._proc_stat(child.pid).zombie and procinfo._ps_stat(child.pid).zombie
    child.wait()
    assert procinfo._proc_stat(child.pid) is None and procinfo._ps_stat(child.pid) is None
    assert procinfo._proc_environ(child.pid) is None and procinfo._ps_environ(child.pid) is None


def test_start_time_names_one_process_in_each_backend(child):
    for stat in (procinfo._proc_stat, procinfo._ps_stat):
        first, again = stat(child.pid), stat(child.pid)
        assert first.started == again.started
        assert stat(os.getpid()).started <= first.started


def test_memory_is_read_by_both_backends():
    assert procinfo._proc_rss() > 1_000_000 and procinfo._ps_rss() > 1_000_000


def test_the_switch_selects_the_portable_backend(monkeypatch):
    monkeypatch.delenv(procinfo.PORTABLE_ENV, raising=False)
    assert not procinfo.portable()
    monkeypatch.setenv(procinfo.PORTABLE_ENV, "1")
    assert procinfo.portable()
    from tether.processes.managed import become_subreaper, is_subreaper

    assert become_subreaper() is False and not is_subreaper()


def test_import_tether_does_not_import_psutil_by_default():
    env = {k: v for k, v in os.environ.items() if k != procinfo.PORTABLE_ENV}
    code = "import sys, tether, tether.processes.managed; print('psutil' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize("portable", [False, True], ids=["proc", "psutil"])
def test_the_watchdog_kills_marked_processes_with_either_backend(monkeypatch, portable):
    """The run's process dies (its end of the pipe closes): the watchdog, reading through the
    backend in use, SIGKILLs the run's marked children."""
    from tether.processes import watchdog

    monkeypatch.setenv(procinfo.PORTABLE_ENV, "1" if portable else "0")
    owner = f"procinfo-watchdog-{os.getpid()}-{int(portable)}"
    child = subprocess.Popen(
        ["sleep", "60"], env={**os.environ, "TETHER_OWNER": f"{owner}/1"}, start_new_session=True
    )
    dog = watchdog.start(owner)
    assert dog is not None
    assert (dog.process.args[-1] == "psutil") is portable
    try:
        os.close(dog.fd)  # as when the run's process is SIGKILLed
        assert dog.process.wait(timeout=20) == 0
        assert child.wait(timeout=5) == -signal.SIGKILL
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("portable", [False, True], ids=["proc", "psutil"])
def test_a_leader_reaped_before_its_start_time_was_read_still_owns_its_group(monkeypatch, portable):
    """The event loop's child watcher may reap a leader that exited at once before its start
    time is read: the start time floor taken before spawning keeps its group's jobs owned."""
    from tether.processes.managed import Lineage, group_members

    monkeypatch.setenv(procinfo.PORTABLE_ENV, "1" if portable else "0")
    floor = procinfo.started_floor()
    leader = subprocess.Popen(["sh", "-c", "sleep 300 & exit 0"], start_new_session=True)
    leader.wait()  # reaped: no start time to read any more
    jobs = group_members(leader.pid)
    try:
        assert len(jobs) == 1
        assert not any(Lineage.of(leader.pid).owns(p) for p in jobs)
        assert all(Lineage.of(leader.pid, floor=floor).owns(p) for p in jobs)
    finally:
        for pid in jobs:
            os.kill(pid, signal.SIGKILL)

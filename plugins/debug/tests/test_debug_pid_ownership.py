"""A debug adapter's word about a pid is not proof that the process is the run's (issue 22,
section 4): an adapter (a real process speaking DAP) that reports ``systemProcessId`` of a process
the run never started must not get it, its children, pid 1 or the caller killed — not by
``terminate``, not by the run's close."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

import tether
from tether.processes.managed import is_alive
from tether_debug import DebugAdapter

pytestmark = pytest.mark.anyio

FAKE_ADAPTER = Path(__file__).with_name("fake_dap_adapter.py")

#: a process outside every run, with a child of its own; it prints the child's pid
BYSTANDER = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(120)\n"
)


class _FakeAdapter(DebugAdapter):
    id = "fake"
    kind = "the fake DAP adapter's pretend programs"
    commands = ((sys.executable, str(FAKE_ADAPTER)),)
    root_markers = ("fake.marker",)


class _FakePlugin:
    @tether.hookimpl
    def tether_debug_adapters(self) -> list[DebugAdapter]:
        return [_FakeAdapter()]


@pytest.fixture
def bystander() -> Iterator[tuple[int, int]]:
    """(pid, its child's pid) of a process tree the test started, outside any run."""
    proc = subprocess.Popen(
        [sys.executable, "-c", BYSTANDER], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    try:
        yield proc.pid, child
    finally:
        for pid in (child, proc.pid):
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        proc.wait(timeout=10)


@pytest.mark.parametrize("claimed", ["bystander", "bystander's child", "pid 1", "the caller"])
async def test_a_pid_an_adapter_claims_is_not_killed(
    dbg, debug_run, tether_workdir: Path, bystander: tuple[int, int], claimed: str
) -> None:
    pid = {
        "bystander": bystander[0],
        "bystander's child": bystander[1],
        "pid 1": 1,
        "the caller": os.getpid(),
    }[claimed]
    (tether_workdir / "fake.marker").write_text("")
    (tether_workdir / "prog").write_text(f"systemProcessId={pid}")
    adapter_pid = None
    async with debug_run(tether_workdir, plugins=[_FakePlugin()]) as run:
        launched = await dbg.ok(run, op="launch", program="prog", adapter="fake")
        assert f"pid {pid}" in launched  # the adapter did claim it
        adapter_pid = run.process_owner.processes[-1].pid
        await dbg.ok(run, op="terminate")
        await anyio.sleep(0.2)
        assert is_alive(bystander[0]) and is_alive(bystander[1]), "terminate killed a stranger"
        # a second session claiming it again, ended by the run's close this time
        await dbg.ok(run, op="launch", program="prog", adapter="fake")
    await anyio.sleep(0.2)
    assert is_alive(bystander[0]) and is_alive(bystander[1]), "the close killed a stranger"
    assert not is_alive(adapter_pid), "the run's own adapter survived"

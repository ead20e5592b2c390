"""Processes that are not the run's (issue 22, section 4): a debug adapter — a real process
speaking DAP — reports ``systemProcessId`` of a process the run never started; neither
``debug terminate`` nor the run's close may signal it or its children. Generated: every kind
of pid it could name × how the session ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

import tether
import tether_debug.hooks
from tether.processes.managed import is_alive
from tether_debug import DebugAdapter

FAKE_ADAPTER = Path(__file__).parents[2] / "plugins" / "debug" / "tests" / "fake_dap_adapter.py"
AUTO = {"approval": {"read": "auto", "write": "auto", "exec": "auto"}}

#: a process tree outside every run, in a session of its own; it prints its child's pid
BYSTANDER = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen(['sleep', '120'])\n"
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
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        proc.wait(timeout=10)


CLAIMS = ["bystander", "bystander's child", "pid 1", "the harness itself", "the watchdog's parent"]


@pytest.mark.parametrize("ending", ["terminate", "run close"])
@pytest.mark.parametrize("claim", CLAIMS)
def test_a_claimed_pid_that_is_not_the_runs_survives(
    tally, tmp_path: Path, bystander: tuple[int, int], claim: str, ending: str
) -> None:
    pid = {
        "bystander": bystander[0],
        "bystander's child": bystander[1],
        "pid 1": 1,
        "the harness itself": os.getpid(),
        "the watchdog's parent": os.getppid(),
    }[claim]
    (tmp_path / "fake.marker").write_text("")
    (tmp_path / "prog").write_text(f"systemProcessId={pid}")

    async def main() -> tuple[str, int]:
        async with tether.open_run(
            tmp_path,
            conversation_id="c",
            plugins=[tether_debug.hooks, _FakePlugin()],
            entry_points=False,
            config={"core": AUTO},
        ) as run:
            launched = await run.call(
                "debug", {"op": "launch", "program": "prog", "adapter": "fake"}
            )
            adapter = run.process_owner.processes[-1].pid
            if ending == "terminate":
                await run.call("debug", {"op": "terminate"})
            return launched.text_content, adapter

    launched, adapter = anyio.run(main)
    held = (
        is_alive(bystander[0])
        and is_alive(bystander[1])
        and is_alive(os.getppid())
        and not is_alive(adapter)
    )
    tally.record("pid-ownership", held=held)
    assert f"pid {pid}" in launched, launched
    assert held, f"a process that is not the run's was killed ({claim}, {ending})"

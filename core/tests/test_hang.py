"""tether.processes.hang: a stopped or idle process that does not answer is hung, a computing one is busy;
on real processes (``sleep``, a Python loop)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tether.processes.hang import HangWatch, activity


@pytest.fixture
def sleeper() -> Iterator[int]:
    proc = subprocess.Popen(["sleep", "60"])
    yield proc.pid
    proc.kill()
    proc.wait()


@pytest.fixture
def spinner() -> Iterator[int]:
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    yield proc.pid
    proc.kill()
    proc.wait()


def test_a_stopped_process_is_unresponsive_at_the_first_timeout(sleeper: int) -> None:
    watch = HangWatch()
    assert activity({sleeper})[0] is False
    os.kill(sleeper, signal.SIGSTOP)
    deadline = time.monotonic() + 5  # the signal is delivered asynchronously
    while not activity({sleeper})[0] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert activity({sleeper})[0] is True
    watch.timed_out(*activity({sleeper}))
    assert watch.unresponsive and watch.due(1) and not watch.due(2)
    assert re.fullmatch(
        r"unresponsive since \d\d:\d\d:\d\d UTC \(1 request in a row timed out; its processes "
        r"are stopped\)",
        watch.describe(),
    )
    watch.heard()  # an answer clears it, and the count starts over
    assert not watch.unresponsive and watch.timeouts_in_row == 0


def test_an_idle_process_is_unresponsive_at_the_second_timeout(sleeper: int) -> None:
    watch = HangWatch()
    watch.timed_out(*activity({sleeper}))
    assert not watch.unresponsive  # one timeout proves nothing
    time.sleep(0.3)
    watch.timed_out(*activity({sleeper}))
    assert watch.due(2)
    assert re.search(
        r"it used 0\.00 s of CPU in the 0 s since the first of them\)$", watch.describe()
    )


def test_a_computing_process_is_busy_however_many_timeouts(spinner: int) -> None:
    watch = HangWatch()
    for _ in range(3):
        watch.timed_out(*activity({spinner}))
        time.sleep(0.5)
    assert watch.timeouts_in_row == 3 and not watch.unresponsive


def test_without_a_process_to_judge_two_timeouts_are_the_verdict() -> None:
    watch = HangWatch()
    watch.timed_out(False, None)
    assert not watch.unresponsive
    watch.timed_out(False, None)
    assert watch.describe().endswith("nothing was heard from it since the first of them)")
    # a process that is gone is neither stopped nor busy
    assert activity({2**22 + 12345}) == (False, 0)

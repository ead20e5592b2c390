"""A stack frame outside the workdir (the runtime that called the program) is shown as such
(issue 22, section 5): its source lines are not the checkout's. The fake adapter (a real process
speaking DAP) reports a caller frame in /usr/lib; debugpy hides such frames (justMyCode)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import tether
from tether.workdir.paths import OUTSIDE
from tether_debug import DebugAdapter

pytestmark = pytest.mark.anyio

FAKE_ADAPTER = Path(__file__).with_name("fake_dap_adapter.py")


class _FakeAdapter(DebugAdapter):
    id = "fake"
    kind = "the fake DAP adapter's pretend programs"
    commands = ((sys.executable, str(FAKE_ADAPTER)),)
    root_markers = ("fake.marker",)


class _FakePlugin:
    @tether.hookimpl
    def tether_debug_adapters(self) -> list[DebugAdapter]:
        return [_FakeAdapter()]


async def test_a_frame_outside_the_workdir_says_so(dbg, debug_run, tether_workdir: Path) -> None:
    (tether_workdir / "fake.marker").write_text("")
    (tether_workdir / "prog").write_text("")
    async with debug_run(tether_workdir, plugins=[_FakePlugin()]) as run:
        stopped = await dbg.ok(run, op="launch", program="prog", adapter="fake")
        stack = (await dbg.ok(run, op="stack")).splitlines()
    assert "Stopped (entry) at prog:1 in main" in stopped, stopped
    assert "frame_id 1: main at prog:1" in stack, stack
    assert f"frame_id 2: start at /usr/lib/fake-runtime/runtime.py:10{OUTSIDE}" in stack, stack

"""The DAP client's edge cases against a real process speaking DAP (fake_dap_adapter.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import tether
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


async def test_a_reverse_request_gets_an_error_response_and_an_unknown_event_is_ignored(
    dbg, debug_run, tether_workdir: Path
) -> None:
    (tether_workdir / "fake.marker").write_text("")
    (tether_workdir / "prog").write_text("")
    async with debug_run(tether_workdir, plugins=[_FakePlugin()]) as run:
        # The adapter sent runInTerminal and an unknown event while launching: the session
        # still came up and stopped where the adapter said.
        text = await dbg.ok(run, op="launch", program="prog", adapter="fake")
        assert "Stopped (entry) at prog:1 in main (thread_id 1)." in text
        shown = await dbg.ok(run, op="evaluate", expression="reverse_response")
        answer = json.loads(shown.split("\n", 1)[0])
        assert answer["type"] == "response"
        assert answer["command"] == "runInTerminal"
        assert answer["success"] is False
        assert answer["message"] == "tether does not support the reverse request 'runInTerminal'"
        assert isinstance(answer["request_seq"], int) and isinstance(answer["seq"], int)
        assert "Stopped (entry)" in await dbg.ok(run, op="status")
        end = await dbg.ok(run, op="continue")
        assert end.startswith("The session ended: the program exited with code 0.")


async def test_a_pause_the_adapter_loses_is_sent_again(
    dbg, debug_run, tether_workdir: Path
) -> None:
    (tether_workdir / "fake.marker").write_text("")
    (tether_workdir / "lossy").write_text("")
    async with debug_run(
        tether_workdir, plugins=[_FakePlugin()], debug={"stop_timeout_s": 3.0}
    ) as run:
        assert "Stopped (entry)" in await dbg.ok(run, op="launch", program="lossy", adapter="fake")
        assert (await dbg.ok(run, op="continue")).startswith("Still running after 3 s")
        assert (await dbg.ok(run, op="pause")).startswith(
            "Stopped (pause) at lossy:1 in main (thread_id 1)."
        )


async def test_a_message_over_the_limit_is_skipped_and_the_session_goes_on(
    dbg, debug_run, tether_workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether_debug import client

    monkeypatch.setattr(client, "MAX_MESSAGE_BYTES", 1_000_000)
    (tether_workdir / "fake.marker").write_text("")
    (tether_workdir / "prog").write_text("")
    async with debug_run(tether_workdir, plugins=[_FakePlugin()]) as run:
        assert "Stopped (entry)" in await dbg.ok(run, op="launch", program="prog", adapter="fake")
        shown = await dbg.ok(run, op="evaluate", expression="huge_output")
        assert shown.startswith("done")
        output = await dbg.ok(run, op="output")
        assert output.startswith("after the huge one\n") and "hhh" not in output
        end = await dbg.ok(run, op="continue")
        assert end.startswith("The session ended: the program exited with code 0.")

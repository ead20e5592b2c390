"""The five tools over the command runner driving the test agent CLI."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from vibe_testlib import (
    AGENT,
    AGENT_COMMAND,
    alive,
    command_config,
    open_error,
    wait_for_file,
    wait_until,
)

import tether
from tether.testing import check_plugin_contract

VIBE_TOOLS = {"vibe_spawn", "vibe_send", "vibe_wait", "vibe_kill", "vibe_list"}

pytestmark = pytest.mark.anyio


def names(run: Any, surface: str = "default") -> set[str]:
    return {schema["name"] for schema in run.schemas(surface=surface, format="json")}


async def spawn(run: Any, brief: str, label: str = "job", **extra: Any) -> str:
    result = await run.call("vibe_spawn", {"brief": brief, "label": label, **extra})
    assert not result.is_error, result.text_content
    return str(result.meta["worker_id"])


async def test_contract_and_read_tier(vibe_run: Any) -> None:
    async with vibe_run() as run:
        await check_plugin_contract(run)
        # read tier: visible on the read-only surfaces too, with no approval asked
        assert VIBE_TOOLS <= names(run, "plan")
        assert VIBE_TOOLS <= names(run, "readonly")


async def test_no_vibe_tool_without_vibe_mode(vibe_run: Any) -> None:
    async with vibe_run(vibe=False) as run:
        assert not VIBE_TOOLS & names(run)
        assert "vibe_roster" not in run.resources
        result = await run.call("vibe_list", {})
        assert result.is_error
        assert "vibe_list" in result.text_content


async def test_spawn_returns_at_once_then_wait_and_list(
    vibe_run: Any, tether_workdir: Path
) -> None:
    async with vibe_run() as run:
        brief = "say: step 1\nsleep: 0.6\nwrite: out.txt=hello\nsay: all done"
        result = await run.call("vibe_spawn", {"brief": brief, "label": "writer"})
        # it returned before the worker got to its write (no wall-clock bound: a loaded CI
        # machine must not make this flaky)
        assert not (tether_workdir / "out.txt").exists(), "vibe_spawn must not wait for the worker"
        assert result.meta["worker_id"] == "w1"
        assert result.meta["status"] in ("queued", "running")
        assert "w1" in result.text_content

        roster = run.resources["vibe_roster"]
        await wait_until(lambda: "step 1" in roster.get("w1").output.text())
        listing = await run.call("vibe_list", {})
        assert "w1 'writer' [fast] running" in listing.text_content
        assert "step 1" in listing.text_content  # the live tail

        waited = await run.call("vibe_wait", {"worker_id": "w1", "timeout_seconds": 10})
        assert not waited.is_error
        assert waited.meta["status"] == "done"
        assert waited.meta["exit_code"] == 0
        assert "result:\nall done" in waited.text_content
        assert (tether_workdir / "out.txt").read_text() == "hello"

        listing = await run.call("vibe_list", {})
        assert "1 workers (1 done)" in listing.text_content
        assert "result: all done" in listing.text_content
        assert listing.meta["workers"][0]["elapsed_s"] >= 0.6


async def test_wait_timeout_reports_still_running(vibe_run: Any, tmp_path: Path) -> None:
    async with vibe_run() as run:
        pidfile = tmp_path / "pid"
        worker = await spawn(run, f"pidfile: {pidfile}\nsay: started\nhang")
        pid = int(await wait_for_file(pidfile))
        waited = await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": 0.3})
        assert not waited.is_error
        assert waited.meta["timed_out"] is True
        assert waited.meta["status"] == "running"
        assert "Still running after waiting" in waited.text_content
        assert alive(pid), "running means its process is alive"


async def test_send_reruns_with_extended_brief(vibe_run: Any, tmp_path: Path) -> None:
    async with vibe_run() as run:
        pidfile = tmp_path / "pid"
        worker = await spawn(run, f"say: first\npidfile: {pidfile}\nhang-unless-go\nsay: finished")
        first_pid = int(await wait_for_file(pidfile))
        pidfile.unlink()

        sent = await run.call("vibe_send", {"worker_id": worker, "message": "go"})
        assert not sent.is_error, sent.text_content
        assert sent.meta["attempts"] == 2
        assert not alive(first_pid), "the running attempt is stopped before the re-run"

        waited = await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": 10})
        assert waited.meta["status"] == "done"
        assert "result:\nfinished" in waited.text_content
        assert run.resources["vibe_roster"].get(worker).brief.endswith("\n\ngo")

        # a settled worker re-runs too: the follow-up is appended again; while it runs, the
        # previous attempt's result is shown as such
        await run.call(
            "vibe_send",
            {
                "worker_id": worker,
                "message": f"pidfile: {pidfile}\nsleep: 0.5\nsay: and a follow-up",
            },
        )
        await wait_for_file(pidfile)
        listing = await run.call("vibe_list", {})
        assert "running" in listing.text_content
        assert "previous result (attempt 2): finished" in listing.text_content
        waited = await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": 10})
        assert waited.meta["status"] == "done"
        assert waited.meta["attempts"] == 3
        assert "result:\nand a follow-up" in waited.text_content


async def test_crashing_worker_is_failed_with_exit_code_and_stderr(vibe_run: Any) -> None:
    async with vibe_run() as run:
        worker = await spawn(run, "say: working\nstderr: Traceback: KeyError 'token'\nexit: 3")
        waited = await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": 10})
        assert not waited.is_error  # the wait worked; the worker failed
        assert waited.meta["status"] == "failed"
        assert waited.meta["exit_code"] == 3
        assert "reason: exit code 3" in waited.text_content
        assert "last output:\nworking" in waited.text_content  # not presented as a result
        assert "result:" not in waited.text_content
        assert "KeyError 'token'" in waited.text_content
        listing = await run.call("vibe_list", {})
        assert "failed" in listing.text_content and "KeyError 'token'" in listing.text_content


async def test_worker_killed_from_outside_is_failed_with_the_signal(
    vibe_run: Any, tmp_path: Path
) -> None:
    async with vibe_run() as run:
        pidfile = tmp_path / "pid"
        worker = await spawn(run, f"pidfile: {pidfile}\nsay: working\nhang")
        os.kill(int(await wait_for_file(pidfile)), signal.SIGKILL)  # the OOM killer, say
        waited = await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": 10})
        assert waited.meta["status"] == "failed"
        assert "killed by SIGKILL (not by tether)" in waited.text_content


async def test_stream_json_result_event(vibe_run: Any) -> None:
    config = command_config(runners={"fast": {"command": AGENT_COMMAND, "result": "stream-json"}})
    async with vibe_run(config=config) as run:
        ok = await spawn(run, "say: preamble\nstream-json: The fix is in auth.py")
        bad = await spawn(run, "stream-error: gave up after 3 turns")
        missing = await spawn(run, "say: no events at all")
        waited = await run.call("vibe_wait", {"worker_id": ok, "timeout_seconds": 10})
        assert waited.meta["status"] == "done"
        assert "result:\nThe fix is in auth.py" in waited.text_content
        tail = run.resources["vibe_roster"].get(ok).output.text()
        assert "working on it" in tail and "[tool Bash]" in tail  # events rendered, not raw JSON
        assert '"type"' not in tail

        waited = await run.call("vibe_wait", {"worker_id": bad, "timeout_seconds": 10})
        assert waited.meta["status"] == "failed"
        assert "error_during_execution" in waited.text_content
        assert "gave up after 3 turns" in waited.text_content

        waited = await run.call("vibe_wait", {"worker_id": missing, "timeout_seconds": 10})
        assert waited.meta["status"] == "failed"
        assert 'no stream-json "result" event' in waited.text_content


async def test_a_line_over_the_limit_is_skipped_with_a_note(
    vibe_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether_vibe import runners

    monkeypatch.setattr(runners, "MAX_LINE_BYTES", 1000)
    script = 'printf \'{"type": "result", "result": "%05000d"}\\n\' 0; echo "$0"'
    config = command_config(
        runners={"fast": {"command": ["/bin/sh", "-c", script, "{brief}"], "result": "stream-json"}}
    )
    async with vibe_run(config=config) as run:
        worker = await spawn(run, "still read after it")
        waited = await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": 10})
        assert waited.meta["status"] == "failed"
        assert 'no stream-json "result" event in the output (1 line over 1000 bytes skipped)' in (
            waited.text_content
        )
        tail = run.resources["vibe_roster"].get(worker).output.text()
        assert '[a line over the limit of 1000 bytes was skipped; it began \'{"type"' in tail
        assert "still read after it" in tail


async def test_output_of_a_worker_that_exits_at_once_is_not_lost(vibe_run: Any) -> None:
    config = command_config(
        runners={
            "fast": {
                "command": ["/bin/sh", "-c", 'echo "$0"; echo "err $0" >&2; exit 1', "{brief}"]
            }
        },
    )
    async with vibe_run(config=config) as run:
        workers = [await spawn(run, f"answer {i}") for i in range(8)]
        for i, worker in enumerate(workers):
            waited = await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": 10})
            assert waited.meta["status"] == "failed" and waited.meta["exit_code"] == 1
            roster_worker = run.resources["vibe_roster"].get(worker)
            assert roster_worker.result == f"answer {i}", roster_worker.result
            assert f"err answer {i}" in roster_worker.stderr_tail


async def test_auto_mode_prefers_result_event_else_last_line(vibe_run: Any) -> None:
    async with vibe_run() as run:
        event = await spawn(run, "stream-json: from the event\nsay: trailing noise")
        line = await spawn(run, "say: first\nsay: the last line\n")
        json_answer = await spawn(run, 'say: {"type": "summary", "files": 3}')
        await run.call("vibe_wait", {"worker_id": event, "timeout_seconds": 10})
        await run.call("vibe_wait", {"worker_id": line, "timeout_seconds": 10})
        roster = run.resources["vibe_roster"]
        assert roster.get(event).result == "from the event"
        assert roster.get(line).result == "the last line"
        await run.call("vibe_wait", {"worker_id": json_answer, "timeout_seconds": 10})
        # JSON that is not a stream-json event is ordinary output
        assert roster.get(json_answer).result == '{"type": "summary", "files": 3}'


async def test_auto_mode_with_a_result_file(vibe_run: Any) -> None:
    config = command_config(runners={"fast": {"command": AGENT_COMMAND, "result_file": "OUT.md"}})
    async with vibe_run(config=config) as run:
        wrote = await spawn(run, "write: OUT.md=from the file\nsay: last line")
        await run.call("vibe_wait", {"worker_id": wrote, "timeout_seconds": 10})
        skipped = await spawn(run, "say: only a line")
        await run.call("vibe_wait", {"worker_id": skipped, "timeout_seconds": 10})
        roster = run.resources["vibe_roster"]
        assert roster.get(wrote).result == "from the file"
        assert roster.get(skipped).result == "only a line"


async def test_result_file(vibe_run: Any) -> None:
    config = command_config(
        runners={"fast": {"command": AGENT_COMMAND, "result": "file", "result_file": "REPORT.md"}}
    )
    async with vibe_run(config=config) as run:
        wrote = await spawn(run, "write: REPORT.md=# Report\nsay: noise on stdout")
        waited = await run.call("vibe_wait", {"worker_id": wrote, "timeout_seconds": 10})
        assert waited.meta["status"] == "done"
        assert "result:\n# Report" in waited.text_content

        # REPORT.md from the first worker is still there: an unchanged file is not a result
        forgot = await spawn(run, "say: I forgot the report")
        waited = await run.call("vibe_wait", {"worker_id": forgot, "timeout_seconds": 10})
        assert waited.meta["status"] == "failed"
        assert "result file REPORT.md was not written (it still holds an earlier content)" in (
            waited.text_content
        )
        (run.workdir / "REPORT.md").unlink()
        forgot = await spawn(run, "say: I forgot the report again")
        waited = await run.call("vibe_wait", {"worker_id": forgot, "timeout_seconds": 10})
        assert waited.meta["status"] == "failed"
        assert "result file REPORT.md was not written" in waited.text_content


async def test_brief_on_stdin_when_command_has_no_placeholder(vibe_run: Any) -> None:
    config = command_config(runners={"good": {"command": [AGENT_COMMAND[0], str(AGENT)]}})
    async with vibe_run(config=config) as run:
        worker = await spawn(run, "say: read from stdin", tier="good")
        waited = await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": 10})
        assert waited.meta["status"] == "done"
        assert "read from stdin" in waited.text_content


async def test_output_and_results_are_bounded(vibe_run: Any, tmp_path: Path) -> None:
    async with vibe_run(config=command_config(output_tail_bytes=4000, result_chars=100)) as run:
        pidfile = tmp_path / "pid"
        running = await spawn(run, f"lines: 500\nlong: 1000\nlines: 3\npidfile: {pidfile}\nhang")
        finished = await spawn(run, "long: 1000")
        await wait_for_file(pidfile)
        roster = run.resources["vibe_roster"]
        await wait_until(lambda: roster.get(running).output.text().endswith("line 3\n"))
        assert len(roster.get(running).output) <= 4000
        waited = await run.call("vibe_wait", {"worker_id": running, "timeout_seconds": 0})
        text = waited.text_content
        assert "earlier bytes dropped]" in text and "earlier lines not shown]" in text
        assert "x" * 300 + "… (700 more characters)\nline 1\nline 2\nline 3" in text
        assert "line 485" in text and "line 484" not in text  # 20 lines at most
        listing = await run.call("vibe_list", {})
        assert "line 500\nxxx" in listing.text_content
        assert "line 499" not in listing.text_content  # 5 lines in the list
        waited = await run.call("vibe_wait", {"worker_id": finished, "timeout_seconds": 10})
        assert "x" * 100 + "… (900 more characters)" in waited.text_content


# -- bad input -------------------------------------------------------------------------------


async def test_unknown_worker_id(vibe_run: Any) -> None:
    async with vibe_run() as run:
        await spawn(run, "say: hi")
        for tool, args in [
            ("vibe_wait", {"worker_id": "w9"}),
            ("vibe_kill", {"worker_id": "w9"}),
            ("vibe_send", {"worker_id": "w9", "message": "more"}),
        ]:
            result = await run.call(tool, args)
            assert result.is_error, tool
            assert "worker_id" in result.text_content and "w9" in result.text_content
            assert "known: w1" in result.text_content


async def test_empty_brief_label_and_message(vibe_run: Any) -> None:
    async with vibe_run() as run:
        result = await run.call("vibe_spawn", {"brief": "  \n", "label": "x"})
        assert result.is_error and "brief: expected a non-empty string" in result.text_content
        result = await run.call("vibe_spawn", {"brief": "say: hi", "label": ""})
        assert result.is_error and "label" in result.text_content
        worker = await spawn(run, "say: hi")
        result = await run.call("vibe_send", {"worker_id": worker, "message": ""})
        assert result.is_error and "message" in result.text_content
        assert list(run.resources["vibe_roster"].workers) == ["w1"]


async def test_unknown_tier_and_unconfigured_tier(vibe_run: Any) -> None:
    config = command_config(runners={"fast": {"command": AGENT_COMMAND}})
    async with vibe_run(config=config) as run:
        result = await run.call("vibe_spawn", {"brief": "say: hi", "label": "x", "tier": "medium"})
        assert result.is_error and "tier" in result.text_content
        result = await run.call("vibe_spawn", {"brief": "say: hi", "label": "x", "tier": "good"})
        assert result.is_error
        assert "tier" in result.text_content and "configured: fast" in result.text_content
        assert not run.resources["vibe_roster"].workers


async def test_send_to_killed_worker_is_refused(vibe_run: Any) -> None:
    async with vibe_run() as run:
        worker = await spawn(run, "hang")
        killed = await run.call("vibe_kill", {"worker_id": worker})
        assert killed.meta["status"] == "killed"
        result = await run.call("vibe_send", {"worker_id": worker, "message": "go on"})
        assert result.is_error
        assert "was killed" in result.text_content and "vibe_spawn" in result.text_content
        assert run.resources["vibe_roster"].get(worker).status == "killed"


async def test_runner_command_that_does_not_exist(vibe_run: Any) -> None:
    config = command_config(runners={"fast": {"command": ["no-such-agent-cli", "{brief}"]}})
    async with vibe_run(config=config) as run:
        result = await run.call("vibe_spawn", {"brief": "say: hi", "label": "x"})
        assert result.is_error
        assert "no-such-agent-cli" in result.text_content and "not found" in result.text_content
        listing = await run.call("vibe_list", {})
        assert "No workers yet" in listing.text_content


async def test_runner_that_cannot_exec_is_failed(vibe_run: Any, tether_workdir: Path) -> None:
    """Passes the pre-check (an executable file) but exec fails: the worker is failed, not running."""
    script = tether_workdir / "agent.sh"
    script.write_text("#!/nonexistent/interpreter\n")
    script.chmod(0o755)
    config = command_config(runners={"fast": {"command": ["./agent.sh", "{brief}"]}})
    async with vibe_run(config=config) as run:
        worker = await spawn(run, "say: hi")
        waited = await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": 10})
        assert waited.meta["status"] == "failed"
        assert "could not start './agent.sh'" in waited.text_content
        assert "No such file or directory" in waited.text_content
        missing = command_config(runners={"fast": {"command": ["./missing.sh", "{brief}"]}})
    async with vibe_run(config=missing) as run:
        refused = await run.call("vibe_spawn", {"brief": "say: hi", "label": "x"})
        assert (
            refused.is_error and "'./missing.sh' is not an executable file" in refused.text_content
        )


async def test_bad_wait_timeout(vibe_run: Any) -> None:
    async with vibe_run() as run:
        worker = await spawn(run, "say: hi")
        result = await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": -1})
        assert result.is_error and "timeout_seconds" in result.text_content


async def test_bad_config(vibe_run: Any) -> None:
    for config, message in [
        (
            {"vibe": {"runners": {"medium": {"command": ["x"]}}}},
            "vibe.runners.medium: unknown tier",
        ),
        (command_config(max_concurrent=0), "vibe.max_concurrent: expected a number above 0, got 0"),
        (command_config(idle_timeout_s=-1.0), "vibe.idle_timeout_s: expected a number above 0"),
        (
            command_config(default_wait_s=99.0, max_wait_s=10.0),
            "vibe.default_wait_s: expected at most max_wait_s (10)",
        ),
        (
            {"vibe": {"runners": {"fast": {"command": []}}}},
            "vibe.runners.fast.command: expected length at least 1, got 0",
        ),
        (
            {"vibe": {"runners": {"good": {"command": ["x"], "result": "file"}}}},
            "vibe.runners.good.result_file: required",
        ),
        ({"vibe": {"isolation": "docker"}}, "isolation"),
        (command_config(bogus=1), "bogus"),
        ({"vibe": {"runners": {"fast": {"command": "agent {brief}"}}}}, "command"),
    ]:
        error = await open_error(vibe_run, config=config)
        assert isinstance(error, tether.ConfigError), (config, error)
        assert message in str(error)


async def test_a_result_larger_than_the_budget_is_cut_and_the_worker_asked_for_less(
    vibe_run: Any,
) -> None:
    """The core's result budget over vibe_wait: the worker's long answer is cut with a notice,
    and the continuation it names (vibe_send a narrower request) gives a whole answer."""
    config = {**command_config(), "core": {"result_budget": {"tools": {"vibe_wait": 1200}}}}
    async with vibe_run(config=config) as run:
        long_line = " ".join(f"finding-{i}" for i in range(400))
        worker = await spawn(run, f"say: {long_line}")
        waited = await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": 10})
        assert waited.meta["status"] == "done", waited.text_content
        texts = [block.text for block in waited.content]
        assert sum(len(t) for t in texts) <= 1200
        assert "result:\nfinding-0 finding-1" in texts[0]
        assert texts[-1].startswith("[tether cut this result to its budget:")
        assert "vibe_send the worker a request for the part you need" in texts[-1]
        sent = await run.call("vibe_send", {"worker_id": worker, "message": "say: finding-7"})
        assert not sent.is_error, sent.text_content
        again = await run.call("vibe_wait", {"worker_id": worker, "timeout_seconds": 10})
        assert "budget" not in again.meta and "result:\nfinding-7" in again.text_content

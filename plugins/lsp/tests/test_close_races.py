"""A close or a reload racing the start of a server (issue 22, section 5): the run must close
cleanly and every call must answer, whatever order they meet in. A real jedi-language-server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from lsp_testkit import copy_project, need

import tether
from tether.processes.managed import is_alive

JEDI = {"servers": {"python": ["jedi-language-server"]}}
HOVER = {"action": "hover", "file": "pkg/use.py", "line": 3, "symbol": "make_square"}


def mixed_requests(count: int) -> list[dict[str, object]]:
    """reload, hover and status in turn: each reload pulls the server out from under the
    others while they start or ask it."""
    kinds = [{"action": "reload"}, HOVER, {"action": "status"}]
    return [{"id": n, "tool": "lsp", "args": kinds[n % len(kinds)]} for n in range(1, count + 1)]


def test_thirty_concurrent_reload_hover_status_then_close(tmp_path: Path) -> None:
    need("jedi-language-server")
    work = copy_project("pyproj", tmp_path)
    harness = tmp_path / "harness.toml"
    harness.write_text('[lsp.servers]\npython = ["jedi-language-server"]\n')
    lines = "".join(json.dumps(r) + "\n" for r in mixed_requests(30))
    env = {**os.environ, "TETHER_DISABLE_PLUGINS": "ruff"}
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli", "session", f"--workdir={work}", f"--config={harness}"],
        input=lines,
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    answered = {r["id"] for r in replies if "id" in r}
    assert answered == set(range(1, 31)), sorted(answered)
    hovers = [r for r in replies if r.get("id", 0) % 3 == 2]
    # a hover may meet a server being restarted, but never a crash of the supervisor
    assert all("KeyError" not in json.dumps(r) for r in replies)
    assert any(not r["is_error"] for r in hovers), hovers[:3]


@pytest.mark.parametrize("after_s", [0.1, 0.5])
def test_a_run_closing_while_servers_start_and_reload(tmp_path: Path, after_s: float) -> None:
    """The run closes while 30 calls start, reload and ask the server: the close neither raises
    nor leaves a server behind."""
    need("jedi-language-server")
    work = copy_project("pyproj", tmp_path)
    pids = anyio.run(close_amid_calls, work, after_s)
    assert not any(is_alive(pid) for pid in pids)


async def close_amid_calls(work: Path, after_s: float) -> set[int]:
    async with tether.open_run(work, config={"lsp": JEDI}) as run:
        owner = run.process_owner
        for request in mixed_requests(30):
            # in the run's own task group: the calls are still going when the close begins
            run.task_group.start_soon(run.call, "lsp", request["args"])
        await anyio.sleep(after_s)
    return {p.pid for p in owner.processes}

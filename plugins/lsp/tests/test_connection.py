"""One server's connection is its own: its reader runs in the connection's task group, closing
the client ends it, and a reader that fails takes down that client only.

The servers are real processes speaking LSP (fake_lsp_server.py, scripted to misbehave) beside a
second one that behaves: what one of them does must not reach the other, nor the run.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio import TaskInfo
from lsp_testkit import copy_project, need

import tether
from tether.processes.launch import SAFE
from tether.processes.managed import is_alive
from tether.testing import call_error, call_ok
from tether_lsp import ServerSpec
from tether_lsp.tools import RESOURCE

pytestmark = pytest.mark.anyio

FAKE = str(Path(__file__).parent / "fake_lsp_server.py")
CONFIG = {
    "core": {"approval": {"read": "auto", "write": "auto", "exec": "ask"}},
    "lsp": {"request_timeout_s": 2.0, "start_timeout_s": 10.0, "max_restarts": 2},
}


class TwoServers:
    """``fake`` (in ``mode``) answers ``.fake`` files, ``other`` (well behaved) ``.other``."""

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode

    @tether.hookimpl
    def tether_lsp_servers(self) -> list[ServerSpec]:
        return [
            ServerSpec(
                id=sid,
                untrusted=SAFE,
                language=sid,
                extensions={f".{sid}": sid},
                command=(sys.executable, FAKE, mode),
                root_markers=("fake.toml",),
            )
            for sid, mode in (("fake", self.mode), ("other", "ok"))
        ]


def project(workdir: Path) -> Path:
    (workdir / "fake.toml").write_text("")
    for name in ("main.fake", "main.other"):
        (workdir / name).write_text("def alpha\nalpha alpha\n")
    return workdir


def definition(file: str) -> dict[str, Any]:
    return {"action": "definition", "file": file, "line": 2, "symbol": "alpha#2"}


def readers() -> dict[int, TaskInfo]:
    """The running tasks that read a language server's output, by task id (anyio names a task
    after its function: ``tether_lsp.rpc.RpcConnection._read_loop``)."""
    return {task.id: task for task in anyio.get_running_tasks() if task.name.endswith("_read_loop")}


def finished(task: TaskInfo) -> bool:
    """The task ran to its end (its coroutine closed: a task id may be reused once it is gone)."""
    return inspect.getcoroutinestate(task.coro) == inspect.CORO_CLOSED  # type: ignore[arg-type]


JEDI_DEFINITION = {"action": "definition", "file": "pkg/use.py", "line": 3, "symbol": "make_square"}


@pytest.mark.parametrize(
    ("closed", "server", "other"),
    [
        pytest.param("main.fake", "fake", "main.other", id="fake"),
        pytest.param("pkg/use.py", "jedi-language-server", "main.fake", id="jedi-language-server"),
    ],
)
async def test_closing_a_client_ends_its_reader_and_leaves_the_run_working(
    tmp_path: Path, closed: str, server: str, other: str
) -> None:
    ask, config = definition(closed), CONFIG
    if server != "fake":  # a real server, beside the fake
        need(server)
        tmp_path = copy_project("pyproj", tmp_path)
        ask = JEDI_DEFINITION
        config = {**CONFIG, "lsp": {**CONFIG["lsp"], "servers": {"python": [server]}}}
    project(tmp_path)
    async with tether.open_run(tmp_path, config=config, plugins=[TwoServers()]) as run:
        # this task entered the run's task group: its direct children are the run's tasks
        run_host = anyio.get_current_task().id
        supervisor = run.resource(RESOURCE)
        await call_ok(run, "lsp", ask)
        (client,) = supervisor.clients
        (reader,) = readers().values()
        # the reader is held by the connection's own task group, not by the run's
        assert reader.parent_id != run_host
        holder = {task.id: task for task in anyio.get_running_tasks()}[reader.parent_id]
        await call_ok(run, "lsp", definition(other))
        assert len(readers()) == 2
        old_pid = client.pid
        assert old_pid is not None and is_alive(old_pid)

        # what the supervisor does on a restart: close the client, start a new one
        said = await supervisor.reload(tmp_path / closed)
        assert said.startswith(f"restarted {server} for ."), said
        # closed means ended, at once: its reader and the task that held it are done, and the
        # process is reaped
        assert finished(reader) and finished(holder)
        assert not is_alive(old_pid)
        assert not client.alive and client.exit_reason == "closed by tether"
        assert len(readers()) == 2  # the new server's and the other's

        # the run works: both servers answer, the restarted one from its new process
        await call_ok(run, "lsp", definition(other))
        await call_ok(run, "lsp", ask)
        (new,) = [c for c in supervisor.clients if c.spec.id == server]
        assert new.pid != old_pid and new.alive
        await call_ok(run, "read", {"path": closed})


@pytest.mark.parametrize(
    ("mode", "action", "said"),
    [
        pytest.param(
            "garbage",
            "hover",
            "fake exited (stopped by tether, its output unreadable: missing or unusable "
            "Content-Length in header 'this is not LSP', exit code -15)",
            id="unframed bytes",
        ),
        pytest.param(
            "not-object",
            "hover",
            "fake exited (stopped by tether, its output unreadable: a message that is not a "
            "JSON object: [1, 2], exit code -15)",
            id="a message that is not an object",
        ),
        pytest.param("ok", "references", "fake exited (its output closed, exit code 3)", id="dies"),
    ],
)
async def test_a_failing_reader_ends_that_client_only(
    tmp_path: Path, mode: str, action: str, said: str
) -> None:
    project(tmp_path)
    async with tether.open_run(tmp_path, config=CONFIG, plugins=[TwoServers(mode)]) as run:
        supervisor = run.resource(RESOURCE)
        await call_ok(run, "lsp", definition("main.fake"))
        (fake,) = supervisor.clients
        (reader,) = readers().values()
        await call_ok(run, "lsp", definition("main.other"))
        (other,) = [client for client in supervisor.clients if client is not fake]
        args = {"action": action, "file": "main.fake", "line": 1, "symbol": "alpha"}
        text = await call_error(run, "lsp", args)
        # the error names the server and what went wrong; its process is gone, its reader ended
        assert text.startswith(said), text
        assert fake.pid is not None and not is_alive(fake.pid)
        assert not fake.alive and finished(reader)
        # the other server, the run's other tools and the run itself are untouched
        assert other.alive and not other.hang.unresponsive and len(readers()) == 1
        await call_ok(run, "lsp", definition("main.other"))
        await call_ok(run, "read", {"path": "main.other"})
        # and the failed server is started afresh by the next query
        await call_ok(run, "lsp", definition("main.fake"))
        (again,) = [client for client in supervisor.clients if client.spec.id == "fake"]
        assert again is not fake and again.alive and other in supervisor.clients

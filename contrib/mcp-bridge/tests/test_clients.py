"""End to end with real MCP clients nobody here wrote, each in its own environment outside the
workspace (tests/clients/setup_clients.py, also run by ci/install.sh): the `mcp<2` SDK
(2025-11-25), the `mcp` 2.x SDK (2026-07-28), the TypeScript SDK from npm, pydantic-ai."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent / "clients"
sys.path.insert(0, str(HERE))

PY_CLIENTS = {"mcp1": "py_legacy.py", "mcp2": "py_modern.py"}
ECHO_ALLOW = {"action": "accept", "content": {"choice": "allow"}}


class Server:
    """The argv and environment of one `tether mcp` server; its processes carry a marker."""

    def __init__(self, workdir: Path | None, *flags: str, script: bool = False) -> None:
        self.mark = uuid.uuid4().hex
        head = (
            [str(Path(sys.executable).parent / "tether-mcp-bridge")]
            if script
            else [sys.executable, "-m", "tether.cli", "mcp"]
        )
        self.argv = [*head, *(["--workdir", str(workdir)] if workdir else []), *flags]
        self.env = {**os.environ, "TETHER_MCP_TEST_MARK": self.mark}

    def processes(self) -> list[int]:
        """Live processes that inherited this server's marker (the server and its children)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                environ = (entry / "environ").read_bytes()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if f"TETHER_MCP_TEST_MARK={self.mark}".encode() in environ and state != "Z":
                found.append(int(entry.name))
        return found

    def wait_gone(self, timeout: float = 20.0) -> list[int]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            left = self.processes()
            if not left:
                return []
            time.sleep(0.2)
        return self.processes()


def client_cmd(envs: dict[str, Path], client: str, config: dict[str, Any]) -> list[str]:
    if client == "ts":
        # node resolves the SDK from the script's own directory: run a copy kept beside it
        script = envs["ts-sdk"] / "ts_client.mjs"
        script.write_text((HERE / "ts_client.mjs").read_text())
        return ["node", str(script), json.dumps(config)]
    script = "pydantic_ai_client.py" if client == "pydantic-ai" else PY_CLIENTS[client]
    return [str(envs[client] / "bin" / "python"), str(HERE / script), json.dumps(config)]


def run_client(
    envs: dict[str, Path], client: str, server: Server, scenario: str, **config: Any
) -> dict[str, Any]:
    config = {"server": server.argv, "env": server.env, "scenario": scenario, **config}
    out = subprocess.run(
        client_cmd(envs, client, config), capture_output=True, text=True, timeout=180
    )
    assert out.returncode == 0, out.stderr[-4000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert server.wait_gone() == [], "processes left after the client disconnected"
    return seen


def text_of(result: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in result.get("content", []))


LEGACY = ["mcp1", "ts"]
BOTH = ["mcp1", "mcp2", "ts"]


@pytest.mark.parametrize("client", BOTH)
def test_tools_of_default_and_plan_carry_tier_annotations(client_envs, workdir, client):
    seen = run_client(client_envs, client, Server(workdir), "tools")
    tools = {t["name"]: t for t in seen["tools"]}
    assert {"ast_grep", "lsp", "eval", "debug", "ask_user", "echo_write"} <= set(tools)
    assert tools["ast_grep"]["annotations"] == {"readOnlyHint": True, "destructiveHint": False}
    for name in ("eval", "debug", "echo_write"):
        assert tools[name]["annotations"] == {"readOnlyHint": False, "destructiveHint": True}
    schema = tools["lsp"]["inputSchema"]
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert "action" in schema["required"] and tools["lsp"]["description"]
    plan = run_client(client_envs, client, Server(workdir, "--surface", "plan"), "tools")
    names = {t["name"] for t in plan["tools"]}
    assert "ast_grep" in names and "lsp" in names
    assert not names & {"eval", "debug", "echo_write", "write"}
    assert all(t["annotations"]["readOnlyHint"] is True for t in plan["tools"])


@pytest.mark.parametrize("client", ["mcp1", "mcp2"])
def test_calls_to_ast_grep_lsp_eval_and_debug(client_envs, workdir, client):
    calls = [
        ["ast_grep", {"pattern": "def $F(): $$$", "language": "python"}],
        ["lsp", {"action": "hover", "file": "a.py", "line": 5, "symbol": "foo"}],
        ["eval", {"code": "print(6 * 7)", "description": "print the product of six and seven"}],
        ["debug", {"op": "adapters"}],
    ]
    seen = run_client(
        client_envs, client, Server(workdir, "--approve", "exec"), "calls", calls=calls
    )
    grep, hover, cell, debug = seen["results"]
    assert not grep.get("isError") and "a.py" in text_of(grep) and "foo" in text_of(grep)
    assert not hover.get("isError") and "def foo()" in text_of(hover)
    assert not cell.get("isError") and "42" in text_of(cell)
    assert cell["_meta"]["tether/meta"]["language"] == "python"
    assert not debug.get("isError") and "debugpy" in text_of(debug)


@pytest.mark.parametrize("client", ["mcp1", "mcp2"])
def test_bad_client_input_is_an_mcp_error_and_the_server_goes_on(client_envs, workdir, client):
    calls = [
        ["no_such_tool", {}],
        ["echo", {"message": 12345}],
        ["echo", {"message": "still here"}],
    ]
    seen = run_client(client_envs, client, Server(workdir), "calls", calls=calls)
    unknown, bad, good = seen["results"]
    assert "unknown tool 'no_such_tool'" in unknown["mcp_error"]
    assert bad["isError"] is True and "message" in text_of(bad)
    assert not good.get("isError") and "still here" in text_of(good)


@pytest.mark.parametrize("client", BOTH)
def test_ask_user_and_approval_round_trips(client_envs, workdir, client):
    long_text = "x" * 3000 + " END"
    calls = [
        [
            "ask_user",
            {
                "question": "Which colour?",
                "options": [{"label": "red"}, {"label": "blue", "description": "the sea"}],
            },
        ],
        ["echo_write", {"path": "ok.txt", "text": long_text}],
        ["echo_write", {"path": "no.txt", "text": "refused"}],
        ["ask_user", {"question": "Anything else?", "allow_free_text": True}],
    ]
    answers = [
        {"action": "accept", "content": {"choice": "blue"}},
        ECHO_ALLOW,
        {"action": "decline"},
        {"action": "cancel"},
    ]
    seen = run_client(client_envs, client, Server(workdir), "calls", calls=calls, answers=answers)
    asked, allowed, refused, skipped = seen["results"]
    assert not asked.get("isError") and "blue" in text_of(asked)
    assert not allowed.get("isError") and (workdir / "ok.txt").read_text() == long_text
    assert refused.get("isError") and not (workdir / "no.txt").exists()
    # what is known: the client declined (a headless client declines on its own), and the way out
    assert 'answered the approval request with "decline"' in text_of(refused)
    assert "--approve write" in text_of(refused), text_of(refused)
    assert '[core.approval.tools] echo_write = "auto"' in text_of(refused)
    assert "the person denied" not in text_of(refused)
    assert "skip" in text_of(skipped).lower()
    question, approval, _, free = seen["elicitations"]
    assert question["message"].startswith("Which colour?")
    assert [o["const"] for o in question["schema"]["properties"]["choice"]["oneOf"]] == [
        "red",
        "blue",
    ]
    assert approval["message"].startswith("May I run echo_write")
    assert long_text in approval["message"]  # the whole arguments, never shortened
    assert free["schema"]["properties"]["text"]["type"] == "string"


@pytest.mark.parametrize("client", BOTH)
def test_a_client_without_elicitation_fails_closed_at_once(client_envs, workdir, client):
    calls = [
        ["echo_write", {"path": "no.txt", "text": "refused"}],
        ["ask_user", {"question": "Which colour?", "options": [{"label": "red"}]}],
    ]
    seen = run_client(client_envs, client, Server(workdir), "calls", calls=calls, elicitation=False)
    write, ask = seen["results"]
    for result in (write, ask):
        assert result["isError"] is True
        assert "elicitation" in text_of(result)
        assert result["elapsed_s"] < 30  # at once, not after [ask] timeout_s (600 s)
    assert "--approve write" in text_of(write)  # the way out, always
    assert not (workdir / "no.txt").exists()
    assert seen["elicitations"] == []


@pytest.mark.parametrize("client", BOTH)
def test_per_tool_approval_from_the_harness_config(client_envs, workdir, tmp_path, client):
    """`[core.approval.tools]` approves one tool without a person; its tier stays "ask" for the
    others, and a workdir file cannot loosen it back."""
    config = tmp_path / "harness.toml"
    config.write_text('[core.approval.tools]\necho_write = "auto"\n')
    # the workdir tries to approve the exec tier and to add a tool entry: both ignored
    (workdir / "tether.toml").write_text(
        '[core.approval]\nexec = "auto"\n[core.approval.tools]\necho_exec = "auto"\n'
    )
    calls = [
        ["echo_write", {"path": "ok.txt", "text": "approved by policy"}],
        ["echo_exec", {"argv": ["true"]}],
    ]
    server = Server(workdir, "--config", str(config))
    seen = run_client(client_envs, client, server, "calls", calls=calls, elicitation=False)
    write, run = seen["results"]
    assert not write.get("isError"), text_of(write)
    assert (workdir / "ok.txt").read_text() == "approved by policy"
    assert run["isError"] is True and "--approve exec" in text_of(run), text_of(run)
    assert seen["elicitations"] == []


@pytest.mark.parametrize("client", ["mcp1", "mcp2"])
def test_progress_then_cancel_interrupts_a_long_eval_cell_and_keeps_state(
    client_envs, workdir, client
):
    seen = run_client(client_envs, client, Server(workdir, "--approve", "exec"), "cancel")
    assert seen["progress"], "no progress notification for a long call"
    value, total, message = seen["progress"][0]
    assert value > 0 and total is None and "running" in message
    assert "long_call_returned" not in seen
    assert text_of(seen["after"]).startswith("42"), seen["after"]
    assert seen["elapsed_s"] < 50  # the 60 s sleep was interrupted
    if client == "mcp1":
        assert any("cancelled" in line and "kept" in line for line in seen["logs"])


@pytest.mark.parametrize("client", ["mcp1", "mcp2"])
def test_no_process_left_after_the_client_is_killed(client_envs, workdir, client):
    server = Server(workdir, "--approve", "exec")
    config = {
        "server": server.argv,
        "env": server.env,
        "scenario": "hold",
        "calls": [["eval", {"code": "1", "description": "start the python kernel for this test"}]],
    }
    proc = subprocess.Popen(
        client_cmd(client_envs, client, config), stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert json.loads(proc.stdout.readline()) == {"ready": True}
        assert len(server.processes()) >= 2  # the server and the kernel at least
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert server.wait_gone() == []


def test_workdir_from_the_single_root_a_client_offers(client_envs, workdir, tmp_path):
    calls = [["read", {"path": "a.py"}]]
    seen = run_client(
        client_envs, "mcp1", Server(None), "calls", calls=calls, roots=[workdir.as_uri()]
    )
    assert "def foo" in text_of(seen["results"][0])
    other = tmp_path / "other"
    other.mkdir()
    two = run_client(
        client_envs,
        "mcp1",
        Server(None),
        "calls",
        calls=calls,
        roots=[workdir.as_uri(), other.as_uri()],
    )
    error = two["results"][0]["mcp_error"]
    assert "--workdir" in error and "exactly one" in error


def test_the_console_script_serves_too(client_envs, workdir):
    seen = run_client(
        client_envs,
        "mcp2",
        Server(workdir, script=True),
        "calls",
        calls=[["echo", {"message": "hi"}]],
    )
    assert "hi" in text_of(seen["results"][0])


def test_pydantic_ai_agent_goes_on_after_a_refusal_with_tool_error_behavior_failed(
    client_envs, workdir
):
    """pydantic-ai declares no elicitation, so a write is refused. With its default
    (`tool_error_behavior="retry"`) the refusal is a ModelRetry: a model that tries again
    aborts the whole run ("exceeded max retries count of 1"). With "failed" (the setting the
    README names) the model sees the refusal, with the way out, and the run goes on."""
    server = Server(workdir)
    write = ["echo_write", {"path": "no.txt", "text": "refused"}]
    outcomes = {}
    for behavior in ("retry", "failed"):
        config = {"server": server.argv, "env": server.env, "calls": [write, write, write]}
        config["behavior"] = behavior
        out = subprocess.run(
            client_cmd(client_envs, "pydantic-ai", config),
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        outcomes[behavior] = json.loads(out.stdout.strip().splitlines()[-1])
    assert "exceeded max retries" in outcomes["retry"].get("aborted", ""), outcomes["retry"]
    said = outcomes["failed"].get("output", "")
    assert "refused" in said and "--approve write" in said, outcomes["failed"]
    assert not (workdir / "no.txt").exists()


def test_pydantic_ai_lists_the_tools_and_calls_one(client_envs, workdir):
    server = Server(workdir)
    config = {
        "server": server.argv,
        "env": server.env,
        "calls": [["echo", {"message": "from pai"}]],
    }
    out = subprocess.run(
        client_cmd(client_envs, "pydantic-ai", config), capture_output=True, text=True, timeout=180
    )
    assert out.returncode == 0, out.stderr[-4000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert {"ast_grep", "lsp", "echo"} <= set(seen["tools"])
    assert "from pai" in json.dumps(seen["results"])
    assert server.wait_gone() == []


#: how long the gated test plugin's import waits for the client's sign that `initialize` was
#: answered (a server that imports every plugin before answering meets this deadline instead)
GATE_WAIT_S = 15

GATED_PLUGIN = f"""
import os, time
from pathlib import Path

import attrs
import tether

# the import waits until the client says `initialize` was answered (the gate file), at most
# {GATE_WAIT_S} s: a server that answers only after importing every plugin never opens it
_gate = Path(os.environ["TETHER_TEST_GATE"])
_deadline = time.monotonic() + {GATE_WAIT_S}
while not _gate.exists() and time.monotonic() < _deadline:
    time.sleep(0.05)
OPENED = _gate.exists()


@attrs.frozen
class Args:
    message: str = tether.arg("", description="ignored")


async def gated(call, args):
    return "loaded"


@tether.hookimpl
def tether_tools(run):
    return [tether.ToolSpec("gated_tool", "read", Args, gated, f"gate opened: {{OPENED}}")]
"""


def gated_server(tmp_path: Path, workdir: Path, *flags: str) -> tuple[Server, Path]:
    """A server with one more installed plugin (a dist-info on PYTHONPATH) whose hooks module
    takes until the client has its `initialize` answer to import."""
    site = tmp_path / "site"
    dist = site / "gated_plugin-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: gated-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[tether]\ngated = gated_plugin\n")
    (site / "gated_plugin.py").write_text(GATED_PLUGIN)
    gate = tmp_path / "initialize-answered"
    server = Server(workdir, *flags)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    server.env.update(PYTHONPATH=path, TETHER_TEST_GATE=str(gate))
    return server, gate


@pytest.mark.parametrize("client", LEGACY)
def test_initialize_is_answered_before_the_plugins_are_loaded(
    client_envs, workdir, tmp_path, client
):
    """`initialize` does not wait for the plugins (Codex lists tools right after it, with a
    start-up timeout); `tools/list` waits for all of them: every tool, never a partial list."""
    server, gate = gated_server(tmp_path, workdir)
    seen = run_client(client_envs, client, server, "tools", gate=str(gate))
    tools = {t["name"]: t for t in seen["tools"]}
    assert tools["gated_tool"]["description"] == "gate opened: True"
    assert {"ast_grep", "lsp", "eval", "debug", "ask_user", "echo_write"} <= set(tools)


@pytest.mark.parametrize("client", LEGACY)
def test_a_run_that_cannot_open_is_an_error_of_tools_list_not_an_empty_list(
    client_envs, workdir, tmp_path, client
):
    """The run opens in the background after `initialize`: what stops it (here a key the eval
    family does not know, found only once the plugins are loaded) answers the requests that
    need the run, by name."""
    config = tmp_path / "harness.toml"
    config.write_text("[eval]\nno_such_key = 1\n")
    server, gate = gated_server(tmp_path, workdir, "--config", str(config))
    seen = run_client(client_envs, client, server, "tools", gate=str(gate))
    assert "tools" not in seen
    assert "the run did not open" in seen["mcp_error"], seen
    assert "no_such_key" in seen["mcp_error"], seen

"""The CLI: plugins, tools, call, and the session line protocol."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from importlib.metadata import version

import anyio
import pytest

import tether
from tether.cli.session import run_session
from tether.processes.managed import descendants, is_alive


def tether_cli(*args, input=None, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        stdin=None if input is not None else subprocess.DEVNULL,
    )


def test_plugins_json():
    out = tether_cli("plugins", "--json")
    assert out.returncode == 0
    plugins = {p["name"]: p for p in json.loads(out.stdout)}
    assert plugins["echo"]["status"] == "loaded"
    assert set(plugins["files"]) == {
        "name",
        "version",
        "status",
        "reason",
        "hooks",
        "accepts_core",
    }
    assert plugins["files"]["accepts_core"] == "<0.3,>=0.2"


def test_plugins_table_shows_versions_and_the_core_range_each_accepts():
    out = tether_cli("plugins")
    line = next(line for line in out.stdout.splitlines() if line.startswith("files "))
    assert line.split() == ["files", version("tether-files"), "tether<0.3,>=0.2", "loaded"]


@pytest.mark.parametrize("module", ["tether", "tether.cli"])
def test_version_names_the_core_and_every_plugin(module):
    out = subprocess.run(
        [sys.executable, "-m", module, "--version"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"tether {version('tether')}"
    assert f"  echo {version('tether-echo')} (loaded)" in lines
    assert f"  files {version('tether-files')} (loaded)" in lines


def test_python_dash_m_tether_is_the_cli():
    out = subprocess.run(
        [sys.executable, "-m", "tether", "plugins", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert {p["name"] for p in json.loads(out.stdout)} >= {"echo", "files"}


@pytest.mark.parametrize("platform", ["win32", "cygwin"])
def test_windows_gets_a_clear_error_at_import(platform):
    code = f"import sys; sys.platform = {platform!r}; import tether"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last == (
        "ImportError: tether needs a POSIX system (it supervises processes through POSIX "
        "process groups and signals: os.killpg, os.setsid, SIGKILL), which this platform "
        f"{platform!r} lacks"
    )


@pytest.mark.parametrize("platform", ["darwin", "freebsd14"])
def test_another_posix_system_imports_and_uses_the_portable_backend(platform):
    # psutil picks its own platform module at import: the real one (Linux's) is loaded first
    code = (
        f"import sys, psutil; sys.platform = {platform!r}; import tether, tether.processes.procinfo as p; "
        "import os; s = p.stat(os.getpid()); "
        "print(p.portable(), s.ppid == os.getppid(), s.pgid == os.getpgrp())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "True"]


def test_tools_plan_surface_shows_only_read_tier(tmp_path):
    tools = json.loads(tether_cli("tools", "--surface", "plan", "--workdir", str(tmp_path)).stdout)
    assert tools and {t["tier"] for t in tools} == {"read"}
    every = json.loads(tether_cli("tools", "--workdir", str(tmp_path)).stdout)
    assert {"echo_write", "echo_exec", "write"} <= {t["name"] for t in every}
    anthropic = json.loads(
        tether_cli("tools", "--format", "anthropic", "--workdir", str(tmp_path)).stdout
    )
    assert all(set(t) == {"name", "description", "input_schema"} for t in anthropic)


def test_call_exit_codes_and_approval(tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    ok = tether_cli("call", "read", '{"path": "a.txt"}', "--workdir", str(tmp_path))
    assert ok.returncode == 0 and json.loads(ok.stdout)["content"][0]["text"] == "hello\n"
    refused = tether_cli(
        "call", "write", '{"path": "b.txt", "content": "x"}', "--workdir", str(tmp_path)
    )
    assert refused.returncode == 1 and "fail closed" in refused.stdout
    plan = tether_cli(
        "call",
        "write",
        '{"path": "b.txt", "content": "x"}',
        "--workdir",
        str(tmp_path),
        "--surface",
        "plan",
        "--approve",
        "write",
    )
    assert plan.returncode == 1 and "not available on surface 'plan'" in plan.stdout
    assert not (tmp_path / "b.txt").exists()
    allowed = tether_cli(
        "call",
        "write",
        '{"path": "b.txt", "content": "x"}',
        "--workdir",
        str(tmp_path),
        "--approve",
        "write",
    )
    assert allowed.returncode == 0 and (tmp_path / "b.txt").read_text() == "x"
    usage = tether_cli("call", "read", "{not json", "--workdir", str(tmp_path))
    assert usage.returncode == 2 and "not valid JSON" in usage.stderr
    assert tether_cli("call").returncode == 2


def test_a_workdir_config_cannot_loosen_policy(tmp_path):
    """A write-tier call can write tether.toml: it may not turn approval or surfaces looser
    (issue 11, item 1). Ignored keys are said on stderr and in the first result's meta."""
    (tmp_path / "tether.toml").write_text(
        '[core.approval]\nwrite = "auto"\nexec = "auto"\n[core.surfaces]\nplan = "exec"\n'
    )
    refused = tether_cli(
        "call", "write", '{"path": "c.txt", "content": "y"}', "--workdir", str(tmp_path)
    )
    assert refused.returncode == 1 and "fail closed" in refused.stdout
    assert not (tmp_path / "c.txt").exists()
    assert "core.approval.write: ignored 'auto'" in refused.stderr
    meta = json.loads(refused.stdout)["meta"]
    assert any("core.approval.exec: ignored 'auto'" in n for n in meta["config_ignored"])
    assert any("core.surfaces.plan: ignored 'exec'" in n for n in meta["config_ignored"])
    marker = tmp_path / "PAYLOAD"
    plan = tether_cli(
        "call",
        "echo_exec",
        json.dumps({"argv": ["touch", str(marker)]}),
        "--workdir",
        str(tmp_path),
        "--surface",
        "plan",
    )
    assert plan.returncode == 1 and "not available on surface 'plan'" in plan.stdout
    assert not marker.exists()
    # an unknown key in the workdir's file is reported and ignored, never a usage error
    # (issue 22: the agent must still be able to run the edit that fixes the file)
    (tmp_path / "pyproject.toml").write_text("[tool.tether.core]\nbogus = 1\n")
    (tmp_path / "c.txt").write_text("c")
    bad = tether_cli("call", "read", '{"path": "c.txt"}', "--workdir", str(tmp_path))
    assert bad.returncode == 0 and "core.bogus: ignored (unknown key" in bad.stderr


def test_harness_and_workdir_layers_combine(tmp_path):
    """--config FILE is the harness's (wherever it lives) and may loosen; the workdir file still
    applies on top, where it may lower timeouts and tighten."""
    harness = tmp_path / "harness.toml"
    harness.write_text('[core.approval]\nwrite = "auto"\n')
    work = tmp_path / "work"
    work.mkdir()
    (work / "tether.toml").write_text(
        '[core]\ncall_timeout_s = 5\n[core.approval]\nexec = "deny"\n'
        '[core.surfaces]\nmine = "exec"\n'
    )
    common = ("--workdir", str(work), "--config", str(harness))
    wrote = tether_cli("call", "write", '{"path": "c.txt", "content": "y"}', *common)
    assert wrote.returncode == 0 and (work / "c.txt").read_text() == "y"
    assert "core.surfaces.mine: ignored" in wrote.stderr  # a new surface is the harness's
    # the workdir's timeout applies (the harness set none), its "deny" wins over --approve
    # (5 s: the lowest call_timeout_s a workdir may set, its floor)
    slow = tether_cli("call", "echo", '{"message": "m", "delay_s": 8}', *common)
    assert slow.returncode == 1 and "timed out after 5 s" in slow.stdout
    denied = tether_cli("call", "echo_exec", '{"argv": ["true"]}', *common, "--approve", "exec")
    assert denied.returncode == 1 and "denied by policy" in denied.stdout
    # the workdir may lower the harness's timeout (never raise or remove it)
    harness.write_text("[core]\ncall_timeout_s = 30\n")
    lowered = tether_cli("call", "echo", '{"message": "m", "delay_s": 8}', *common)
    assert lowered.returncode == 1 and "timed out after 5 s" in lowered.stdout
    (work / "tether.toml").write_text("[core]\ncall_timeout_s = 0\n")
    kept = tether_cli("call", "echo", '{"message": "m", "delay_s": 1}', *common)
    assert kept.returncode == 0, kept.stdout
    assert "core.call_timeout_s: ignored 0" in kept.stderr


def test_session_answers_requests_and_survives_bad_lines(tmp_path):
    (tmp_path / "README.md").write_text("# readme\n")
    lines = [
        {"id": 1, "tool": "read", "args": {"path": "README.md"}},
        "this is not json",
        [1, 2],
        {"id": 2, "tool": "echo", "args": {"message": 12345}},
        {"id": 3, "tool": "nope"},
        {"id": 4},
        {"card": "card_9", "choices": ["x"]},
        {"id": 5, "tool": "echo", "args": {"message": "slow", "delay_s": 0.3}},
        {"id": 6, "tool": "echo", "args": {"message": "fast"}},
    ]
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"
    out = tether_cli("session", "--workdir", str(tmp_path), input=text)
    assert out.returncode == 0, out.stderr
    ready, *replies = [json.loads(line) for line in out.stdout.splitlines()]
    assert ready["ready"] is True
    by_id = {r["id"]: r for r in replies if r["id"] is not None}
    assert by_id[1]["content"][0]["text"] == "# readme\n" and by_id[1]["is_error"] is False
    assert by_id[2]["is_error"] and "message: expected string" in by_id[2]["content"][0]["text"]
    assert by_id[3]["is_error"] and "unknown tool 'nope'" in by_id[3]["content"][0]["text"]
    assert by_id[4]["is_error"] and "tool:" in by_id[4]["content"][0]["text"]
    nulls = [r for r in replies if r["id"] is None]
    assert len(nulls) == 3 and all(r["is_error"] for r in nulls)
    assert "not valid JSON" in nulls[0]["content"][0]["text"]
    assert "no open card" in nulls[2]["content"][0]["text"]
    order = [r["id"] for r in replies if r["id"] in (5, 6)]
    assert order == [6, 5]  # concurrent: the fast one overtakes


def test_session_skips_a_line_over_its_limit_and_reads_on(tmp_path):
    from tether.cli.session import MAX_REQUEST_LINE_BYTES

    over = json.dumps({"id": 1, "tool": "echo", "args": {"message": "m" * MAX_REQUEST_LINE_BYTES}})
    text = over + "\n" + json.dumps({"id": 2, "tool": "echo", "args": {"message": "after"}})
    out = tether_cli("session", "--workdir", str(tmp_path), input=text)
    assert out.returncode == 0, out.stderr
    ready, skipped, after = [json.loads(line) for line in out.stdout.splitlines()]
    assert ready["ready"] is True
    assert skipped["id"] is None and skipped["is_error"]
    assert (
        f"over the limit of {MAX_REQUEST_LINE_BYTES} bytes (64 MiB)"
        in (skipped["content"][0]["text"])
    )
    assert """it began '{"id": 1""" in skipped["content"][0]["text"]
    assert after["id"] == 2 and after["content"][0]["text"] == "after"


def poll(probe, timeout=10.0):
    """The first truthy value of ``probe()`` within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def test_session_eof_leaves_no_process(tmp_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tether.cli",
            "session",
            "--workdir",
            str(tmp_path),
            "--approve",
            "exec",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    request = {
        "id": 1,
        "tool": "echo_exec",
        "args": {"argv": ["sh", "-c", "(setsid sleep 300 &); sleep 300"], "background": True},
    }
    proc.stdin.write(json.dumps(request) + "\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["ready"] is True
    reply = json.loads(proc.stdout.readline())
    assert not reply["is_error"], reply
    kids = poll(lambda: descendants(proc.pid) if len(descendants(proc.pid)) >= 2 else None)
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    poll(lambda: not [p for p in kids if is_alive(p)])


class CardTool:
    """A tool that asks its question through the session's card stream."""

    @tether.hookimpl
    def tether_tools(self, run):
        import attrs

        @attrs.frozen
        class Args:
            question: str = tether.arg(description="q")

        async def ask(call, args):
            stream = call.run.resources["card_stream"]
            try:
                answer = await stream.ask(
                    {
                        "kind": "question",
                        "call_id": call.call_id,
                        "question": args.question,
                        "options": [{"label": "yes"}, {"label": "no"}],
                    },
                    timeout_s=5,
                    validate=lambda a: (
                        None
                        if set(a.get("choices", [])) <= {"yes", "no"}
                        else "choices: not an option"
                    ),
                )
            except tether.NoPerson as exc:
                raise tether.ToolError(str(exc)) from None
            return json.dumps(answer)

        return [tether.ToolSpec("ask_card", "read", Args, ask, "asks a card")]


async def drive_session(lines_in, interactive, tmp_path, out=None):
    """Run a session in-process; ``lines_in`` is an async generator fed by the test."""
    out = out if out is not None else io.StringIO()

    from tether.cli import _CliResources

    class Resources(_CliResources):
        pass

    async def plugins_with_card_tool(resources):
        return None

    def make(resources):
        return _Both(resources)

    class _Both(_CliResources, CardTool):
        pass

    await run_session(
        workdir=tmp_path,
        config={},
        conversation_id="c",
        surface="default",
        vibe=False,
        interactive=interactive,
        make_resources=make,
        stdin=lines_in,
        stdout=out,
    )
    ready, *lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert ready["ready"] is True
    return lines


@pytest.mark.anyio
async def test_session_cards_route_answers_to_their_call(tmp_path):
    send, receive = anyio.create_memory_object_stream[str](10)
    out_lines = []

    async def feeder():
        async with receive:
            async for line in receive:
                yield line

    out = io.StringIO()

    async def seen(text):
        with anyio.fail_after(10):
            while text not in out.getvalue():
                await anyio.sleep(0.01)

    async def client():
        await send.send(json.dumps({"id": "a", "tool": "ask_card", "args": {"question": "first?"}}))
        await send.send(
            json.dumps({"id": "b", "tool": "ask_card", "args": {"question": "second?"}})
        )
        await seen('"card": "card_2"')  # both cards are out
        await send.send(json.dumps({"card": "card_2", "choices": ["maybe"]}))  # not an option
        await seen("not an option")
        await send.send(json.dumps({"card": "card_2", "choices": ["no"]}))
        await send.send(json.dumps({"card": "card_1", "skip": True}))
        await seen('"id": "a"')
        await seen('"id": "b"')
        await send.aclose()

    async with anyio.create_task_group() as tg:
        tg.start_soon(client)
        out_lines.extend(await drive_session(feeder(), True, tmp_path, out))
    cards = [line for line in out_lines if "card" in line and "kind" in line]
    assert [c["question"] for c in cards] == ["first?", "second?"]
    assert all("id" not in c for c in cards)
    by_id = {r["id"]: r for r in out_lines if r.get("id") in ("a", "b")}
    assert json.loads(by_id["a"]["content"][0]["text"]) == {"card": "card_1", "skip": True}
    assert json.loads(by_id["b"]["content"][0]["text"])["choices"] == ["no"]
    errors = [r for r in out_lines if r.get("id") is None and r.get("is_error")]
    assert len(errors) == 1 and "not an option" in errors[0]["content"][0]["text"]


@pytest.mark.anyio
async def test_session_without_interactive_fails_closed_at_once(tmp_path):
    async def lines():
        yield json.dumps({"id": 1, "tool": "ask_card", "args": {"question": "anyone?"}})

    start = time.monotonic()
    replies = await drive_session(lines(), False, tmp_path)
    assert time.monotonic() - start < 5
    assert replies[0]["is_error"] and "no person attached" in replies[0]["content"][0]["text"]
    assert not [r for r in replies if "kind" in r]


@pytest.mark.anyio
async def test_session_eof_closes_open_cards_at_once(tmp_path):
    out = io.StringIO()

    async def lines():
        yield json.dumps({"id": 1, "tool": "ask_card", "args": {"question": "still there?"}})
        with anyio.fail_after(5):  # the input ends once the card is out, not after a guess
            while '"card"' not in out.getvalue():
                await anyio.sleep(0.01)

    start = time.monotonic()
    replies = await drive_session(lines(), True, tmp_path, out=out)
    assert time.monotonic() - start < 3  # not the card's 5 s timeout
    reply = next(r for r in replies if r.get("id") == 1)
    assert (
        reply["is_error"]
        and "input closed before card_1 was answered" in reply["content"][0]["text"]
    )


class _Greeter:
    """A plugin contributing one subcommand, with the shared run flags."""

    def __init__(self) -> None:
        self.asked = 0

    @tether.hookimpl
    def tether_cli_commands(self, subparsers):
        from tether.cli import add_run_options, cli_run

        self.asked += 1
        p = subparsers.add_parser("greet", help="say hello from a run")
        add_run_options(p, approve=True)
        p.add_argument("--name", required=True)

        async def main(ns) -> int:
            async with cli_run(ns, {}) as run:  # --workdir, --config, --approve… applied
                print(json.dumps({"hello": ns.name, "workdir": str(run.workdir)}))
            return 7

        p.set_defaults(tether_command=main)


def test_hook_tether_cli_commands(tmp_path, monkeypatch, capsys):
    import tether.cli as cli

    greeter = _Greeter()
    monkeypatch.setattr(
        cli, "make_plugin_manager", lambda: tether.make_plugin_manager(plugins=[greeter])
    )
    code = cli.main(["greet", "--name", "ada", "--workdir", str(tmp_path), "--approve", "write"])
    assert code == 7
    assert json.loads(capsys.readouterr().out) == {"hello": "ada", "workdir": str(tmp_path)}
    assert greeter.asked == 1
    # the list of commands shows it; an unknown command names the choices, plugins' included
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "greet" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["nope"])
    assert "'greet'" in capsys.readouterr().err
    # lazily: a core command never asks the plugins for commands
    asked = greeter.asked
    assert cli.main(["tools", "--workdir", str(tmp_path)]) == 0
    assert cli.main(["plugins", "--json"]) == 0
    assert greeter.asked == asked


# --- session protocol 1: the ready line, the tools request, cards' request ids, null choices ---


def test_session_announces_itself_then_lists_its_tools(tmp_path):
    lines = [
        {"id": 1, "request": "tools"},
        {"id": 2, "request": "tools", "format": "anthropic"},
        {"id": 3, "request": "tool"},
        {"id": 4, "request": "tools", "format": "yaml"},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    out = tether_cli("session", "--workdir", str(tmp_path), "--surface", "plan", input=text)
    assert out.returncode == 0, out.stderr
    replies = [json.loads(line) for line in out.stdout.splitlines()]
    ready = replies[0]
    assert ready["ready"] is True and ready["protocol"] == 2
    from tether.plugins import core_version

    assert ready["tether"] == core_version() and ready["conversation"]
    assert ready["surface"] == "plan" and ready["workdir"] == str(tmp_path.resolve())
    plugins = {p["name"]: p for p in ready["plugins"]}
    assert plugins["files"]["status"] == "loaded" and plugins["files"]["version"]
    # only installed plugins, each with a version: not the CLI's own plugin object
    assert all(p["version"] for p in ready["plugins"]), ready["plugins"]
    assert set(plugins) == {i.name for i in tether.make_plugin_manager().report}
    by_id = {r["id"]: r for r in replies[1:]}
    listed = by_id[1]["tools"]
    assert {t["name"] for t in listed} >= {"read", "echo"}
    assert {t["tier"] for t in listed} == {"read"}  # the session's surface
    assert all(set(t) == {"name", "description", "input_schema"} for t in by_id[2]["tools"])
    assert by_id[3]["is_error"] and "request: expected" in by_id[3]["content"][0]["text"]
    assert by_id[4]["is_error"] and "format:" in by_id[4]["content"][0]["text"]


def test_tools_accepts_the_session_flags(tmp_path):
    out = tether_cli("tools", "--workdir", str(tmp_path), "--interactive", "--approve", "write")
    assert out.returncode == 0, out.stderr
    assert "read" in {t["name"] for t in json.loads(out.stdout)}


class NestedCall:
    """A tool that calls another tool from inside itself, as an eval cell's bridge does."""

    @tether.hookimpl
    def tether_tools(self, run):
        import attrs

        @attrs.frozen
        class Args:
            question: str = tether.arg(description="q")

        async def nested(call, args):
            inner = await call.run.call("ask_card", {"question": args.question})
            return inner.text_content

        return [tether.ToolSpec("nested", "read", Args, nested, "calls ask_card inside")]


@pytest.mark.anyio
async def test_session_card_from_an_inner_call_names_the_clients_request(tmp_path):
    send, receive = anyio.create_memory_object_stream[str](10)
    out = io.StringIO()

    async def feeder():
        async with receive:
            async for line in receive:
                yield line

    async def seen(text):
        with anyio.fail_after(10):
            while text not in out.getvalue():
                await anyio.sleep(0.01)

    async def client():
        await send.send(json.dumps({"id": "outer", "tool": "nested", "args": {"question": "q?"}}))
        await seen('"card": "card_1"')
        # "choices": null is the same as leaving choices out: here a skip
        await send.send(json.dumps({"card": "card_1", "skip": True, "choices": None}))
        await seen('"id": "outer"')
        await send.send(json.dumps({"id": "direct", "tool": "ask_card", "args": {"question": "d"}}))
        await seen('"card": "card_2"')
        await send.send(json.dumps({"card": "card_2", "choices": None, "text": None}))
        await seen("an answer needs")
        await send.send(json.dumps({"card": "card_2", "choices": ["yes"], "text": None}))
        await seen('"id": "direct"')
        await send.aclose()

    from tether.cli import _CliResources

    class Both(_CliResources):
        @tether.hookimpl
        def tether_tools(self, run):
            return CardTool().tether_tools(run) + NestedCall().tether_tools(run)

    async with anyio.create_task_group() as tg:
        tg.start_soon(client)
        await run_session(
            workdir=tmp_path,
            config={},
            conversation_id="c",
            surface="default",
            vibe=False,
            interactive=True,
            make_resources=Both,
            stdin=feeder(),
            stdout=out,
        )
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    cards = {c["card"]: c for c in lines if "kind" in c}
    assert cards["card_1"]["request_id"] == "outer"  # the client's request it belongs to
    assert cards["card_1"]["call_id"] not in ("outer", "req_outer")  # and the inner call's
    assert cards["card_2"]["request_id"] == "direct"
    assert cards["card_2"]["call_id"] == "req_direct"
    by_id = {r["id"]: r for r in lines if r.get("id") in ("outer", "direct")}
    assert json.loads(by_id["outer"]["content"][0]["text"])["skip"] is True
    assert json.loads(by_id["direct"]["content"][0]["text"])["choices"] == ["yes"]


def test_call_with_a_plugin_missing_a_dependency_answers_a_result(tmp_path):
    """Not a traceback and exit 3: a result naming the plugin and the module (issue 11, 10)."""
    script = tmp_path / "missing.py"
    script.write_text(
        "import sys\n"
        "sys.modules[sys.argv.pop(1)] = None  # the dependency is not installed\n"
        "from tether.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    out = subprocess.run(
        [sys.executable, str(script), "tether_echo.tools", "call", "echo", '{"message": "m"}'],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert out.returncode == 1, out.stderr
    text = json.loads(out.stdout)["content"][0]["text"]
    assert "unknown tool 'echo'" in text
    # other plugins may have failed too (tether-bwrap under TETHER_PORTABLE=1, where installed)
    assert "plugins that failed to load: " in text
    assert "echo (import failed: ModuleNotFoundError" in text
    assert "tether_echo.tools" in text


def test_call_text_prints_the_content_blocks_for_a_person(tmp_path):
    """``--text``: the blocks as they are (a cut result's notice among them), not a JSON line."""
    (tmp_path / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 400)))
    (tmp_path / "budget.toml").write_text("[core.result_budget]\nmax_chars = 700\n")
    args = ["call", "read", '{"path": "big.txt"}', "--workdir", str(tmp_path)]
    out = tether_cli(*args, "--config", str(tmp_path / "budget.toml"), "--text")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "line 1"
    assert lines[-1].startswith("[tether cut this result to its budget:")
    assert lines[-1].endswith(f'call read with {{"path": "big.txt", "offset": {len(lines)}}}]')
    missing = tether_cli(
        "call", "read", '{"path": "nope.txt"}', "--workdir", str(tmp_path), "--text"
    )
    assert missing.returncode == 1 and missing.stdout.startswith("error: ")

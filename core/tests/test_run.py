"""Runs: resources, registration, surfaces, approval, the pipeline, closing."""

from __future__ import annotations

import itertools
import time
from typing import Literal

import anyio
import anyio.lowlevel
import attrs
import pytest

import tether
import tether_echo.hooks
import tether_files.hooks
from tether.config import workdir_may_set
from tether.processes.managed import descendants, is_alive

# Core tests are hermetic: no installed entry point is loaded, so they pass the same in the core's
# own environment and in the workspace's everything-installed one. The contrib test helpers
# (echo's three tiers, files' read) are passed explicitly.
HOST_PLUGINS = [tether_echo.hooks, tether_files.hooks]


def hermetic_run(workdir, *, plugins=(), **kwargs):
    return tether.open_run(workdir, entry_points=False, plugins=[*HOST_PLUGINS, *plugins], **kwargs)


def hermetic_run_sync(workdir, *, plugins=(), **kwargs):
    return tether.open_run_sync(
        workdir, entry_points=False, plugins=[*HOST_PLUGINS, *plugins], **kwargs
    )


pytestmark = pytest.mark.anyio


def make_tool(name: str, tier: str = "read", requires: tuple[str, ...] = (), **kwargs):
    @attrs.frozen
    class Args:
        text: str = tether.arg("", description="anything")

    async def handler(call, args):
        return f"{name}:{args.text}"

    return tether.ToolSpec(
        name, tier, Args, handler, f"test tool {name}", requires=requires, **kwargs
    )


class Provides:
    def __init__(self, resources=None, tools=()):
        self.resources = resources
        self.tools = list(tools)

    @tether.hookimpl
    def tether_resources(self, run):
        return self.resources

    @tether.hookimpl
    def tether_tools(self, run):
        return self.tools


class Approver:
    def __init__(self, *decisions):
        self.decisions = list(decisions)
        self.asked = []

    async def approve(self, request):
        self.asked.append(request)
        decision = self.decisions.pop(0)
        if isinstance(decision, Exception):
            raise decision
        return decision


async def test_hook_tether_resources(tmp_path):
    resource = object()
    async with tether.open_run(
        tmp_path, entry_points=False, plugins=[Provides({"thing": resource})]
    ) as run:
        assert run.resources["thing"] is resource


async def test_hook_tether_tools(tmp_path):
    async with tether.open_run(
        tmp_path, entry_points=False, plugins=[Provides(tools=[make_tool("t1")])]
    ) as run:
        assert (await run.call("t1", {"text": "x"})).text_content == "t1:x"


async def test_registration_is_gated_by_resources(tmp_path):
    tools = [make_tool("needs_it", requires=("svc",)), make_tool("free")]
    async with tether.open_run(
        tmp_path, entry_points=False, plugins=[Provides(tools=tools)]
    ) as run:
        assert set(run.tools) == {"free"}
        assert "svc" in run.skipped_tools["needs_it"]
        result = await run.call("needs_it", {})
        assert result.is_error and "not wired" in result.text_content
    async with tether.open_run(
        tmp_path, entry_points=False, plugins=[Provides({"svc": 1}, tools)]
    ) as run:
        assert set(run.tools) == {"free", "needs_it"}


def failures(run):
    return {info.name: info.reason for info in run.pm.report if info.status == "failed"}


async def test_a_duplicate_tool_name_is_dropped_and_its_plugin_reported(tmp_path):
    first, second = Provides(tools=[make_tool("same")]), Provides(tools=[make_tool("same")])
    async with tether.open_run(tmp_path, entry_points=False, plugins=[first, second]) as run:
        assert set(run.tools) == {"same"}
        # pluggy's call order: the later-registered plugin is asked first and kept
        assert run.registry.origin["same"] == "Provides-1"
        assert failures(run) == {
            "Provides-0": "tether_tools: tool 'same' dropped: already contributed by 'Provides-1'"
        }


async def test_a_duplicate_of_a_skipped_tool_is_dropped_too(tmp_path):
    skipped = make_tool("same", requires=("absent",))
    plugins = [Provides(tools=[make_tool("same")]), Provides(tools=[skipped])]
    async with tether.open_run(tmp_path, entry_points=False, plugins=plugins) as run:
        assert "same" in run.skipped_tools and "same" not in run.tools
        assert "already contributed" in failures(run)["Provides-0"]
    async with tether.open_run(
        tmp_path, entry_points=False, plugins=[Provides(tools=[skipped])]
    ) as run:
        with pytest.raises(tether.PluginError, match="declared by both"):
            run.register_host_tool(make_tool("same"))  # the harness's own call still raises


async def test_a_duplicate_resource_is_dropped_and_its_plugin_reported(tmp_path):
    async with tether.open_run(
        tmp_path, entry_points=False, plugins=[Provides({"x": 1}), Provides({"x": 2})]
    ) as run:
        assert run.resources["x"] == 2
        assert "resource 'x' dropped: already wired by 'Provides-1'" in failures(run)["Provides-0"]


async def test_a_broken_plugin_is_reported_failed_and_everything_else_works(tmp_path):
    class Raises:
        @tether.hookimpl
        def tether_tools(self, run):
            raise RuntimeError("bad plugin")

    class WrongKind:
        @tether.hookimpl
        def tether_tools(self, run):
            return [make_tool("fine"), {"name": "not a spec"}]

        @tether.hookimpl
        def tether_resources(self, run):
            return ["not", "a", "dict"]

    plugins = [tether_echo.hooks, Raises(), WrongKind()]
    async with tether.open_run(tmp_path, entry_points=False, plugins=plugins) as run:
        assert (await run.call("echo", {"message": "still"})).text_content == "still"
        assert "fine" in run.tools
        report = failures(run)
        assert report["Raises-1"] == "tether_tools: raised RuntimeError: bad plugin"
        assert "tether_resources: must return a dict, got list" in report["WrongKind-2"]
        assert "tether_tools: tool dropped: expected a ToolSpec, got dict" in report["WrongKind-2"]


async def test_surfaces_hide_and_refuse_tools_above_their_tier(tmp_path):
    async with hermetic_run(tmp_path, config={"core": {"surfaces": {"reviewer": "write"}}}) as run:
        assert {s["name"] for s in run.schemas("plan")} == {"echo", "read"}
        assert {s["tier"] for s in run.schemas("readonly")} == {"read"}
        assert "echo_write" in {s["name"] for s in run.schemas("reviewer")}
        assert "echo_exec" not in {s["name"] for s in run.schemas("reviewer")}
        result = await run.call("echo_write", {"path": "x", "text": "y"}, surface="plan")
        assert result.is_error
        assert "'echo_write' (write tier) is not available on surface 'plan'" in result.text_content
        assert not (tmp_path / "x").exists()
        result = await run.call("echo", {"message": "m"}, surface="nowhere")
        assert result.is_error and "unknown surface 'nowhere'" in result.text_content


async def test_schema_formats(tmp_path):
    async with hermetic_run(tmp_path) as run:
        openai = {s["function"]["name"]: s for s in run.schemas(format="openai")}
        anthropic = {s["name"]: s for s in run.schemas(format="anthropic")}
        assert openai["echo"]["function"]["parameters"] == anthropic["echo"]["input_schema"]
        assert anthropic["echo"]["input_schema"]["additionalProperties"] is False


async def test_approval_fails_closed_without_an_approver(tmp_path):
    async with hermetic_run(tmp_path) as run:
        result = await run.call("echo_write", {"path": "x", "text": "y"})
        assert (
            result.is_error
            and "no approver" in result.text_content
            and "fail closed" in result.text_content
        )
        # a harness on the Python API is told the configuration key, not only a CLI flag
        assert '[core.approval] write = "auto"' in result.text_content
        assert not (tmp_path / "x").exists()


async def test_approval_policy_auto_and_deny(tmp_path):
    config = {"core": {"approval": {"write": "auto", "exec": "deny"}}}
    async with hermetic_run(tmp_path, config=config) as run:
        assert not (await run.call("echo_write", {"path": "x", "text": "y"})).is_error
        result = await run.call("echo_exec", {"argv": ["true"]})
        assert result.is_error and "denied by policy" in result.text_content


async def test_approver_allow_deny_and_allow_for_run(tmp_path):
    approver = Approver(tether.Decision.ALLOW, tether.Decision.DENY, tether.Decision.ALLOW_FOR_RUN)
    async with hermetic_run(tmp_path, plugins=[Provides({"approver": approver})]) as run:
        assert not (await run.call("echo_write", {"path": "a", "text": "1"})).is_error
        denied = await run.call("echo_write", {"path": "b", "text": "2"})
        assert denied.is_error and "denied" in denied.text_content and not (tmp_path / "b").exists()
        assert not (await run.call("echo_write", {"path": "c", "text": "3"})).is_error
        assert not (
            await run.call("echo_write", {"path": "d", "text": "4"})
        ).is_error  # no card this time
        assert len(approver.asked) == 3
        assert (
            approver.asked[0].tool == "echo_write" and approver.asked[0].tier is tether.Tier.WRITE
        )
        assert approver.asked[0].args_summary == 'path: "a"\ntext: "1"'
        assert approver.asked[0].args == {"path": "a", "text": "1"}


async def test_approver_with_no_person_fails_closed(tmp_path):
    approver = Approver(tether.NoPerson("nobody at the terminal"))
    async with hermetic_run(tmp_path, plugins=[Provides({"approver": approver})]) as run:
        result = await run.call("echo_write", {"path": "a", "text": "1"})
        assert result.is_error and "nobody at the terminal" in result.text_content


async def test_every_refusal_nobody_could_answer_names_the_way_out(tmp_path):
    """No approver, no person (a headless client, a closed terminal), a timeout: the refusal
    says what is known and how the harness lets the call run."""
    causes = [None, tether.NoPerson("the client declined"), TimeoutError()]
    for cause in causes:
        plugins = [] if cause is None else [Provides({"approver": Approver(cause)})]
        async with hermetic_run(tmp_path, plugins=plugins) as run:
            text = (await run.call("echo_exec", {"argv": ["true"]})).text_content
        assert "fail closed" in text, text
        assert "--approve exec" in text and '[core.approval] exec = "auto"' in text, text
        assert '[core.approval.tools] echo_exec = "auto"' in text, text
        if isinstance(cause, tether.NoPerson):
            assert "the client declined" in text


def action_tool() -> tether.ToolSpec:
    @attrs.frozen
    class Args:
        op: Literal["look", "launch"] = tether.arg(description="what to do")

    async def handler(call, args):
        return f"did {args.op}"

    actions = tether.Actions("op", {"look": (), "launch": ()})
    return tether.ToolSpec("runner", "exec", Args, handler, "an exec tool", actions=actions)


@pytest.mark.parametrize(
    ("approval", "allowed"),
    [
        ({}, set()),  # the exec tier asks, nobody answers
        ({"exec": "auto"}, {"look", "launch", "echo_exec"}),
        ({"tools": {"runner": "auto"}}, {"look", "launch"}),
        ({"actions": {"runner": {"look": "auto"}}}, {"look"}),
        # the most specific entry wins, tighter or looser than the tier
        ({"exec": "auto", "actions": {"runner": {"launch": "deny"}}}, {"look", "echo_exec"}),
        ({"exec": "auto", "tools": {"runner": "ask"}}, {"echo_exec"}),
        ({"tools": {"runner": "deny"}, "actions": {"runner": {"look": "auto"}}}, {"look"}),
    ],
)
async def test_per_tool_and_per_action_approval(tmp_path, approval, allowed):
    config = {"core": {"approval": approval}}
    plugins = [Provides(tools=[action_tool()])]
    async with hermetic_run(tmp_path, config=config, plugins=plugins) as run:
        ran = set()
        for op in ("look", "launch"):
            result = await run.call("runner", {"op": op})
            if not result.is_error:
                ran.add(op)
            elif approval.get("actions", {}).get("runner", {}).get(op) == "deny":
                assert "[core.approval.actions.runner] launch" in result.text_content
        if not (await run.call("echo_exec", {"argv": ["true"]})).is_error:
            ran.add("echo_exec")
    assert ran == allowed


@pytest.mark.parametrize(
    ("workdir_approval", "allowed"),
    [
        ({"tools": {"runner": "auto"}}, {"look"}),  # adding an entry: ignored
        ({"actions": {"runner": {"launch": "auto"}}}, {"look"}),  # adding an action: ignored
        ({"actions": {"runner": {"look": "deny"}}}, set()),  # tightening one: kept
        ({"actions": {"runner": "auto"}}, {"look"}),  # a table replaced by a value: ignored
        ({"exec": "auto"}, {"look"}),  # loosening a tier: ignored
    ],
)
async def test_a_workdir_file_only_tightens_per_tool_and_per_action_policy(
    tmp_path, workdir_approval, allowed
):
    harness = {"core": {"approval": {"actions": {"runner": {"look": "auto"}}}}}
    plugins = [Provides(tools=[action_tool()])]
    workdir = {"core": {"approval": workdir_approval}}
    async with hermetic_run(
        tmp_path, config=harness, workdir_config=workdir, plugins=plugins
    ) as run:
        ran = {
            op for op in ("look", "launch") if not (await run.call("runner", {"op": op})).is_error
        }
        notes = run.config_notes
    assert ran == allowed
    if workdir_approval != {"actions": {"runner": {"look": "deny"}}}:
        assert notes, "an ignored workdir setting is said"


async def test_validation_errors_come_back_as_results(tmp_path):
    async with hermetic_run(tmp_path) as run:
        result = await run.call("echo", {"message": 12345, "nope": 1})
        assert result.is_error
        assert "message: expected string, got 12345" in result.text_content
        assert "nope: unknown argument" in result.text_content


async def test_not_parallel_safe_calls_are_serialised(tmp_path):
    config = {"core": {"approval": {"exec": "auto"}}}
    async with hermetic_run(tmp_path, config=config) as run:
        spans = []

        async def timed(tool, args):
            start = time.monotonic()
            await run.call(tool, args)
            spans.append((start, time.monotonic()))

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(timed, "echo_exec", {"argv": ["sleep", "0.3"]})
        spans.sort()
        # each call starts after the previous one ended
        assert all(later[1] - earlier[1] >= 0.28 for earlier, later in itertools.pairwise(spans))

    # parallel-safe calls overlap: three handlers that each wait until all three have started
    started = []
    all_in = anyio.Event()

    @attrs.frozen
    class Args:
        n: int = tether.arg(description="which")

    async def meet(call, args):
        started.append(args.n)
        if len(started) == 3:
            all_in.set()
        await all_in.wait()
        return "met"

    spec = tether.ToolSpec("meet", "read", Args, meet, "waits for the others")
    async with tether.open_run(
        tmp_path, entry_points=False, plugins=[Provides(tools=[spec])]
    ) as run:
        with anyio.fail_after(10):  # serialised calls would never all meet
            async with anyio.create_task_group() as tg:
                for n in range(3):
                    tg.start_soon(run.call, "meet", {"n": n})
        assert sorted(started) == [0, 1, 2]


async def test_handler_timeout_and_tool_errors(tmp_path):
    @attrs.frozen
    class Args:
        mode: str = tether.arg(description="what to do")

    async def handler(call, args):
        if args.mode == "slow":
            await anyio.sleep(10)
        if args.mode == "fail":
            raise tether.ToolError("could not do it")
        raise RuntimeError("a bug")

    spec = tether.ToolSpec("t", "read", Args, handler, "test", timeout_s=0.2)
    async with tether.open_run(
        tmp_path, entry_points=False, plugins=[Provides(tools=[spec])]
    ) as run:
        slow = await run.call("t", {"mode": "slow"})
        assert slow.is_error and "timed out after 0.2 s" in slow.text_content
        fail = await run.call("t", {"mode": "fail"})
        assert fail.is_error and fail.text_content == "could not do it"
        with pytest.raises(RuntimeError, match="a bug"):  # bugs raise
            await run.call("t", {"mode": "bug"})


async def test_hook_tether_process_result(tmp_path):
    order = []

    class AsyncNote:
        @tether.hookimpl
        def tether_process_result(self, call, result):
            order.append("async")
            if call.tool != "echo":
                return None

            async def later():
                await anyio.lowlevel.checkpoint()
                return tether.ResultNote("[async note]", {"noted": True})

            return later()

    class TextNote:
        @tether.hookimpl
        def tether_process_result(self, call, result):
            order.append("text")
            assert result.text_content == "hi"  # each sees the handler's own result
            return "[text note]"

    async with hermetic_run(tmp_path, plugins=[AsyncNote(), TextNote()]) as run:
        result = await run.call("echo", {"message": "hi"})
        # the collector's order: registered later, asked first
        assert order == ["text", "async"]
        assert result.text_content == "hi\n[text note]\n[async note]"
        assert result.meta["noted"] is True
        assert (await run.call("read", {"path": "nope"})).is_error


async def test_a_post_processor_cannot_replace_break_or_stall_a_result(tmp_path):
    class Replaces:
        @tether.hookimpl
        def tether_process_result(self, call, result):
            return tether.ToolResult.text("replaced!")

    class Raises:
        @tether.hookimpl
        def tether_process_result(self, call, result):
            async def boom():
                raise ValueError("broken post-processor")

            return boom()

    class Stalls:
        @tether.hookimpl
        def tether_process_result(self, call, result):
            return anyio.sleep(30)

    class OldWrapper:
        @tether.hookimpl(wrapper=True)
        def tether_process_result(self, call, result):
            yield
            return tether.ToolResult.text("replaced by a wrapper")

    plugins = [Replaces(), Raises(), Stalls(), OldWrapper()]
    config = {"core": {"post_process_timeout_s": 0.2}}
    async with hermetic_run(tmp_path, plugins=plugins, config=config) as run:
        result = await run.call("echo", {"message": "kept"})
        lines = result.text_content.splitlines()
        assert lines[0] == "kept" and "replaced" not in result.text_content
        assert "(post-processing by 'Stalls-4' gave no answer within 0.2 s)" in lines
        assert "(post-processing by 'Raises-3' failed: ValueError: broken post-processor)" in lines
        failed = {i.name: i.reason for i in run.pm.report if i.status == "failed"}
        assert "returned a ToolResult" in failed["Replaces-2"]
        assert "implemented as a wrapper" in failed["OldWrapper-5"]
        await run.call("echo", {"message": "again"})
        assert failed["Replaces-2"].count("returned a ToolResult") == 1  # reported once


async def test_hook_tether_preview_diagnostics(tmp_path):
    """A staged change goes to every plugin that previews diagnostics; what they say is the
    preview, and a preview is never silent: nobody installed, nobody checking these files, one
    that breaks or stalls — each is said."""
    change = tether.StagedChange(
        (tether.StagedFile(tmp_path / "a.py", b"x = 1\n", b"x = y\n"),), origin="a test"
    )
    seen = []

    class Checks:
        @tether.hookimpl
        def tether_preview_diagnostics(self, run, change):
            seen.append(change)

            async def later():
                await anyio.lowlevel.checkpoint()
                return tether.ResultNote("a.py:1: `y` is undefined", {"new": 1})

            return later()

    class Passes:
        @tether.hookimpl
        def tether_preview_diagnostics(self, run, change):
            return None  # checks none of these files

    class Breaks:
        @tether.hookimpl
        def tether_preview_diagnostics(self, run, change):
            raise ValueError("broken checker")

    class Stalls:
        @tether.hookimpl
        def tether_preview_diagnostics(self, run, change):
            return anyio.sleep(30)

    async with hermetic_run(tmp_path) as run:
        note = await run.preview_diagnostics(change)
        assert note.text == tether.preview.NO_PREVIEWER
        assert note.meta == {"preview_by": []}
    async with hermetic_run(tmp_path, plugins=[Passes()]) as run:
        note = await run.preview_diagnostics(change)
        assert note.text == (
            "(no diagnostics preview: none of the plugins that preview diagnostics "
            "('Passes-2') checks these files)"
        )
    plugins = [Checks(), Passes(), Breaks(), Stalls()]
    config = {"core": {"post_process_timeout_s": 0.2}}
    async with hermetic_run(tmp_path, plugins=plugins, config=config) as run:
        note = await run.preview_diagnostics(change)
        assert seen == [change]
        lines = note.text.splitlines()
        assert "a.py:1: `y` is undefined" in lines
        assert "(diagnostics preview by 'Stalls-5' gave no answer within 0.2 s)" in lines
        failed = {i.name: i.reason for i in run.pm.report if i.status == "failed"}
        assert "ValueError: broken checker" in failed["Breaks-4"]
        assert note.meta == {"new": 1, "preview_by": ["Checks-2"]}


async def test_host_tools_get_the_same_gates_and_post_processing(tmp_path):
    seen = []

    class Wrapper:
        @tether.hookimpl
        def tether_process_result(self, call, result):
            seen.append(call.tool)

    def sync_host_tool(call, args):  # a synchronous harness tool
        return f"host wrote {args.text}"

    spec = tether.ToolSpec(
        "host_write", "write", make_tool("x").args, sync_host_tool, "harness tool"
    )
    async with tether.open_run(tmp_path, entry_points=False, plugins=[Wrapper()]) as run:
        run.register_host_tool(spec)
        refused = await run.call("host_write", {"text": "a"})
        assert refused.is_error and "approver" in refused.text_content
        assert "host_write" not in {s["name"] for s in run.schemas("plan")}
    async with tether.open_run(
        tmp_path,
        entry_points=False,
        plugins=[Wrapper()],
        config={"core": {"approval": {"write": "auto"}}},
    ) as run:
        run.register_host_tool(spec)
        assert (await run.call("host_write", {"text": "a"})).text_content == "host wrote a"
        assert seen == ["host_write"]


async def test_bad_config_names_the_key(tmp_path):
    with pytest.raises(
        tether.ConfigError, match=r"core\.call_timeout: unknown key \(not in this table\)"
    ):
        async with hermetic_run(tmp_path, config={"core": {"call_timeout": 3}}):
            pass
    with pytest.raises(tether.ConfigError, match=r"core\.approval\.write"):
        async with hermetic_run(tmp_path, config={"core": {"approval": {"write": "sometimes"}}}):
            pass


async def wait_for(predicate, timeout=10.0):
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)


async def test_closing_the_run_kills_every_child_tree(tmp_path):
    config = {"core": {"approval": {"exec": "auto"}}}
    pids = tmp_path / "pids"
    # two plain jobs and one that leaves the tree (its own session, re-parented at once)
    script = (
        f"sleep 300 & echo $! >> {pids}; sleep 300 & echo $! >> {pids}; "
        f"(setsid sh -c 'echo $$ >> {pids}; exec sleep 300' &); wait"
    )
    async with hermetic_run(tmp_path, config=config) as run:
        result = await run.call("echo_exec", {"argv": ["sh", "-c", script], "background": True})
        pid = result.meta["pid"]
        await wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 3)
        jobs = {int(p) for p in pids.read_text().split()}
        assert all(is_alive(p) for p in jobs)
        assert jobs - descendants(pid), "the setsid job should have left the shell's tree"
    await wait_for(lambda: not any(is_alive(p) for p in jobs | {pid}), timeout=5)


async def test_sync_facade(tmp_path):
    # runs the event loop in a thread: call it from a worker thread, as a sync harness would
    def use():
        with hermetic_run_sync(tmp_path) as run:
            assert run.call("echo", {"message": "sync"}).text_content == "sync"
            assert {s["name"] for s in run.schemas("plan")} == {"echo", "read"}

    await anyio.to_thread.run_sync(use)


async def test_sync_facade_refuses_async_methods_instead_of_handing_back_coroutines(tmp_path):
    def use():
        with hermetic_run_sync(tmp_path) as run:
            with pytest.raises(AttributeError, match=r"Run\.spawn is async.*portal\.call"):
                run.spawn(["true"])
            assert run.workdir == tmp_path.resolve()  # plain attributes still pass through
            proc = run.portal.call(lambda: run.run.spawn(["true"], stdin=False))
            assert run.portal.call(proc.wait) == 0

    await anyio.to_thread.run_sync(use)


async def test_a_tool_cannot_re_enter_itself_while_serialised(tmp_path):
    @attrs.frozen
    class Args:
        depth: int = tether.arg(0, description="depth")

    async def handler(call, args):
        inner = await call.run.call("self_caller", {"depth": 1})
        return inner.text_content

    spec = tether.ToolSpec(
        "self_caller", "read", Args, handler, "calls itself", parallel_safe=False, timeout_s=5
    )
    async with tether.open_run(
        tmp_path, entry_points=False, plugins=[Provides(tools=[spec])]
    ) as run:
        result = await run.call("self_caller", {})
        assert "cannot be called from inside a running 'self_caller' call" in result.text_content


DAEMON = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)  # a daemon lets go of its parent's pipes
        open(sys.argv[1], "w").write(str(os.getpid()))
        time.sleep(300)
    os._exit(0)
os.wait()
"""


async def test_double_forked_daemons_die_with_the_run(tmp_path):
    import sys

    pidfile = tmp_path / "daemon.pid"
    config = {"core": {"approval": {"exec": "auto"}}}
    async with hermetic_run(tmp_path, config=config) as run:
        result = await run.call("echo_exec", {"argv": [sys.executable, "-c", DAEMON, str(pidfile)]})
        assert not result.is_error, result.text_content
        for _ in range(100):
            if pidfile.exists() and pidfile.read_text():
                break
            await anyio.sleep(0.02)
        daemon = int(pidfile.read_text())
        # it left the tree of the process the run started (it may still be our descendant when
        # an earlier test made this process a subreaper): only the owner marker finds it
        assert is_alive(daemon)
    # killed at close; what may remain is init reaping it, so poll (bounded) instead of sleeping
    with anyio.fail_after(2):
        while is_alive(daemon):
            await anyio.sleep(0.01)


async def test_a_cancelled_spawn_leaves_no_process(tmp_path):
    async with hermetic_run(tmp_path) as run:
        with anyio.CancelScope() as scope:
            scope.cancel()  # cancelled before the start even begins
            await run.spawn(["sleep", "300"], stdin=False)
        processes = run.process_owner.processes
        assert len(processes) == 1  # it started, and the caller never saw it: killed
        assert processes[0].terminated and not is_alive(processes[0].pid)


async def test_wait_returns_after_stderr_is_drained(tmp_path):
    async with hermetic_run(tmp_path) as run:
        proc = await run.spawn(
            ["sh", "-c", "echo last words >&2; exit 4"], stdin=False, stdout=False
        )
        assert await proc.wait() == 4
        assert proc.stderr_tail.text() == "last words\n"


async def test_allow_for_the_run_answers_the_other_waiting_cards_of_that_tool(tmp_path):
    class SlowPerson:
        def __init__(self):
            self.asked = []
            self.all_asked = anyio.Event()

        async def approve(self, request):
            self.asked.append(request.call_id)
            if len(self.asked) == 3:
                self.all_asked.set()
            if len(self.asked) == 1:
                await self.all_asked.wait()  # the person answers once the other cards are up
                return tether.Decision.ALLOW_FOR_RUN
            await anyio.sleep(60)  # would only be answered by the person: must be withdrawn
            return tether.Decision.DENY

    person = SlowPerson()
    results = {}
    async with hermetic_run(tmp_path, plugins=[Provides({"approver": person})]) as run:

        async def write(name):
            results[name] = await run.call("echo_write", {"path": name, "text": name})

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for name in ("a", "b", "c"):
                    tg.start_soon(write, name)
    assert len(person.asked) == 3
    assert all(not r.is_error for r in results.values()), {
        k: r.text_content for k, r in results.items()
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "c"]


@attrs.frozen
class FamilyConfig:
    """A family's table: one timeout a workdir may set, one command it may not."""

    timeout_s: float = workdir_may_set(5.0, floor=0.1)
    command: tuple[str, ...] = ("safe",)


async def test_workdir_layer_sets_only_what_fields_allow(tmp_path):
    local = {"fam": {"timeout_s": 1.0, "command": ["evil"]}, "core": {"close_timeout_s": 3.0}}
    async with hermetic_run(tmp_path, workdir_config=local) as run:
        fam = run.config("fam", FamilyConfig)
        assert fam.timeout_s == 1.0 and fam.command == ("safe",)
        assert run.core.close_timeout_s == 3.0
        assert run.config_notes == [
            "workdir configuration: fam.command: ignored (harness-only: set it with "
            "--config FILE or open_run(config=…))"
        ]
        first = await run.call("echo", {"message": "m"})
        second = await run.call("echo", {"message": "m"})
        assert first.meta["config_ignored"] == run.config_notes
        assert "config_ignored" not in second.meta
    harness = {"fam": {"timeout_s": 9.0, "command": ["mine"]}}
    async with hermetic_run(tmp_path, config=harness, workdir_config=local) as run:
        fam = run.config("fam", FamilyConfig)
        # the workdir may lower the harness's timeout; the command stays the harness's
        assert fam.timeout_s == 1.0 and fam.command == ("mine",)
    async with hermetic_run(
        tmp_path, config={"fam": {"timeout_s": 0.5}}, workdir_config=local
    ) as run:
        assert run.config("fam", FamilyConfig).timeout_s == 0.5  # never raised above it
    # a value of the wrong type from the workdir is ignored and said, never an error
    async with hermetic_run(tmp_path, workdir_config={"fam": {"timeout_s": "x"}}) as run:
        assert run.config("fam", FamilyConfig).timeout_s == 5.0
        assert any("fam.timeout_s: expected number" in n for n in run.config_notes)


async def test_a_handler_missing_a_module_names_the_plugin_and_the_module(tmp_path):
    async def needs_missing(call, args):
        import tether_no_such_module_xyz  # noqa: F401

    spec = attrs.evolve(make_tool("lacking"), handler=needs_missing)
    async with tether.open_run(
        tmp_path, plugins=[Provides(tools=[spec])], entry_points=False
    ) as run:
        result = await run.call("lacking", {})
    assert result.is_error
    assert "plugin 'Provides-0' needs module 'tether_no_such_module_xyz'" in result.text_content


async def test_run_command_is_owned_bounded_and_honest(tmp_path):
    import sys

    async with hermetic_run(tmp_path) as run:
        done = await run.run_command(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout_s=10)
        assert (done.returncode, done.text(), done.stderr) == (3, "out\n", "err\n")
        assert not done.ok and not done.timed_out
        big = await run.run_command(
            [sys.executable, "-c", "print('x' * 100000)"], timeout_s=10, max_output_bytes=1000
        )
        assert big.ok and len(big.stdout) == 1000 and big.stdout_dropped == 100001 - 1000
        # a command that outlives its time is killed with its tree, and says so
        pids = tmp_path / "pids"
        slow = await run.run_command(
            ["sh", "-c", f"sleep 300 & echo $! > {pids}; sleep 300"], timeout_s=0.5
        )
        assert slow.timed_out and slow.returncode is None
        await wait_for(lambda: not is_alive(int(pids.read_text())), timeout=2)
        with pytest.raises(OSError):
            await run.run_command(["/no/such/program"], timeout_s=1)


async def test_a_tool_reports_progress_to_the_callers_listener(tmp_path):
    @attrs.frozen
    class Args:
        steps: int = tether.arg(2, description="how many")

    async def handler(call, args):
        for step in range(args.steps):
            call.report_progress(f"step {step + 1} of {args.steps}")
        return "done"

    spec = tether.ToolSpec("steps", "read", Args, handler, "reports its steps")
    async with tether.open_run(
        tmp_path, entry_points=False, plugins=[Provides(tools=[spec])]
    ) as run:
        heard: list[str] = []
        result = await run.call("steps", {"steps": 3}, on_progress=heard.append)
        assert result.text_content == "done"
        assert heard == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
        # no listener: reporting is a no-op; a listener that fails never fails the call
        assert (await run.call("steps", {})).text_content == "done"

        def broken(message: str) -> None:
            raise OSError("the transport is gone")

        assert (await run.call("steps", {}, on_progress=broken)).text_content == "done"

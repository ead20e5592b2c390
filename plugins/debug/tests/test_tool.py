"""Registration, argument validation, configuration and the adapters report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import tether
import tether_debug.hooks
from tether.testing import check_plugin_contract
from tether_debug import DebugAdapter

pytestmark = pytest.mark.anyio

# what an adapter command that resolves nowhere is reported as (the root's local bins, then PATH)
NOT_FOUND = (
    "not found in .venv/bin, venv/bin, node_modules/.bin, PATH or the interpreter's directory "
    f"({Path(sys.executable).parent})"
)


async def test_registered_only_with_a_conversation_id(tether_workdir: Path) -> None:
    async with tether.open_run(
        tether_workdir, plugins=[tether_debug.hooks], entry_points=False
    ) as run:
        assert "debug" not in run.tools
        assert "debug_supervisor" not in run.resources
    async with tether.open_run(
        tether_workdir, conversation_id="c1", plugins=[tether_debug.hooks], entry_points=False
    ) as run:
        spec = run.tools["debug"]
        assert spec.tier is tether.Tier.EXEC
        assert spec.parallel_safe is False
        # exec tier: absent from plan and read-only surfaces
        assert "debug" not in [s.name for s in run.tools_for("plan")]
        assert "debug" not in [s.name for s in run.tools_for("readonly")]


async def test_plugin_contract(debug_run, tether_workdir: Path) -> None:
    async with debug_run(tether_workdir) as run:
        assert await check_plugin_contract(run) == ["debug"]


async def test_each_op_names_the_fields_it_needs_and_refuses_the_rest(
    dbg, debug_run, tether_workdir: Path
) -> None:
    async with debug_run(tether_workdir) as run:

        async def problems(**args: Any) -> list[str]:
            text = await dbg.error(run, **args)
            head, *lines = text.splitlines()
            assert head == "invalid arguments for debug:", text
            return lines

        # which of file/function/exceptions goes with what is the op's own check
        assert await dbg.error(run, op="breakpoints", file="a.py") == (
            'lines: required for op "breakpoints" with file'
        )
        assert await problems(op="launch") == ['program: required for op "launch"']
        one_of = (
            'op "attach" takes exactly one of port and pid: port (a debug server listening on '
            "127.0.0.1) or pid (a local process); "
        )
        assert await problems(op="attach") == [f"port: {one_of}neither was given"]
        assert await problems(op="attach", port=5678, pid=42) == [f"pid: {one_of}both were given"]
        assert "pid: expected at least 1, got 0" in await dbg.error(run, op="attach", pid=0)
        assert await problems(op="scopes") == ['frame_id: required for op "scopes"']
        assert await problems(op="variables") == ['reference: required for op "variables"']
        assert await problems(op="evaluate") == ['expression: required for op "evaluate"']
        assert await problems(op="continue", frame_id=3) == [
            'frame_id: not used by op "continue"; leave it out'
        ]
        # a strict-schema client sends null for every unused field: that is "absent"
        assert (
            await run.call("debug", {"op": "status", "frame_id": None, "pid": None})
        ).text_content
        text = await dbg.error(run, op="dance")
        assert "op" in text and "dance" in text
        text = await dbg.error(run, op="attach", port=70000)
        assert "port: expected at most 65535, got 70000" in text
        text = await dbg.error(run, op="breakpoints", file="a.py", lines="3")
        assert "\nlines: expected" in text


async def test_a_config_key_that_does_not_exist_is_refused(tether_workdir: Path) -> None:
    caught: list[Exception] = []
    try:
        async with tether.open_run(
            tether_workdir,
            conversation_id="c1",
            plugins=[tether_debug.hooks],
            entry_points=False,
            config={"debug": {"ttl": 5}},
        ):
            pass
    except* tether.ConfigError as group:  # open_run's task group may wrap it
        caught.extend(group.exceptions)
    assert [str(e) for e in caught] == ["debug.ttl: unknown key (not in this table)"]


async def test_adapters_explains_what_is_usable_and_why_not(
    dbg, debug_run, py_workdir: Path
) -> None:
    async with debug_run(py_workdir) as run:
        text = await dbg.ok(run, op="adapters")
    lines = {line.split(" ", 2)[1]: line for line in text.splitlines() if line.startswith("- ")}
    assert set(lines) == {"debugpy", "rust", "lldb", "delve", "dart"}
    assert "debugpy" in lines and "usable: debugpy's adapter (" in lines["debugpy"]
    assert "root the workdir" in lines["debugpy"]
    # no go.mod here (and where dlv is missing, that is said too); the Dart SDK cannot be
    # installed here: both of its reasons are spelled out
    assert "unusable: no root marker (go.mod) found" in lines["delve"]
    assert f"unusable: no root marker (pubspec.yaml) found; `dart` {NOT_FOUND}" in lines["dart"]
    # lldb debugs any executable with debug information: its markers only choose a directory
    assert lines["lldb"].endswith(
        "no root marker (Cargo.toml, CMakeLists.txt) needed: it runs from the workdir"
    )


async def test_a_root_marker_without_the_binary_is_still_unusable(
    dbg, debug_run, tether_workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tether_workdir / "go.mod").write_text("module example.com/x\n\ngo 1.22\n")
    (tether_workdir / "main.go").write_text("package main\n\nfunc main() {}\n")
    monkeypatch.setenv("PATH", str(tmp_path))  # wherever dlv is installed, not here
    async with debug_run(tether_workdir) as run:
        text = await dbg.ok(run, op="adapters")
        assert f"- delve [Go (.go); attach by port or pid]: unusable: `dlv` {NOT_FOUND}" in text
        failure = await dbg.error(run, op="launch", program="main.go")
    assert failure == f"the delve adapter cannot debug 'main.go' here: unusable: `dlv` {NOT_FOUND}"


class _Gdb(DebugAdapter):
    id = "gdb"
    kind = "native executables via gdb"
    commands = (("gdb-that-is-not-installed", "--interpreter=dap"),)
    root_markers = ("Makefile",)
    program_suffixes = (".elf",)


class _BrokenShim(DebugAdapter):
    """On PATH but failing when run, like a rustup shim without its toolchain."""

    id = "shim"
    kind = "programs of a broken toolchain"
    commands = (("python3",),)
    probe_args = ("-c", "import sys; sys.exit('error: toolchain is not installed')")
    root_markers = ("Makefile",)


class _GdbPlugin:
    @tether.hookimpl
    def tether_debug_adapters(self) -> list[DebugAdapter]:
        return [_Gdb(), _BrokenShim()]


async def test_a_third_party_adapter_joins_through_the_hook(
    dbg, debug_run, tether_workdir: Path
) -> None:
    (tether_workdir / "Makefile").write_text("all:\n")
    (tether_workdir / "fw.elf").write_bytes(b"\x7fELF")
    async with debug_run(tether_workdir, plugins=[_GdbPlugin()]) as run:
        text = await dbg.ok(run, op="adapters")
        assert (
            f"- gdb [native executables via gdb; no attach]: unusable: `gdb-that-is-not-installed` {NOT_FOUND}"
            in text
        )
        shim = next(line for line in text.splitlines() if line.startswith("- shim "))
        assert shim.endswith("exited with code 1: error: toolchain is not installed")
        assert "unusable: `" in shim
        failure = await dbg.error(run, op="launch", program="fw.elf", adapter="gdb")
        assert f"`gdb-that-is-not-installed` {NOT_FOUND}" in failure
        unknown = await dbg.error(run, op="launch", program="fw.elf", adapter="gbd")
        assert unknown.startswith(
            "adapter: unknown adapter 'gbd'; known: dart, debugpy, delve, gdb, lldb"
        )


class _DuplicateDebugpy(DebugAdapter):
    id = "debugpy"


class _DuplicatePlugin:
    @tether.hookimpl
    def tether_debug_adapters(self) -> list[DebugAdapter]:
        return [_DuplicateDebugpy()]


class _BrokenAdapter(DebugAdapter):
    id = "broken"
    commands = ("gdb",)  # type: ignore[assignment]  # a wrong shape: one command, not a tuple of them


class _BrokenPlugin:
    @tether.hookimpl
    def tether_debug_adapters(self) -> list[DebugAdapter]:
        return [_BrokenAdapter()]


async def test_a_duplicate_or_malformed_adapter_is_dropped_and_its_plugin_reported(
    debug_run, tether_workdir: Path
) -> None:
    async with debug_run(tether_workdir, plugins=[_DuplicatePlugin(), _BrokenPlugin()]) as run:
        text = (await run.call("debug", {"op": "adapters"})).text_content
        assert "- debugpy [" in text and "- broken" not in text  # the rest keeps working
        failed = {i.name: i.reason for i in run.pm.report if i.status == "failed"}
        # the later-registered plugin is asked first (a harness overrides a built-in): the
        # built-in's debugpy is the one dropped, and the report says by whom
        assert failed["tether_debug.hooks"] == (
            "tether_debug_adapters: debug adapter 'debugpy' dropped: already contributed by "
            "'_DuplicatePlugin-1'"
        )
        assert failed["_BrokenPlugin-2"] == (
            "tether_debug_adapters: debug adapter dropped: commands: expected a tuple of argv "
            "tuples, got ('gdb',)"
        )


async def test_status_before_any_session(dbg, debug_run, py_workdir: Path) -> None:
    async with debug_run(py_workdir) as run:
        assert (
            await dbg.ok(run, op="status")
            == "No debug session in this conversation yet.\nBreakpoints: none."
        )
        text = await dbg.ok(run, op="breakpoints", file="loop.py", lines=[5, 14, 5])
        assert (
            text
            == "Breakpoints in loop.py: lines 5, 14. No session is running: they are sent at launch/attach."
        )
        assert (await dbg.ok(run, op="status")).endswith("Breakpoints: loop.py: 5, 14.")
        assert (
            await dbg.ok(run, op="breakpoints", file="loop.py", lines=[])
            == "Cleared every breakpoint in loop.py.\nRemoved: line 5, line 14."
        )
        for op in ("continue", "stack", "threads", "terminate"):
            assert (
                await dbg.error(run, op=op)
                == "no debug session in this conversation: launch or attach first"
            )
        assert "there is no output" in await dbg.error(run, op="output")


async def test_bad_breakpoint_and_program_paths(dbg, debug_run, py_workdir: Path) -> None:
    async with debug_run(py_workdir) as run:
        text = await dbg.error(run, op="breakpoints", file="../outside.py", lines=[1])
        assert text.startswith("file: '../outside.py' is outside the workdir")
        text = await dbg.error(run, op="breakpoints", file="/etc/passwd", lines=[1])
        assert text.startswith("file: '/etc/passwd' is outside the workdir")
        assert await dbg.error(run, op="breakpoints", file="nope.py", lines=[1]) == (
            "file: no such file in the workdir: 'nope.py'"
        )
        assert await dbg.error(run, op="breakpoints", file="loop.py", lines=[0]) == (
            "lines: line numbers start at 1, got 0"
        )
        assert await dbg.error(run, op="launch", program="missing.py") == (
            "program: no such file in the workdir: 'missing.py'"
        )
        (py_workdir / "notes.txt").write_text("hi\n")
        text = await dbg.error(run, op="launch", program="notes.txt")
        assert text.startswith("program: no debug adapter recognises 'notes.txt'")


async def test_limits_must_be_positive(tether_workdir: Path) -> None:
    caught: list[Exception] = []
    try:
        async with tether.open_run(
            tether_workdir,
            conversation_id="c1",
            plugins=[tether_debug.hooks],
            entry_points=False,
            config={"debug": {"ttl_s": -1}},
        ):
            pass
    except* tether.ConfigError as group:
        caught.extend(group.exceptions)
    assert [str(e) for e in caught] == ["debug.ttl_s: expected a number above 0, got -1.0"]


class _SilentTcp(DebugAdapter):
    """A TCP adapter that exits without saying where it listens."""

    id = "silent"
    kind = "nothing"
    commands = (("python3", "-c", "print('starting on {port}'); print('giving up')"),)
    probe_args = ("-c", "pass")
    root_markers = ("Makefile",)
    program_suffixes = (".silent",)
    transport = "tcp"
    listen_pattern = r"listening at: \S+:(?P<port>\d+)"


class _SilentPlugin:
    @tether.hookimpl
    def tether_debug_adapters(self) -> list[DebugAdapter]:
        return [_SilentTcp()]


async def test_a_tcp_adapter_that_never_says_where_it_listens(
    dbg, debug_run, tether_workdir: Path
) -> None:
    (tether_workdir / "Makefile").write_text("all:\n")
    (tether_workdir / "x.silent").write_text("")
    async with debug_run(tether_workdir, plugins=[_SilentPlugin()]) as run:
        text = await dbg.error(run, op="launch", program="x.silent")
    # {port} became 0: the adapter was to bind a port of the OS's choice and print it
    assert text == (
        "the silent adapter exited with code 0 before saying where it listens\n"
        "adapter stdout: starting on 0\ngiving up"
    )


class _LongWinded(_SilentTcp):
    """It prints a 2 MB line before it gives up."""

    id = "longwinded"
    commands = (("python3", "-c", "print('x' * 2_000_000); print('giving up')"),)


class _LongWindedPlugin:
    @tether.hookimpl
    def tether_debug_adapters(self) -> list[DebugAdapter]:
        return [_LongWinded()]


async def test_a_line_over_the_limit_while_looking_for_the_port_is_skipped(
    dbg, debug_run, tether_workdir: Path
) -> None:
    (tether_workdir / "Makefile").write_text("all:\n")
    (tether_workdir / "x.silent").write_text("")
    async with debug_run(tether_workdir, plugins=[_LongWindedPlugin()]) as run:
        text = await dbg.error(run, op="launch", program="x.silent")
    assert text.startswith(
        "the longwinded adapter exited with code 0 before saying where it listens\n"
        "adapter stdout: [a line over the limit of 1048576 bytes was skipped (it began b'xxx"
    ), text[:300]
    assert text.endswith("')]\ngiving up") and len(text) < 700


class _MyAdapter(DebugAdapter):
    id = "mine"
    kind = "programs of mine (.mine)"
    commands = (("my-debug-adapter",),)
    root_markers = ("mine.toml",)
    program_suffixes = (".mine",)


class _MyAdapterPlugin:
    @tether.hookimpl
    def tether_debug_adapters(self) -> list[DebugAdapter]:
        return [_MyAdapter()]


async def test_hook_tether_debug_adapters(dbg, debug_run, tether_workdir: Path) -> None:
    (tether_workdir / "mine.toml").write_text("")
    (tether_workdir / "x.mine").write_text("")
    async with debug_run(tether_workdir, plugins=[_MyAdapterPlugin()]) as run:
        text = await dbg.ok(run, op="adapters")
        assert "- mine [programs of mine (.mine)" in text
        assert "`my-debug-adapter` not found" in text  # found by the hook, judged like the rest
        error = await dbg.error(run, op="launch", program="x.mine", adapter="mine")
        assert "my-debug-adapter" in error


def test_every_family_hook_is_documented_and_tested() -> None:
    import tether_debug.hookspecs
    from tether.testing import check_hookspecs

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    checked = check_hookspecs(tether_debug.hookspecs, readme, Path(__file__).parent)
    assert checked == ["tether_debug_adapters"]

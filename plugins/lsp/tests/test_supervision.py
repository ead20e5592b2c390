"""Availability, hangs, crashes and restarts, with a third-party server added by the hook.

The misbehaving server is a real process speaking LSP (tests/fake_lsp_server.py): no real
server can be made to hang or die on cue.
"""

from __future__ import annotations

import os
import re
import signal
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from lsp_testkit import Caller, open_lsp_run

import tether
from tether.processes.launch import SAFE
from tether.processes.managed import is_alive
from tether_lsp import ServerSpec
from tether_lsp.servers import BUILTIN_SERVERS

FAKE = str(Path(__file__).parent / "fake_lsp_server.py")


class ThirdParty:
    """What a third-party plugin does to add servers: implement tether_lsp_servers."""

    def __init__(self, workdir: Path, mode: str = "ok", log: Path | None = None) -> None:
        self.workdir = workdir
        self.mode = mode
        self.log = log

    @tether.hookimpl
    def tether_lsp_servers(self) -> list[ServerSpec]:
        broken = self.workdir / "bin" / "broken-ls"
        log = (str(self.log),) if self.log else ()
        return [
            ServerSpec(
                id="fake",
                untrusted=SAFE,
                language="fake",
                extensions={".fake": "fake"},
                command=(sys.executable, FAKE, self.mode, *log),
                root_markers=("fake.toml",),
            ),
            ServerSpec(
                id="broken-ls",
                untrusted=SAFE,
                language="broken",
                extensions={".brk": "broken"},
                command=(str(broken),),
                probe=(str(broken), "--version"),
                root_markers=("broken.toml",),
            ),
            ServerSpec(
                id="local-ls",
                untrusted=SAFE,
                language="local",
                extensions={".loc": "local"},
                command=("local-ls", "--stdio"),
                probe=("local-ls", "--version"),
                root_markers=("local.toml",),
            ),
            ServerSpec(
                id="absent-ls",
                untrusted=SAFE,
                language="absent",
                extensions={".abs": "absent"},
                command=("absent-language-server-xyz",),
                probe=("absent-language-server-xyz", "--version"),
                root_markers=("absent.toml",),
                install="pip install absent-ls-xyz",
            ),
        ]


def make_project(workdir: Path) -> None:
    (workdir / "fake.toml").write_text("")
    (workdir / "broken.toml").write_text("")
    (workdir / "absent.toml").write_text("")
    (workdir / "main.fake").write_text("def alpha\nalpha alpha\n")
    (workdir / "x.brk").write_text("x\n")
    (workdir / "x.abs").write_text("x\n")
    (workdir / "bin").mkdir()
    broken = workdir / "bin" / "broken-ls"
    broken.write_text(
        "#!/bin/sh\necho 'broken-ls: libfoo.so.3: cannot open shared object' >&2\nexit 127\n"
    )
    broken.chmod(broken.stat().st_mode | stat.S_IXUSR)
    (workdir / "local.toml").write_text("")
    (workdir / ".venv" / "bin").mkdir(parents=True)
    local = workdir / ".venv" / "bin" / "local-ls"
    local.write_text("#!/bin/sh\nexit 0\n")
    local.chmod(local.stat().st_mode | stat.S_IXUSR)


NOT_FOUND = (
    f"not found on PATH or the interpreter's directory ({Path(sys.executable).parent}) (the "
    "workdir's .venv/bin, venv/bin, node_modules/.bin are used only when the harness trusts it: "
    "--trust-workdir)"
)
# a fresh fake server answers initialize at once on a quiet machine; a busy CI machine may take
# seconds to start a Python process
LIMITS = {"request_timeout_s": 1.0, "start_timeout_s": 20.0, "max_restarts": 2}


@pytest.fixture(scope="module")
def fake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Caller, Path]]:
    workdir = tmp_path_factory.mktemp("fake")
    make_project(workdir)
    with open_lsp_run(
        workdir, LIMITS, plugins=[ThirdParty(workdir, log=workdir / "log.txt")]
    ) as run:
        yield Caller(run), workdir


def supervisor(caller: Caller) -> Any:
    return caller.run.run.resources["lsp_supervisor"]


def test_a_third_party_server_answers(fake: tuple[Caller, Path]) -> None:
    caller, _ = fake
    text = caller.ok(action="definition", file="main.fake", line=2, symbol="alpha#2")
    assert text == "1 definition of `alpha` at main.fake:2:\nmain.fake:1:5: def alpha"


def test_a_hanging_request_is_kept_until_its_file_changes(fake: tuple[Caller, Path]) -> None:
    caller, workdir = fake
    (workdir / "hang.fake").write_text("def alpha\n")
    text = caller.err(action="hover", file="hang.fake", line=1, symbol="alpha")
    assert re.match(r"fake is still computing textDocument/hover \(asked \d+ s ago\)", text)
    assert "ask again with the same call" in text and "lsp reload" not in text
    # asked again: the same request is waited for, not sent again
    again = caller.err(action="hover", file="hang.fake", line=1, symbol="alpha")
    assert again.startswith("fake is still computing textDocument/hover (asked ")
    # the server is still usable meanwhile
    assert "main.fake:1:5" in caller.ok(
        action="definition", file="main.fake", line=1, symbol="alpha"
    )
    log = (workdir / "log.txt").read_text().splitlines()
    hovers = [line for line in log if line.startswith("textDocument/hover ")]
    assert len(hovers) == 1 and not any(line.startswith("$/cancelRequest ") for line in log)
    # the file changes: its kept request is cancelled, the next hover is a new request
    (workdir / "hang.fake").write_text("def alpha beta\n")
    caller.err(action="hover", file="hang.fake", line=1, symbol="alpha")
    caller.ok(action="definition", file="main.fake", line=1, symbol="alpha")
    log = (workdir / "log.txt").read_text().splitlines()
    request_id = hovers[0].split()[1]
    assert f"$/cancelRequest {request_id}" in log
    assert len([line for line in log if line.startswith("textDocument/hover ")]) == 2


def ask_until_done(caller: Caller, **args: Any) -> str:
    """Ask again while the answer is still being computed (bounded); the answer."""
    for _ in range(10):
        result = caller.run.call("lsp", args)
        if not result.is_error:
            return result.text_content
        assert "is still computing" in result.text_content, result.text_content
    raise AssertionError(f"no answer after 10 calls: {result.text_content}")


def test_a_slow_first_answer_reaches_the_next_identical_call(tmp_path: Path) -> None:
    make_project(tmp_path)
    log = tmp_path / "log.txt"
    lsp = {"request_timeout_s": 1.0, "start_timeout_s": 5.0, "diagnostics_timeout_s": 0.5}
    with open_lsp_run(tmp_path, lsp, plugins=[ThirdParty(tmp_path, "slow", log)]) as run:
        caller = Caller(run)
        first = caller.err(action="hover", file="main.fake", line=2, symbol="alpha#1")
        assert first.startswith("fake is still computing textDocument/hover")
        # the server answers 6 s after it was asked: a later identical call gets that answer
        answer = ask_until_done(caller, action="hover", file="main.fake", line=2, symbol="alpha#1")
        assert answer == "slow hover of line 2"
        # one request, answered once: the kept request is gone after it was handed over
        hovers = [line for line in log.read_text().splitlines() if "hover" in line]
        assert len(hovers) == 1
        assert caller.err(action="hover", file="main.fake", line=1, symbol="alpha").startswith(
            "fake is still computing"
        )
        # diagnostics that come late: the write says they are coming, the next ask has them
        written = caller.ok("write", path="late.fake", content="fine\nBAD\n")
        assert written == (
            "created late.fake (9 bytes)\n\n(fake is still computing the diagnostics of "
            "late.fake after 0.5 s: not computed yet for the text just written; "
            "`lsp diagnostics` for late.fake gives them once it is done)"
        )
        listed = ask_until_done(caller, action="diagnostics", file="late.fake")
        assert (
            listed
            == "1 diagnostics for late.fake (fake):\nlate.fake:2:1 error [X1]: bad line (fake)"
        )


def test_a_message_over_the_limit_is_skipped_and_the_server_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether_lsp import rpc

    monkeypatch.setattr(rpc, "MAX_MESSAGE_BYTES", 1_000_000)
    make_project(tmp_path)
    with open_lsp_run(tmp_path, LIMITS, plugins=[ThirdParty(tmp_path, "huge")]) as run:
        caller = Caller(run)
        text = caller.err(action="hover", file="main.fake", line=1, symbol="alpha")
        assert re.match(
            r"fake did not answer textDocument/hover within \d+ s, and meanwhile a message of "
            r"2\d{6} bytes",
            text,
        ), text
        assert "over the limit of 1000000 bytes, was skipped — it may have been the answer" in text
        # the same server (not restarted) reads on and answers
        pid = supervisor(caller).clients[0].pid
        assert "main.fake:1:5" in caller.ok(
            action="definition", file="main.fake", line=1, symbol="alpha"
        )
        assert supervisor(caller).clients[0].pid == pid


def test_a_server_dying_mid_request_then_restarting(fake: tuple[Caller, Path]) -> None:
    caller, _ = fake
    old_pid = supervisor(caller).clients[0].pid
    text = caller.err(action="references", file="main.fake", line=1, symbol="alpha")
    assert text.startswith("fake exited (its output closed, exit code 3)")
    assert not is_alive(old_pid)
    # the next call starts a fresh server and works
    assert "main.fake:1:5" in caller.ok(
        action="definition", file="main.fake", line=1, symbol="alpha"
    )
    assert supervisor(caller).clients[0].pid != old_pid


def test_a_crash_loop_stops_restarting(tmp_path: Path) -> None:
    make_project(tmp_path)  # a run of its own: no crash from another test counts here
    with open_lsp_run(tmp_path, LIMITS, plugins=[ThirdParty(tmp_path)]) as run:
        caller = Caller(run)
        crashes = [
            caller.err(action="references", file="main.fake", line=1, symbol="alpha")
            for _ in range(3)
        ]
        # max_restarts = 2: the first crash and two restarts that crash again
        assert all(text.startswith("fake exited (its output closed") for text in crashes)
        assert not any("not restarting" in text for text in crashes)
        # the next call finds three crashes within the minute and does not start it again
        refused = caller.err(action="definition", file="main.fake", line=1, symbol="alpha")
        assert "fake for . crashed 3 times within 60 s; not restarting it again" in refused
        assert "Last exit: its output closed" in refused
        # asking again does not count as crashing again
        assert "crashed 3 times within 60 s" in caller.err(
            action="definition", file="main.fake", line=1, symbol="alpha"
        )
        # reload is the way out
        assert caller.ok(action="reload", file="main.fake").startswith("restarted fake for .")
        assert "main.fake:1:5" in caller.ok(
            action="definition", file="main.fake", line=1, symbol="alpha"
        )


def test_status_explains_missing_and_broken_binaries(fake: tuple[Caller, Path]) -> None:
    caller, _ = fake
    status = caller.ok(action="status")
    assert "fake for . (pid " in status
    assert (
        "broken-ls [broken] cannot answer here — not usable: `broken-ls --version` exited with code 127: "
        "broken-ls: libfoo.so.3: cannot open shared object; roots: ." in status
    )
    assert (
        "absent-ls [absent] cannot answer here — not usable: `absent-language-server-xyz` "
        f"{NOT_FOUND}; install: pip install absent-ls-xyz; roots: ." in status
    )
    assert "rust-analyzer [rust] cannot answer here — not usable:" in status
    # the workdir is not trusted: its .venv/bin is not where a read-tier server runs from
    assert f"local-ls [local] cannot answer here — not usable: `local-ls` {NOT_FOUND}" in status


def test_a_trusted_workdirs_local_bin_wins_over_path(tmp_path: Path) -> None:
    make_project(tmp_path)
    local = tmp_path / ".venv" / "bin" / "local-ls"
    # a real (scripted) language server this time: "usable" means it answered initialize
    local.write_text(
        f'#!/bin/sh\n[ "$1" = --version ] && exit 0\nexec {sys.executable} {FAKE} ok\n'
    )
    with open_lsp_run(tmp_path, LIMITS, plugins=[ThirdParty(tmp_path)], trust_workdir=True) as run:
        status = Caller(run).ok(action="status")
    assert (
        f"local-ls [local] can answer — usable (answered initialize; {tmp_path}/.venv/bin/local-ls);"
        " roots: ." in status
    )


class WrongSubcommand:
    """The issue's `ruff serve`: the binary runs (`--version` exits 0) but is no server."""

    def __init__(self, workdir: Path) -> None:
        self.script = workdir / "bin" / "wrong-ls"

    @tether.hookimpl
    def tether_lsp_servers(self) -> list[ServerSpec]:
        self.script.write_text(
            '#!/bin/sh\n[ "$1" = --version ] && { echo wrong-ls 1.0; exit 0; }\n'
            "echo \"error: unrecognized subcommand 'serve'\" >&2\nexit 2\n"
        )
        self.script.chmod(0o755)
        return [
            ServerSpec(
                id="wrong-ls",
                untrusted=SAFE,
                language="wrong",
                extensions={".wrong": "wrong"},
                command=(str(self.script), "serve"),
                probe=(str(self.script), "--version"),
                root_markers=("wrong.toml",),
            )
        ]


def test_status_calls_usable_only_a_server_that_answered_initialize(tmp_path: Path) -> None:
    make_project(tmp_path)
    (tmp_path / "wrong.toml").write_text("")
    plugins = [ThirdParty(tmp_path), WrongSubcommand(tmp_path)]
    with open_lsp_run(tmp_path, LIMITS, plugins=plugins) as run:
        caller = Caller(run)
        status = caller.ok(action="status")
        line = next(ln for ln in status.splitlines() if ln.startswith("  wrong-ls"))
        assert line.startswith(
            "  wrong-ls [wrong] cannot answer here — not usable: wrong-ls failed"
        )
        assert "its stderr ends with:\nerror: unrecognized subcommand 'serve'" in status
        fake = next(ln for ln in status.splitlines() if ln.startswith("  fake ["))
        assert "can answer — usable (answered initialize;" in fake
        # the probed process is the one the first query uses: no second start
        [running] = [c for c in run.run.resources["lsp_supervisor"].clients if c.spec.id == "fake"]
        assert "main.fake:1:5" in caller.ok(
            action="definition", file="main.fake", line=2, symbol="alpha#2"
        )
        [still] = [c for c in run.run.resources["lsp_supervisor"].clients if c.spec.id == "fake"]
        assert still is running and still.pid == running.pid


def test_a_query_on_an_unusable_server_says_why(fake: tuple[Caller, Path]) -> None:
    caller, _ = fake
    text = caller.err(action="hover", file="x.brk", line=1, symbol="x")
    assert text.startswith("no usable broken language server for x.brk:\n  broken-ls: not usable")
    assert "cannot open shared object" in text
    text = caller.err(action="hover", file="x.abs", line=1, symbol="x")
    assert "absent-ls: not usable — `absent-language-server-xyz` not found" in text


def test_no_root_marker_falls_back_to_the_workdir_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "lonely.fake").write_text("def alpha\n")
    with open_lsp_run(tmp_path, plugins=[ThirdParty(tmp_path)]) as run:
        text = Caller(run).ok(action="definition", file="lonely.fake", line=1, symbol="alpha")
    assert text.endswith(
        "(no root marker (fake.toml) in the workdir: fake runs with the workdir as its root)"
    ), text


def test_a_server_that_never_initializes(tmp_path: Path) -> None:
    make_project(tmp_path)
    lsp = {"start_timeout_s": 1.0}
    with open_lsp_run(tmp_path, lsp, plugins=[ThirdParty(tmp_path, "hang-init")]) as run:
        text = Caller(run).err(action="definition", file="main.fake", line=1, symbol="alpha")
        pids = [client.pid for client in run.run.resources["lsp_supervisor"].clients]
    assert text.startswith(
        "no usable fake language server for main.fake:\n"
        "  fake: not usable — fake failed to start: fake did not answer initialize within 1 s"
    )
    assert all(not is_alive(pid) for pid in pids)


def test_no_server_outlives_its_run(tmp_path: Path) -> None:
    make_project(tmp_path)
    with open_lsp_run(tmp_path, plugins=[ThirdParty(tmp_path)]) as run:
        Caller(run).ok(action="definition", file="main.fake", line=1, symbol="alpha")
        pid = run.run.resources["lsp_supervisor"].clients[0].pid
        assert is_alive(pid)
    assert not is_alive(pid)


class Duplicate:
    @tether.hookimpl
    def tether_lsp_servers(self) -> list[ServerSpec]:
        return [
            ServerSpec(
                id="clangd",
                untrusted=SAFE,
                language="c",
                extensions={".c": "c"},
                command=("x",),
                root_markers=("x",),
            )
        ]


def test_a_duplicate_or_malformed_server_is_dropped_and_its_plugin_reported(
    tmp_path: Path,
) -> None:
    class WrongShape:
        @tether.hookimpl
        def tether_lsp_servers(self) -> list[object]:
            # extensions must map suffix -> language id; a tuple is the wrong shape
            return [attrs.evolve(BUILTIN_SERVERS[0], id="odd", extensions=(".py",))]

    class WrongField:
        @tether.hookimpl
        def tether_lsp_servers(self) -> list[object]:
            return [ServerSpec(id="x", language="x", probes=("x",))]  # type: ignore[call-arg]

    plugins = [Duplicate(), WrongShape(), WrongField()]
    with open_lsp_run(tmp_path, plugins=plugins) as run:
        failed = {i.name: i.reason or "" for i in run.run.pm.report if i.status == "failed"}
        assert "language server 'clangd' dropped: already contributed by" in failed["lsp"]
        assert failed["WrongShape-1"].startswith("tether_lsp_servers: raised ValueError")
        assert failed["WrongField-2"].startswith("tether_lsp_servers: raised TypeError")
        # everything else keeps working
        assert "basedpyright" in Caller(run).ok("lsp", action="status")


def test_an_empty_answer_while_indexing_says_so(tmp_path: Path) -> None:
    make_project(tmp_path)
    lsp = {"ready_timeout_s": 0.5}
    with open_lsp_run(tmp_path, lsp, plugins=[ThirdParty(tmp_path, "indexing")]) as run:
        caller = Caller(run)
        text = caller.ok(action="definition", file="main.fake", line=2, symbol="alpha#1")
        assert text == (
            "fake is still indexing (indexing: 0/40 files); no definition for `alpha` at "
            "main.fake:2 yet — ask again in a moment"
        )
        assert "fake for . (pid" in caller.ok(action="status")
        assert "still indexing: indexing: 0/40 files" in caller.ok(action="status")


@attrs.frozen
class SaveArgs:
    path: str = tether.arg(description="where")
    text: str = tether.arg(description="what")


def save(call: tether.CallContext, args: SaveArgs) -> str:
    call.run.confine(args.path).write_text(args.text)
    return f"saved {args.path}"


def test_a_host_tool_that_declares_what_it_wrote_gets_diagnostics(tmp_path: Path) -> None:
    make_project(tmp_path)
    with open_lsp_run(tmp_path, {}, plugins=[ThirdParty(tmp_path)]) as run:
        for name, writes in (("save", "path"), ("save_quietly", None)):
            run.register_host_tool(
                tether.ToolSpec(
                    name=name,
                    tier=tether.Tier.READ,
                    args=SaveArgs,
                    handler=save,
                    description="the harness's own write tool",
                    writes=writes,
                )
            )
        caller = Caller(run)
        text = caller.ok("save", path="one.fake", text="fine\nBAD\n")
        assert (
            text
            == "saved one.fake\n\nNew diagnostics from fake (1):\none.fake:2:1 error [X1]: bad line (fake)"
        )
        # it wrote by hand and did not say so: nothing to key on, its result is left alone
        assert caller.ok("save_quietly", path="two.fake", text="BAD\n") == "saved two.fake"


def test_the_removed_write_tools_key_says_what_replaced_it(tmp_path: Path) -> None:
    make_project(tmp_path)
    with pytest.raises(BaseException) as caught:
        with open_lsp_run(tmp_path, {"write_tools": ["save"]}):
            pass
    assert "lsp.write_tools: removed in 0.2" in repr(caught.value)


def test_a_write_whose_server_is_unusable_says_diagnostics_are_unavailable(
    fake: tuple[Caller, Path],
) -> None:
    caller, _ = fake
    # broken-ls is found but cannot start: silence would read as "no new problems"
    text = caller.ok("write", path="y.brk", content="y\n")
    assert text.startswith(
        "created y.brk (2 bytes)\n\n(diagnostics unavailable: no usable broken language server "
        "for y.brk:\n  broken-ls: not usable — broken-ls failed to start:"
    )
    assert "cannot open shared object" in text and text.endswith(")")
    text = caller.ok("write", path="y.abs", content="y\n")
    assert text == (
        "created y.abs (2 bytes)\n\n(diagnostics unavailable: no usable absent language server "
        f"for y.abs:\n  absent-ls: not usable — `absent-language-server-xyz` {NOT_FOUND}; "
        "install: pip install absent-ls-xyz)"
    )
    # no server handles .txt at all: there is nothing to report
    assert caller.ok("write", path="y.txt", content="y\n") == "created y.txt (2 bytes)"


def test_a_write_without_a_root_marker_gets_diagnostics_from_the_workdir_root(
    tmp_path: Path,
) -> None:
    with open_lsp_run(tmp_path, plugins=[ThirdParty(tmp_path)]) as run:
        text = Caller(run).ok("write", path="lonely.fake", content="BAD\n")
    assert text == (
        "created lonely.fake (4 bytes)\n\nNew diagnostics from fake (1):\n"
        "lonely.fake:1:1 error [X1]: bad line (fake)\n\n(no root marker (fake.toml) in the "
        "workdir: fake runs with the workdir as its root)"
    )


def test_code_actions_offer_the_quick_fix_of_a_diagnostic(fake: tuple[Caller, Path]) -> None:
    caller, workdir = fake
    (workdir / "fixme.fake").write_text("fine\nBAD line\n")
    text = caller.ok(action="code_actions", file="fixme.fake", line=2, symbol="BAD")
    assert text == ("1 code actions for `BAD` at fixme.fake:2 (fake):\n- fix: bad line [quickfix]")


def test_code_actions_say_when_diagnostics_did_not_arrive(tmp_path: Path) -> None:
    make_project(tmp_path)
    (tmp_path / "fixme.fake").write_text("fine\nBAD line\n")
    lsp = {"diagnostics_timeout_s": 0.3}
    with open_lsp_run(tmp_path, lsp, plugins=[ThirdParty(tmp_path, "silent")]) as run:
        text = Caller(run).ok(action="code_actions", file="fixme.fake", line=2, symbol="BAD")
    # without this version's diagnostics no quick fix can be asked for: not "none exist"
    assert text == (
        "no code actions offered by fake for `BAD` at fixme.fake:2\n(diagnostics of fixme.fake "
        "did not arrive from fake within 0.3 s; quick fixes for them may be missing)"
    )


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Caller]:
    """A server answering with more than every cap lets through."""
    workdir = tmp_path_factory.mktemp("many")
    (workdir / "fake.toml").write_text("")
    (workdir / "many.fake").write_text("".join(f"alpha {n}\n" for n in range(400)))
    with open_lsp_run(workdir, LIMITS, plugins=[ThirdParty(workdir, "many")]) as run:
        yield Caller(run)


def test_references_are_capped_at_50(many: Caller) -> None:
    text = many.ok(action="references", file="many.fake", line=1, symbol="alpha")
    head, *rows = text.splitlines()
    assert head == "312 references of `alpha` at many.fake:1 (50 of 312 references shown):"
    assert rows == [f"many.fake:{n + 1}:1: alpha {n}" for n in range(50)]


def test_workspace_symbols_are_capped_at_100(many: Caller) -> None:
    text = many.ok(action="symbols", query="sym")
    head, *rows = text.splitlines()
    assert head == "250 symbols matching 'sym' (fake) (100 of 250 symbols shown):"
    # a symbol at 1:1 stands for the whole file: its place is the path alone
    assert rows == ["function sym0 — many.fake"] + [
        f"function sym{n} — many.fake:{n + 1}:1" for n in range(1, 100)
    ]


def test_document_symbols_are_capped_at_200(many: Caller) -> None:
    text = many.ok(action="symbols", file="many.fake")
    head, *rows = text.splitlines()
    assert head == "250 symbols in many.fake (200 of 250 symbols shown):"
    assert rows == [f"function sym{n} many.fake:{n + 1}:1" for n in range(200)]


def test_code_actions_are_capped_at_50(many: Caller) -> None:
    text = many.ok(action="code_actions", file="many.fake", line=1, symbol="alpha")
    head, *rows = text.splitlines()
    assert head == (
        "60 code actions for `alpha` at many.fake:1 (fake) (50 of 60 code actions shown):"
    )
    assert rows == [f"- action {n} [refactor]" for n in range(50)]


def test_diagnostics_are_capped(many: Caller) -> None:
    text = many.ok("write", path="bad.fake", content="BAD\n" * 40)
    head, *rows = text.split("\n\n", 1)[1].splitlines()
    assert head == "New diagnostics from fake (40, 30 of 40 diagnostics shown):"
    assert rows == [f"bad.fake:{n + 1}:1 error [X1]: bad line (fake)" for n in range(30)]
    (many.run.run.workdir / "worse.fake").write_text("BAD\n" * 120)
    head, *rows = many.ok(action="diagnostics", file="worse.fake").splitlines()
    assert head == "120 diagnostics for worse.fake (fake) (100 of 120 diagnostics shown):"
    assert len(rows) == 100


def test_a_stopped_server_is_named_unresponsive_then_restarted(tmp_path: Path) -> None:
    make_project(tmp_path)
    with open_lsp_run(tmp_path, LIMITS, plugins=[ThirdParty(tmp_path)]) as run:
        caller = Caller(run)
        args = {"action": "definition", "file": "main.fake", "line": 1, "symbol": "alpha"}
        assert "main.fake:1:5" in caller.ok(**args)
        (client,) = supervisor(caller).clients
        assert "fake for . (pid" in caller.ok(action="status") and ": ready" in caller.ok(
            action="status"
        )
        os.kill(client.pid, signal.SIGSTOP)
        try:
            first = caller.err(**args)
            assert first.startswith("fake is still computing textDocument/definition")
            status = caller.ok(action="status")
            assert re.search(
                r"fake for \. \(pid \d+.*\): unresponsive since \d\d:\d\d:\d\d UTC \(1 request in "
                r"a row timed out; its processes are stopped\)",
                status,
            ), status
            caller.err(**args)  # the second timeout in a row
            # the next query restarts it, and says so beside its answer
            text = caller.ok(**args)
            assert "main.fake:1:5" in text, text
            assert re.search(
                r"\(restarted fake for \.: it was unresponsive since \d\d:\d\d:\d\d UTC \(2 "
                r"requests in a row timed out; its processes are stopped\) and did not answer a "
                r"probe either\)",
                text,
            ), text
            assert not is_alive(client.pid)
        finally:
            if is_alive(client.pid):
                os.kill(client.pid, signal.SIGCONT)


def test_a_busy_server_is_never_restarted(tmp_path: Path) -> None:
    make_project(tmp_path)
    lsp = {"request_timeout_s": 0.5, "start_timeout_s": 5.0}
    with open_lsp_run(tmp_path, lsp, plugins=[ThirdParty(tmp_path, "spin")]) as run:
        caller = Caller(run)
        assert "main.fake:1:5" in caller.ok(
            action="definition", file="main.fake", line=1, symbol="alpha"
        )
        (client,) = supervisor(caller).clients
        # timeouts in a row while it computes (8 s of CPU): busy, not hung
        args = {"action": "hover", "file": "main.fake", "line": 1, "symbol": "alpha"}
        timeouts = 0
        while (result := caller.run.call("lsp", args)).is_error:
            assert result.text_content.startswith("fake is still computing"), result.text_content
            assert not client.hang.unresponsive  # what status reports
            timeouts += 1
            assert timeouts < 40
        assert timeouts >= 2  # enough to restart a hung server
        assert result.text_content == "slow hover of line 1"
        assert supervisor(caller).clients[0].pid == client.pid


def test_config_bounds_are_enforced(tmp_path: Path) -> None:
    """The issue's reproduction: `[lsp] request_timeout_s = -5` was accepted."""
    make_project(tmp_path)
    with pytest.raises(BaseException) as caught:
        with open_lsp_run(tmp_path, {"request_timeout_s": -5}):
            pass
    assert "lsp.request_timeout_s: expected a number above 0, got -5" in repr(caught.value)


def test_hook_tether_lsp_servers(tmp_path: Path) -> None:
    """A server a third-party plugin contributes answers like a built-in one."""
    make_project(tmp_path)
    with open_lsp_run(tmp_path, plugins=[ThirdParty(tmp_path)]) as run:
        status = Caller(run).ok("lsp", action="status")
        assert "fake" in status and "broken-ls" in status
        text = Caller(run).ok(action="definition", file="main.fake", line=2, symbol="alpha#2")
        assert "main.fake:1" in text


def test_every_family_hook_is_documented_and_tested() -> None:
    import tether_lsp.hookspecs
    from tether.testing import check_hookspecs

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    assert check_hookspecs(tether_lsp.hookspecs, readme, Path(__file__).parent) == [
        "tether_lsp_servers"
    ]


def test_a_project_without_a_usable_server_says_what_is_missing(tmp_path: Path) -> None:
    """Its root marker is there (Cargo.toml with rust-analyzer a rustup stub; here broken-ls
    and absent-ls): workspace ``symbols`` and ``diagnostics "*"`` name the server and why it
    cannot run, never "no language server has a root marker" (issue 31 §6)."""
    (tmp_path / "broken.toml").write_text("")
    (tmp_path / "bin").mkdir()
    broken = tmp_path / "bin" / "broken-ls"
    broken.write_text(
        "#!/bin/sh\necho 'broken-ls: libfoo.so.3: cannot open shared object' >&2\nexit 127\n"
    )
    broken.chmod(broken.stat().st_mode | stat.S_IXUSR)
    with open_lsp_run(tmp_path, LIMITS, plugins=[ThirdParty(tmp_path)]) as run:
        caller = Caller(run)
        symbols = caller.err(action="symbols", query="x")
        assert "no language server has a root marker" not in symbols, symbols
        assert symbols.startswith("no usable language server for the workdir's projects"), symbols
        assert "broken-ls:" in symbols and "cannot open shared object" in symbols, symbols
        checked = caller.err(action="diagnostics", file="*")
        assert "has a root marker" not in checked, checked
        assert "broken-ls:" in checked and "cannot open shared object" in checked, checked

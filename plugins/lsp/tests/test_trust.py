"""A workdir the harness does not trust runs nothing of its own through the read-tier `lsp`
(issue 11, item 1): not a planted server binary, not a planted tsserver.js, not a planted
`.venv/bin/python` (basedpyright runs the project root's one when no interpreter is set)."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest
from lsp_testkit import Caller, copy_project, need, open_lsp_run

import tether
from tether.processes.launch import Untrusted
from tether_lsp import ServerSpec
from tether_lsp.tools import RESOURCE
from tether_lsp.trust import trusted_python


@pytest.fixture(autouse=True)
def _code_routes_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The code routes' closure is tested on its own: under the write confinement
    (tether.processes.confine) a payload that ran could not leave its mark outside the workdir, and the
    test would pass unseen (and the fake server logs beside the workdir)."""
    monkeypatch.setenv("TETHER_CONFINEMENT", "none")


def plant(path: Path, text: str, executable: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_planted_typescript_server_and_tsserver_are_not_run_untrusted(tmp_path: Path) -> None:
    need("typescript-language-server")
    workdir = copy_project("tsproj", tmp_path)
    ran = tmp_path / "PLANTED-SERVER-RAN"
    loaded = tmp_path / "PLANTED-TSSERVER-LOADED"
    plant(
        workdir / "node_modules" / ".bin" / "typescript-language-server",
        f"#!/bin/sh\ntouch {ran}\nexit 1\n",
    )
    typescript = workdir / "node_modules" / "typescript"
    plant(typescript / "package.json", '{"name": "typescript", "version": "5.9.9"}', False)
    plant(
        typescript / "lib" / "tsserver.js",
        f"require('fs').writeFileSync({str(loaded)!r}, 'x'); process.exit(1);\n",
        False,
    )
    with open_lsp_run(workdir) as run:
        text = Caller(run).ok(action="symbols", query="Polite")
    assert "class Polite" in text
    assert not ran.exists() and not loaded.exists()
    # trusted, the workdir's own copy is what runs (and here it fails, as planted)
    with open_lsp_run(workdir, trust_workdir=True) as run:
        result = run.call("lsp", {"action": "symbols", "query": "Polite"})
    assert result.is_error and ran.exists()


def test_basedpyright_is_given_an_interpreter_outside_an_untrusted_workdir(tmp_path: Path) -> None:
    need("basedpyright-langserver")
    workdir = copy_project("pyproj", tmp_path)
    ran = tmp_path / "PLANTED-PYTHON-RAN"
    plant(workdir / ".venv" / "bin" / "python", f"#!/bin/sh\ntouch {ran}\nexit 1\n")
    with open_lsp_run(workdir) as run:
        caller = Caller(run)
        assert "class Square" in caller.ok(action="symbols", query="Square")
        assert "Square" in caller.ok(action="hover", file="pkg/use.py", line=3, symbol="square#1")
    assert not ran.exists()
    with open_lsp_run(workdir, trust_workdir=True) as run:
        Caller(run).ok(action="symbols", query="Square")
    assert ran.exists()  # trusted: the project's own interpreter is the one asked


FAKE = str(Path(__file__).parent / "fake_lsp_server.py")


class Declaring:
    """A third party's server whose spec declares (or not) what an untrusted workdir needs."""

    def __init__(self, log: Path, untrusted: Untrusted | None) -> None:
        self.log = log
        self.untrusted = untrusted

    @tether.hookimpl
    def tether_lsp_servers(self) -> list[ServerSpec]:
        return [
            ServerSpec(
                id="fake",
                language="fake",
                extensions={".fake": "fake"},
                command=(sys.executable, FAKE, "ok", str(self.log)),
                root_markers=("fake.toml",),
                untrusted=self.untrusted,
            )
        ]


def fake_project(workdir: Path) -> None:
    (workdir / "fake.toml").write_text("")
    (workdir / "a.fake").write_text("hello\n")


@pytest.mark.parametrize("trusted", [False, True])
def test_a_declared_switch_is_given_on_an_untrusted_workdir_only(
    tmp_path: Path, trusted: bool
) -> None:
    fake_project(tmp_path)
    closing = Untrusted(
        risk="it runs what its config names",
        closed_by="--interpreter outside the workdir",
        args=("--interpreter", "{python}"),
        env={"FAKE_PINNED": "{python}"},
    )
    plugin = Declaring(tmp_path.parent / f"log-{trusted}", closing)
    with open_lsp_run(tmp_path, plugins=[plugin], trust_workdir=trusted) as run:
        assert "fake [fake] can answer" in Caller(run).ok(action="status")
        (client,) = [c for c in run.resource(RESOURCE).clients if c.spec.id == "fake"]
        argv = Path(f"/proc/{client.pid}/cmdline").read_bytes().split(b"\0")
        environ = Path(f"/proc/{client.pid}/environ").read_bytes().split(b"\0")
    python = trusted_python(tmp_path).encode()
    assert (b"--interpreter" in argv and python in argv) is not trusted
    assert (b"FAKE_PINNED=" + python in environ) is not trusted


def test_a_server_that_declares_nothing_is_unavailable_untrusted_and_says_how_to_allow(
    tmp_path: Path,
) -> None:
    fake_project(tmp_path)
    log = tmp_path.parent / "log"
    with open_lsp_run(tmp_path, plugins=[Declaring(log, None)]) as run:
        caller = Caller(run)
        status = caller.ok(action="status")
        hover = run.call("lsp", {"action": "hover", "file": "a.fake", "line": 1, "symbol": "hello"})
    assert (
        "fake [fake] cannot answer here — not usable: fake is unavailable on an untrusted "
        "workdir: its spec declares nothing about what the workdir can make it run "
        "(`untrusted`); allow with --trust-workdir / open_run(trust_workdir=True)" in status
    )
    assert hover.is_error and "fake is unavailable on an untrusted workdir" in hover.text_content
    assert not log.exists()  # never started, not even probed
    with open_lsp_run(tmp_path, plugins=[Declaring(log, None)], trust_workdir=True) as run:
        assert "fake [fake] can answer" in Caller(run).ok(action="status")

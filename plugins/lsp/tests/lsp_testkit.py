"""Test helpers: fixture projects copied to a temp dir, runs with real servers, a caller."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

import attrs
import pytest

import tether
from tether.testing import require_real
from tether_lsp.tools import Action

FIXTURES = Path(__file__).parent / "fixtures"
WRITE_AUTO = {"approval": {"read": "auto", "write": "auto", "exec": "ask"}}
#: a real process speaking LSP, scripted to misbehave (its docstring lists the modes)
FAKE_SERVER = str(Path(__file__).parent / "fake_lsp_server.py")


def fake_server(mode: str = "ok", log: Path | None = None, sid: str = "fake") -> Any:
    """The spec of :data:`FAKE_SERVER` in ``mode``, answering ``.<sid>`` files of a project
    marked by ``fake.toml``, logging what it is sent to ``log``."""
    from tether.processes.launch import SAFE
    from tether_lsp import ServerSpec

    return ServerSpec(
        id=sid,
        untrusted=SAFE,
        language=sid,
        extensions={f".{sid}": sid},
        command=(sys.executable, FAKE_SERVER, mode, *((str(log),) if log else ())),
        root_markers=("fake.toml",),
    )


def copy_project(name: str, into: Path) -> Path:
    workdir = into / name
    shutil.copytree(FIXTURES / name, workdir)
    if name == "cproj":
        sources = {"main.c": "cc", "util.c": "cc", "shapes.cpp": "c++"}
        entries = [
            {"directory": str(workdir), "file": str(workdir / src), "arguments": [cc, "-c", src]}
            for src, cc in sources.items()
        ]
        (workdir / "compile_commands.json").write_text(json.dumps(entries))
    return workdir


def need(binary: str) -> None:
    """The real server must be installed (skip on a dev box, fail in CI)."""
    found = shutil.which(binary) or shutil.which(binary, path=str(Path(sys.executable).parent))
    require_real(found is not None, f"{binary} (a real language server)")


def open_lsp_run(workdir: Path, lsp: dict[str, Any] | None = None, **kwargs: Any) -> Any:
    config: dict[str, Any] = {"core": WRITE_AUTO}
    if lsp:
        config["lsp"] = lsp
    return tether.open_run_sync(workdir, config=config, **kwargs)


class Caller:
    """``ok(...)`` asserts success and returns the text; ``err(...)`` asserts an error."""

    def __init__(self, run: Any) -> None:
        self.run = run

    def ok(self, tool: str = "lsp", **args: Any) -> str:
        result = self.run.call(tool, args)
        assert not result.is_error, result.text_content
        return result.text_content

    def err(self, tool: str = "lsp", **args: Any) -> str:
        result = self.run.call(tool, args)
        assert result.is_error, result.text_content
        return result.text_content


@attrs.frozen
class Ask:
    """One form of an ``lsp`` action asked of one server, and what its answer must hold."""

    args: Mapping[str, Any]
    #: a substring of the answer (of the error when ``refused``)
    expect: str
    #: the server lacks it: the error must name the server, never answer with nothing
    refused: bool = False
    #: files written behind the server's back before asking
    files: Mapping[str, str] = attrs.field(factory=dict)


def action_forms() -> list[str]:
    """Every form the ``lsp`` tool takes: each action, symbols twice and diagnostics three
    times (a file, the checker, since a checkpoint)."""
    forms = []
    for action in get_args(Action):
        if action == "symbols":
            forms += ["symbols query", "symbols file"]
        elif action == "diagnostics":
            forms += ["diagnostics file", 'diagnostics "*"', "diagnostics since"]
        else:
            forms.append(action)
    return forms


def action_matrix(server: str, asks: Mapping[str, Ask]) -> list[Any]:
    """pytest params, one per action form, refusing a table that leaves a form out."""
    assert sorted(asks) == sorted(action_forms()), f"{server}: the table must cover every form"
    for form, ask in asks.items():
        assert ask.args["action"] == form.split()[0], form
        if form.startswith(("symbols", "diagnostics")):
            assert ("query" in ask.args) == (form == "symbols query"), form
            assert (ask.args.get("file") == "*") == (form == 'diagnostics "*"'), form
            assert ("since" in ask.args) == (form == "diagnostics since"), form
    return [pytest.param(ask, id=form.replace('"', "")) for form, ask in asks.items()]


def check_action(caller: Caller, server: str, ask: Ask) -> None:
    """A real answer, or an error that says what the server lacks: never an empty answer."""
    workdir: Path = caller.run.run.workdir
    if "since" in ask.args:
        # the checkpoint it asks about, marked first with the files as they are (whatever
        # order the forms run in)
        caller.ok(action="checkpoint", name=ask.args["since"])
    for rel, text in ask.files.items():
        (workdir / rel).write_text(text)
    result = caller.run.call("lsp", dict(ask.args))
    text = result.text_content
    if ask.refused:
        assert result.is_error, text
        assert f"not supported by {server}" in text or f"({server}) name none" in text, text
    else:
        assert not result.is_error, text
        # "no definition found …", "no symbols in …", "… ask again in a moment": empty answers
        assert not text.startswith("no ") and "ask again" not in text, text
    assert ask.expect in text, text

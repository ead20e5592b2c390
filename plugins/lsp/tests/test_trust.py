"""A workdir the harness does not trust runs nothing of its own through the read-tier `lsp`
(issue 11, item 1): not a planted server binary, not a planted tsserver.js, not a planted
`.venv/bin/python` (basedpyright runs the project root's one when no interpreter is set)."""

from __future__ import annotations

import stat
from pathlib import Path

from lsp_testkit import Caller, copy_project, need, open_lsp_run


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

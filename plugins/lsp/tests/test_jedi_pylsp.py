"""The other Python servers: jedi-language-server and pylsp (with and without pyflakes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lsp_testkit import Ask, Caller, action_matrix, check_action, copy_project, need, open_lsp_run


@pytest.fixture(scope="module")
def jedi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Caller]:
    need("jedi-language-server")
    workdir = copy_project("pyproj", tmp_path_factory.mktemp("jedi"))
    with open_lsp_run(workdir, {"servers": {"python": ["jedi-language-server"]}}) as run:
        yield Caller(run)


@pytest.fixture(scope="module")
def pylsp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Caller]:
    need("pylsp")
    workdir = copy_project("pyproj", tmp_path_factory.mktemp("pylsp"))
    with open_lsp_run(workdir, {"servers": {"python": ["pylsp"]}}) as run:
        yield Caller(run)


def test_jedi_navigation(jedi: Caller) -> None:
    assert "pkg/shapes.py:19:5: def make_square" in jedi.ok(
        action="definition", file="pkg/use.py", line=3, symbol="make_square"
    )
    hover = jedi.ok(action="hover", file="pkg/use.py", line=3, symbol="make_square")
    assert "make_square(side: float) -> Square" in hover and "Build a square" in hover
    refs = jedi.ok(action="references", file="pkg/shapes.py", line=19, symbol="make_square")
    assert "pkg/use.py:1:" in refs and "pkg/use.py:3:" in refs
    # jedi reports utf-8 columns when offered; the column after the emoji is still right
    assert "pkg/use.py:3:1:" in jedi.ok(
        action="definition", file="pkg/use.py", line=5, symbol="square"
    )


def test_jedi_says_what_it_lacks(jedi: Caller) -> None:
    text = jedi.err(action="implementation", file="pkg/shapes.py", line=7, symbol="area")
    assert text == (
        'action "implementation" is not supported by jedi-language-server '
        "(the server answering pkg/shapes.py)"
    )


def test_a_server_without_a_project_checker_says_so(jedi: Caller) -> None:
    assert jedi.err(action="diagnostics", file="*") == (
        "no project checker: the server(s) for this checkout (jedi-language-server) name none; "
        "ask `diagnostics` for one file instead"
    )


def test_jedi_workspace_symbols(jedi: Caller) -> None:
    text = jedi.ok(action="symbols", query="make_square")
    assert "function make_square" in text and "pkg/shapes.py:19:5" in text


def test_jedi_rename(jedi: Caller, tmp_path_factory: pytest.TempPathFactory) -> None:
    run_dir: Path = jedi.run.run.workdir
    (run_dir / "pkg" / "jr.py").write_text("def jfun():\n    return 1\n\n\njfun()\n")
    text = jedi.ok("lsp_rename", file="pkg/jr.py", line=5, symbol="jfun", new_name="kfun")
    assert "renamed `jfun` to `kfun`: 2 edits in 1 file" in text
    assert (run_dir / "pkg" / "jr.py").read_text() == "def kfun():\n    return 1\n\n\nkfun()\n"


JEDI = {
    "definition": Ask(
        {"action": "definition", "file": "pkg/use.py", "line": 3, "symbol": "make_square"},
        "pkg/shapes.py:19:5: def make_square(side: float) -> Square:",
    ),
    "type_definition": Ask(
        {"action": "type_definition", "file": "pkg/use.py", "line": 3, "symbol": "square#1"},
        "pkg/shapes.py:11:7: class Square(Shape):",
    ),
    "implementation": Ask(
        {"action": "implementation", "file": "pkg/shapes.py", "line": 7, "symbol": "area"},
        'action "implementation" is not supported by jedi-language-server',
        refused=True,
    ),
    "references": Ask(
        {"action": "references", "file": "pkg/shapes.py", "line": 19, "symbol": "make_square"},
        "pkg/use.py:3:10: square = make_square(2.0)",
    ),
    "incoming_calls": Ask(
        {"action": "incoming_calls", "file": "pkg/shapes.py", "line": 19, "symbol": "make_square"},
        'action "incoming_calls" is not supported by jedi-language-server',
        refused=True,
    ),
    "outgoing_calls": Ask(
        {"action": "outgoing_calls", "file": "pkg/shapes.py", "line": 19, "symbol": "make_square"},
        'action "outgoing_calls" is not supported by jedi-language-server',
        refused=True,
    ),
    "hover": Ask(
        {"action": "hover", "file": "pkg/use.py", "line": 3, "symbol": "make_square"},
        "make_square(side: float) -> Square",
    ),
    "symbols query": Ask(
        {"action": "symbols", "query": "make_square"},
        "function make_square in pkg.shapes.make_square — pkg/shapes.py:19:5",
    ),
    "symbols file": Ask(
        {"action": "symbols", "file": "pkg/shapes.py"}, "\n  method area pkg/shapes.py:7:9"
    ),
    "code_actions": Ask(
        {"action": "code_actions", "file": "pkg/use.py", "line": 3, "symbol": "make_square"},
        "- Extract expression into variable 'jls_extract_var' [refactor.extract, edits 1 file]",
    ),
    "diagnostics file": Ask(
        {"action": "diagnostics", "file": "pkg/unclosed.py"},
        "pkg/unclosed.py:1:1 error: SyntaxError: '(' was never closed",
        files={"pkg/unclosed.py": "print(1\n"},
    ),
    'diagnostics "*"': Ask(
        {"action": "diagnostics", "file": "*"},
        "no project checker: the server(s) for this checkout (jedi-language-server) name none",
        refused=True,
    ),
    "diagnostics since": Ask(
        {"action": "diagnostics", "since": "before-since", "file": "pkg/since.py"},
        "pkg/since.py (jedi-language-server): baseline unknown (the run had not seen its "
        "diagnostics): 1 now",
        files={"pkg/since.py": "print(1\n"},
    ),
    "checkpoint": Ask({"action": "checkpoint", "name": "m"}, 'checkpoint "m" marked'),
    "status": Ask({"action": "status"}, "jedi-language-server for . (pid"),
    "reload": Ask(
        {"action": "reload", "file": "pkg/use.py"}, "restarted jedi-language-server for ."
    ),
}


@pytest.mark.parametrize("ask", action_matrix("jedi-language-server", JEDI))
def test_every_jedi_action(jedi: Caller, ask: Ask) -> None:
    check_action(jedi, "jedi-language-server", ask)


def test_pylsp_navigation_and_missing_workspace_symbols(pylsp: Caller) -> None:
    assert "pkg/shapes.py:19:5: def make_square" in pylsp.ok(
        action="definition", file="pkg/use.py", line=3, symbol="make_square"
    )
    assert "make_square(side: float)" in pylsp.ok(
        action="hover", file="pkg/use.py", line=3, symbol="make_square"
    )
    text = pylsp.err(action="symbols", query="Square")
    assert text == 'action "symbols" with a query is not supported by pylsp'
    outline = pylsp.ok(action="symbols", file="pkg/shapes.py")
    assert "class Square" in outline


def test_pylsp_with_pyflakes_reports_new_problems_on_write(pylsp: Caller) -> None:
    text = pylsp.ok("write", path="pkg/flaky.py", content="import os\nprint(missing_name)\n")
    assert "New diagnostics from pylsp" in text
    assert "pkg/flaky.py:2:7 error: undefined name 'missing_name' (pyflakes)" in text
    assert "pkg/flaky.py:1:1 warning: 'os' imported but unused (pyflakes)" in text
    again = pylsp.ok("edit", path="pkg/flaky.py", old="print(", new="print(1, ")
    assert "New diagnostics" not in again


def test_plain_pylsp_without_pyflakes(tmp_path_factory: pytest.TempPathFactory) -> None:
    """pyflakes disabled through [lsp] settings: a plain pylsp reports nothing, the write is
    unchanged (nothing is invented), and `diagnostics` says there are none."""
    need("pylsp")
    workdir = copy_project("pyproj", tmp_path_factory.mktemp("plain"))
    settings = {"pylsp": {"pylsp": {"plugins": {"pyflakes": {"enabled": False}}}}}
    with open_lsp_run(workdir, {"servers": {"python": ["pylsp"]}, "settings": settings}) as run:
        caller = Caller(run)
        text = caller.ok("write", path="pkg/quiet.py", content="print(missing_name)\n")
        assert text == "created pkg/quiet.py (20 bytes)"
        assert caller.ok(action="diagnostics", file="pkg/quiet.py") == (
            "no diagnostics for pkg/quiet.py (pylsp)"
        )


def test_one_server_per_root_in_a_monorepo(tmp_path: Path) -> None:
    need("jedi-language-server")
    for name in ("alpha", "beta"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n')
        (tmp_path / name / "m.py").write_text(f"def {name}_fn():\n    pass\n\n\n{name}_fn()\n")
    with open_lsp_run(tmp_path, {"servers": {"python": ["jedi-language-server"]}}) as run:
        caller = Caller(run)
        for name in ("alpha", "beta"):
            text = caller.ok(action="definition", file=f"{name}/m.py", line=5, symbol=f"{name}_fn")
            assert f"{name}/m.py:1:5: def {name}_fn():" in text
        status = caller.ok(action="status")
        assert "jedi-language-server for alpha (pid" in status
        assert "jedi-language-server for beta (pid" in status
        assert "jedi-language-server [python] can answer — usable" in status
        assert "roots: alpha, beta" in status

"""One scenario table over the servers tested here beside the five with suites of their own.

Each row is a real server on a small fixture project; each scenario is asked of every row:
definition, references, hover, the file's symbols, diagnostics after a write that adds an error
and one that removes it, rename. A row may expect the server to lack a scenario: the answer is
then an error naming the server ("not supported by …"), never an empty success.
Installed by ci/install.sh (npm: pyright, bash-language-server, yaml-language-server,
vscode-langservers-extracted; Debian: gopls, shellcheck) and the `test` extra (ty, pyrefly).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest
from lsp_testkit import Caller, copy_project, need, open_lsp_run

from tether.processes.launch import declared
from tether_lsp.servers import BUILTIN_SERVERS

#: a scenario the server does not offer
LACKS = "lacks"


@attrs.frozen
class Edit:
    path: str
    good: str
    bad: str
    #: a substring of the diagnostic the bad write must report
    error: str


@attrs.frozen
class Row:
    server: str
    binary: str
    language: str
    project: str
    definition: Mapping[str, Any]
    references: Mapping[str, Any] | str
    hover: Mapping[str, Any]
    symbols: Mapping[str, Any]
    diagnostics: Edit
    rename: Mapping[str, Any] | str
    #: what each answer must contain, per scenario
    expect: Mapping[str, str]


def at(file: str, line: int, symbol: str) -> dict[str, Any]:
    return {"file": file, "line": line, "symbol": symbol}


PY_EDIT = Edit("pkg/fresh.py", "value: int = 1\n", "value: int = 'text'\n", "value")
PY_EXPECT = {
    "definition": "pkg/shapes.py:19:5: def make_square(side: float) -> Square:",
    "references": "pkg/use.py:3:10: square = make_square(2.0)",
    "hover": "Build a square of the given side.",
    "symbols": "class Square pkg/shapes.py:11:7",
    "rename": "renamed `make_square` to `square_of`: 3 edits in 2 files",
}


def python_row(server: str, binary: str, error: str) -> Row:
    return Row(
        server=server,
        binary=binary,
        language="python",
        project="pyproj",
        definition=at("pkg/use.py", 3, "make_square"),
        references=at("pkg/shapes.py", 19, "make_square"),
        hover=at("pkg/use.py", 3, "make_square"),
        symbols={"file": "pkg/shapes.py"},
        diagnostics=attrs.evolve(PY_EDIT, error=error),
        rename={**at("pkg/shapes.py", 19, "make_square"), "new_name": "square_of"},
        expect=PY_EXPECT,
    )


ROWS = [
    python_row("ty", "ty", "[invalid-assignment]"),
    python_row("pyrefly", "pyrefly", "[bad-assignment]"),
    python_row("pyright", "pyright-langserver", "[reportAssignmentType]"),
    Row(
        server="gopls",
        binary="gopls",
        language="go",
        project="goproj",
        definition=at("main.go", 6, "MakeSquare"),
        references=at("shapes.go", 14, "MakeSquare"),
        hover=at("main.go", 6, "MakeSquare"),
        symbols={"file": "shapes.go"},
        diagnostics=Edit(
            "fresh.go",
            "package main\n\nvar value int = 1\n",
            'package main\n\nvar value int = "text"\n',
            "[IncompatibleAssign]",
        ),
        rename={**at("shapes.go", 14, "MakeSquare"), "new_name": "NewSquare"},
        expect={
            "definition": "shapes.go:14:6: func MakeSquare(side float64) Square {",
            "references": "main.go:6:12: square := MakeSquare(2)",
            "hover": "MakeSquare builds a square of the given side.",
            "symbols": "struct Square shapes.go:4:6",
            "rename": "renamed `MakeSquare` to `NewSquare`:",
        },
    ),
    Row(
        server="bash-language-server",
        binary="bash-language-server",
        language="shell",
        project="shproj",
        definition=at("main.sh", 4, "greet"),
        references=at("lib.sh", 4, "greet"),
        hover=at("main.sh", 4, "greet"),
        symbols={"file": "lib.sh"},
        # shellcheck's findings arrive as the server's diagnostics
        diagnostics=Edit(
            "fresh.sh", '#!/bin/bash\necho "$1"\n', "#!/bin/bash\nunused=1\n", "SC2034"
        ),
        rename={**at("lib.sh", 4, "greet"), "new_name": "welcome"},
        expect={
            "definition": "lib.sh:4:1: greet() {",
            "references": 'main.sh:5:1: greet "again"',
            "hover": "defined in lib.sh",
            "symbols": "function greet lib.sh:4:1",
            "rename": "renamed `greet` to `welcome`: 3 edits in 2 files",
        },
    ),
    Row(
        server="yaml-language-server",
        binary="yaml-language-server",
        language="yaml",
        project="yamlproj",
        # an alias's definition is its anchor's node
        definition=at("config.yaml", 6, "defaults"),
        references=LACKS,
        hover=at("config.yaml", 3, "retries"),
        symbols={"file": "config.yaml"},
        diagnostics=Edit("fresh.yaml", "a: 1\n", "a: [1\n", "Flow sequence"),
        # anchors and aliases rename together
        rename={**at("config.yaml", 2, "defaults#2"), "new_name": "base"},
        expect={
            "definition": "config.yaml:3:3: retries: 3",
            "references": 'action "references" is not supported by yaml-language-server',
            "hover": "How many times a failed call is tried again.",
            "symbols": "module defaults config.yaml:2:1",
            "rename": "renamed `defaults` to `base`: 2 edits in 1 file",
        },
    ),
    Row(
        server="vscode-json-language-server",
        binary="vscode-json-language-server",
        language="json",
        project="jsonproj",
        definition=at("settings.json", 5, "port"),
        references=LACKS,
        hover=at("settings.json", 5, "port"),
        symbols={"file": "settings.json"},
        diagnostics=Edit("fresh.json", '{"a": 1}\n', '{"a": 1,,}\n', "Property expected"),
        rename=LACKS,
        expect={
            "definition": 'action "definition" is not supported by vscode-json-language-server',
            "references": 'action "references" is not supported by vscode-json-language-server',
            "hover": "The TCP port the server listens on",
            "symbols": "number port settings.json:5:5",
            "rename": 'action "rename" is not supported by vscode-json-language-server',
        },
    ),
]
#: the json server has no definition at all (it does not advertise it)
LACKING = {("vscode-json-language-server", "definition")}
SCENARIOS = ["definition", "references", "hover", "symbols", "diagnostics", "rename"]


class Runs:
    """One run per row, opened on first use; the previous row's run closes first."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.current: tuple[str, Any, Caller] | None = None

    def caller(self, row: Row) -> Caller:
        if self.current is not None and self.current[0] == row.server:
            return self.current[2]
        self.close()
        workdir = copy_project(row.project, self.base / row.server)
        # a server nothing closes on an untrusted workdir (pyrefly) is tested where it may run:
        # the fixture is the harness's own project here
        spec = next(spec for spec in BUILTIN_SERVERS if spec.id == row.server)
        trusted = not declared(spec.untrusted).usable
        context = open_lsp_run(
            workdir, {"servers": {row.language: [row.server]}}, trust_workdir=trusted
        )
        run = context.__enter__()
        self.current = (row.server, context, Caller(run))
        return self.current[2]

    def close(self) -> None:
        if self.current is not None:
            self.current[1].__exit__(None, None, None)
            self.current = None


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    pool = Runs(tmp_path_factory.mktemp("table"))
    yield pool
    pool.close()


def ask(caller: Caller, tool: str, args: Mapping[str, Any]) -> Any:
    """Ask, and ask again (bounded) while the server says it is still at work: what an agent
    told "still computing … ask again" or "still indexing … ask again in a moment" does."""
    for _ in range(8):
        result = caller.run.call(tool, dict(args))
        text = result.text_content
        if "still computing" not in text and "ask again in a moment" not in text:
            return result
        time.sleep(0.5)
    return result


def scenario_args(row: Row, scenario: str) -> tuple[str, Mapping[str, Any] | str]:
    if scenario == "rename":
        if row.rename == LACKS:
            return "lsp_rename", {**_any_place(row), "new_name": "renamed"}
        return "lsp_rename", row.rename
    value = getattr(row, scenario)
    if value == LACKS or (row.server, scenario) in LACKING:
        return "lsp", {**(value if isinstance(value, Mapping) else {}), "action": scenario}
    return "lsp", {**value, "action": scenario}


def lacks(row: Row, scenario: str) -> bool:
    value = row.rename if scenario == "rename" else getattr(row, scenario, None)
    return value == LACKS or (row.server, scenario) in LACKING


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("row", [pytest.param(row, id=row.server) for row in ROWS])
def test_scenario(runs: Runs, row: Row, scenario: str) -> None:
    need(row.binary)
    caller = runs.caller(row)
    if scenario == "diagnostics":
        check_diagnostics(caller, row)
        return
    tool, args = scenario_args(row, scenario)
    assert isinstance(args, Mapping)
    if lacks(row, scenario) and "file" not in args:
        # a form the server lacks is still asked at a real place of the fixture
        args = {**args, **_any_place(row)}
    result = ask(caller, tool, args)
    text = result.text_content
    if lacks(row, scenario):
        assert result.is_error, text
        assert f"not supported by {row.server}" in text, text
    else:
        assert not result.is_error, text
        assert not text.startswith("no ") and "ask again" not in text, text
    assert row.expect[scenario] in text, text


def _any_place(row: Row) -> dict[str, Any]:
    hover = dict(row.hover)
    return {"file": hover["file"], "line": hover["line"], "symbol": hover["symbol"]}


def check_diagnostics(caller: Caller, row: Row) -> None:
    edit = row.diagnostics
    assert "New diagnostics" not in caller.ok("write", path=edit.path, content=edit.good)
    added = caller.ok("write", path=edit.path, content=edit.bad)
    assert f"New diagnostics from {row.server}" in added and edit.error in added, added
    listed = ask(caller, "lsp", {"action": "diagnostics", "file": edit.path})
    assert not listed.is_error and edit.error in listed.text_content, listed.text_content
    removed = caller.ok("write", path=edit.path, content=edit.good)
    assert "New diagnostics" not in removed, removed
    cleared = ask(caller, "lsp", {"action": "diagnostics", "file": edit.path})
    assert cleared.text_content == f"no diagnostics for {edit.path} ({row.server})", (
        cleared.text_content
    )

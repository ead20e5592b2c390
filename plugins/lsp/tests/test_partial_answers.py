"""A server's answer never passes for the whole project when its own project leaves files out.

``fixtures/pyscope`` is click's layout in small: ``[tool.pyright] include = ["src"]``, with
tests outside it that use ``term_len``. basedpyright's references and rename see src only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lsp_testkit import Caller, copy_project, need, open_lsp_run

OUTSIDE = (
    "also found `term_len` in tests/check_compat.py:2, 6, 10 — outside basedpyright's project "
    "(`include` in pyproject.toml)"
)


@pytest.fixture
def scoped(tmp_path: Path) -> Iterator[tuple[Caller, Path]]:
    need("basedpyright-langserver")
    workdir = copy_project("pyscope", tmp_path)
    with open_lsp_run(workdir) as run:
        yield Caller(run), workdir


def snapshot(workdir: Path) -> dict[str, str]:
    return {str(p.relative_to(workdir)): p.read_text() for p in sorted(workdir.rglob("*.py"))}


def test_references_name_the_uses_outside_the_servers_project(
    scoped: tuple[Caller, Path],
) -> None:
    caller, _ = scoped
    text = caller.ok(action="references", file="src/termlib/text.py", line=1, symbol="term_len")
    head, _, tail = text.partition("\n\n")
    assert head.startswith("4 references of `term_len` at src/termlib/text.py:1")
    assert "tests/check_compat.py" not in head  # the server's answer, as it gave it
    assert OUTSIDE in tail
    # the docstring's mention is not a reference and is not listed for references
    assert "src/termlib/text.py:2" not in tail


def test_a_rename_that_would_miss_files_is_refused(scoped: tuple[Caller, Path]) -> None:
    caller, workdir = scoped
    before = snapshot(workdir)
    text = caller.err(
        "lsp_rename", file="src/termlib/text.py", line=1, symbol="term_len", new_name="width"
    )
    assert text.startswith("nothing was written: basedpyright's rename of `term_len` edits ")
    assert OUTSIDE + "; the server cannot rename it there" in text
    assert "`force: true`" in text
    assert snapshot(workdir) == before


def test_a_rename_told_to_leave_them_says_what_it_left(scoped: tuple[Caller, Path]) -> None:
    caller, workdir = scoped
    text = caller.ok(
        "lsp_rename",
        file="src/termlib/text.py",
        line=1,
        symbol="term_len",
        new_name="width",
        force=True,
    )
    assert text.startswith("renamed `term_len` to `width`: 4 edits in 2 files (basedpyright)")
    assert OUTSIDE + "; not renamed" in text
    # the docstring of a renamed file still says the old name: listed, not touched
    assert (
        "also found `term_len` in src/termlib/text.py:2 — in a renamed file, where basedpyright "
        "did not rename it (a comment, a string or another symbol of that name); not renamed"
    ) in text
    assert "term_len(" in (workdir / "tests" / "check_compat.py").read_text()
    assert "def width(text: str)" in (workdir / "src" / "termlib" / "text.py").read_text()


def test_a_rename_the_server_covers_whole_says_nothing_more(
    python_project: Path, tmp_path: Path
) -> None:
    need("basedpyright-langserver")
    workdir = copy_project("pyproj", tmp_path)
    with open_lsp_run(workdir) as run:
        text = Caller(run).ok(
            "lsp_rename", file="pkg/shapes.py", line=19, symbol="make_square", new_name="square_of"
        )
    assert "also found" not in text, text

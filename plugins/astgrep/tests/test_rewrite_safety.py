"""Rewrites never lose or break code silently: dropped comments are named, literals whose
indentation is data are never re-indented, and new syntax errors need `force` to be written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

# (file, code, pattern, rewrite, the comment the rewrite drops): a comment between two
# captures, which the rewrite reorders.
DROPPED: list[tuple[str, str, str, str, str]] = [
    ("a.c", "void t(void) { f(a, // NOLINT\n b); }\n", "f($X, $Y)", "g($Y, $X)", "// NOLINT"),
    ("a.cpp", "void t() { f(a, // NOLINT\n b); }\n", "f($X, $Y)", "g($Y, $X)", "// NOLINT"),
    ("a.cs", "class A { void T() { f(a, // x\n b); } }\n", "f($X, $Y)", "g($Y, $X)", "// x"),
    ("a.dart", "void t() { f(a, // x\n b); }\n", "f($X, $Y)", "g($Y, $X)", "// x"),
    ("a.go", "package a\nfunc t() { f(a, // x\n b) }\n", "f($X, $Y)", "g($Y, $X)", "// x"),
    ("A.java", "class A { void t() { f(a, // x\n b); } }\n", "f($X, $Y)", "g($Y, $X)", "// x"),
    ("a.js", "f(a, // x\n b);\n", "f($X, $Y)", "g($Y, $X)", "// x"),
    ("a.kt", "fun t() { f(a, // x\n b) }\n", "f($X, $Y)", "g($Y, $X)", "// x"),
    ("a.php", "<?php\nf($a, // x\n $b);\n", "f($X, $Y)", "g($Y, $X)", "// x"),
    ("a.py", "f(a,  # x\n  b)\n", "f($X, $Y)", "g($Y, $X)", "# x"),
    ("a.rb", "f(a, # x\n  b)\n", "f($X, $Y)", "g($Y, $X)", "# x"),
    ("a.rs", "fn t() { f(a, // x\n b); }\n", "f($X, $Y)", "g($Y, $X)", "// x"),
    ("a.scala", "object A { f(a, // x\n b) }\n", "f($X, $Y)", "g($Y, $X)", "// x"),
    ("a.swift", "f(a, // x\n b)\n", "f($X, $Y)", "g($Y, $X)", "// x"),
    ("a.ts", "f(a, // x\n b);\n", "f($X, $Y)", "g($Y, $X)", "// x"),
    ("a.lua", "f(a, -- x\n b)\n", "f($X, $Y)", "g($Y, $X)", "-- x"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "code", "pattern", "rewrite", "comment"), DROPPED)
async def test_a_dropped_comment_is_named(
    astgrep_run: Any, name: str, code: str, pattern: str, rewrite: str, comment: str
) -> None:
    async with astgrep_run({name: code}) as run:
        staged = await run.call("ast_edit", {"pattern": pattern, "rewrite": rewrite, "path": "."})
        assert not staged.is_error, staged.text_content
        assert "warning: the rewrite drops 1 comment" in staged.text_content
        assert [(d["path"], d["text"]) for d in staged.meta["dropped_comments"]] == [
            (name, comment)
        ]


@pytest.mark.anyio
async def test_a_comment_inside_a_capture_is_kept_and_not_named(
    astgrep_run: Any, tether_workdir: Path
) -> None:
    code = "void t() {\n  if (c) {\n    a(); // NOLINT(x)\n    b();\n  } else {\n    d();\n  }\n}\n"
    async with astgrep_run({"a.cpp": code}) as run:
        staged = await run.call(
            "ast_edit",
            {
                "pattern": "if ($C) { $$$A } else { $$$B }",
                "rewrite": "if (!($C)) { $$$B } else { $$$A }",
                "path": ".",
            },
        )
        assert not staged.is_error, staged.text_content
        assert "drops" not in staged.text_content
        assert staged.meta["dropped_comments"] == []
        done = await run.call("resolve", {"edit_id": staged.meta["edit_id"], "action": "accept"})
        assert not done.is_error, done.text_content
    assert "a(); // NOLINT(x)" in (tether_workdir / "a.cpp").read_text()


HEREDOC = """\
if true; then
  if ready; then
    cat <<EOF
  two spaces
    four spaces
  two spaces
    four spaces
EOF
  fi
fi
"""

PY_STRING = '''\
def f():
    if ready:
        s = """
  two spaces
    four spaces
"""
        g(s)
'''


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "code", "pattern", "rewrite"),
    [
        ("a.sh", HEREDOC, "if ready; then\n  $$$B\nfi", "$$$B"),
        (
            "a.sh",
            HEREDOC,
            "if ready; then\n  $$$B\nfi",
            "if a; then\n  if b; then\n    $$$B\n  fi\nfi",
        ),
        ("a.py", PY_STRING, "if ready:\n    $$$B", "$$$B"),
        ("a.py", PY_STRING, "if ready:\n    $$$B", "with a:\n    with b:\n        $$$B"),
    ],
)
async def test_a_literal_whose_indentation_is_data_is_never_reindented(
    astgrep_run: Any, tether_workdir: Path, name: str, code: str, pattern: str, rewrite: str
) -> None:
    async with astgrep_run({name: code}) as run:
        staged = await run.call("ast_edit", {"pattern": pattern, "rewrite": rewrite, "path": "."})
        assert not staged.is_error, staged.text_content
        assert staged.meta["new_syntax_errors"] == {}, staged.text_content
        done = await run.call("resolve", {"edit_id": staged.meta["edit_id"], "action": "accept"})
        assert not done.is_error, done.text_content
    new = (tether_workdir / name).read_text()
    assert "\n  two spaces\n    four spaces\n" in new
    assert ("\nEOF\n" in new) if name.endswith(".sh") else ('\n"""\n' in new)


@pytest.mark.anyio
async def test_a_yaml_block_scalar_moves_with_its_key_keeping_its_value(
    astgrep_run: Any, tether_workdir: Path
) -> None:
    # A block scalar's indentation is relative to its key: moved deeper, every line moves by
    # the same amount (kept where it was, it would no longer belong to the key).
    code = "a:\n  b:\n    run: |\n      echo one\n        echo two\n"
    async with astgrep_run({"a.yaml": code}) as run:
        staged = await run.call(
            "ast_edit", {"pattern": "b: $V", "rewrite": "b:\n  wrapped:\n    $V", "path": "."}
        )
        assert not staged.is_error, staged.text_content
        assert staged.meta["new_syntax_errors"] == {}, staged.text_content
        done = await run.call("resolve", {"edit_id": staged.meta["edit_id"], "action": "accept"})
        assert not done.is_error, done.text_content
    assert (
        (tether_workdir / "a.yaml")
        .read_text()
        .endswith("      run: |\n        echo one\n          echo two\n")
    )


BROKEN = [
    ("a.py", "f(x)\n"),
    ("a.js", "f(x);\n"),
    ("a.sh", "f $x\n"),
    ("a.cpp", "void t() { f(x); }\n"),
    ("a.kt", "fun t() { f(x) }\n"),
    ("a.rb", "f(x)\n"),
    ("a.go", "package a\nfunc t() { f(x) }\n"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "code"), BROKEN)
async def test_accepting_new_syntax_errors_needs_force(
    astgrep_run: Any, tether_workdir: Path, name: str, code: str
) -> None:
    pattern, rewrite = ("f $X", "f (($X") if name.endswith(".sh") else ("f($X)", "f(($X")
    async with astgrep_run({name: code}) as run:
        staged = await run.call("ast_edit", {"pattern": pattern, "rewrite": rewrite, "path": "."})
        assert not staged.is_error, staged.text_content
        assert name in staged.meta["new_syntax_errors"]
        edit_id = staged.meta["edit_id"]
        refused = await run.call("resolve", {"edit_id": edit_id, "action": "accept"})
        assert refused.is_error
        assert f"not written: its syntax check found new errors in {name}" in refused.text_content
        assert "force: true" in refused.text_content
        assert (tether_workdir / name).read_text() == code  # nothing written
        forced = await run.call("resolve", {"edit_id": edit_id, "action": "accept", "force": True})
        assert not forced.is_error, forced.text_content
    assert (tether_workdir / name).read_text() != code

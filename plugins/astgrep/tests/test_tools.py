"""ast_grep through the run: output, caps, file selection and argument errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

import tether
from tether.testing import check_plugin_contract, require_real

pytestmark = pytest.mark.anyio

DART_FILE = """
class Holder {
  void close() {
    if (c != null) c.dispose();
    if (d != null) c.dispose();
    if (c != null) { c.dispose(); }
  }
}
"""


async def test_contract_and_tiers(astgrep_run) -> None:
    async with astgrep_run({"a.py": "x = 1\n"}) as run:
        checked = await check_plugin_contract(run)
        assert checked == ["ast_edit", "ast_grep", "resolve"]
        assert run.tools["ast_grep"].tier is tether.Tier.READ
        assert run.tools["ast_edit"].tier is tether.Tier.WRITE
        assert run.tools["resolve"].tier is tether.Tier.WRITE
        plan = {s.name for s in run.tools_for("plan")}
        assert "ast_grep" in plan and "ast_edit" not in plan and "resolve" not in plan


async def test_seed_dart_example_through_the_tool(astgrep_run) -> None:
    async with astgrep_run({"lib/holder.dart": DART_FILE}) as run:
        result = await run.call(
            "ast_grep", {"pattern": "if ($X != null) $X.dispose()", "language": "dart"}
        )
        assert not result.is_error, result.text_content
        text = result.text_content
        assert text.startswith("1 match in 1 file (1 dart files searched)")
        assert "interpreted as: if statement (as a statement)" in text
        assert "lib/holder.dart:3:5: if (c != null) c.dispose();" in text
        assert "$X = c" in text
        assert result.meta["matches"][0]["captures"] == {"X": "c"}


async def test_dart_function_pattern_through_the_tool_says_how_it_was_read(astgrep_run) -> None:
    files = {
        "lib/a.dart": "void dispose() {\n  a();\n}\n",
        "lib/holder.dart": DART_FILE,
        "lib/b.dart": "class B {\n  @override\n  void dispose() {}\n}\n",
    }
    async with astgrep_run(files) as run:
        result = await run.call("ast_grep", {"pattern": "void $M() { $$$B }"})
        assert not result.is_error, result.text_content
        text = result.text_content
        assert (
            "interpreted as: sequence of function signature, function body (as a declaration"
            in text
        )
        assert "finds top-level functions, methods and local functions" in text
        where = [(m["path"], m["line"], m["captures"]["M"]) for m in result.meta["matches"]]
        assert where == [
            ("lib/a.dart", 1, "dispose"),
            ("lib/b.dart", 3, "dispose"),
            ("lib/holder.dart", 2, "close"),
        ]


async def test_language_is_inferred_from_a_file_path(astgrep_run) -> None:
    async with astgrep_run({"src/m.rs": "fn m() { drop(x); }\n", "a.py": "drop(x)\n"}) as run:
        result = await run.call("ast_grep", {"pattern": "drop($A)", "path": "src/m.rs"})
        assert not result.is_error, result.text_content
        assert "src/m.rs:1:10: drop(x)" in result.text_content


async def test_mixed_languages_need_a_language(astgrep_run) -> None:
    async with astgrep_run({"m.rs": "fn m() {}\n", "a.py": "x\n", "b.py": "y\n"}) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        assert result.is_error
        assert "language: required" in result.text_content
        assert "python: 2 files" in result.text_content and "rust: 1 files" in result.text_content
        result = await run.call("ast_grep", {"pattern": "x", "language": "python"})
        assert not result.is_error and "a.py:1:1: x" in result.text_content


@pytest.mark.parametrize(
    ("args", "field", "words"),
    [
        ({"pattern": "f(", "language": "python"}, None, "not parseable as python"),
        ({"pattern": "f()", "language": "cobol"}, "language", "unknown language 'cobol'"),
        ({"pattern": "f()", "path": "notes.txt"}, "language", "cannot infer it from 'notes.txt'"),
        ({"pattern": "f()", "path": "../outside"}, "path", "outside the workdir"),
        ({"pattern": "f()", "path": "missing.py"}, "path", "does not exist"),
        (
            {"pattern": "f()", "language": "python", "max_results": 0},
            "max_results",
            "max_results: expected at least 1, got 0",
        ),
        (
            {"pattern": "f()", "language": "python", "max_results": -3},
            "max_results",
            "max_results: expected at least 1, got -3",
        ),
        ({"pattern": "   ", "language": "python"}, None, "pattern: must not be empty"),
    ],
)
async def test_bad_input_is_a_clear_error(astgrep_run, args, field, words) -> None:
    async with astgrep_run({"a.py": "f()\n", "notes.txt": "f()\n"}) as run:
        result = await run.call("ast_grep", args)
        assert result.is_error, result.text_content
        if field:
            lines = result.text_content.splitlines()
            assert any(line.startswith(f"{field}:") for line in lines), result.text_content
        assert words in result.text_content


async def test_no_match_says_what_was_searched(astgrep_run) -> None:
    async with astgrep_run({"a.py": "g(1)\n"}) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        assert not result.is_error
        assert result.text_content.startswith("0 matches in 0 files (1 python files searched)")
        assert "interpreted as: call" in result.text_content


async def test_results_are_capped_and_say_so(astgrep_run) -> None:
    body = "".join(f"f({i})\n" for i in range(120))
    async with astgrep_run({"a.py": body}) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        assert "50 of 120 shown" in result.text_content
        assert result.meta["shown"] == 50 and result.meta["total"] == 120
        result = await run.call("ast_grep", {"pattern": "f($A)", "max_results": 120})
        assert "shown" not in result.text_content.splitlines()[-1]
        assert result.text_content.count("\na.py:") == 120
        result = await run.call("ast_grep", {"pattern": "f($A)", "max_results": 7})
        assert "7 of 120 shown" in result.text_content


async def test_binary_and_large_files_are_skipped_and_counted(astgrep_run) -> None:
    files = {
        "a.py": "f(1)\n",
        "blob.py": b"f(2)\n\x00\x01\x02",
        "big.py": "f(3)\n" + "x = 1\n" * 400,
    }
    async with astgrep_run(files, config={"astgrep": {"max_file_bytes": 1000}}) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        assert not result.is_error
        assert "a.py:1:1: f(1)" in result.text_content
        assert "f(2)" not in result.text_content and "f(3)" not in result.text_content
        assert "skipped files: 1 binary, 1 over 1000 bytes" in result.text_content


async def test_walk_honours_gitignore_without_git(astgrep_run) -> None:
    files = {
        ".gitignore": "build/\n*.gen.py\n",
        "a.py": "f(1)\n",
        "x.gen.py": "f(2)\n",
        "build/b.py": "f(3)\n",
        "pkg/.gitignore": "local.py\n",
        "pkg/local.py": "f(4)\n",
        "pkg/kept.py": "f(5)\n",
    }
    async with astgrep_run(files) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        paths = sorted(m["path"] for m in result.meta["matches"])
        assert paths == ["a.py", "pkg/kept.py"]
        assert "could not read" not in result.text_content
        assert result.meta["unreadable_ignores"] == []


async def test_an_unreadable_gitignore_is_reported_not_skipped_silently(
    astgrep_run, tether_workdir: Path
) -> None:
    files = {"a.py": "f(1)\n", "pkg/local.py": "f(2)\n", "pkg/kept.py": "f(3)\n"}
    async with astgrep_run(files) as run:
        # A symlink loop fails to read even as root (a chmod 000 file would not).
        (tether_workdir / "pkg" / ".gitignore").symlink_to(".gitignore")
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        assert not result.is_error, result.text_content
        assert result.meta["total"] == 3  # its rules could not apply
        assert result.meta["unreadable_ignores"] == ["pkg/.gitignore"]
        assert result.text_content.splitlines()[-1] == (
            "warning: could not read pkg/.gitignore; its rules were not applied, "
            "so files meant to be ignored may be included"
        )
        scoped = await run.call("ast_grep", {"pattern": "f($A)", "path": "pkg"})
        assert scoped.meta["unreadable_ignores"] == ["pkg/.gitignore"]
        edit = await run.call("ast_edit", {"pattern": "f($A)", "rewrite": "g($A)"})
        assert not edit.is_error, edit.text_content
        assert "warning: could not read pkg/.gitignore" in edit.text_content
        assert edit.meta["unreadable_ignores"] == ["pkg/.gitignore"]


async def test_git_checkout_lists_tracked_and_untracked_not_ignored(
    astgrep_run, tether_workdir: Path
) -> None:
    git = shutil.which("git")
    require_real(git is not None, "git")
    files = {".gitignore": "ignored.py\n", "tracked.py": "f(1)\n", "ignored.py": "f(2)\n"}
    async with astgrep_run(files) as run:
        env = {
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
            "PATH": "/usr/bin:/bin",
        }
        for cmd in (["init", "-q"], ["add", "tracked.py", ".gitignore"], ["commit", "-qm", "x"]):
            await anyio.run_process(["git", *cmd], cwd=tether_workdir, check=True, env=env)
        (tether_workdir / "untracked.py").write_text("f(3)\n")
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        paths = sorted(m["path"] for m in result.meta["matches"])
        assert paths == ["tracked.py", "untracked.py"]


async def test_a_workdir_git_ignores_is_walked_not_found_empty(
    astgrep_run, tether_workdir: Path
) -> None:
    """A checkout whose own directory an enclosing repository ignores (pyenv's versions/, a
    vendored tree): git lists nothing there, so the files are walked instead of "0 searched"."""
    git = shutil.which("git")
    require_real(git is not None, "git")
    outer = tether_workdir.parent
    (outer / ".gitignore").write_text(f"{tether_workdir.name}/\n")
    await anyio.run_process(["git", "init", "-q"], cwd=outer, check=True)
    files = {".gitignore": "skip.py\n", "a.py": "f(1)\n", "skip.py": "f(2)\n"}
    async with astgrep_run(files) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        assert sorted(m["path"] for m in result.meta["matches"]) == ["a.py"]


async def test_syntax_error_files_are_searched(astgrep_run) -> None:
    async with astgrep_run({"a.py": "f(1)\ndef broken(:\n    pass\nf(2)\n"}) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        assert [m["line"] for m in result.meta["matches"]] == [1, 4]
        assert "syntax errors" in result.text_content


async def test_worker_processes_agree_and_do_not_outlive_the_run(astgrep_run) -> None:
    files = {f"m{i}.py": f"f({i})\nisinstance(x, int)\n" for i in range(30)}
    config = {"astgrep": {"workers": 2, "parallel_min_files": 10}}
    async with astgrep_run(files, config=config) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)", "max_results": 100})
        assert result.meta["total"] == 30
        service = run.resources["astgrep_service"]
        pids = service.worker_pids
        assert len(pids) == 2
        # a second pattern in the same run is served by the same workers (their caches)
        again = await run.call("ast_grep", {"pattern": "isinstance($X, $T)", "max_results": 100})
        assert again.meta["total"] == 30
        assert service.worker_pids == pids
    for pid in pids:
        assert (
            not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
        )


async def test_third_party_grammar_through_the_hook(astgrep_run) -> None:
    import tree_sitter_python

    from tether_astgrep.grammars import Grammar, Scaffold

    class Cython:
        @tether.hookimpl
        def tether_astgrep_grammars(self) -> list[Grammar]:
            return [
                Grammar(
                    id="pyx",
                    extensions=(".pyx",),
                    language=tree_sitter_python.language,
                    scaffolds=(Scaffold("statement", "", ""),),
                )
            ]

    async with astgrep_run({"m.pyx": "f(1)\n"}, plugins=[Cython()]) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        assert not result.is_error, result.text_content
        assert "m.pyx:1:1: f(1)" in result.text_content
        assert "(1 pyx files searched)" in result.text_content


async def test_prefilter_keeps_matches_split_by_comments_continuations_and_commas(
    astgrep_run,
) -> None:
    files = {
        "a.py": "n = len(  # count\n    items,\n) == \\\n    0\n",
        "b.js": "a . /* why */ b(1, 2,)\n",
    }
    async with astgrep_run(files) as run:
        result = await run.call("ast_grep", {"pattern": "len($X) == 0", "language": "python"})
        assert result.meta["total"] == 1, result.text_content
        result = await run.call("ast_grep", {"pattern": "a.b($X, $Y)", "language": "javascript"})
        assert result.meta["total"] == 1, result.text_content


async def test_prefilter_does_not_backtrack_on_comment_runs(astgrep_run) -> None:
    # `self` then a long run of `#` and no `.`: a backtracking gap regex would never finish.
    files = {"a.py": "self  " + "#" * 300 + "\nself.x = 1\n", "b.js": "a /" + "*" * 300 + "\n"}
    async with astgrep_run(files) as run:
        result = await run.call("ast_grep", {"pattern": "self.$A = $B", "language": "python"})
        assert result.meta["total"] == 1, result.text_content
        result = await run.call("ast_grep", {"pattern": "a.b()", "language": "javascript"})
        assert result.meta["total"] == 0, result.text_content


async def test_symlinked_files_are_not_followed(
    astgrep_run, tether_workdir: Path, tmp_path
) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("f(99)\n")
    async with astgrep_run({"a.py": "f(1)\n"}) as run:
        (tether_workdir / "link.py").symlink_to(outside)
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        assert [m["path"] for m in result.meta["matches"]] == ["a.py"]
        result = await run.call("ast_grep", {"pattern": "f($A)", "path": "link.py"})
        assert result.is_error and "path:" in result.text_content


async def test_a_dead_worker_is_a_clear_error_and_the_next_search_recovers(astgrep_run) -> None:
    import os
    import signal

    files = {f"m{i}.py": f"f({i})\n" for i in range(12)}
    config = {"astgrep": {"workers": 2, "parallel_min_files": 5}}
    async with astgrep_run(files, config=config) as run:
        first = await run.call("ast_grep", {"pattern": "f($A)"})
        assert first.meta["total"] == 12
        service = run.resources["astgrep_service"]
        os.kill(service.worker_pids[0], signal.SIGKILL)
        broken = await run.call("ast_grep", {"pattern": "f($A)"})
        assert broken.is_error and "search worker died" in broken.text_content
        again = await run.call("ast_grep", {"pattern": "f($A)"})
        assert again.meta["total"] == 12


async def test_columns_count_characters(astgrep_run) -> None:
    async with astgrep_run({"a.py": "s = 'héllo' + f(1)\n"}) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        assert "a.py:1:15: f(1)" in result.text_content


async def test_a_duplicate_grammar_id_names_both_plugins(astgrep_run) -> None:
    import tree_sitter_python

    from tether_astgrep.grammars import Grammar, Scaffold

    class Again:
        @tether.hookimpl
        def tether_astgrep_grammars(self) -> list[Grammar]:
            scaffold = (Scaffold("statement", "", ""),)
            return [Grammar("python", (".py",), tree_sitter_python.language, scaffold)]

    async with astgrep_run({}, plugins=[Again()]) as run:
        failed = {i.name: i.reason for i in run.pm.report if i.status == "failed"}
        # the later-registered plugin is asked first: the built-in python is the one dropped
        assert list(failed.values()) == [
            "tether_astgrep_grammars: grammar 'python' dropped: already contributed by 'Again-1'"
        ]
        result = await run.call("ast_grep", {"pattern": "print($X)", "language": "python"})
        assert not result.is_error, result.text_content


async def test_hook_tether_astgrep_grammars(astgrep_run) -> None:
    """A grammar a third-party plugin contributes is searched like a built-in one."""
    import attrs as _attrs

    from tether_astgrep.grammars import Grammar, builtin_grammars

    python = next(g for g in builtin_grammars() if g.id == "python")

    class Starlark:
        @tether.hookimpl
        def tether_astgrep_grammars(self) -> list[Grammar]:
            return [_attrs.evolve(python, id="starlark", extensions=(".star",))]

    files = {"BUILD.star": "load('x')\nprint(name)\n"}
    async with astgrep_run(files, plugins=[Starlark()]) as run:
        result = await run.call("ast_grep", {"pattern": "print($X)", "path": "BUILD.star"})
        assert not result.is_error, result.text_content
        assert "BUILD.star:2" in result.text_content


def test_every_family_hook_is_documented_and_tested() -> None:
    import tether_astgrep.hookspecs
    from tether.testing import check_hookspecs

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    checked = check_hookspecs(tether_astgrep.hookspecs, readme, Path(__file__).parent)
    assert checked == ["tether_astgrep_grammars"]

"""ast_edit stages, resolve applies all or nothing."""

from __future__ import annotations

import difflib
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import tether.workdir.writing

pytestmark = pytest.mark.anyio

CLASS_FILE = """
class Service:
    def stop(self):
        if ready:
            release(
                self.handle,
                timeout=5,
            )
"""


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


async def test_staging_writes_nothing_and_accept_applies(astgrep_run, tether_workdir: Path) -> None:
    files = {"a.py": "dispose(x)\ndispose(y)\n", "b.py": "dispose(z)\n", "c.py": "keep(x)\n"}
    async with astgrep_run(files) as run:
        before = snapshot(tether_workdir)
        result = await run.call("ast_edit", {"pattern": "dispose($X)", "rewrite": "$X.dispose()"})
        assert not result.is_error, result.text_content
        assert result.text_content.startswith(
            '(proposed) 3 replacements in 2 files; nothing written yet: call resolve with edit_id "edit_1"'
        )
        assert "-dispose(x)\n-dispose(y)\n+x.dispose()\n+y.dispose()" in result.text_content
        assert snapshot(tether_workdir) == before
        done = await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
        assert not done.is_error, done.text_content
        assert (tether_workdir / "a.py").read_text() == "x.dispose()\ny.dispose()\n"
        assert (tether_workdir / "b.py").read_text() == "z.dispose()\n"
        again = await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
        assert again.is_error and "already resolved (accepted)" in again.text_content


async def test_dart_method_is_rewritten_in_place(astgrep_run, tether_workdir: Path) -> None:
    code = "class A {\n  @override\n  void dispose() {\n    a.close();\n  }\n}\n"
    async with astgrep_run({"a.dart": code}) as run:
        result = await run.call(
            "ast_edit",
            {"pattern": "void dispose() { $$$B }", "rewrite": "void close() { $$$B }"},
        )
        assert not result.is_error, result.text_content
        assert "(proposed) 1 replacement in 1 file" in result.text_content
        done = await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
        assert not done.is_error, done.text_content
        assert (tether_workdir / "a.dart").read_text() == (
            "class A {\n  @override\n  void close() { a.close(); }\n}\n"
        )


async def test_discard_and_unknown_ids(astgrep_run, tether_workdir: Path) -> None:
    async with astgrep_run({"a.py": "dispose(x)\n"}) as run:
        await run.call("ast_edit", {"pattern": "dispose($X)", "rewrite": "$X.dispose()"})
        result = await run.call("resolve", {"edit_id": "edit_1", "action": "discard"})
        assert "edit_1 discarded" in result.text_content
        assert (tether_workdir / "a.py").read_text() == "dispose(x)\n"
        result = await run.call("resolve", {"edit_id": "edit_9", "action": "accept"})
        assert result.is_error and result.text_content.startswith("edit_id: unknown edit 'edit_9'")
        result = await run.call("resolve", {"edit_id": "edit_1", "action": "maybe"})
        assert result.is_error and "action" in result.text_content


async def test_rewrite_with_unbound_variable_is_an_error(astgrep_run) -> None:
    async with astgrep_run({"a.py": "dispose(x)\n"}) as run:
        result = await run.call("ast_edit", {"pattern": "dispose($X)", "rewrite": "$Y.dispose($X)"})
        assert result.is_error
        assert result.text_content.startswith("rewrite: uses $Y, which the pattern does not bind")


async def test_no_match_stages_nothing(astgrep_run) -> None:
    async with astgrep_run({"a.py": "keep(x)\n"}) as run:
        result = await run.call("ast_edit", {"pattern": "dispose($X)", "rewrite": "$X.dispose()"})
        assert result.is_error and "nothing staged" in result.text_content


async def test_multiline_rewrite_reindented_inside_an_indented_class(
    astgrep_run, tether_workdir: Path
) -> None:
    async with astgrep_run({"svc.py": CLASS_FILE}) as run:
        result = await run.call(
            "ast_edit",
            {
                "pattern": "release($H, timeout=$T)",
                "rewrite": "with deadline($T):\n    release_now(\n        $H,\n    )",
            },
        )
        assert not result.is_error, result.text_content
        await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
        assert (tether_workdir / "svc.py").read_text() == textwrap.dedent(
            """\
            class Service:
                def stop(self):
                    if ready:
                        with deadline(5):
                            release_now(
                                self.handle,
                            )
            """
        )


async def test_multiline_capture_reindented_with_tabs_but_not_inside_strings(
    astgrep_run, tether_workdir: Path
) -> None:
    source = "class A:\n\tdef m(self):\n\t\trun(call(1,\n\t\t         2), '''keep\n  this''')\n"
    async with astgrep_run({"t.py": source}) as run:
        result = await run.call(
            "ast_edit", {"pattern": "run($A, $B)", "rewrite": "go(\n\t$B,\n\t$A,\n)"}
        )
        assert not result.is_error, result.text_content
        await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
        assert (tether_workdir / "t.py").read_text() == (
            "class A:\n"
            "\tdef m(self):\n"
            "\t\tgo(\n"
            "\t\t\t'''keep\n"
            "  this''',\n"  # inside the string literal: untouched
            "\t\t\tcall(1,\n"
            "\t\t\t         2),\n"
            "\t\t)\n"
        )


async def test_overlapping_matches_outer_wins_and_is_reported(
    astgrep_run, tether_workdir: Path
) -> None:
    async with astgrep_run({"a.py": "f(f(1))\n"}) as run:
        result = await run.call("ast_edit", {"pattern": "f($X)", "rewrite": "g($X)"})
        assert "(proposed) 1 replacement in 1 file" in result.text_content
        assert "1 inner match skipped" in result.text_content
        await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
        assert (tether_workdir / "a.py").read_text() == "g(f(1))\n"


async def test_new_syntax_errors_are_reported(astgrep_run) -> None:
    async with astgrep_run({"a.py": "x = f(1)\n"}) as run:
        result = await run.call("ast_edit", {"pattern": "f($X)", "rewrite": "g($X"})
        assert not result.is_error
        assert (
            "warning: a.py has new syntax errors after the rewrite (python compile(): line 1: "
            in result.text_content
        )
        assert "syntax check: python compile() on 1 file (a.py): new errors in 1" in (
            result.text_content
        )
        assert result.meta["new_syntax_errors"] == {"a.py": [1]}


async def test_accept_after_a_concurrent_change_rejects_everything(
    astgrep_run, tether_workdir: Path
) -> None:
    files = {f"m{i}.py": f"dispose(v{i})\n" for i in range(3)}
    async with astgrep_run(files) as run:
        await run.call("ast_edit", {"pattern": "dispose($X)", "rewrite": "$X.dispose()"})
        (tether_workdir / "m1.py").write_text("dispose(v1)  # edited meanwhile\n")
        before = snapshot(tether_workdir)
        result = await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
        assert result.is_error
        assert (
            "edit_1 rejected, nothing written: changed since staging: m1.py" in result.text_content
        )
        assert snapshot(tether_workdir) == before


async def test_failure_in_the_middle_of_applying_restores_earlier_files(
    astgrep_run, tether_workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"a.py": "dispose(a)\n", "b.py": "dispose(b)\n", "c.py": "dispose(c)\n"}
    real_write = tether.workdir.writing.write_temp
    calls: list[str] = []

    def failing_write(path: Path, fd: int, data: bytes) -> None:
        calls.append(Path(path).name)
        if Path(path).name == "b.py" and len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_write(path, fd, data)

    async with astgrep_run(files) as run:
        await run.call("ast_edit", {"pattern": "dispose($X)", "rewrite": "$X.dispose()"})
        before = snapshot(tether_workdir)
        monkeypatch.setattr(tether.workdir.writing, "write_temp", failing_write)
        result = await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
        assert result.is_error
        assert (
            "failed while writing" in result.text_content
            and "no file was changed" in result.text_content
        )
        assert calls[:2] == ["a.py", "b.py"]  # a.py's new content was written, then b.py's failed
        assert snapshot(tether_workdir) == before


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n_files=st.integers(min_value=1, max_value=5),
    changed=st.sets(st.integers(min_value=0, max_value=4)),
    how=st.sampled_from(["append", "delete", "same-size"]),
    fail_at=st.one_of(st.none(), st.integers(min_value=0, max_value=4)),
)
# Each outcome at least once, whatever hypothesis draws: stale, failure after a write, success.
@example(n_files=3, changed={2}, how="same-size", fail_at=1)
@example(n_files=3, changed=set(), how="append", fail_at=2)
@example(n_files=3, changed=set(), how="delete", fail_at=None)
def test_property_no_partial_application_ever(
    tmp_path_factory, n_files, changed, how, fail_at
) -> None:
    """Stale files, a write failing part way, or neither: every file ends all-new or all-old."""
    import anyio

    import tether
    import tether_astgrep.hooks

    auto = {"core": {"approval": {"read": "auto", "write": "auto", "exec": "auto"}}}
    changed = {i for i in changed if i < n_files}
    fails = fail_at is not None and fail_at < n_files
    root = tmp_path_factory.mktemp("prop")
    for i in range(n_files):
        (root / f"f{i}.py").write_text(f"dispose(v{i})\nkeep()\n")
    real_write = tether.workdir.writing.write_temp
    writes: list[str] = []

    def flaky_write(path: Path, fd: int, data: bytes) -> None:
        writes.append(Path(path).name)
        if fails and len(writes) == fail_at + 1:
            raise OSError(28, "No space left on device")
        real_write(path, fd, data)

    async def scenario() -> None:
        async with tether.open_run(
            root, entry_points=False, plugins=[tether_astgrep.hooks], config=auto
        ) as run:
            staged = await run.call(
                "ast_edit", {"pattern": "dispose($X)", "rewrite": "$X.dispose()"}
            )
            assert not staged.is_error, staged.text_content
            for i in changed:
                path = root / f"f{i}.py"
                if how == "append":
                    path.write_text(path.read_text() + "more()\n")
                elif how == "delete":
                    path.unlink()
                else:
                    path.write_text(path.read_text().replace("keep", "peek"))
            old = snapshot(root)
            new = {f"f{i}.py": f"v{i}.dispose()\nkeep()\n".encode() for i in range(n_files)}
            tether.workdir.writing.write_temp = flaky_write
            try:
                result = await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
            finally:
                tether.workdir.writing.write_temp = real_write
            after = snapshot(root)
            assert after in (old, new)  # never a mix
            if changed:
                assert result.is_error and "rejected, nothing written" in result.text_content
                for i in sorted(changed):
                    assert f"f{i}.py" in result.text_content
                assert writes == [] and after == old
            elif fails:
                assert result.is_error and "failed while writing" in result.text_content
                assert len(writes) > fail_at and after == old
            else:
                assert not result.is_error, result.text_content
                assert after == new

    anyio.run(scenario)


async def test_the_diff_preview_is_capped_says_what_it_cut_and_writes_nothing(
    astgrep_run, tether_workdir: Path
) -> None:
    body = "".join(f"dispose(item_{i})\n" for i in range(300))
    after = "".join(f"item_{i}.dispose()\n" for i in range(300))
    full = "".join(
        difflib.unified_diff(
            body.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile="a/big.py",
            tofile="b/big.py",
        )
    )
    async with astgrep_run({"big.py": body}, config={"astgrep": {"preview_chars": 200}}) as run:
        before = snapshot(tether_workdir)
        result = await run.call("ast_edit", {"pattern": "dispose($X)", "rewrite": "$X.dispose()"})
        assert not result.is_error, result.text_content
        assert result.text_content.endswith(f"{full[:200]}… ({len(full) - 200} more characters)"), (
            result.text_content
        )
        assert snapshot(tether_workdir) == before
        assert result.meta["replacements"] == 300  # the cap cuts the preview, not the edit
        done = await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
        assert not done.is_error, done.text_content
        assert (tether_workdir / "big.py").read_text() == after


async def test_pending_edits_are_bounded(astgrep_run) -> None:
    config = {"astgrep": {"max_pending_edits": 2}}
    async with astgrep_run({"a.py": "dispose(x)\n"}, config=config) as run:
        for _ in range(3):
            result = await run.call("ast_edit", {"pattern": "dispose($X)", "rewrite": "$X.d()"})
            assert not result.is_error, result.text_content
        old = await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
        assert old.is_error and "expired: more than 2 edits were pending" in old.text_content
        newest = await run.call("resolve", {"edit_id": "edit_3", "action": "accept"})
        assert not newest.is_error, newest.text_content

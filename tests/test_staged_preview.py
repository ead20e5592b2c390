"""Issue 25, beyond every anchor: a staged ``ast_edit`` reports the diagnostics it would
introduce before ``resolve`` writes it — computed by the project's language servers on unsaved
versions of the files (the core's ``tether_preview_diagnostics``, answered by tether-lsp), new
against the current text's diagnostics, and with the servers given the disk's text back after.
Parametrised over basedpyright (pulls diagnostics), typescript-language-server (tsserver's
passes) and clangd (pushes them, versioned)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import anyio
import attrs
import pytest

import tether
from tether.testing import require_real
from tether_lsp.tools import RESOURCE

pytestmark = pytest.mark.anyio


@attrs.frozen
class Case:
    server: str
    binary: str
    files: dict[str, str]
    path: str
    language: str
    pattern: str
    rewrite: str
    #: a substring of the error the edit would introduce
    error: str
    #: a substring of the error the file already has (never "introduced")
    existing: str


CASES = [
    Case(
        "basedpyright",
        "basedpyright-langserver",
        {
            "pyproject.toml": '[project]\nname = "demo"\nversion = "0"\n',
            "mod.py": "def area(r: int) -> int:\n    return 3 * r * r\n\n\n"
            "old: str = area(1)\nprint(area(2))\n",
        },
        "mod.py",
        "python",
        "print(area($X))",
        'print(area("$X"))',
        "reportArgumentType",
        "reportAssignmentType",
    ),
    Case(
        "typescript-language-server",
        "typescript-language-server",
        {
            "package.json": '{"name": "demo", "version": "0.0.0", "private": true}',
            "tsconfig.json": '{"compilerOptions": {"strict": true, "target": "es2020", '
            '"module": "commonjs", "noEmit": true}, "include": ["src"]}',
            "src/mod.ts": "export function area(r: number): number {\n  return 3 * r * r;\n}\n"
            "export const old: string = area(1);\nconsole.log(area(2));\n",
        },
        "src/mod.ts",
        "typescript",
        "console.log(area($X))",
        'console.log(area("$X"))',
        "[2345]",
        "[2322]",
    ),
    # a server that pushes its diagnostics, with versions
    Case(
        "clangd",
        "clangd",
        {
            "util.c": "int add(int a, int b) {\n    return a + b + missing_one;\n}\n\n"
            "int twice(int x) {\n    return add(x, x);\n}\n",
        },
        "util.c",
        "c",
        "add($A, $B)",
        "add($A, $B, 3)",
        "Too many arguments",
        "missing_one",
    ),
]


def _write_project(case: Case, workdir: Path) -> None:
    for rel, text in case.files.items():
        (workdir / rel).parent.mkdir(parents=True, exist_ok=True)
        (workdir / rel).write_text(text)
    if case.server == "clangd":
        entry = {"directory": str(workdir), "file": str(workdir / case.path)}
        entry["arguments"] = ["cc", "-c", case.path]  # type: ignore[assignment]
        (workdir / "compile_commands.json").write_text(json.dumps([entry]))


def _need(binary: str) -> None:
    found = shutil.which(binary) or shutil.which(binary, path=str(Path(sys.executable).parent))
    require_real(found is not None, f"{binary} (a real language server)")


@pytest.mark.parametrize("opened_first", [True, False], ids=["open", "unopened"])
@pytest.mark.parametrize("case", [pytest.param(c, id=c.server) for c in CASES])
async def test_a_staged_ast_edit_reports_the_errors_it_would_introduce_and_writes_nothing(
    case: Case, opened_first: bool, tmp_path: Path
) -> None:
    """Whether the server had the file open before or not, it has the disk's text after."""
    _need(case.binary)
    _write_project(case, tmp_path)
    original = (tmp_path / case.path).read_bytes()
    config = {"core": {"approval": {"write": "auto"}}, "lsp": {"diagnostics_timeout_s": 60}}
    async with tether.open_run(tmp_path, conversation_id="c", config=config) as run:
        if opened_first:
            first = await run.call("lsp", {"action": "diagnostics", "file": case.path})
            assert case.existing in first.text_content, first.text_content
        staged = await run.call(
            "ast_edit",
            {
                "pattern": case.pattern,
                "rewrite": case.rewrite,
                "path": case.path,
                "language": case.language,
            },
        )
        assert not staged.is_error, staged.text_content
        text = staged.text_content
        assert "Diagnostics preview of the change staged by ast_edit" in text, text
        assert f"{case.path}: would introduce, from {case.server} (1):" in text, text
        assert case.error in text, text
        # the error already there is not called new
        preview = text.split("Diagnostics preview")[1].split("\n--- a/")[0]
        assert case.existing not in preview, text
        found = staged.meta["diagnostics_preview"]["would_introduce"][case.path]
        assert len(found) == 1 and found[0]["severity"] == 1, found
        assert staged.meta["diagnostics_preview"]["preview_by"] == ["lsp"]
        # nothing touched the disk
        assert (tmp_path / case.path).read_bytes() == original
        # every server was given the disk's text back
        uri = (run.workdir / case.path).as_uri()
        for client in run.resource(RESOURCE).clients:
            doc = client.documents[uri]
            assert doc.text.encode() == original, client.spec.id
            assert (doc.mtime_ns, doc.size) != (0, -1), f"{client.spec.id}: the disk's text is due"
        # and the server answers for the disk's text again
        after = await run.call("lsp", {"action": "diagnostics", "file": case.path})
        assert not after.is_error, after.text_content
        assert case.existing in after.text_content, after.text_content
        assert case.error not in after.text_content, after.text_content
        accepted = await run.call(
            "resolve", {"edit_id": staged.meta["edit_id"], "action": "accept"}
        )
        assert not accepted.is_error, accepted.text_content
        # once written, the server reports what the preview said
        assert case.error in accepted.text_content, accepted.text_content


async def test_a_preview_of_a_file_no_server_handles_says_nobody_checked_it(
    tmp_path: Path,
) -> None:
    """tether-lsp is installed but no server takes the file: the preview says so, by name."""
    (tmp_path / "notes.lua").write_text("print(1)\n")
    config = {"core": {"approval": {"write": "auto"}}}
    async with tether.open_run(tmp_path, conversation_id="c", config=config) as run:
        change = tether.StagedChange(
            (tether.StagedFile(tmp_path / "notes.lua", b"print(1)\n", b"print(2)\n"),)
        )
        note = await run.preview_diagnostics(change)
    assert note.meta["preview_by"] == []
    assert "none of the plugins that preview diagnostics ('lsp') checks these files" in note.text


@pytest.mark.parametrize("case", [pytest.param(c, id=c.server) for c in CASES])
async def test_queries_during_a_preview_answer_for_the_disk_and_do_not_undo_it(
    case: Case, tmp_path: Path
) -> None:
    """A query and a preview at once: the query never sees the staged text, and the preview
    is not cut short by the query putting the disk's text back halfway."""
    _need(case.binary)
    _write_project(case, tmp_path)
    config = {"core": {"approval": {"write": "auto"}}, "lsp": {"diagnostics_timeout_s": 60}}
    edit = {
        "pattern": case.pattern,
        "rewrite": case.rewrite,
        "path": case.path,
        "language": case.language,
    }
    async with tether.open_run(tmp_path, conversation_id="c", config=config) as run:
        first = await run.call("lsp", {"action": "diagnostics", "file": case.path})
        assert case.existing in first.text_content, first.text_content

        async def query(answers: list[tether.ToolResult]) -> None:
            for _ in range(6):
                answers.append(await run.call("lsp", {"action": "diagnostics", "file": case.path}))

        async def stage(staged: list[tether.ToolResult]) -> None:
            staged.append(await run.call("ast_edit", edit))

        for _ in range(3):
            answers: list[tether.ToolResult] = []
            staged: list[tether.ToolResult] = []
            async with anyio.create_task_group() as group:
                group.start_soon(query, answers)
                group.start_soon(stage, staged)
            assert case.error in staged[0].text_content, staged[0].text_content
            for answer in answers:
                assert not answer.is_error, answer.text_content
                assert case.error not in answer.text_content, answer.text_content
            await run.call("resolve", {"edit_id": staged[0].meta["edit_id"], "action": "discard"})


async def test_a_preview_checks_its_first_files_and_names_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each previewed file costs the servers two diagnostics rounds: an edit over more files
    than the cap previews the first ones and names those it did not check (never silence)."""
    _need("basedpyright-langserver")
    from tether_lsp import preview

    monkeypatch.setattr(preview, "MAX_FILES", 2)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    for name in "abcd":
        (tmp_path / f"{name}.py").write_text("def f(x: int) -> int:\n    return x\n\n\nf(1)\n")
    config = {"core": {"approval": {"write": "auto"}}, "lsp": {"diagnostics_timeout_s": 60}}
    async with tether.open_run(tmp_path, conversation_id="c", config=config) as run:
        staged = await run.call(
            "ast_edit", {"pattern": "f(1)", "rewrite": 'f("1")', "language": "python"}
        )
    text = staged.text_content
    assert not staged.is_error, text
    assert "- not previewed: 2 more files (the preview checks the first 2): c.py, d.py" in text
    would = staged.meta["diagnostics_preview"]["would_introduce"]
    assert sorted(would) == ["a.py", "b.py"], would
    assert all(len(found) == 1 for found in would.values()), would

"""Issue 25, beyond every anchor: ``lsp_rename`` with ``preview: true`` computes the rename's
edits, shows them and the diagnostics the rename would introduce (the core's
``tether_preview_diagnostics``, answered by this family on unsaved document versions), and
writes nothing; afterwards the server answers for the disk's text again."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from lsp_testkit import Caller, copy_project, need, open_lsp_run


@attrs.frozen
class Case:
    server: str
    binary: str
    project: str
    path: str
    text: str
    #: line and symbol of the name renamed to one that is taken
    line: int
    symbol: str
    new_name: str
    #: a substring of the error the rename would introduce
    error: str
    #: a substring of the error the file already has
    existing: str


CASES = [
    Case(
        "basedpyright",
        "basedpyright-langserver",
        "pyproj",
        "pkg/shapes2.py",
        "def area(r: int) -> int:\n    return 3 * r * r\n\n\n"
        "def volume(r: int) -> int:\n    return r * r * r\n\n\n"
        "old: str = area(1)\nprint(area(2), volume(3))\n",
        1,
        "area",
        "volume",
        "reportRedeclaration",
        "reportAssignmentType",
    ),
    Case(
        "typescript-language-server",
        "typescript-language-server",
        "tsproj",
        "src/shapes2.ts",
        "export function area(r: number): number {\n  return 3 * r * r;\n}\n"
        "export function volume(r: number): number {\n  return r * r * r;\n}\n"
        "export const old: string = area(1);\nconsole.log(area(2), volume(3));\n",
        1,
        "area",
        "volume",
        "[2393]",
        "[2322]",
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.server) for c in CASES])
def test_a_rename_preview_reports_what_it_would_introduce_and_writes_nothing(
    case: Case, tmp_path: Path
) -> None:
    need(case.binary)
    workdir = copy_project(case.project, tmp_path)
    target = workdir / case.path
    target.write_text(case.text)
    with open_lsp_run(workdir, {"diagnostics_timeout_s": 60.0}) as run:
        caller = Caller(run)
        args = {"file": case.path, "line": case.line, "symbol": case.symbol}
        result = run.call("lsp_rename", {**args, "new_name": case.new_name, "preview": True})
        text = result.text_content
        assert not result.is_error, text
        assert text.startswith(
            f"(preview, nothing written) renaming `{case.symbol}` to `{case.new_name}` would make "
        ), text
        assert f"{case.path}: would introduce, from {case.server}" in text, text
        assert case.error in text, text
        assert case.existing not in text, text
        assert result.written == ()
        assert target.read_text() == case.text
        # the server answers for the disk's text again
        after = caller.ok(action="diagnostics", file=case.path)
        assert case.existing in after, after
        assert case.error not in after, after
        # and a harmless rename's preview says nothing new
        calm = caller.ok("lsp_rename", **args, new_name="surface", preview=True)
        assert f"{case.path}: nothing new from" in calm, calm
        assert target.read_text() == case.text

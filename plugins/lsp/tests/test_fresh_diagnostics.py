"""Every server gives the diagnostics of the text just written, never those of the write before.

typescript-language-server publishes without a ``version``: a publish taken before the change
was sent passed for the new text's, so a write that added an error reported nothing, the next
reported the previous error and the fixing write reported the removed error as new. Each server
of the suite is written to twice on an already open file: a write that adds an error, one that
removes it, each followed by ``lsp diagnostics``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest
from lsp_testkit import Caller, copy_project, need, open_lsp_run


@attrs.frozen
class Row:
    server: str
    binary: str
    project: str
    path: str
    good: str
    bad: str
    #: a substring of the new diagnostic the bad write must report
    error: str
    lsp: Mapping[str, Any] = attrs.field(factory=dict)


PY_GOOD = "value: int = 1\nprint(value)\n"
ROWS = [
    Row(
        "basedpyright",
        "basedpyright-langserver",
        "pyproj",
        "pkg/fresh.py",
        PY_GOOD,
        "value: int = 'text'\nprint(value)\n",
        "reportAssignmentType",
    ),
    Row(
        "pylsp",
        "pylsp",
        "pyproj",
        "pkg/fresh.py",
        PY_GOOD,
        "value: int = 1\nprint(undefined_thing)\n",
        "undefined name 'undefined_thing'",
        {"servers": {"python": ["pylsp"]}},
    ),
    Row(
        "jedi-language-server",
        "jedi-language-server",
        "pyproj",
        "pkg/fresh.py",
        PY_GOOD,
        "value: int = 1\nprint(value\n",
        "error",
        {"servers": {"python": ["jedi-language-server"]}},
    ),
    Row(
        "clangd",
        "clangd",
        "cproj",
        "fresh.c",
        "int fresh(void) { return 1; }\n",
        "int fresh(void) { return undefined_thing; }\n",
        "undefined_thing",
    ),
    Row(
        "typescript-language-server",
        "typescript-language-server",
        "tsproj",
        "src/fresh.ts",
        "export const value: number = 1;\n",
        'export const value: number = "text";\n',
        "[2322]: Type 'string' is not assignable",
    ),
]


@pytest.mark.parametrize("row", [pytest.param(row, id=row.server) for row in ROWS])
def test_each_write_reports_its_own_diagnostics(row: Row, tmp_path: Path) -> None:
    need(row.binary)
    workdir = copy_project(row.project, tmp_path)
    with open_lsp_run(workdir, dict(row.lsp)) as run:
        caller = Caller(run)
        # the file is open in its server from here on
        first = caller.ok("write", path=row.path, content=row.good)
        assert "New diagnostics" not in first, first
        # a cold server (tsserver loading its project on a loaded machine) may still be at
        # its first diagnostics: asked again, as the answer says, until it is done
        for _ in range(6):
            result = run.call("lsp", {"action": "diagnostics", "file": row.path})
            if "still computing" not in result.text_content:
                break
        # the first answer of a cold server may add how long it waited on the server's start-up
        first, _, waited = result.text_content.partition("\n")
        assert first == f"no diagnostics for {row.path} ({row.server})"
        assert not waited or re.fullmatch(
            rf"\(waited [\d.]+ s while {row.server} was busy: .+\)", waited
        )
        added = caller.ok("write", path=row.path, content=row.bad)
        assert f"New diagnostics from {row.server}" in added and row.error in added, added
        listed = caller.ok(action="diagnostics", file=row.path)
        assert row.error in listed, listed
        removed = caller.ok("write", path=row.path, content=row.good)
        # the removed error is not news: the fixing write reports nothing
        assert "New diagnostics" not in removed, removed
        assert f"no diagnostics for {row.path} ({row.server})" == caller.ok(
            action="diagnostics", file=row.path
        )
        # and the same error written again is news again
        again = caller.ok("write", path=row.path, content=row.bad)
        assert row.error in again, again

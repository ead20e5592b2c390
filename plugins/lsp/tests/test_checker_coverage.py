"""``diagnostics "*"`` never calls a nested project covered when the outer one leaves it out
(issue 31 §3): vercel/swr's root tsconfig.json includes ``src`` only and ``test/`` has a
tsconfig.json of its own; the answer said "skipped test: inside ., whose tsc run covers it" and
"no findings" while ``tsc -p test`` reported the error put there. Generated over the checkers
whose project configuration tether reads (tsc's tsconfig.json, basedpyright's ``include``).
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from lsp_testkit import Caller, copy_project, need, open_lsp_run


@attrs.frozen
class Nested:
    server: str
    binary: str
    checker: str
    project: str
    #: the outer project's config, limiting it to src: (path, text)
    outer: tuple[str, str]
    #: the nested project's files: path -> text (one has an error)
    files: tuple[tuple[str, str], ...]
    #: a substring of the error the nested project's checker reports
    error: str


CASES = [
    Nested(
        "typescript-language-server",
        "typescript-language-server",
        "tsc",
        "tsproj",
        (
            "tsconfig.json",
            '{"compilerOptions": {"strict": true, "noEmit": true}, "include": ["src"]}',
        ),
        (
            ("test/tsconfig.json", '{"compilerOptions": {"strict": true, "noEmit": true}}'),
            ("test/bad.ts", 'export const n: number = "not a number";\n'),
        ),
        "bad.ts(1,14): error TS2322",
    ),
    Nested(
        "basedpyright",
        "basedpyright-langserver",
        "basedpyright",
        "pyproj",
        (
            "pyproject.toml",
            '[project]\nname = "x"\nversion = "0"\n\n[tool.basedpyright]\ninclude = ["pkg"]\n',
        ),
        (
            (
                "tests/pyproject.toml",
                '[project]\nname = "t"\nversion = "0"\n\n[tool.basedpyright]\n',
            ),
            ("tests/bad.py", 'n: int = "not a number"\n'),
        ),
        "bad.py",
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.server) for c in CASES])
def test_a_nested_project_the_outer_one_leaves_out_is_checked(case: Nested, tmp_path: Path) -> None:
    need(case.binary)
    need(case.checker)
    workdir = copy_project(case.project, tmp_path)
    path, text = case.outer
    (workdir / path).write_text(text)
    for rel, content in case.files:
        (workdir / rel).parent.mkdir(parents=True, exist_ok=True)
        (workdir / rel).write_text(content)
    with open_lsp_run(workdir) as run:
        answer = Caller(run).ok(action="diagnostics", file="*")
    assert "whose" not in answer or "covers it" not in answer, answer
    assert case.error in answer, answer


@pytest.mark.parametrize("case", [pytest.param(c, id=c.server) for c in CASES])
def test_files_no_checker_run_covers_are_named(case: Nested, tmp_path: Path) -> None:
    """Without the nested project, nothing checks its files: the answer names them and why,
    instead of letting "no findings" stand for the whole workdir."""
    need(case.binary)
    need(case.checker)
    workdir = copy_project(case.project, tmp_path)
    path, text = case.outer
    (workdir / path).write_text(text)
    rel, content = case.files[-1]  # the file with the error, without its project
    (workdir / rel).parent.mkdir(parents=True, exist_ok=True)
    (workdir / rel).write_text(content)
    with open_lsp_run(workdir) as run:
        answer = Caller(run).ok(action="diagnostics", file="*")
    assert f"not checked by {case.server}'s checker: 1 " in answer, answer
    assert f"— outside {case.server}'s project (`include`" in answer, answer
    assert f"): {rel}" in answer, answer

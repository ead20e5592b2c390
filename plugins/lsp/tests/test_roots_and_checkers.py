"""Roots said aloud: ``diagnostics "*"`` names every root it checked and every one it skipped
(and why), never checks a file twice, runs a checker only where its project file is; a folder
with no root marker is answered with the workdir as root, and the answer says so; "still
indexing" is said only of work that can change an answer."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from lsp_testkit import FIXTURES, Caller, need, open_lsp_run

import tether
from tether.processes.launch import SAFE
from tether_lsp import ServerSpec

FAKE = str(Path(__file__).parent / "fake_lsp_server.py")


def test_every_root_is_checked_once_or_named_as_skipped(tmp_path: Path) -> None:
    need("pyflakes")
    need("tsc")
    # seven Python projects side by side (more than the five the search used to stop at), one
    # with a project nested inside it, and a package.json at the top with no tsconfig.json
    for n in range(1, 8):
        project = tmp_path / f"p{n}"
        project.mkdir()
        (project / "pyproject.toml").write_text("")
        (project / "mod.py").write_text("import os\n")
    nested = tmp_path / "p1" / "sub"
    nested.mkdir()
    (nested / "pyproject.toml").write_text("")
    (nested / "inner.py").write_text("import sys\n")
    (tmp_path / "package.json").write_text('{"name": "top"}\n')
    shutil.copytree(FIXTURES / "tsproj", tmp_path / "web")
    (tmp_path / "web" / "src" / "bad.ts").write_text("export const n: number = 'text';\n")
    with open_lsp_run(tmp_path, {"servers": {"python": ["pylsp"]}}) as run:
        text = Caller(run).ok(action="diagnostics", file="*")
    head = text.split("\n\n", 1)[0]
    checked = ", ".join(f"p{n} (pylsp)" for n in range(1, 8))
    assert head.startswith(f"Checked 8 roots: {checked}, web (typescript-language-server)"), head
    assert "pylsp skipped p1/sub: inside p1, whose `pyflakes .` run covers it" in head, head
    assert (
        "typescript-language-server skipped .: no tsconfig.json there, which "
        "`tsc --noEmit --pretty false` needs" in head
    ), head
    # the nested file is reported once, by the outer run
    assert text.count("sub/inner.py") == 1, text
    for n in range(1, 8):
        assert f"`pyflakes .` in p{n} (checker of pylsp) exited 1" in text, text
    assert "src/bad.ts(1,14): error TS2322" in text, text
    assert "Usage" not in text and "tsc: The TypeScript Compiler" not in text, text


PY_SERVERS = [
    ("basedpyright", "basedpyright-langserver"),
    ("jedi-language-server", "jedi-language-server"),
    ("ty", "ty"),
]


@pytest.mark.parametrize(("server", "binary"), PY_SERVERS, ids=[s for s, _ in PY_SERVERS])
def test_loose_files_are_answered_with_the_workdir_as_root(
    server: str, binary: str, tmp_path: Path
) -> None:
    need(binary)
    (tmp_path / "a.py").write_text("from b import helper\n\nprint(helper(2))\n")
    (tmp_path / "b.py").write_text("def helper(x: int) -> int:\n    return x * 2\n")
    with open_lsp_run(tmp_path, {"servers": {"python": [server]}}) as run:
        caller = Caller(run)
        text = caller.ok(action="definition", file="a.py", line=3, symbol="helper")
        assert "b.py:1:5: def helper(x: int) -> int:" in text, text
        assert text.endswith(
            "(no root marker (pyproject.toml, setup.py, setup.cfg, requirements.txt, "
            f"pyrightconfig.json, Pipfile) in the workdir: {server} runs with the workdir as "
            "its root)"
        ), text
        # said once, not on every answer
        again = caller.ok(action="definition", file="a.py", line=3, symbol="helper")
        assert "no root marker" not in again, again
        status = caller.ok(action="status")
        assert f"{server} [python] can answer" in status, status
        assert "in the workdir: the workdir is its root" in status, status


class Checking:
    """A server whose only progress is checking files for diagnostics."""

    @tether.hookimpl
    def tether_lsp_servers(self) -> list[ServerSpec]:
        return [
            ServerSpec(
                id="fake",
                language="fake",
                extensions={".fake": "fake"},
                command=(sys.executable, FAKE, "checking"),
                root_markers=("fake.toml",),
                checking_progress=r"files? to analyze",
                untrusted=SAFE,  # the fake reads no workdir configuration
            )
        ]


def test_checking_files_is_not_called_indexing(tmp_path: Path) -> None:
    (tmp_path / "fake.toml").write_text("")
    (tmp_path / "main.fake").write_text("def alpha\nalpha alpha\n")
    lsp = {"request_timeout_s": 5.0, "ready_timeout_s": 2.0}
    with open_lsp_run(tmp_path, lsp, plugins=[Checking()]) as run:
        caller = Caller(run)
        # the server starts its never-ending "3 files to analyze" on initialized
        status = caller.ok(action="status")
        assert "3 files to analyze" not in status or "): ready" in status, status
        text = caller.ok(action="definition", file="main.fake", line=2, symbol="alpha#1")
        assert "main.fake:1:5: def alpha" in text, text
        assert "still indexing" not in text and "waited" not in text, text
        client = run.run.resources["lsp_supervisor"].clients[0]
        assert [p.describe() for p in client.progress.values()] == ["3 files to analyze"]


@pytest.mark.parametrize(("server", "binary"), PY_SERVERS[:2], ids=[s for s, _ in PY_SERVERS[:2]])
def test_a_definition_outside_the_workdir_says_where(
    server: str, binary: str, tmp_path: Path
) -> None:
    need(binary)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "use.py").write_text("import attrs\n\nattrs.define\n")
    with open_lsp_run(tmp_path, {"servers": {"python": [server]}}) as run:
        text = Caller(run).ok(action="definition", file="use.py", line=3, symbol="define")
    # the environment the server resolved the import in (basedpyright may pick another
    # interpreter's than tether's): named, and holding the place given
    found = re.search(
        r"\((it is|\d+ of these are) outside the workdir: in the Python "
        r"(environment|installation) (\S+)\)",
        text,
    )
    assert found is not None, text
    place = text.splitlines()[1]
    assert place.startswith(found[3] + "/") and "/attrs/__init__.py" in place, text


def test_workspace_symbols_open_a_file_the_tsconfig_includes(tmp_path: Path) -> None:
    need("typescript-language-server")
    # zod's shape: a script no tsconfig covers comes first alphabetically
    (tmp_path / "package.json").write_text('{"name": "lib"}\n')
    (tmp_path / "tsconfig.json").write_text(
        '{\n  // the library only\n  "compilerOptions": {"strict": true, "noEmit": true},\n'
        '  "include": ["src/**/*.ts"],\n}\n'
    )
    (tmp_path / "aaa.mjs").write_text("export const play = 1;\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "helpers.ts").write_text(
        "export function getEnumValues(values: string[]): string[] {\n  return values;\n}\n"
    )
    with open_lsp_run(tmp_path) as run:
        text = Caller(run).ok(action="symbols", query="getEnumValues")
    assert "function getEnumValues — src/helpers.ts" in text, text

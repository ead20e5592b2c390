"""Answers true about the project, not only the file (issue 31 §2-§5), generated over the
type-checking servers: basedpyright, typescript-language-server, gopls, clangd.

Each server gets one small project with a file its own project leaves out (a path outside
pyright's ``include`` or tsconfig's, a Go file under ``//go:build ignore``, a C file missing from
``compile_commands.json``), and one run shared by every test of that server:

- a rename does not report a diagnostic the file had before as new because its message now
  names the new name (the ledger maps the old name into messages);
- a rename that leaves uses in a file the server cannot see refuses unless ``force: true``,
  naming the file;
- a workspace symbol search the server answers empty says where the name is found as text in
  the files it does not cover, and why it did not look there.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from lsp_testkit import WRITE_AUTO, Caller, need

import tether


@attrs.frozen
class Project:
    server: str
    binary: str
    files: dict[str, str]
    #: a file with an error whose message names a type, and the type's declaration (line)
    model: str
    type_line: int
    type_name: str
    #: an error message of ``model``, with ``{}`` for the type's name
    message: str
    #: a declaration other files use, (file, line, name), and the file the server cannot see
    #: that uses it
    api: tuple[str, int, str]
    unseen: str
    #: why the server does not see ``unseen``, as an answer says it
    why: str
    #: a function declared only in ``unseen`` (the server's symbol search cannot find it)
    hidden: str


PROJECTS = [
    Project(
        "basedpyright",
        "basedpyright-langserver",
        {
            "pyproject.toml": '[tool.basedpyright]\ninclude = ["pkg"]\n'
            'typeCheckingMode = "standard"\n',
            "pkg/__init__.py": "",
            "pkg/model.py": "class Widget:\n    size: int = 0\n\n\n"
            "def use() -> int:\n    return Widget().zzz\n",
            "pkg/api.py": "def visible_api(x: int) -> int:\n    return x\n",
            "scripts/run.py": "from pkg.api import visible_api\n\n\n"
            "def hidden_helper() -> int:\n    return visible_api(1)\n",
        },
        "pkg/model.py",
        1,
        "Widget",
        'Cannot access attribute "zzz" for class "{}"',
        ("pkg/api.py", 1, "visible_api"),
        "scripts/run.py",
        "outside basedpyright's project (`include` in pyproject.toml)",
        "hidden_helper",
    ),
    Project(
        "typescript-language-server",
        "typescript-language-server",
        {
            "tsconfig.json": json.dumps(
                {"compilerOptions": {"strict": True, "noEmit": True}, "include": ["src"]}
            ),
            "package.json": '{"name": "truth", "version": "0.0.0"}',
            "src/model.ts": "export class Widget {\n  size = 0;\n}\n"
            "export function use(): number {\n  return new Widget().zzz;\n}\n",
            "src/api.ts": "export function visibleApi(x: number): number {\n  return x;\n}\n",
            "test/run.ts": 'import { visibleApi } from "../src/api";\n'
            "export function hiddenHelper(): number {\n  return visibleApi(1);\n}\n",
        },
        "src/model.ts",
        1,
        "Widget",
        "Property 'zzz' does not exist on type '{}'",
        ("src/api.ts", 1, "visibleApi"),
        "test/run.ts",
        "outside typescript-language-server's project (`include` of tsconfig.json)",
        "hiddenHelper",
    ),
    Project(
        "gopls",
        "gopls",
        {
            "go.mod": "module example.com/truth\n\ngo 1.19\n",
            "model.go": "package main\n\ntype Widget struct{ Size int }\n\n"
            "func use() int {\n\treturn Widget{}.Zzz\n}\n",
            "api.go": "package main\n\nfunc VisibleApi(x int) int { return x }\n\n"
            "func main() { _ = use() + VisibleApi(1) }\n",
            "gen.go": "//go:build ignore\n\npackage main\n\n"
            "func hiddenHelper() int { return VisibleApi(1) }\n",
        },
        "model.go",
        3,
        "Widget",
        "type {} has no field or method Zzz",
        ("api.go", 3, "VisibleApi"),
        "gen.go",
        "outside gopls' build (`//go:build ignore`)",
        "hiddenHelper",
    ),
    Project(
        "clangd",
        "clangd",
        {
            "model.c": "struct Widget {\n  int size;\n};\n"
            "int use(struct Widget w) { return w.zzz; }\n",
            "api.h": "int visible_api(int x);\n",
            "api.c": '#include "api.h"\nint visible_api(int x) { return x; }\n',
            "extra.c": '#include "api.h"\nint hidden_helper(void) { return visible_api(1); }\n',
        },
        "model.c",
        1,
        "Widget",
        "No member named 'zzz' in 'struct {}'",
        ("api.c", 2, "visible_api"),
        "extra.c",
        "outside clangd's project (not in compile_commands.json)",
        "hidden_helper",
    ),
]
#: long enough for a cold server on a loaded machine
CONFIG = {
    "core": {**WRITE_AUTO, "post_process_timeout_s": 300.0},
    "lsp": {"diagnostics_timeout_s": 60.0, "dependents_timeout_s": 30.0},
}


def make_project(project: Project, into: Path) -> Path:
    workdir = into / project.server
    for rel, text in project.files.items():
        (workdir / rel).parent.mkdir(parents=True, exist_ok=True)
        (workdir / rel).write_text(text)
    if project.server == "clangd":
        sources = ["model.c", "api.c"]  # not extra.c
        entries = [
            {"directory": str(workdir), "file": str(workdir / src), "arguments": ["cc", "-c", src]}
            for src in sources
        ]
        (workdir / "compile_commands.json").write_text(json.dumps(entries))
    return workdir


@pytest.fixture(scope="module", params=PROJECTS, ids=[p.server for p in PROJECTS])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Project, Path, Caller]]:
    """One run per server, shared by the tests of that server."""
    project: Project = request.param
    need(project.binary)
    workdir = make_project(project, tmp_path_factory.mktemp("truth"))
    with tether.open_run_sync(workdir, config=CONFIG) as run:
        yield project, workdir, Caller(run)


def test_an_empty_symbol_search_says_where_the_text_has_it(
    served: tuple[Project, Path, Caller],
) -> None:
    """First of the module: a rename below opens the unseen file in the server (a dependent
    of the renamed declaration), which then sees it."""
    project, _, caller = served
    text = caller.ok(action="symbols", query=project.hidden)
    assert f"`{project.hidden}` is declared, by the text, in 1 file" in text, text
    assert f"  {project.unseen}:" in text and project.why in text, text


def test_a_rename_does_not_report_old_diagnostics_under_the_new_name(
    served: tuple[Project, Path, Caller],
) -> None:
    project, workdir, caller = served
    args: dict[str, Any] = {
        "file": project.model,
        "line": project.type_line,
        "symbol": project.type_name,
        "new_name": "Gadget",
    }
    done = caller.ok("lsp_rename", **args)
    assert done.startswith(f"renamed `{project.type_name}` to `Gadget`"), done
    assert "Gadget" in (workdir / project.model).read_text()
    # the error was there before the rename, under the old name: not new
    assert project.message.format("Gadget") not in done, done
    assert "New diagnostics" not in done, done
    # and the file still has it: the server did report it
    now = caller.ok(action="diagnostics", file=project.model)
    assert project.message.format("Gadget") in now, now


def test_a_rename_leaving_uses_the_server_cannot_see_refuses_unless_forced(
    served: tuple[Project, Path, Caller],
) -> None:
    project, workdir, caller = served
    file, line, name = project.api
    args: dict[str, Any] = {"file": file, "line": line, "symbol": name, "new_name": "renamedApi"}
    unseen = (workdir / project.unseen).read_text()
    written = (workdir / file).read_text()
    refused = caller.err("lsp_rename", **args)
    assert refused.startswith(f"nothing was written: {project.server}'s rename"), refused
    assert f"also found `{name}` in {project.unseen}:" in refused, refused
    assert project.why in refused and "`force: true`" in refused, refused
    assert (workdir / project.unseen).read_text() == unseen
    assert (workdir / file).read_text() == written
    done = caller.ok("lsp_rename", force=True, **args)
    assert done.startswith(f"renamed `{name}` to `renamedApi`"), done
    assert f"{project.why}; not renamed" in done, done
    assert (workdir / project.unseen).read_text() == unseen


#: how each server learns of a file another process changed: file events it watches for
#: (pyright, gopls) are delivered; one that watches none (clangd, tsserver) is sent a bounded
#: number of the changed files as documents
WATCHES = {"basedpyright": True, "gopls": True}
#: a file of no consequence, in each language
FILLER = {
    "basedpyright": ("pkg/filler_{}.py", "VALUE_{} = 1\n"),
    "typescript-language-server": ("src/filler_{}.ts", "export const value{} = 1;\n"),
    "gopls": ("filler_{}.go", "package main\n\nconst value{} = 1\n"),
    "clangd": ("filler_{}.c", "int value_{} = 1;\n"),
}


def test_a_change_the_server_may_not_have_taken_in_is_said(
    served: tuple[Project, Path, Caller],
) -> None:
    """Last of the module. Written by tether, a file reaches the server (no note); 25 files
    written by another process exceed what a query sends to a server that watches no files: its
    answers say they may be stale, naming the files, instead of stating them as current."""
    project, workdir, caller = served
    rel, text = FILLER[project.server]
    caller.ok("write", path=rel.format("tether"), content=text.format("tether"))
    answer = caller.ok(action="diagnostics", file=project.model)
    assert "may not have taken in" not in answer, answer
    for n in range(25):
        (workdir / rel.format(n)).write_text(text.format(n))
    answer = caller.ok(action="diagnostics", file=project.model)
    if WATCHES.get(project.server):
        assert "may not have taken in" not in answer, answer
    else:
        assert f"{project.server} may not have taken in 5 files another process" in answer, answer
        assert "(not sent: over the 20 files a query sends)" in answer, answer

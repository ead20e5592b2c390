"""typescript-language-server 5 with typescript 5 (installed by ci/install.sh)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lsp_testkit import Caller, copy_project, need, open_lsp_run


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_project("tsproj", tmp_path_factory.mktemp("ts"))


@pytest.fixture(scope="module")
def ts(workdir: Path) -> Iterator[Caller]:
    need("typescript-language-server")
    with open_lsp_run(workdir) as run:
        yield Caller(run)


def test_navigation(ts: Caller) -> None:
    text = ts.ok(action="definition", file="src/main.ts", line=3, symbol="makeGreeter")
    assert "src/greet.ts:11:17: export function makeGreeter(): Greeter {" in text
    hover = ts.ok(action="hover", file="src/main.ts", line=4, symbol="greet")
    assert "greet(name: string): string" in hover
    impl = ts.ok(action="implementation", file="src/greet.ts", line=1, symbol="Greeter")
    assert "src/greet.ts:5:14:" in impl


def test_workspace_symbols(ts: Caller) -> None:
    text = ts.ok(action="symbols", query="Polite")
    assert "class Polite" in text and "src/greet.ts:5:" in text


def test_project_checker_runs_tsc(ts: Caller, workdir: Path) -> None:
    (workdir / "src" / "bad.ts").write_text("const n: number = 'text';\nexport { n };\n")
    text = ts.ok(action="diagnostics", file="*")
    assert (
        "`tsc --noEmit --pretty false` in . (checker of typescript-language-server) exited" in text
    )
    assert "src/bad.ts(1,7): error TS2322" in text


def test_incoming_and_outgoing_calls(ts: Caller) -> None:
    text = ts.ok(action="incoming_calls", file="src/greet.ts", line=5, symbol="Polite")
    assert "src/greet.ts:12:14: return new Polite(); — in function makeGreeter" in text
    text = ts.ok(action="outgoing_calls", file="src/greet.ts", line=11, symbol="makeGreeter")
    assert text == (
        "1 function called by `makeGreeter` at src/greet.ts:11 (typescript-language-server):\n"
        "class Polite — src/greet.ts:5:14: export class Polite implements Greeter { "
        "(called at src/greet.ts:12:14)"
    )


def test_rename_from_an_import_site_renames_the_export(ts: Caller, workdir: Path) -> None:
    text = ts.ok(
        "lsp_rename", file="src/main.ts", line=1, symbol="makeGreeter", new_name="greeterFor"
    )
    assert text.startswith("renamed `makeGreeter` to `greeterFor`: 3 edits in 2 files")
    main = (workdir / "src" / "main.ts").read_text()
    # not `import { makeGreeter as greeterFor }` (providePrefixAndSuffixTextForRename=false)
    assert main.startswith('import { greeterFor } from "./greet";')
    assert "const greeter = greeterFor();" in main
    assert "export function greeterFor(): Greeter {" in (workdir / "src" / "greet.ts").read_text()

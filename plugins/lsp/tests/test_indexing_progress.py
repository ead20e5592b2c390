"""Cold start honesty: a real server's work-done progress is tracked and shown, never a silent
wait. clangd reports its background index as ``$/progress`` "indexing", "done/total" and a
percentage (a generated project large enough to take seconds); typescript-language-server
reports its start-up."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from lsp_testkit import copy_project, need, open_lsp_run


def _client(run: Any, server: str) -> Any:
    return next(c for c in run.resources["lsp_supervisor"].clients if c.spec.id == server)


def generate_c_project(root: Path, files: int) -> None:
    sources = []
    for k in range(files):
        body = "".join(f"int f{k}_{i}(int x) {{ return x * {i} + {k}; }}\n" for i in range(40))
        (root / f"u{k}.c").write_text(f"#include <stdio.h>\n{body}")
        sources.append(f"u{k}.c")
    (root / "main.c").write_text("int f0_1(int x);\nint main(void) { return f0_1(2); }\n")
    sources.append("main.c")
    entries = [
        {"directory": str(root), "file": str(root / src), "arguments": ["cc", "-c", src]}
        for src in sources
    ]
    (root / "compile_commands.json").write_text(json.dumps(entries))


#: translation units in the generated project: clangd's background index of this many files
#: (each including the C library's headers) lasts seconds on any machine
C_FILES = 500


def test_clangd_index_progress_shows_in_the_answer_status_and_transport(tmp_path: Path) -> None:
    need("clangd")
    generate_c_project(tmp_path, C_FILES)
    forwarded: list[str] = []
    changes: list[str] = []
    with open_lsp_run(tmp_path) as run:
        # every change of every server's progress, from the run's start
        run.resources["lsp_supervisor"].progress_listeners.append(changes.append)
        hover = {"action": "hover", "file": "main.c", "line": 2, "symbol": "f0_1"}

        def call(arguments: dict[str, Any]) -> str:
            result = run.portal.call(
                lambda: run.run.call("lsp", arguments, on_progress=forwarded.append)
            )
            assert not result.is_error, result.text_content
            return str(result.text_content)

        call(hover)
        client = _client(run, "clangd")
        # clangd's own progress: "indexing", its message "done/total" and a percentage
        assert run.portal.call(client.wait_until, lambda: "/" in client.busy_with(), 60), changes
        answer = call(hover)
        assert "int f0_1(int x)" in answer
        state = r"indexing: (\d+)/(\d+) \((\d+)%\)"
        line = re.search(rf"^\(still indexing — clangd: {state}\)$", answer, re.M)
        assert line is not None, answer
        done, total = int(line[1]), int(line[2])
        assert done < total and total >= C_FILES  # its numbers, as it sent them
        status = call({"action": "status"})
        assert re.search(rf"clangd for \. .*: still indexing: {state}", status), status
        # the transport of the calls heard the same states while they ran
        assert any(re.fullmatch(rf"clangd: {state}", m) for m in forwarded), forwarded
        # once the index is built the answers carry no such line
        assert run.portal.call(client.wait_until, lambda: not client.progress, 300)
        assert "still indexing" not in call(hover)
        assert "clangd: done" in changes


def test_typescript_cold_start_says_what_it_waited_for(tmp_path: Path) -> None:
    """typescript-language-server reports "Initializing JS/TS language features…" while
    tsserver loads the project; the first answer waits through it and says so."""
    need("typescript-language-server")
    workdir = copy_project("tsproj", tmp_path)
    with open_lsp_run(workdir) as run:
        text = run.call(
            "lsp", {"action": "hover", "file": "src/main.ts", "line": 3, "symbol": "makeGreeter"}
        ).text_content
    assert re.search(
        r"^\((waited [\d.]+ s while typescript-language-server was busy|still indexing — "
        r"typescript-language-server): Initializing JS/TS language features…\)$",
        text,
        re.M,
    ), text

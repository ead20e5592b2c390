"""What the diagnostics preview costs on a real project (issue 25): a staged ``ast_edit`` and
an ``lsp_rename`` with ``preview: true``, each timed whole and for its preview part
(``Run.preview_diagnostics``), cold (the first, the server just started) and warm.

Fetch the projects first (never committed), e.g. ``git clone https://github.com/pallets/click
/tmp/click`` and ``git clone https://github.com/colinhacks/zod /tmp/zod``, then::

    uv run python plugins/lsp/benchmarks/bench_preview.py click /tmp/click
    uv run python plugins/lsp/benchmarks/bench_preview.py zod /tmp/zod

The workdir's files are never written (every staged edit is discarded; a preview writes
nothing): the script checks that the tree is byte-identical afterwards.
"""

from __future__ import annotations

import hashlib
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio

import tether
from tether.run import Run

#: per project: the file, an ast_edit that adds type errors, a rename onto a taken name
PROJECTS: dict[str, dict[str, Any]] = {
    "click": {
        "file": "src/click/core.py",
        "language": "python",
        "pattern": "len($X)",
        "rewrite": 'len($X) + "1"',
        "rename": {"line": 208, "symbol": "Context", "new_name": "Command"},
    },
    "zod": {
        "file": "packages/zod/src/v4/core/util.ts",
        "language": "typescript",
        "pattern": "Object.keys($X)",
        "rewrite": "Object.keys($X) * 2",
        "rename": {"line": 247, "symbol": "getEnumValues", "new_name": "joinValues"},
    },
}
REPEAT = 5


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "node_modules" not in path.parts and ".git" not in path.parts:
            h.update(str(path).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


async def main(name: str, workdir: Path) -> None:
    project = PROJECTS[name]
    before = _digest(workdir)
    preview_times: list[float] = []
    original = Run.preview_diagnostics

    async def timed(self: Run, change: tether.StagedChange) -> tether.ResultNote:
        start = time.perf_counter()
        try:
            return await original(self, change)
        finally:
            preview_times.append(time.perf_counter() - start)

    Run.preview_diagnostics = timed  # type: ignore[method-assign]
    config = {
        "core": {"approval": {"write": "auto"}, "post_process_timeout_s": 300},
        "lsp": {"diagnostics_timeout_s": 120, "ready_timeout_s": 120},
    }
    edit = {
        "pattern": project["pattern"],
        "rewrite": project["rewrite"],
        "path": project["file"],
        "language": project["language"],
    }
    rename = {"file": project["file"], **project["rename"], "preview": True}
    rows: dict[str, list[tuple[float, float]]] = {"ast_edit": [], "lsp_rename preview": []}
    async with tether.open_run(workdir, conversation_id="bench", config=config) as run:
        for i in range(REPEAT + 1):
            for tool, args in (("ast_edit", edit), ("lsp_rename", rename)):
                start = time.perf_counter()
                result = await run.call(tool, args)
                total = time.perf_counter() - start
                assert not result.is_error, result.text_content
                if i == 0:
                    print(f"--- {tool} (cold) ---\n{result.text_content[-1500:]}\n")
                if tool == "ast_edit":
                    discard = {"edit_id": result.meta["edit_id"], "action": "discard"}
                    assert not (await run.call("resolve", discard)).is_error
                key = "ast_edit" if tool == "ast_edit" else "lsp_rename preview"
                rows[key].append((total, preview_times[-1]))
    assert _digest(workdir) == before, "the workdir changed"
    print(f"{name}: {project['file']} (the tree is byte-identical afterwards)")
    for key, got in rows.items():
        cold, warm = got[0], got[1:]
        med_total = statistics.median(t for t, _ in warm)
        med_preview = statistics.median(p for _, p in warm)
        print(
            f"  {key}: cold {cold[0]:.2f} s (preview {cold[1]:.2f} s); warm median of "
            f"{len(warm)}: {med_total:.2f} s (preview {med_preview:.2f} s, "
            f"min {min(p for _, p in warm):.2f}, max {max(p for _, p in warm):.2f})"
        )


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], Path(sys.argv[2]).resolve())

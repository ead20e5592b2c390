"""Issue 31's coverage checks on real projects, tether beside a bare client and ``git grep``.

Run by hand on checkouts fetched at run time (never committed)::

    uv run python plugins/lsp/benchmarks/side_by_side_coverage.py attrs /tmp/attrs
    uv run python plugins/lsp/benchmarks/side_by_side_coverage.py swr /tmp/swr

Per project: a workspace symbol search for a name the server's project leaves out (bare:
``workspace/symbol`` after the server settled, with a file open for tsserver; ``git grep -nw``);
a rename whose old name is used in files the server cannot see (bare: ``textDocument/rename``,
the files it edits against ``git grep -lw``; tether: ``lsp_rename``, refused, then ``force``);
and, for attrs, whether the rename reports an old warning under the new name. Each side works
on its own copy of the checkout.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
from bench_lsp import BareClient, _bin, open_document

import tether

WRITE_AUTO = {"approval": {"read": "auto", "write": "auto", "exec": "ask"}}
PROJECTS: dict[str, dict[str, Any]] = {
    "attrs": {
        "argv": [_bin("basedpyright-langserver"), "--stdio"],
        "language_id": "python",
        "open": "src/attr/_make.py",
        "symbol": "asdict",
        "rename": ("src/attr/_make.py", 39, "_OBJ_SETATTR", "_OBJECT_SETATTR"),
        "grep": ["*.py", "*.pyi"],
    },
    "swr": {
        "argv": [_bin("typescript-language-server"), "--stdio"],
        "language_id": "typescript",
        "open": "src/index/index.ts",
        "symbol": "DataComponent",
        "rename": ("src/_internal/utils/serialize.ts", 6, "serialize", "serializeKey"),
        "grep": ["*.ts", "*.tsx"],
    },
}


def git_grep(root: Path, word: str, globs: list[str], *, files: bool = False) -> list[str]:
    flag = "-lw" if files else "-nw"
    out = subprocess.run(
        ["git", "grep", flag, word, "--", *globs], cwd=root, capture_output=True, text=True
    )
    return out.stdout.splitlines()


def copy(root: Path) -> Path:
    target = Path(tempfile.mkdtemp(prefix="sbs-")) / root.name
    shutil.copytree(root, target, symlinks=True)
    return target


async def bare(project: dict[str, Any], root: Path) -> dict[str, Any]:
    """The bare client's answers: symbols, and the files its rename edits."""
    found: dict[str, Any] = {}
    async with BareClient(project["argv"], root, {}) as client:
        await client.initialize()
        path = root / project["open"]
        await open_document(client, path.as_uri(), project["language_id"], path.read_text())
        await anyio.sleep(8)  # the server loads its project (no readiness signal used here)
        started = time.perf_counter()
        symbols = await client.request("workspace/symbol", {"query": project["symbol"]})
        found["symbols_ms"] = (time.perf_counter() - started) * 1000
        found["symbols"] = [
            s["location"]["uri"].rsplit("/", 1)[-1]
            for s in symbols or []
            if s.get("name") == project["symbol"]
        ]
        file, line, name, new = project["rename"]
        target = root / file
        text = target.read_text()
        await open_document(client, target.as_uri(), project["language_id"], text)
        column = text.splitlines()[line - 1].index(name)
        edit = await client.request(
            "textDocument/rename",
            {
                "textDocument": {"uri": target.as_uri()},
                "position": {"line": line - 1, "character": column},
                "newName": new,
            },
        )
        uris = set((edit or {}).get("changes", {}))
        uris |= {c["textDocument"]["uri"] for c in (edit or {}).get("documentChanges", [])}
        found["rename_files"] = sorted(
            str(Path(unquote(urlparse(u).path)).relative_to(root)) for u in uris
        )
    return found


def with_tether(project: dict[str, Any], root: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    config = {"core": {**WRITE_AUTO, "post_process_timeout_s": 300.0}}
    with tether.open_run_sync(root, config=config) as run:
        started = time.perf_counter()
        found["symbols"] = run.call("lsp", {"action": "symbols", "query": project["symbol"]})
        found["symbols_ms"] = (time.perf_counter() - started) * 1000
        # a second search, the index warm
        started = time.perf_counter()
        run.call("lsp", {"action": "symbols", "query": project["symbol"]})
        found["symbols_warm_ms"] = (time.perf_counter() - started) * 1000
        file, line, name, new = project["rename"]
        args = {"file": file, "line": line, "symbol": name, "new_name": new}
        found["refused"] = run.call("lsp_rename", args)
        found["forced"] = run.call("lsp_rename", {**args, "force": True})
    return found


def main() -> None:
    name, root = sys.argv[1], Path(sys.argv[2]).resolve()
    project = PROJECTS[name]
    print(f"== {name} at {root} — load {Path('/proc/loadavg').read_text().split()[:3]}")
    print("git grep:", git_grep(root, project["symbol"], project["grep"])[:8])
    rename_word = project["rename"][2]
    print("git grep -lw rename:", git_grep(root, rename_word, project["grep"], files=True))
    got = anyio.run(bare, project, copy(root))
    print("bare:", got)
    mine = with_tether(project, copy(root))
    print(f"tether symbols ({mine['symbols_ms']:.0f} ms cold, {mine['symbols_warm_ms']:.0f} warm):")
    print(mine["symbols"].text_content)
    print("tether rename:", "error" if mine["refused"].is_error else "applied")
    print(mine["refused"].text_content[:3000])
    print("tether rename force:")
    print(mine["forced"].text_content[:3000])


if __name__ == "__main__":
    main()

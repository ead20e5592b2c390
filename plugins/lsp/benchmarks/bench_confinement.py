"""What the write confinement costs: a language server's start (spawn to ``initialize``
answered) and a project checker's run, side by side in four modes — a trusted workdir (no pins,
no confinement: what a run did before), untrusted with the declared pins only
(``TETHER_CONFINEMENT=none``), untrusted under Landlock, untrusted under bwrap.

    uv run python plugins/lsp/benchmarks/bench_confinement.py [--repeat N]

Prints one row per (program, mode): the median and the min of N, in ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import anyio

import tether
from tether.processes import confine
from tether_lsp.checker import _run_one
from tether_lsp.tools import RESOURCE

MODES = (
    ("trusted", True, ""),
    ("pins only", False, "none"),
    ("landlock", False, "landlock"),
    ("bwrap", False, "bwrap"),
)


def project(root: Path) -> None:
    (root / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    (root / "a.py").write_text("def square(x: int) -> int:\n    return x * x\n")
    (root / "tsconfig.json").write_text('{"compilerOptions": {"strict": true}}\n')
    (root / "a.ts").write_text("export const polite: number = 1;\n")
    (root / "compile_flags.txt").write_text("-std=c11\n")
    (root / "a.c").write_text("int add(int a, int b) { return a + b; }\n")
    (root / "go.mod").write_text("module example.com/p\n\ngo 1.19\n")
    (root / "a.go").write_text('package p\n\nimport "fmt"\n\nfunc F() { fmt.Println("x") }\n')


SERVERS = ("ruff", "basedpyright", "typescript-language-server", "clangd", "gopls")
CHECKERS = ("ruff", "basedpyright", "typescript-language-server", "gopls")


async def measure(workdir: Path, trusted: bool, repeat: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {}
    for _ in range(repeat):
        # a fresh run each time: a server start and a checker run as a read call meets them
        async with tether.open_run(workdir, trust_workdir=trusted) as run:
            supervisor = run.resource(RESOURCE)
            for server in SERVERS:
                spec = supervisor.specs[server]
                started = time.perf_counter()
                await supervisor.client(spec, workdir)
                times.setdefault(f"start {server}", []).append(time.perf_counter() - started)
            for server in CHECKERS:
                spec = supervisor.specs[server]
                started = time.perf_counter()
                ran, text = await _run_one(supervisor, spec, workdir)
                assert ran, text
                name = f"check {' '.join(spec.checker)}"
                times.setdefault(name, []).append(time.perf_counter() - started)
            started = time.perf_counter()
            await run.process_owner.run_command(["true"], timeout_s=10, confine=True)
            times.setdefault("spawn `true`", []).append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        project(workdir)
        for mode, trusted, choice in MODES:
            os.environ[confine.CHOICE_ENV] = choice
            results[mode] = anyio.run(measure, workdir, trusted, options.repeat)
    names = list(next(iter(results.values())))
    print(f"{'program':44}" + "".join(f"{mode:>22}" for mode, _, _ in MODES))
    for name in names:
        cells = []
        for mode, _, _ in MODES:
            values = results[mode][name]
            cells.append(f"{statistics.median(values) * 1000:8.0f} (min {min(values) * 1000:5.0f})")
        print(f"{name:44}" + "".join(f"{cell:>22}" for cell in cells))


if __name__ == "__main__":
    main()

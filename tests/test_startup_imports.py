"""Start-up stays lean with every plugin installed — checked by *which* modules get imported,
not by a clock (the budget itself is measured by ``core/benchmarks/startup.py``).

Each stage runs in a fresh interpreter under ``python -X importtime``; a module that should not
be there fails the test with the chain of imports that brought it in. The lists are what was
removed from start-up: ``import tether`` alone reads no metadata (``importlib.metadata`` and
``packaging`` come with loading plugins); cattrs, tomllib and hashlib wait for their first use
(cattrs: the first table or arguments actually given);
plugins import their tool implementations when a tool is called, their run resources when a
run wires them, and the CLI's ``argparse`` never.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

#: entry-point discovery and the core-range check: paid by loading plugins, not by the import
METADATA = ["importlib.metadata", "email", "email.message", "email.parser", "packaging"]

#: never imported by ``import tether`` alone
AFTER_IMPORT = [*METADATA, "cattrs", "tomllib", "hashlib", "argparse", "tether.cli"]

#: never imported by loading every plugin (what ``tether plugins`` does)
AFTER_LOAD = [
    # a plugin's plain ``tether`` requirement is read by packaging's specifiers alone
    "packaging.requirements",
    "packaging.markers",
    # astgrep's grammar table and tree-sitter: imported when a run asks for the grammars
    "tether_astgrep.grammars",
    "tree_sitter",
    # debug's breakpoint machinery: imported by the run's debugger, or the first debug call
    "tether_debug.breakpoints",
    "cattrs",
    "tomllib",
    "argparse",
    "tether.cli",
    # run resources: imported by the hook that wires them into a run
    "tether_lsp.supervisor",
    "tether_lsp.server_table",
    "tether_lsp.protocol",
    "lsprotocol",  # LSP's typed messages: imported when a run's first language server starts
    "tether_lsp.client",
    "tether_lsp.sync",
    "tether_lsp.inbound",
    "tether_lsp.rpc",
    "tether_lsp.documents",
    "tether_debug.supervisor",
    "tether_debug.session",
    "tether_debug.dap_requests",
    "tether_vibe.roster",
    "tether_vibe.runners",
    "tether_astgrep.engine",
    # a run that does not trace never imports OpenTelemetry
    "opentelemetry",
]

#: never imported by opening and closing a run with every plugin (vibe mode on)
AFTER_RUN = [
    "cattrs",  # no configuration given: every table is its defaults, no converter built
    "argparse",
    "tether.cli",
    # tool implementations: imported by the first call that needs them
    "tether_lsp.client",
    "tether_lsp.sync",
    "tether_lsp.inbound",
    "tether_lsp.rpc",
    "tether_lsp.documents",
    "tether_lsp.status",
    "tether_lsp.protocol",
    "tether_lsp.queries",
    "tether_debug.ops.lifecycle",
    "tether_debug.ops.inspection",
    "tether_lsp.after_write",
    "tether_lsp.checker",
    "tether_lsp.rename",
    "tether_files.patch",
    "difflib",
    "tether_astgrep.engine",
    "tether_astgrep.matcher",
    "tether_astgrep.pattern",
    "tether_astgrep.rewrite",
    # astgrep's forked workers (and the pickle they bring); eval's kernel sources use
    # importlib.resources, which importlib.metadata (entry points) brings anyway
    "multiprocessing",
    "multiprocessing.connection",
    "pickle",
]
#: heavy libraries behind tool implementations, never at start-up (where installed at all)
LIBRARIES = ["mcp", "pydantic", "lsprotocol", "jupyter_client", "zmq", "ipykernel", "tree_sitter_c"]

LOAD = "import tether\npm = tether.make_plugin_manager()\n" + "_report(pm.report)\n"
RUN = """
import anyio, tether
async def main(workdir):
    async with tether.open_run(workdir, conversation_id="c", vibe=True) as run:
        _report(run.pm.report)
anyio.run(main, sys.argv[1])
"""
PRELUDE = """
import json, sys
def _report(report):
    print(json.dumps({i.name: [i.status, i.reason] for i in report}))
"""

#: the plugins whose modules the lists name: if one failed to load, the check would pass blind
EXPECTED = {"ask", "astgrep", "debug", "eval", "files", "lsp", "mcp-bridge", "vibe"}

_LINE = re.compile(r"import time:\s*\d+ \|\s*\d+ \|( *)(\S+)")


def import_chains(stderr: str) -> dict[str, str]:
    """Every imported module, with the chain that imported it (``a <- b <- c``), from
    ``-X importtime`` output (post-order: a module's line follows its children's)."""
    rows = [(len(m[1]) // 2, m[2]) for m in map(_LINE.match, stderr.splitlines()) if m]
    chains: dict[str, str] = {}
    for i, (depth, name) in enumerate(rows):
        chain, level = [name], depth
        for later_depth, later in rows[i + 1 :]:
            if later_depth < level:
                chain.append(later)
                level = later_depth
        chains.setdefault(name, " <- ".join(chain))
    return chains


def imported_by(code: str, *argv: str) -> tuple[dict[str, str], str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TETHER_LOAD_PLUGINS", "TETHER_DISABLE_PLUGINS", "TETHER_TRACE_PLUGINS")
    }
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", PRELUDE + code, *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return import_chains(out.stderr), out.stdout


def check(chains: dict[str, str], forbidden: list[str]) -> None:
    found = [chains[name] for name in forbidden if name in chains]
    assert not found, "imported at start-up:\n  " + "\n  ".join(found)


def check_loaded(stdout: str) -> None:
    import json

    report = json.loads(stdout.strip().splitlines()[-1])
    failed = {name: reason for name, (status, reason) in report.items() if status == "failed"}
    assert not failed, failed
    assert EXPECTED <= set(report), sorted(EXPECTED - set(report))


def test_the_chain_of_an_import_is_named():
    chains, _ = imported_by("import json")
    assert chains["json.decoder"].startswith("json.decoder <- json")
    assert "json" in chains and "sys" not in chains  # built in before anything is timed


def test_import_tether_alone_stays_lean():
    chains, _ = imported_by("import tether")
    assert "tether.run" in chains
    check(chains, AFTER_IMPORT)


def test_loading_every_plugin_imports_only_what_registering_hooks_needs():
    chains, stdout = imported_by(LOAD)
    check_loaded(stdout)
    check(chains, AFTER_LOAD)


def test_a_run_opens_and_closes_without_tool_implementations(tmp_path: Path):
    chains, stdout = imported_by(RUN, str(tmp_path))
    check_loaded(stdout)
    assert "tether_vibe.roster" in chains  # vibe mode on: the roster is wired
    check(chains, AFTER_RUN + LIBRARIES)


@pytest.mark.parametrize("stage", ["import", "load", "run"])
def test_the_lists_name_real_modules(stage: str):
    """A misspelt entry would make its check pass blind: each one must be importable here."""
    import importlib.util

    names = {"import": AFTER_IMPORT, "load": AFTER_LOAD, "run": AFTER_RUN}[stage]
    missing = [n for n in names if importlib.util.find_spec(n) is None]
    assert not missing

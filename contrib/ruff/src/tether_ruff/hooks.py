"""The plugin's one hook: tether-lsp's ``tether_lsp_servers``."""

from __future__ import annotations

import tether
from tether.processes.launch import SAFE, Untrusted
from tether_lsp import ServerSpec

RUFF = ServerSpec(
    id="ruff",
    language="python",
    extensions={".py": "python", ".pyi": "python"},
    command=("ruff", "server"),
    probe=("ruff", "--version"),
    root_markers=("pyproject.toml", "ruff.toml", ".ruff.toml", "setup.py", "setup.cfg"),
    checker=("ruff", "check", "--output-format=concise"),
    # a linter, not a navigator: its diagnostics join the type checker's, and every query
    # (definition, hover, rename, ...) goes to the language's navigation server
    roles=frozenset({"diagnostics"}),
    priority=5,
    # ruff reads ruff.toml / [tool.ruff] from the workdir: settings, never a program to run;
    # the server keeps no cache and applies no fix of its own
    untrusted=SAFE,
    checker_untrusted=Untrusted(
        writes=(
            "cache-dir in [tool.ruff], ruff.toml or .ruff.toml names where `ruff check` creates "
            "its cache, anywhere; fix = true there makes it rewrite the files it checks"
        ),
        writes_closed_by="--no-cache --no-fix",
        args=("--no-cache", "--no-fix"),
    ),
)


@tether.hookimpl
def tether_lsp_servers() -> list[ServerSpec]:
    return [RUFF]

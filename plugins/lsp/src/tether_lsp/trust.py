"""What a language server loads from its workspace on its own, pinned outside it when the
harness does not trust the workdir (``run.trust_workdir``; see ``tether.availability``).

A server binary is resolved from trusted places only, but some servers then run code they find
in the workspace: basedpyright and pyright run ``.venv/bin/python`` of the project root when no
interpreter is configured; typescript-language-server loads ``node_modules/typescript``'s
tsserver before its own. Untrusted, they are given explicit paths instead.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import attrs

import tether
from tether_lsp.servers import ServerSpec

_RUNS_PROJECT_PYTHON = frozenset({"basedpyright", "pyright"})
_LOADS_WORKSPACE_TSSERVER = frozenset({"typescript-language-server"})


def trusted_python(workdir: Path) -> str:
    """The interpreter a Python server is told to use: tether's own when it lives in the
    workdir (the project environment that runs tether, trusted by construction), else
    ``python3`` on PATH (what the server would run if the project had no venv), else tether's."""
    own = Path(sys.executable)
    if workdir == own.parent or workdir in own.parents:
        return str(own)
    return shutil.which("python3") or shutil.which("python") or str(own)


def bundled_tsserver(binary: str) -> Path | None:
    """The tsserver.js a typescript-language-server binary would load as its own (its
    dependency, or the ``typescript`` package beside it in the same node_modules)."""
    here = Path(binary).resolve().parent
    for directory in (here, *here.parents):  # node's own lookup: <dir>/node_modules/<package>
        candidate = directory / "node_modules" / "typescript" / "lib" / "tsserver.js"
        if candidate.is_file():
            return candidate
    return None


def pin_workspace_loads(
    spec: ServerSpec, binary: str, run: tether.Run
) -> tuple[ServerSpec, dict[str, Any]]:
    """``spec`` and the settings to start it with so that it loads nothing from an untrusted
    workdir; unchanged (no settings) when the workdir is trusted."""
    if run.trust_workdir:
        return spec, {}
    if spec.id in _RUNS_PROJECT_PYTHON:
        return spec, {"python": {"pythonPath": trusted_python(run.workdir)}}
    if spec.id in _LOADS_WORKSPACE_TSSERVER:
        tsserver = bundled_tsserver(binary)
        if tsserver is None:
            raise tether.ToolError(
                f"{spec.id} is not usable: no tsserver.js installed beside {binary} (install "
                "`typescript` next to it); a workdir's own node_modules/typescript is loaded "
                "only when the harness trusts the workdir (--trust-workdir)"
            )
        options = dict(spec.initialization_options or {})
        options["tsserver"] = {**options.get("tsserver", {}), "path": str(tsserver)}
        return attrs.evolve(spec, initialization_options=options), {}
    return spec, {}

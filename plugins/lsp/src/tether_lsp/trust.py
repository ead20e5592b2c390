"""What a language server loads from its workspace on its own, pinned outside it when the
harness does not trust the workdir (``run.trust_workdir``; see ``tether.processes.availability``).

A server binary is resolved from trusted places only, but some servers then run code they find
in the workspace. Each spec declares it (``ServerSpec.untrusted``, a ``tether.processes.launch.Untrusted``):
its ``args`` and ``settings`` are given on an untrusted workdir, ``{python}`` in them replaced by
an interpreter outside it (basedpyright and pyright would run the root's ``.venv/bin/python``);
typescript-language-server, which loads ``node_modules/typescript``'s tsserver before its own,
is given the one installed beside it. A declaration nothing closes makes the server (or its
checker) unavailable there.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

import tether
from tether.processes.launch import Untrusted, declared
from tether_lsp.servers import ServerSpec

_LOADS_WORKSPACE_TSSERVER = frozenset({"typescript-language-server"})


def trusted_python(workdir: Path) -> str:
    """The interpreter a Python server is told to use: tether's own when it lives in the
    workdir (the project environment that runs tether, trusted by construction), else
    ``python3`` on PATH (what the server would run if the project had no venv), else tether's."""
    own = Path(sys.executable)
    if workdir == own.parent or workdir in own.parents:
        return str(own)
    return shutil.which("python3") or shutil.which("python") or str(own)


#: where a project keeps its own environment (uv, poetry in-project, python -m venv)
PROJECT_ENV_DIRS = (".venv", "venv")


def project_python(root: Path, workdir: Path) -> Path | None:
    """The interpreter of the environment a root's project uses, found by looking, never by
    running project code (no ``uv``/``poetry`` command): ``.venv`` or ``venv`` with a
    ``bin/python`` in the root or the nearest directory above it up to the workdir (click's
    ``examples/*`` have roots of their own and use the checkout's ``.venv``). None: none."""
    for directory in (root, *root.parents):
        for name in PROJECT_ENV_DIRS:
            python = directory / name / "bin" / "python"
            if (directory / name / "pyvenv.cfg").is_file() and python.exists():
                return python
        if directory == workdir or workdir not in directory.parents:
            return None
    return None


def project_settings(spec: ServerSpec, root: Path, run: tether.Run) -> dict[str, Any]:
    """On a trusted workdir, the settings that give ``spec`` its root's own environment (when
    the spec has a setting for it and the root has one); nothing otherwise — an untrusted
    workdir's interpreter is the one :func:`pin_workspace_loads` names."""
    if not run.trust_workdir or spec.project_python_settings is None:
        return {}
    python = project_python(root, run.workdir)
    if python is None:
        return {}
    return _replace_python(dict(spec.project_python_settings), str(python))


def _replace_python(value: Any, python: str, rundir: str | None = None) -> Any:
    if isinstance(value, str):
        value = value.replace("{python}", python)
        return value if rundir is None else value.replace("{rundir}", rundir)
    if isinstance(value, Mapping):
        return {key: _replace_python(item, python, rundir) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_replace_python(item, python, rundir) for item in value]
    return value


def bundled_tsserver(binary: str) -> Path | None:
    """The tsserver.js a typescript-language-server binary would load as its own (its
    dependency, or the ``typescript`` package beside it in the same node_modules)."""
    here = Path(binary).resolve().parent
    for directory in (here, *here.parents):  # node's own lookup: <dir>/node_modules/<package>
        candidate = directory / "node_modules" / "typescript" / "lib" / "tsserver.js"
        if candidate.is_file():
            return candidate
    return None


def with_python(value: Any, workdir: Path) -> Any:
    """``value`` (a string, or lists and mappings of them) with ``{python}`` replaced by
    :func:`trusted_python`."""
    return _replace_python(value, trusted_python(workdir))


def with_placeholders(value: Any, run: tether.Run) -> Any:
    """``value`` with ``{python}`` replaced by :func:`trusted_python` and ``{rundir}`` by the
    run's own directory (where a declaration pins a program's caches and build info)."""
    rundir = None
    if "{rundir}" in repr(value):
        rundir = str(run.process_owner.directory)
    return _replace_python(value, trusted_python(run.workdir), rundir)


def refusal(declaration: Untrusted | None, what: str, run: tether.Run) -> str | None:
    """Why ``what`` cannot run on this run's workdir (untrusted, and nothing closes what it
    would run from there), or None."""
    return None if run.trust_workdir else declared(declaration).refusal(what)


def untrusted_args(declaration: Untrusted | None, run: tether.Run) -> list[str]:
    """The arguments that close what ``declaration`` names, on an untrusted workdir."""
    if run.trust_workdir or declaration is None:
        return []
    args = list(declaration.args)
    if run.process_owner.confinement.kind == "none":
        args += declaration.unconfined_args
    return [str(arg) for arg in with_placeholders(args, run)]


def untrusted_env(declaration: Untrusted | None, run: tether.Run) -> dict[str, str]:
    """The environment that closes what ``declaration`` names, on an untrusted workdir."""
    if run.trust_workdir or declaration is None:
        return {}
    return {key: str(with_placeholders(value, run)) for key, value in declaration.env.items()}


def pin_workspace_loads(
    spec: ServerSpec, binary: str, run: tether.Run
) -> tuple[ServerSpec, dict[str, Any]]:
    """``spec`` and the settings to start it with so that it loads nothing from an untrusted
    workdir; unchanged (no settings) when the workdir is trusted."""
    if run.trust_workdir:
        return spec, {}
    settings = with_placeholders(dict(declared(spec.untrusted).settings), run)
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
        return attrs.evolve(spec, initialization_options=options), settings
    return spec, settings

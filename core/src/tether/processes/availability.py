"""Availability at call time: a project root found by its marker files, a command that resolves
(PATH and tether's own environment; a trusted workdir's local bin dirs first) and a probe that
shows it actually runs.

The trust rule: PATH and the directory of the interpreter tether runs in are the harness's, so
they are trusted — even when that environment sits inside the workdir (a checkout's own
``.venv`` that runs tether is trusted by construction). A workdir's ``.venv/bin``, ``venv/bin``
and ``node_modules/.bin`` can be written by any write-tier call, so a read-tier tool may run
from them only when the harness trusts the workdir (``--trust-workdir`` /
``open_run(trust_workdir=True)``; ``run.trust_workdir``). An exec-tier tool (a debug adapter)
passes ``trust_local=True``: its own approval gate covers what it runs."""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from tether.text import truncate
from tether.workdir.paths import is_within

if TYPE_CHECKING:
    from tether.run import Run

LOCAL_BIN_DIRS = (".venv/bin", "venv/bin", "node_modules/.bin")
PROBE_TIMEOUT_S = 15.0
# "error: …", "fatal: …", "ModuleNotFoundError: …", "thread 'main' panicked"; not "recursion_error"
_SAYS_WHY = re.compile(r"\b(error|ERROR|Error|fatal|FATAL|Fatal|panicked)\b|[a-z]Error\b")


def find_root(start: Path, markers: Sequence[str], workdir: Path) -> Path | None:
    """The nearest directory from ``start`` (a file's directory, or a directory) up to and
    including ``workdir`` that holds one of ``markers``; never a directory above ``workdir``.
    Both paths absolute and resolved, as ``run.workdir`` and ``run.confine`` give them."""
    here = start if start.is_dir() else start.parent
    while is_within(here, workdir):
        # os.path, not pathlib: every lsp query looks for its file's root (markers x levels)
        base = os.fspath(here)
        if any(os.path.exists(os.path.join(base, marker)) for marker in markers):
            return here
        if here == workdir:
            break
        here = here.parent
    return None


def find_local_command(
    name: str, roots: Iterable[Path], local_dirs: Sequence[str] = LOCAL_BIN_DIRS
) -> str | None:
    """``name`` in a project-local bin directory: each root's ``local_dirs`` in order."""
    for root in dict.fromkeys(roots):
        for sub in local_dirs:
            candidate = root / sub / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def resolve_command(
    name: str,
    roots: Iterable[Path],
    local_dirs: Sequence[str] = LOCAL_BIN_DIRS,
    *,
    trust_local: bool = False,
) -> str | None:
    """The executable ``name`` would run as here, or None.

    A name with a path separator is used as given if it is executable. Otherwise, with
    ``trust_local``, the project's own copy wins (each root's ``local_dirs``, in order); then
    PATH, then the directory of the interpreter tether runs in (a plugin extra such as
    ``tether-lsp[python]`` installs basedpyright there without it being on PATH)."""
    if os.sep in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    return (
        (find_local_command(name, roots, local_dirs) if trust_local else None)
        or shutil.which(name)
        or shutil.which(name, path=str(Path(sys.executable).parent))
    )


def not_found(
    name: str, local_dirs: Sequence[str] = LOCAL_BIN_DIRS, *, trust_local: bool = False
) -> str:
    """Why :func:`resolve_command` found nothing, naming every place it looked."""
    here = f"PATH or the interpreter's directory ({Path(sys.executable).parent})"
    if trust_local:
        return f"`{name}` not found in {', '.join(local_dirs)}, {here}"
    return (
        f"`{name}` not found on {here} (the workdir's {', '.join(local_dirs)} are used only "
        "when the harness trusts it: --trust-workdir)"
    )


class ProbeResult(NamedTuple):
    """``ok``; ``detail`` is the command that ran, or why it cannot run here."""

    ok: bool
    detail: str


class CommandProbe:
    """Runs a command once per run (a child of the run, bounded in time) to see whether it
    works — a binary can resolve yet fail: a rustup shim without its toolchain, a missing
    shared library. Results are cached per argv until :meth:`clear`."""

    def __init__(self, run: Run, timeout_s: float = PROBE_TIMEOUT_S) -> None:
        self._run = run
        self.timeout_s = timeout_s
        self._cache: dict[tuple[str, ...], ProbeResult] = {}

    async def __call__(self, argv: Sequence[str]) -> ProbeResult:
        key = tuple(argv)
        if key not in self._cache:
            self._cache[key] = await self._probe(key)
        return self._cache[key]

    def clear(self) -> None:
        """Forget every result (after the user fixed an install, say)."""
        self._cache.clear()

    async def _probe(self, argv: tuple[str, ...]) -> ProbeResult:
        shown = " ".join([Path(argv[0]).name, *argv[1:]])
        try:
            done = await self._run.run_command(argv, timeout_s=self.timeout_s, max_output_bytes=0)
        except OSError as exc:
            return ProbeResult(False, f"`{shown}` cannot start: {exc.strerror or exc}")
        if done.timed_out:
            return ProbeResult(False, f"`{shown}` did not finish within {self.timeout_s:g} s")
        if done.ok:
            return ProbeResult(True, argv[0])
        said = informative_lines(done.stderr)
        why = truncate(" | ".join(said), 300) if said else "(no stderr)"
        return ProbeResult(False, f"`{shown}` exited with code {done.returncode}: {why}")


def informative_lines(stderr: str) -> list[str]:
    """The lines of a failing command's stderr that say why: the first and last that read as
    an error (a rustup shim's "error: Unknown binary …" comes first, before a backtrace; a Python
    traceback's exception comes last), else the last non-blank line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if _SAYS_WHY.search(line)]
    if errors:
        return list(dict.fromkeys((errors[0], errors[-1])))
    return lines[-1:]

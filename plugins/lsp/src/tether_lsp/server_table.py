"""The language servers a run knows (contributed by plugins, ordered by the configuration)
and which of them can run here: roots, binaries, refusals on an untrusted workdir."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tether
from tether.contributions import collect
from tether.processes.availability import (
    CommandProbe,
    ProbeResult,
    find_root,
    not_found,
    resolve_command,
)
from tether.text import show_path
from tether.workdir.paths import is_within, relative
from tether_lsp.config import LspConfig
from tether_lsp.servers import ServerSpec
from tether_lsp.trust import refusal

SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", "build", "dist"}


class NoServer(tether.ToolError):
    """No usable language server for a file (none handles it, no root, no runnable binary)."""


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


class ServerTable:
    """The run's language servers: which handle a file, in which order, with which settings,
    and whether each can run for a root here (nothing is started)."""

    def __init__(self, run: tether.Run, config: LspConfig) -> None:
        self.run = run
        self.config = config
        self.workdir: Path = run.workdir
        self._specs: dict[str, ServerSpec] | None = None
        self._probe = CommandProbe(run)

    @property
    def specs(self) -> dict[str, ServerSpec]:
        """Every server contributed through ``tether_lsp_servers``, by the core's collector: a
        malformed spec (a wrong field, a wrong shape) or a second one with a taken id is dropped
        and its plugin reported (``tether plugins``); every other server keeps working."""
        if self._specs is None:
            found = collect(
                self.run.pm,
                "tether_lsp_servers",
                ServerSpec,
                key=lambda spec: spec.id,
                label="language server",
            )
            self._specs = {sid: contribution.item for sid, contribution in found.items()}
        return self._specs

    def candidates(self, language: str) -> list[ServerSpec]:
        """Servers for ``language`` in preference order ([lsp] servers, else priority)."""
        pool = [spec for spec in self.specs.values() if spec.language == language]
        preferred = self.config.servers.get(language)
        if preferred:
            by_id = {spec.id: spec for spec in pool}
            ordered = [by_id[sid] for sid in preferred if sid in by_id]
            return ordered + [spec for spec in pool if spec.id not in preferred]
        return sorted(pool, key=lambda spec: spec.priority)

    def language_of(self, path: Path) -> str | None:
        for spec in self.specs.values():
            if spec.language_id(path.suffix) is not None:
                return spec.language
        return None

    def settings_for(self, spec: ServerSpec) -> dict[str, Any]:
        return deep_merge(spec.settings, self.config.settings.get(spec.id, {}))

    # -- availability ----------------------------------------------------------------------

    def find_root(self, spec: ServerSpec, start: Path) -> Path | None:
        """Nearest directory from ``start`` up to the workdir holding one of the markers; the
        workdir for a server that needs no project (no markers)."""
        if not spec.root_markers:
            return self.workdir
        return find_root(start, spec.root_markers, self.workdir)

    def resolve_binary(self, name: str, root: Path | None) -> str | None:
        """``name`` as it runs for ``root``: PATH, tether's environment — and first, only in a
        trusted workdir, the root's and the workdir's local bins (``tether.processes.availability``)."""
        return resolve_command(
            name,
            [base for base in (root, self.workdir) if base is not None],
            trust_local=self.run.trust_workdir,
        )

    async def probe(self, spec: ServerSpec, root: Path | None) -> ProbeResult:
        """Does the server's binary resolve AND run here? Cached per resolved binary. A server
        that cannot be made safe on an untrusted workdir is not even probed."""
        if (why := self.refusal(spec)) is not None:
            return ProbeResult(False, why)
        binary = self.resolve_binary(spec.command[0], root)
        if binary is None:
            return ProbeResult(False, self.not_found(spec))
        if not spec.probe:
            return ProbeResult(True, binary)
        probe_binary = self.resolve_binary(spec.probe[0], root)
        if probe_binary is None:
            return ProbeResult(False, f"`{spec.probe[0]}` (its version check) not found")
        probed = await self._probe((probe_binary, *spec.probe[1:]))
        return ProbeResult(True, binary) if probed.ok else probed

    def refusal(self, spec: ServerSpec) -> str | None:
        """Why ``spec`` is unavailable on this (untrusted) workdir, or None."""
        return refusal(spec.untrusted, spec.id, self.run)

    def no_server(self, path: Path) -> NoServer:
        known = sorted({ext for spec in self.specs.values() for ext in spec.extensions})
        return NoServer(
            f"no language server handles {path.suffix or 'extensionless'} files "
            f"({self.relative(path)}); known extensions: {' '.join(known)}"
        )

    def unusable(self, language: str, path: Path, reasons: list[str]) -> NoServer:
        return NoServer(
            f"no usable {language} language server for {self.relative(path)}:\n  "
            + "\n  ".join(reasons)
        )

    def not_found(self, spec: ServerSpec) -> str:
        """Why ``spec``'s binary did not resolve, and how to get it when the spec says."""
        why = not_found(spec.command[0], trust_local=self.run.trust_workdir)
        return f"{why}; install: {spec.install}" if spec.install else why

    def roots_in_workdir(self, spec: ServerSpec, limit: int = 5) -> list[Path]:
        """Directories (workdir and two levels down) holding one of ``spec``'s markers."""
        if not spec.root_markers:
            return [self.workdir]
        found: list[Path] = []
        frontier = [self.workdir]
        for _depth in range(3):
            following: list[Path] = []
            for directory in frontier:
                if any((directory / marker).exists() for marker in spec.root_markers):
                    found.append(directory)
                    if len(found) >= limit:
                        return found
                try:
                    children = sorted(directory.iterdir())
                except OSError:
                    continue
                following += [
                    child
                    for child in children
                    if child.is_dir()
                    and child.name not in SKIP_DIRS
                    and not child.name.startswith(".")
                ]
            frontier = following
        return found

    def relative(self, path: Path) -> str:
        # the paths the run confined are resolved already: no second resolve per answer
        if (
            path.is_absolute()
            and path != self.workdir
            and is_within(path, self.workdir)
            and ".." not in path.parts
        ):
            return show_path(path.relative_to(self.workdir))
        return relative(self.workdir, path)

    def quiet_without_server(self, path: Path) -> bool:
        """No server for ``path``'s language is installed and none of them asks to be missed
        (data and shell files): a write of it says nothing about diagnostics."""
        language = self.language_of(path)
        if language is None:
            return True
        specs = self.candidates(language)
        if any(spec.announce_missing for spec in specs):
            return False
        return all(self.resolve_binary(spec.command[0], self.workdir) is None for spec in specs)

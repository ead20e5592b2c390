"""The run's language servers: which one answers a file, availability, start and restart."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import attrs

import tether
from tether.availability import CommandProbe, ProbeResult, find_root, not_found, resolve_command
from tether.paths import relative
from tether_lsp.client import LspClient
from tether_lsp.config import LspConfig
from tether_lsp.ledger import DiagnosticLedger
from tether_lsp.servers import ServerSpec
from tether_lsp.trust import pin_workspace_loads

SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", "build", "dist"}
_CRASH_WINDOW_S = 60.0


class NoServer(tether.ToolError):
    """No usable language server for a file (none handles it, no root, no runnable binary)."""


@attrs.frozen
class Choice:
    """The server that answers for a file, with its root."""

    spec: ServerSpec
    root: Path


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


class LspSupervisor:
    """One server process per (server, root), started lazily, restarted after a crash."""

    def __init__(self, run: Any) -> None:
        self.run = run
        self.config: LspConfig = run.config("lsp", LspConfig)
        if self.config.write_tools is not None:
            raise tether.ConfigError(
                "lsp.write_tools: removed in 0.2 — every call whose result says it wrote files "
                "(ToolResult.written: the core's writers record it, a host tool declares it with "
                "ToolSpec(writes=...)) gets the new diagnostics; delete the key"
            )
        self.workdir: Path = run.workdir
        self._specs: dict[str, ServerSpec] | None = None
        self._clients: dict[tuple[str, Path], LspClient] = {}
        self._crashes: dict[tuple[str, Path], list[float]] = {}
        self._probe = CommandProbe(run)
        self._locks: dict[tuple[str, Path], anyio.Lock] = {}
        self.ledger = DiagnosticLedger()
        _ = self.specs  # a bad or duplicate contribution fails the run's opening, not a call

    # -- specs -----------------------------------------------------------------------------

    @property
    def specs(self) -> dict[str, ServerSpec]:
        if self._specs is None:
            found: dict[str, tuple[ServerSpec, str]] = {}
            hook = self.run.pm.hook.tether_lsp_servers
            for impl in hook.get_hookimpls():
                for spec in impl.function() or ():
                    if not isinstance(spec, ServerSpec):
                        raise TypeError(
                            f"plugin {impl.plugin_name!r} returned {spec!r} from "
                            "tether_lsp_servers(); expected tether_lsp.ServerSpec"
                        )
                    if spec.id in found:
                        raise ValueError(
                            f"language server {spec.id!r} is contributed by both "
                            f"{found[spec.id][1]!r} and {impl.plugin_name!r}"
                        )
                    found[spec.id] = (spec, impl.plugin_name)
            self._specs = {sid: spec for sid, (spec, _) in found.items()}
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
        """Nearest directory from ``start`` up to the workdir holding one of the markers."""
        return find_root(start, spec.root_markers, self.workdir)

    def resolve_binary(self, name: str, root: Path | None) -> str | None:
        """``name`` as it runs for ``root``: PATH, tether's environment — and first, only in a
        trusted workdir, the root's and the workdir's local bins (``tether.availability``)."""
        return resolve_command(
            name,
            [base for base in (root, self.workdir) if base is not None],
            trust_local=self.run.trust_workdir,
        )

    async def probe(self, spec: ServerSpec, root: Path | None) -> ProbeResult:
        """Does the server's binary resolve AND run here? Cached per resolved binary."""
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

    def _no_server(self, path: Path) -> NoServer:
        known = sorted({ext for spec in self.specs.values() for ext in spec.extensions})
        return NoServer(
            f"no language server handles {path.suffix or 'extensionless'} files "
            f"({self.relative(path)}); known extensions: {' '.join(known)}"
        )

    def _unusable(self, language: str, path: Path, reasons: list[str]) -> NoServer:
        return NoServer(
            f"no usable {language} language server for {self.relative(path)}:\n  "
            + "\n  ".join(reasons)
        )

    def not_found(self, spec: ServerSpec) -> str:
        """Why ``spec``'s binary did not resolve, and how to get it when the spec says."""
        why = not_found(spec.command[0], trust_local=self.run.trust_workdir)
        return f"{why}; install: {spec.install}" if spec.install else why

    def _locate(self, spec: ServerSpec, path: Path) -> tuple[Path | None, str | None]:
        """(root, why not) — a root marker must exist and the binary must resolve."""
        root = self.find_root(spec, path)
        if root is None:
            markers = ", ".join(spec.root_markers)
            return None, f"no root marker ({markers}) between {self.relative(path)} and the workdir"
        if self.resolve_binary(spec.command[0], root) is None:
            return None, f"not usable — {self.not_found(spec)}"
        return root, None

    async def choose(self, path: Path) -> Choice:
        """The first server for ``path``'s language with a root and a binary (not started)."""
        language = self.language_of(path)
        if language is None:
            raise self._no_server(path)
        reasons: list[str] = []
        for spec in self.candidates(language):
            root, why = self._locate(spec, path)
            if root is not None:
                return Choice(spec, root)
            reasons.append(f"{spec.id}: {why}")
        raise self._unusable(language, path, reasons)

    async def client_for(self, path: Path) -> LspClient:
        """The running server for ``path``, started if needed. A candidate whose binary is
        found but cannot start (a broken shim) is skipped for the next one, and said why;
        starting it is the check that it runs, so the first answer costs no extra probe."""
        language = self.language_of(path)
        if language is None:
            raise self._no_server(path)
        reasons: list[str] = []
        for spec in self.candidates(language):
            root, why = self._locate(spec, path)
            if root is None:
                reasons.append(f"{spec.id}: {why}")
                continue
            key = (spec.id, root)
            if key in self._clients or key in self._crashes:
                return await self.client(spec, root)  # it ran here before: report its trouble
            try:
                return await self.client(spec, root)
            except tether.ToolError as exc:
                reasons.append(f"{spec.id}: not usable — {exc}")
        raise self._unusable(language, path, reasons)

    def relative(self, path: Path) -> str:
        return relative(self.workdir, path)

    # -- clients ---------------------------------------------------------------------------

    async def client(self, spec: ServerSpec, root: Path) -> LspClient:
        key = (spec.id, root)
        lock = self._locks.setdefault(key, anyio.Lock())
        async with lock:
            current = self._clients.get(key)
            if current is not None and current.check_running():
                return current
            if current is not None:
                crashes = self._crashes.setdefault(key, [])
                now = time.monotonic()
                crashes[:] = [t for t in crashes if now - t < _CRASH_WINDOW_S]
                if not current.crash_counted:  # one crash, however many calls meet it
                    current.crash_counted = True
                    crashes.append(now)
                if len(crashes) > self.config.max_restarts:
                    raise tether.ToolError(
                        f"{spec.id} for {self.relative(root) or '.'} crashed {len(crashes)} times "
                        f"within {_CRASH_WINDOW_S:g} s; not restarting it again (`lsp reload` "
                        f"tries once more). Last exit: {current.exit_reason}. "
                        f"stderr: {current.stderr_tail().strip()[-800:] or '(empty)'}"
                    )
                del self._clients[key]
            binary = self.resolve_binary(spec.command[0], root)
            if binary is None:
                raise tether.ToolError(f"{spec.id} is not usable: `{spec.command[0]}` not found")
            argv = [binary, *spec.command[1:]]
            # an untrusted workdir: what the server would load from it is pinned outside it
            pinned, pinned_settings = pin_workspace_loads(spec, binary, self.run)
            client = LspClient(
                self.run,
                pinned,
                root,
                argv,
                deep_merge(pinned_settings, self.settings_for(spec)),
                self.config.request_timeout_s,
            )
            self._clients[key] = client
            try:
                await client.start(self.config.start_timeout_s)
            except OSError as exc:
                del self._clients[key]
                raise tether.ToolError(f"{spec.id} failed to start: {exc}") from None
            except tether.ToolError as exc:
                await client.close()
                del self._clients[key]
                raise tether.ToolError(f"{spec.id} failed to start: {exc}") from None
            return client

    @property
    def clients(self) -> list[LspClient]:
        return list(self._clients.values())

    async def reload(self, path: Path | None) -> str:
        """Restart the server(s) for ``path``'s root (or every running one)."""
        if path is not None:
            choice = await self.choose(path)
            keys = [(choice.spec.id, choice.root)]
        else:
            keys = list(self._clients)
        if not keys:
            return "no language server is running; nothing to restart"
        self._probe.clear()
        lines = []
        for key in keys:
            self._crashes.pop(key, None)
            old = self._clients.pop(key, None)
            if old is not None:
                await old.close()
            spec = self.specs[key[0]]
            started = time.monotonic()
            await self.client(spec, key[1])
            took = time.monotonic() - started
            lines.append(f"restarted {spec.id} for {self.relative(key[1]) or '.'} ({took:.2f} s)")
        return "\n".join(lines)

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            clients, self._clients = list(self._clients.values()), {}
            async with anyio.create_task_group() as group:
                for client in clients:
                    group.start_soon(client.close)

    # -- status ----------------------------------------------------------------------------

    def roots_in_workdir(self, spec: ServerSpec, limit: int = 5) -> list[Path]:
        """Directories (workdir and two levels down) holding one of ``spec``'s markers."""
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

    async def status(self) -> str:
        lines = []
        running = [client for client in self._clients.values()]
        if running:
            lines.append("Running:")
            for client in running:
                where = self.relative(client.root) or "."
                if not client.alive:
                    state = f"exited: {client.exit_reason}"
                elif client.is_ready():
                    state = "ready"
                else:
                    state = f"still indexing: {client.busy_with()}"
                lines.append(
                    f"  {client.spec.id} for {where} (pid {client.pid}, up "
                    f"{time.monotonic() - client.started_at:.0f} s, {len(client.documents)} "
                    f"open files, {client.encoding} positions): {state}"
                )
        else:
            lines.append("Running: none (servers start on first use)")
        lines.append("Known servers:")
        specs = sorted(self.specs.values(), key=lambda spec: (spec.language, spec.priority))
        results: dict[str, str] = {}

        async def assess(spec: ServerSpec) -> None:
            roots = self.roots_in_workdir(spec)
            probe = await self.probe(spec, roots[0] if roots else None)
            binary = f"usable ({probe.detail})" if probe.ok else f"not usable: {probe.detail}"
            if roots:
                shown = ", ".join(self.relative(root) or "." for root in roots)
                marker = f"roots: {shown}"
            else:
                marker = f"no root marker ({', '.join(spec.root_markers)}) in the workdir"
            verdict = "can answer" if probe.ok and roots else "cannot answer here"
            results[spec.id] = f"  {spec.id} [{spec.language}] {verdict} — {binary}; {marker}"

        async with anyio.create_task_group() as group:
            for spec in specs:
                group.start_soon(assess, spec)
        lines += [results[spec.id] for spec in specs]
        for language in sorted({spec.language for spec in specs}):
            order = ", ".join(spec.id for spec in self.candidates(language))
            lines.append(f"Order for {language}: {order}")
        return "\n".join(lines)

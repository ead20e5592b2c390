"""The run's language servers: which one answers a file, availability, start and restart."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import attrs

import tether
from tether.contributions import collect
from tether.processes.availability import (
    CommandProbe,
    ProbeResult,
    find_root,
    not_found,
    resolve_command,
)
from tether.resources import forget_entry
from tether.text import show_path
from tether.workdir.paths import relative
from tether_lsp.checkpoints import Checkpoints
from tether_lsp.config import LspConfig
from tether_lsp.ledger import DiagnosticLedger
from tether_lsp.servers import ServerSpec
from tether_lsp.trust import pin_workspace_loads, project_settings, refusal, untrusted_args

if TYPE_CHECKING:
    # the client (the session, its JSON-RPC connection) is imported when the first server starts
    from tether_lsp.client import LspClient

SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", "build", "dist"}
#: how long `lsp status` waits in all for the servers it starts to answer `initialize`
STATUS_BUDGET_S = 10.0
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

    def __init__(self, run: tether.Run) -> None:
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
        self._closed = False
        self.ledger = DiagnosticLedger()
        #: marked by `lsp checkpoint`, compared with by `lsp diagnostics` `since`
        self.checkpoints = Checkpoints()
        #: servers whose fallback root was said already (see :meth:`root_note`)
        self._root_said: set[tuple[str, Path]] = set()
        #: lines the next result carries (a hung server restarted on the way)
        self.notes: list[str] = []
        #: told "<server>: <what it is busy with>" at each change of a server's progress (the
        #: calls in flight forward it to their transport, see :meth:`forwarding_progress`)
        self.progress_listeners: list[Callable[[str], None]] = []
        _ = self.specs  # collected when wired, so a dropped contribution is reported at once

    # -- specs -----------------------------------------------------------------------------

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
        """(root, why not) — a root marker must exist and the binary must resolve (a server
        running for that root has resolved it: no PATH search on every query)."""
        if (why := self.refusal(spec)) is not None:
            return None, why
        # loose files are common: without a marker the workdir is the root (and answers say so)
        root = self.find_root(spec, path) or self.workdir
        running = self._clients.get((spec.id, root))
        if running is not None and running.alive:
            return root, None
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
            if "navigation" not in spec.roles:
                continue
            root, why = self._locate(spec, path)
            if root is not None:
                return Choice(spec, root)
            reasons.append(f"{spec.id}: {why}")
        raise self._unusable(language, path, reasons)

    async def client_for(
        self, path: Path, *, offers: Callable[[LspClient], bool] | None = None, action: str = ""
    ) -> LspClient:
        """The running navigation server for ``path``, started if needed. A candidate whose
        binary is found but cannot start (a broken shim) is skipped for the next one, and said
        why; starting it is the check that it runs, so the first answer costs no extra probe.
        With ``offers``, a server that does not offer ``action`` passes it to the next one."""
        language = self.language_of(path)
        if language is None:
            raise self._no_server(path)
        reasons: list[str] = []
        lacking: list[str] = []
        # an action the first server lacks falls back to the next one — among the servers
        # `[lsp] servers` names for the language, when it names any
        named = self.config.servers.get(language)
        for spec in self.candidates(language):
            if "navigation" not in spec.roles:
                continue
            if lacking and named and spec.id not in named:
                break
            root, why = self._locate(spec, path)
            if root is None:
                reasons.append(f"{spec.id}: {why}")
                continue
            key = (spec.id, root)
            if key in self._clients or key in self._crashes:
                client = await self.client(spec, root)  # it ran here before: report its trouble
            else:
                try:
                    client = await self.client(spec, root)
                except tether.ToolError as exc:
                    reasons.append(f"{spec.id}: not usable — {exc}")
                    continue
            if offers is None or offers(client):
                return client
            lacking.append(spec.id)
        if lacking:
            raise tether.ToolError(
                f'action "{action}" is not supported by {" or ".join(lacking)} '
                f"(the server{'s' if len(lacking) > 1 else ''} answering {self.relative(path)})"
                + ("".join(f"\n  {reason}" for reason in reasons) if reasons else "")
            )
        raise self._unusable(language, path, reasons)

    async def diagnostic_clients(self, path: Path) -> tuple[list[LspClient], list[str]]:
        """Every server whose diagnostics ``path`` gets: the primary navigation server and
        each usable companion (diagnostics-only) server; and why others could not answer."""
        language = self.language_of(path)
        if language is None:
            raise self._no_server(path)
        clients: list[LspClient] = []
        failures: list[str] = []
        try:
            primary = await self.client_for(path)
            if "diagnostics" in primary.spec.roles:
                clients.append(primary)
        except tether.ToolError as exc:
            failures.append(str(exc))
        for spec in self.candidates(language):
            if not spec.companion:
                continue
            root, _ = self._locate(spec, path)
            if root is None:
                continue  # a companion that is not installed or not rooted here is not missed
            try:
                clients.append(await self.client(spec, root))
            except tether.ToolError as exc:
                failures.append(f"{spec.id}: {exc}")
        if not clients:
            raise NoServer("\n".join(failures) or f"no usable {language} language server")
        return clients, failures

    def root_note(self, client: LspClient) -> str | None:
        """Said in the first answer of a server whose root is the workdir only because no root
        marker was found (and in ``status``); None otherwise."""
        spec, root = client.spec, client.root
        if not spec.root_markers or root != self.workdir or (spec.id, root) in self._root_said:
            return None
        if any((root / marker).exists() for marker in spec.root_markers):
            return None
        self._root_said.add((spec.id, root))
        return (
            f"no root marker ({', '.join(spec.root_markers)}) in the workdir: {spec.id} runs "
            "with the workdir as its root"
        )

    def relative(self, path: Path) -> str:
        # the paths the run confined are resolved already: no second resolve per answer
        if path.is_absolute() and self.workdir in path.parents and ".." not in path.parts:
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

    # -- clients ---------------------------------------------------------------------------

    async def client(self, spec: ServerSpec, root: Path) -> LspClient:
        key = (spec.id, root)
        current = self._clients.get(key)
        restart_after = self.config.restart_after_timeouts
        if current is not None and not current.hang.due(restart_after) and current.check_running():
            return current  # the common case needs no lock (an uncontended one still yields)
        lock = self._locks.setdefault(key, anyio.Lock())
        async with lock:
            self._refuse_when_closed()
            current = self._clients.get(key)
            if current is not None and current.check_running():
                if not current.hang.due(self.config.restart_after_timeouts):
                    return current
                if await current.answers():
                    return current  # it dropped those requests but still reads: not hung
                # hung, not busy: a restart is the way back (a busy server is never restarted)
                self.notes.append(
                    f"(restarted {spec.id} for {self.relative(root) or '.'}: it was "
                    f"{current.hang.describe()} and did not answer a probe either)"
                )
                await current.close()
                self._forget(key, current)
                current = None
            if current is not None:
                self._count_crash(key, current)
                self._forget(key, current)
            client = self._new_client(spec, root)
            self._clients[key] = client
            try:
                await client.start(self.config.start_timeout_s)
            except OSError as exc:
                self._forget(key, client)
                raise tether.ToolError(f"{spec.id} failed to start: {exc}") from None
            except tether.ToolError as exc:
                await client.close()
                self._forget(key, client)
                self._refuse_when_closed()  # closed meanwhile: say that, not a failed start
                raise tether.ToolError(f"{spec.id} failed to start: {exc}") from None
            if self._closed:  # the run closed while it started: aclose() did not see it
                await client.close()
                self._forget(key, client)
                self._refuse_when_closed()
            from tether_lsp.coverage import warm_soon

            warm_soon(self)  # the coverage index, built while the server indexes too
            return client

    def _count_crash(self, key: tuple[str, Path], crashed: LspClient) -> None:
        """Count ``crashed``'s exit among its server's recent crashes; a
        :class:`tether.ToolError` when there were too many to restart it again."""
        spec_id, root = key
        crashes = self._crashes.setdefault(key, [])
        now = time.monotonic()
        crashes[:] = [t for t in crashes if now - t < _CRASH_WINDOW_S]
        if not crashed.crash_counted:  # one crash, however many calls meet it
            crashed.crash_counted = True
            crashes.append(now)
        if len(crashes) > self.config.max_restarts:
            raise tether.ToolError(
                f"{spec_id} for {self.relative(root) or '.'} crashed {len(crashes)} times "
                f"within {_CRASH_WINDOW_S:g} s; not restarting it again (`lsp reload` "
                f"tries once more). Last exit: {crashed.exit_reason}. "
                f"stderr: {crashed.stderr_tail().strip()[-800:] or '(empty)'}"
            )

    def _new_client(self, spec: ServerSpec, root: Path) -> LspClient:
        """A session (not started yet) with ``spec``'s server for ``root``: its binary, its
        arguments and settings, pinned outside an untrusted workdir."""
        binary = self.resolve_binary(spec.command[0], root)
        if binary is None:
            raise tether.ToolError(f"{spec.id} is not usable: `{spec.command[0]}` not found")
        if (why := self.refusal(spec)) is not None:
            raise tether.ToolError(why)
        argv = [binary, *spec.command[1:], *untrusted_args(spec.untrusted, self.run)]
        # an untrusted workdir: what the server would load from it is pinned outside it
        pinned, pinned_settings = pin_workspace_loads(spec, binary, self.run)
        # a trusted workdir: the root's own environment answers for its libraries
        pinned_settings = deep_merge(pinned_settings, project_settings(spec, root, self.run))
        from tether_lsp.client import LspClient

        return LspClient(
            self.run,
            pinned,
            root,
            argv,
            deep_merge(pinned_settings, self.settings_for(spec)),
            self.config.request_timeout_s,
            self.config.start_timeout_s,
            on_progress=self._progress_changed,
        )

    def _forget(self, key: tuple[str, Path], client: LspClient) -> None:
        """Drop ``client`` from the running ones, if it is still the one there: a reload or the
        close may have replaced it or emptied the table while it was starting or closing."""
        forget_entry(self._clients, key, client)
        client.close_watch()  # a crashed one is not closed: its watch ends here

    def _refuse_when_closed(self) -> None:
        if self._closed:
            raise tether.ToolError("the run is closing; no language server can start")

    def _progress_changed(self, client: LspClient) -> None:
        text = f"{client.spec.id}: {client.busy_with() or 'done'}"
        for listener in list(self.progress_listeners):
            listener(text)

    @contextmanager
    def forwarding_progress(self, listener: Callable[[str], None]) -> Iterator[None]:
        """While the block runs, ``listener`` hears each server's progress: at once for the
        servers busy now, then at every change."""
        for client in self._clients.values():
            if client.alive and client.progress:
                listener(f"{client.spec.id}: {client.busy_with()}")
        self.progress_listeners.append(listener)
        try:
            yield
        finally:
            self.progress_listeners.remove(listener)

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
            # under the key's lock: never pull out a client another call is starting
            async with self._locks.setdefault(key, anyio.Lock()):
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
        self._closed = True
        # the coverage index's watch of the workdir: there is one only if a search or a server
        # start imported the module (a run that never asked pays nothing, not even the import)
        coverage = sys.modules.get("tether_lsp.coverage")
        if coverage is not None:
            coverage.close_index(self)
        with anyio.CancelScope(shield=True):
            clients, self._clients = list(self._clients.values()), {}
            async with anyio.create_task_group() as group:
                for client in clients:
                    group.start_soon(client.close)

    async def warm(self) -> None:
        """Start, ahead of the first call, the preferred navigation server of each language
        whose root markers are in the workdir (a served run: ``tether serve``); a server that
        cannot start is left for the first call to report."""
        for language in sorted({spec.language for spec in self.specs.values()}):
            for spec in self.candidates(language):
                if "navigation" not in spec.roles or not spec.root_markers:
                    continue
                if self.refusal(spec) is not None:
                    continue
                roots = self.roots_in_workdir(spec, limit=2)
                if not roots or self.resolve_binary(spec.command[0], roots[0]) is None:
                    continue
                for root in roots:
                    with contextlib.suppress(tether.ToolError):
                        await self.client(spec, root)
                break

    # -- status ----------------------------------------------------------------------------

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

    async def _initialized(
        self, spec: ServerSpec, root: Path, binary: str, deadline: float
    ) -> tuple[bool, str]:
        """Whether ``spec`` answered ``initialize`` for ``root`` before ``deadline``; the started
        server stays for the queries (one process, probed once per run)."""
        done = anyio.Event()
        outcome: list[tuple[bool, str]] = []

        async def start() -> None:
            try:
                await self.client(spec, root)
                outcome.append((True, f"usable (answered initialize; {binary})"))
            except tether.ToolError as exc:
                outcome.append((False, f"not usable: {exc}"))
            finally:
                done.set()

        self.run.task_group.start_soon(start)
        with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
            await done.wait()
        if outcome:
            return outcome[0]
        return False, (
            f"starting: it has not answered initialize within {STATUS_BUDGET_S:g} s (a query "
            "waits for it)"
        )

    async def status(self) -> str:
        lines: list[str] = []
        lines.append("Known servers:")
        specs = sorted(self.specs.values(), key=lambda spec: (spec.language, spec.priority))
        results: dict[str, str] = {}

        roots_of = {spec.id: self.roots_in_workdir(spec) for spec in specs}
        probes: dict[str, ProbeResult] = {}

        async def probe(spec: ServerSpec) -> None:
            roots = roots_of[spec.id]
            probes[spec.id] = await self.probe(spec, roots[0] if roots else None)

        async with anyio.create_task_group() as group:
            for spec in specs:
                group.start_soon(probe, spec)
        defaults = self._default_servers(specs, probes, roots_of)
        # the budget is for the starts: the version checks above are cached for the run
        deadline = anyio.current_time() + STATUS_BUDGET_S

        async def assess(spec: ServerSpec) -> None:
            results[spec.id] = await self._assessment(
                spec, deadline, probes[spec.id], roots_of[spec.id], defaults
            )

        async with anyio.create_task_group() as group:
            for spec in specs:
                group.start_soon(assess, spec)
        # after the assessment, so the servers it started show as running
        running_lines = self._running_lines()
        lines[:0] = running_lines
        lines += [results[spec.id] for spec in specs]
        for language in sorted({spec.language for spec in specs}):
            order = ", ".join(spec.id for spec in self.candidates(language))
            lines.append(f"Order for {language}: {order}")
        lines.append(f"Write confinement: {self._confinement()}")
        # the workdir's own configuration that was ignored: the [lsp] table's keys, and a file
        # that could not be read at all (it concerns every family)
        ignored = [
            note
            for note in self.run.config_notes
            if ": lsp." in note or "ignored the whole file" in note
        ]
        if ignored:
            lines.append("Workdir configuration ignored (the harness's applies):")
            lines += [f"  {note.removeprefix('workdir configuration: ')}" for note in ignored]
        return "\n".join(lines)

    def _default_servers(
        self,
        specs: list[ServerSpec],
        probes: dict[str, ProbeResult],
        roots_of: dict[str, list[Path]],
    ) -> dict[str, str]:
        """The servers a query would start here, by language: the first usable navigation
        server in preference order and every usable companion (a linter beside it). Each
        language maps to its first choice's id, to name it beside the others."""
        first: dict[str, str] = {}
        for language in sorted({spec.language for spec in specs}):
            for spec in self.candidates(language):
                usable = probes.get(spec.id) is not None and probes[spec.id].ok
                if usable and roots_of.get(spec.id) and "navigation" in spec.roles:
                    first[language] = spec.id
                    break
        return first

    async def _assessment(
        self,
        spec: ServerSpec,
        deadline: float,
        probe: ProbeResult,
        roots: list[Path],
        defaults: dict[str, str],
    ) -> str:
        """``spec``'s line of :meth:`status`: can it answer here (a server a query would use
        is started, to know; another one only probed), its roots, and why its checker is
        refused."""
        ok = probe.ok
        binary = f"usable ({probe.detail})" if ok else f"not usable: {probe.detail}"
        chosen = defaults.get(spec.language)
        if ok and roots and not spec.companion and chosen != spec.id:
            # installed but not what a query here uses: started only on request
            shown = ", ".join(self.relative(root) or "." for root in roots)
            return (
                f"  {spec.id} [{spec.language}] installed, not started — {probe.detail}; "
                f"roots: {shown}; {chosen} answers for {spec.language} first (put "
                f"{spec.id} first in `[lsp] servers.{spec.language}` to use it)"
            )
        if ok and roots:
            # "usable" means it answered `initialize`: start it, in the run's task group so a
            # start slower than the budget goes on, and the first query gets this process
            ok, binary = await self._initialized(spec, roots[0], probe.detail, deadline)
        if roots:
            shown = ", ".join(self.relative(root) or "." for root in roots)
            marker = f"roots: {shown}"
        else:
            marker = (
                f"no root marker ({', '.join(spec.root_markers)}) in the workdir: the "
                "workdir is its root"
            )
        verdict = "can answer" if ok else "cannot answer here"
        result = f"  {spec.id} [{spec.language}] {verdict} — {binary}; {marker}"
        shown = " ".join(spec.checker)
        checker_why = refusal(spec.checker_untrusted, f"its checker `{shown}`", self.run)
        if spec.checker and checker_why is not None and self.refusal(spec) is None:
            result += f"; {checker_why}"
        return result

    def _confinement(self) -> str:
        """What keeps servers and checkers from writing outside the run's directory."""
        if self.run.trust_workdir:
            return (
                "none: the harness trusts the workdir, so servers and checkers write where its "
                "configuration says"
            )
        return self.run.process_owner.confinement.describe()

    def _running_lines(self) -> list[str]:
        """The running servers' lines of :meth:`status`: each one's state."""
        running_lines: list[str] = []
        running = [client for client in self._clients.values()]
        if running:
            running_lines.append("Running:")
            for client in running:
                where = self.relative(client.root) or "."
                if client.pid is None and client.exit_reason is None:
                    state = "starting"
                elif not client.alive:
                    state = f"exited: {client.exit_reason}"
                elif client.hang.unresponsive:
                    state = (
                        f"{client.hang.describe()}; the next query after "
                        f"{self.config.restart_after_timeouts} timeouts restarts it"
                    )
                elif client.is_ready():
                    state = "ready"
                else:
                    state = f"still indexing: {client.busy_with()}"
                pid = "not started yet" if client.pid is None else f"pid {client.pid}"
                running_lines.append(
                    f"  {client.spec.id} for {where} ({pid}, up "
                    f"{time.monotonic() - client.started_at:.0f} s, {len(client.documents)} "
                    f"open files, {client.encoding} positions): {state}"
                )
        else:
            running_lines.append("Running: none (servers start on first use)")
        return running_lines

"""The run's language servers: which one answers a file, start, restart and close — the servers
that can run here are in :mod:`tether_lsp.server_table`, `lsp status` in :mod:`tether_lsp.status`."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import attrs

import tether
from tether.resources import forget_entry
from tether_lsp.checkpoints import Checkpoints
from tether_lsp.config import LspConfig
from tether_lsp.ledger import DiagnosticLedger
from tether_lsp.server_table import SKIP_DIRS, NoServer, ServerTable, deep_merge
from tether_lsp.servers import ServerSpec
from tether_lsp.trust import pin_workspace_loads, project_settings, untrusted_args

if TYPE_CHECKING:
    # the client (the session, its JSON-RPC connection) is imported when the first server starts
    from tether_lsp.client import LspClient

__all__ = ["SKIP_DIRS", "Choice", "LspSupervisor", "NoServer", "deep_merge"]

_CRASH_WINDOW_S = 60.0


@attrs.frozen
class Choice:
    """The server that answers for a file, with its root."""

    spec: ServerSpec
    root: Path


class LspSupervisor(ServerTable):
    """One server process per (server, root), started lazily, restarted after a crash; which
    server answers a file (:class:`ServerTable` knows which can run here)."""

    def __init__(self, run: tether.Run) -> None:
        config: LspConfig = run.config("lsp", LspConfig)
        if config.write_tools is not None:
            raise tether.ConfigError(
                "lsp.write_tools: removed in 0.2 — every call whose result says it wrote files "
                "(ToolResult.written: the core's writers record it, a host tool declares it with "
                "ToolSpec(writes=...)) gets the new diagnostics; delete the key"
            )
        super().__init__(run, config)
        self._clients: dict[tuple[str, Path], LspClient] = {}
        self._crashes: dict[tuple[str, Path], list[float]] = {}
        self._locks: dict[tuple[str, Path], anyio.Lock] = {}
        self._closed = False
        self.ledger = DiagnosticLedger()
        #: marked by `lsp checkpoint`, compared with by `lsp diagnostics` `since`
        self.checkpoints = Checkpoints()
        #: servers whose root note was decided (said, or not needed: see :meth:`root_note`)
        self._root_said: set[tuple[str, Path]] = set()
        #: lines the next result carries (a hung server restarted on the way)
        self.notes: list[str] = []
        #: told "<server>: <what it is busy with>" at each change of a server's progress (the
        #: calls in flight forward it to their transport, see :meth:`forwarding_progress`)
        self.progress_listeners: list[Callable[[str], None]] = []
        _ = self.specs  # collected when wired, so a dropped contribution is reported at once

    # -- which server answers --------------------------------------------------------------

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
            raise self.no_server(path)
        reasons: list[str] = []
        for spec in self.candidates(language):
            if "navigation" not in spec.roles:
                continue
            root, why = self._locate(spec, path)
            if root is not None:
                return Choice(spec, root)
            reasons.append(f"{spec.id}: {why}")
        raise self.unusable(language, path, reasons)

    async def client_for(
        self, path: Path, *, offers: Callable[[LspClient], bool] | None = None, action: str = ""
    ) -> LspClient:
        """The running navigation server for ``path``, started if needed. A candidate whose
        binary is found but cannot start (a broken shim) is skipped for the next one, and said
        why; starting it is the check that it runs, so the first answer costs no extra probe.
        With ``offers``, a server that does not offer ``action`` passes it to the next one."""
        client = await self._answering(path, offers, action, start=True)
        assert client is not None
        return client

    async def running_client_for(
        self, path: Path, *, offers: Callable[[LspClient], bool] | None = None, action: str = ""
    ) -> LspClient | None:
        """The server :meth:`client_for` would give when it runs already, else None (nothing
        started, no error said)."""
        return await self._answering(path, offers, action, start=False)

    async def _answering(
        self,
        path: Path,
        offers: Callable[[LspClient], bool] | None,
        action: str,
        *,
        start: bool,
    ) -> LspClient | None:
        language = self.language_of(path)
        if language is None:
            if not start:
                return None
            raise self.no_server(path)
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
            if not start:
                running = self._running(key)
                if running is None:
                    return None
                client = running
            elif key in self._clients or key in self._crashes:
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
        if not start:
            return None
        if lacking:
            raise tether.ToolError(
                f'action "{action}" is not supported by {" or ".join(lacking)} '
                f"(the server{'s' if len(lacking) > 1 else ''} answering {self.relative(path)})"
                + ("".join(f"\n  {reason}" for reason in reasons) if reasons else "")
            )
        raise self.unusable(language, path, reasons)

    async def diagnostic_clients(self, path: Path) -> tuple[list[LspClient], list[str]]:
        """Every server whose diagnostics ``path`` gets: the primary navigation server and
        each usable companion (diagnostics-only) server; and why others could not answer."""
        language = self.language_of(path)
        if language is None:
            raise self.no_server(path)
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
        # decided once per server: a marker found is the root it started with, not a fallback
        self._root_said.add((spec.id, root))
        if any((root / marker).exists() for marker in spec.root_markers):
            return None
        return (
            f"no root marker ({', '.join(spec.root_markers)}) in the workdir: {spec.id} runs "
            "with the workdir as its root"
        )

    # -- clients ---------------------------------------------------------------------------

    async def client(self, spec: ServerSpec, root: Path) -> LspClient:
        key = (spec.id, root)
        current = self._running(key)
        if current is not None:
            return current  # the common case needs no lock (an uncontended one still yields)
        lock = self._locks.setdefault(key, anyio.Lock())
        async with lock:
            self._refuse_when_closed()
            current = self._clients.get(key)
            if current is not None and not current.started:
                # a start abandoned halfway (the call that made it was cancelled): started anew
                await current.close()
                self._forget(key, current)
                current = None
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

    def _running(self, key: tuple[str, Path]) -> LspClient | None:
        """The client of ``key`` when it runs, its start is over and it is not due a restart
        (no lock, no I/O). One still starting is not handed out here: the caller waits on the
        key's lock for the start, never syncs documents into a server not yet initialized."""
        current = self._clients.get(key)
        restart_after = self.config.restart_after_timeouts
        if (
            current is not None
            and current.started
            and not current.hang.due(restart_after)
            and current.check_running()
        ):
            return current
        return None

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

    async def status(self) -> str:
        """The text of `lsp status` (:func:`tether_lsp.status.render_status`)."""
        from tether_lsp.status import render_status

        return await render_status(self)

"""`lsp status`: the servers running, each known server's verdict here (a server a query
would use is started, to know), the preference order and the write confinement."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

import tether
from tether.processes.availability import ProbeResult
from tether_lsp.servers import ServerSpec
from tether_lsp.trust import refusal

if TYPE_CHECKING:
    from tether_lsp.supervisor import LspSupervisor

#: how long `lsp status` waits in all for the servers it starts to answer `initialize`
STATUS_BUDGET_S = 10.0


async def _initialized(
    supervisor: LspSupervisor, spec: ServerSpec, root: Path, binary: str, deadline: float
) -> tuple[bool, str]:
    """Whether ``spec`` answered ``initialize`` for ``root`` before ``deadline``; the started
    server stays for the queries (one process, probed once per run)."""
    done = anyio.Event()
    outcome: list[tuple[bool, str]] = []

    async def start() -> None:
        try:
            await supervisor.client(spec, root)
            outcome.append((True, f"usable (answered initialize; {binary})"))
        except tether.ToolError as exc:
            outcome.append((False, f"not usable: {exc}"))
        finally:
            done.set()

    supervisor.run.task_group.start_soon(start)
    with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
        await done.wait()
    if outcome:
        return outcome[0]
    return False, (
        f"starting: it has not answered initialize within {STATUS_BUDGET_S:g} s (a query "
        "waits for it)"
    )


async def render_status(supervisor: LspSupervisor) -> str:
    """The text of `lsp status`."""
    lines: list[str] = []
    lines.append("Known servers:")
    specs = sorted(supervisor.specs.values(), key=lambda spec: (spec.language, spec.priority))
    results: dict[str, str] = {}

    roots_of = {spec.id: supervisor.roots_in_workdir(spec) for spec in specs}
    probes: dict[str, ProbeResult] = {}

    async def probe(spec: ServerSpec) -> None:
        roots = roots_of[spec.id]
        probes[spec.id] = await supervisor.probe(spec, roots[0] if roots else None)

    async with anyio.create_task_group() as group:
        for spec in specs:
            group.start_soon(probe, spec)
    defaults = _default_servers(supervisor, specs, probes, roots_of)
    # the budget is for the starts: the version checks above are cached for the run
    deadline = anyio.current_time() + STATUS_BUDGET_S

    async def assess(spec: ServerSpec) -> None:
        results[spec.id] = await _assessment(
            supervisor, spec, deadline, probes[spec.id], roots_of[spec.id], defaults
        )

    async with anyio.create_task_group() as group:
        for spec in specs:
            group.start_soon(assess, spec)
    # after the assessment, so the servers it started show as running
    running_lines = _running_lines(supervisor)
    lines[:0] = running_lines
    lines += [results[spec.id] for spec in specs]
    for language in sorted({spec.language for spec in specs}):
        order = ", ".join(spec.id for spec in supervisor.candidates(language))
        lines.append(f"Order for {language}: {order}")
    lines.append(f"Write confinement: {_confinement(supervisor)}")
    # the workdir's own configuration that was ignored: the [lsp] table's keys, and a file
    # that could not be read at all (it concerns every family)
    ignored = [
        note
        for note in supervisor.run.config_notes
        if ": lsp." in note or "ignored the whole file" in note
    ]
    if ignored:
        lines.append("Workdir configuration ignored (the harness's applies):")
        lines += [f"  {note.removeprefix('workdir configuration: ')}" for note in ignored]
    return "\n".join(lines)


def _default_servers(
    supervisor: LspSupervisor,
    specs: list[ServerSpec],
    probes: dict[str, ProbeResult],
    roots_of: dict[str, list[Path]],
) -> dict[str, str]:
    """The servers a query would start here, by language: the first usable navigation
    server in preference order and every usable companion (a linter beside it). Each
    language maps to its first choice's id, to name it beside the others."""
    first: dict[str, str] = {}
    for language in sorted({spec.language for spec in specs}):
        for spec in supervisor.candidates(language):
            usable = probes.get(spec.id) is not None and probes[spec.id].ok
            if usable and roots_of.get(spec.id) and "navigation" in spec.roles:
                first[language] = spec.id
                break
    return first


async def _assessment(
    supervisor: LspSupervisor,
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
        shown = ", ".join(supervisor.relative(root) or "." for root in roots)
        return (
            f"  {spec.id} [{spec.language}] installed, not started — {probe.detail}; "
            f"roots: {shown}; {chosen} answers for {spec.language} first (put "
            f"{spec.id} first in `[lsp] servers.{spec.language}` to use it)"
        )
    if ok and roots:
        # "usable" means it answered `initialize`: start it, in the run's task group so a
        # start slower than the budget goes on, and the first query gets this process
        ok, binary = await _initialized(supervisor, spec, roots[0], probe.detail, deadline)
    if roots:
        shown = ", ".join(supervisor.relative(root) or "." for root in roots)
        marker = f"roots: {shown}"
    else:
        marker = (
            f"no root marker ({', '.join(spec.root_markers)}) in the workdir: the "
            "workdir is its root"
        )
    verdict = "can answer" if ok else "cannot answer here"
    result = f"  {spec.id} [{spec.language}] {verdict} — {binary}; {marker}"
    shown = " ".join(spec.checker)
    checker_why = refusal(spec.checker_untrusted, f"its checker `{shown}`", supervisor.run)
    if spec.checker and checker_why is not None and supervisor.refusal(spec) is None:
        result += f"; {checker_why}"
    return result


def _confinement(supervisor: LspSupervisor) -> str:
    """What keeps servers and checkers from writing outside the run's directory."""
    if supervisor.run.trust_workdir:
        return (
            "none: the harness trusts the workdir, so servers and checkers write where its "
            "configuration says"
        )
    return supervisor.run.process_owner.confinement.describe()


def _running_lines(supervisor: LspSupervisor) -> list[str]:
    """The running servers' lines of :meth:`status`: each one's state."""
    running_lines: list[str] = []
    running = [client for client in supervisor.clients]
    if running:
        running_lines.append("Running:")
        for client in running:
            where = supervisor.relative(client.root) or "."
            if client.pid is None and client.exit_reason is None:
                state = "starting"
            elif not client.alive:
                state = f"exited: {client.exit_reason}"
            elif client.hang.unresponsive:
                state = (
                    f"{client.hang.describe()}; the next query after "
                    f"{supervisor.config.restart_after_timeouts} timeouts restarts it"
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

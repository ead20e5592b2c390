"""Diagnostics on write: after a host write tool, the new diagnostics of the written files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

import tether
from tether.text import cap
from tether_lsp.client import LspClient
from tether_lsp.ledger import DiagnosticLedger
from tether_lsp.queries import Answers, format_merged, merge_diagnostics
from tether_lsp.supervisor import LspSupervisor

REPORTED_SEVERITIES = (1, 2)  # errors and warnings; hints and infos are noise after a write
CAP = 30


async def new_diagnostics_note(supervisor: LspSupervisor, result: tether.ToolResult) -> str | None:
    """What to add to a successful call's result: the new diagnostics of every file it wrote
    (``result.written``, absolute paths inside the workdir), or None."""
    notes: list[str] = []
    for path in result.written:
        if not path.is_file() or supervisor.quiet_without_server(path):
            continue  # no server handles this kind of file: nothing to check, nothing to say
        try:
            note = await diagnose(supervisor, supervisor.ledger, path)
        except tether.ToolError as exc:
            # a server should answer but cannot (missing, broken, no root marker): silence
            # would read as "no new problems"
            note = f"(diagnostics unavailable: {exc})"
        if note:
            notes.append(note)
    return "\n" + "\n\n".join(notes) if notes else None


def _reported(diagnostic: dict[str, Any]) -> bool:
    return (diagnostic.get("severity") or 1) in REPORTED_SEVERITIES


async def diagnose(supervisor: LspSupervisor, ledger: DiagnosticLedger, path: Path) -> str:
    """New diagnostics of the written file, from every server that gives them (merged)."""
    clients, notes = await supervisor.diagnostic_clients(path)
    before_write = [
        d
        for client in clients
        for d in getattr(client.published.get(path.as_uri()), "items", [])
        if _reported(d)
    ]
    if before_write:
        # diagnostics the agent could already have seen are not news after its write
        ledger.seed(path, before_write)
    rel = supervisor.relative(path)
    timeout = supervisor.config.diagnostics_timeout_s
    results: dict[int, tuple[list[dict[str, Any]] | None, str] | str] = {}

    async def ask(index: int, client: LspClient) -> None:
        try:
            await client.refresh_documents()
            doc, _ = await client.sync_document(path)
            await client.save(doc)
            results[index] = (await client.current_diagnostics(doc, timeout), doc.text)
        except tether.ToolError as exc:
            results[index] = f"{client.spec.id}: {exc}"

    # every server at once: one slow server does not make the others wait behind it
    async with anyio.create_task_group() as group:
        for index, client in enumerate(clients):
            group.start_soon(ask, index, client)
    answers: Answers = []
    text = ""
    for index, client in enumerate(clients):
        got = results[index]
        if isinstance(got, str):
            notes.append(got)
            continue
        items, text = got
        if items is None:
            # not "nothing new": the answer is on its way and the next question gets it
            notes.append(
                f"{client.spec.id} is still computing the diagnostics of {rel} after "
                f"{timeout:g} s; `lsp diagnostics` for {rel} gives them once it is done"
            )
            continue
        answers.append((client, [d for d in items if _reported(d)]))
    tail = "\n\n".join(f"({note})" for note in notes)
    if not answers:
        return tail
    merged = merge_diagnostics(answers)
    fresh = ledger.new_since_last(path, [d for _, items in merged for d in items])
    fresh_ids = {id(d) for d in fresh}
    news = [(client, [d for d in items if id(d) in fresh_ids]) for client, items in merged]
    if not fresh:
        return tail
    rows = format_merged(news, rel, text)
    shown, note = cap(rows, CAP, "diagnostics shown")
    names = ", ".join(client.spec.id for client, items in news if items)
    head = f"New diagnostics from {names} ({len(fresh)}"
    head += f", {note})" if note else ")"
    return head + ":\n" + "\n".join(shown) + ("\n\n" + tail if tail else "")

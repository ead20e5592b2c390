"""Diagnostics on write: after a host write tool, the new diagnostics of the written files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tether
from tether.text import cap
from tether_lsp.ledger import DiagnosticLedger
from tether_lsp.render import format_diagnostics
from tether_lsp.supervisor import LspSupervisor

REPORTED_SEVERITIES = (1, 2)  # errors and warnings; hints and infos are noise after a write
CAP = 30


def written_paths(call: Any, result: Any) -> list[str]:
    """The files the call wrote, as the core reports them on every result."""
    return [str(path) for path in result.written]


async def add_new_diagnostics(supervisor: LspSupervisor, call: Any, inner: Any) -> Any:
    result = await tether.resolve(inner)
    if result.is_error:
        return result
    notes: list[str] = []
    paths: dict[Path, None] = {}
    for raw_path in written_paths(call, result):
        try:
            paths[supervisor.run.confine(raw_path, field="path")] = None
        except tether.ArgumentError:
            continue
    for path in paths:
        if not path.is_file() or supervisor.language_of(path) is None:
            continue  # no server handles this kind of file: nothing to check, nothing to say
        try:
            note = await diagnose(supervisor, supervisor.ledger, path)
        except tether.ToolError as exc:
            # a server should answer but cannot (missing, broken, no root marker): silence
            # would read as "no new problems"
            note = f"(diagnostics unavailable: {exc})"
        if note:
            notes.append(note)
    if not notes:
        return result
    return result.with_text_appended("\n" + "\n\n".join(notes))


def _reported(diagnostic: dict[str, Any]) -> bool:
    return (diagnostic.get("severity") or 1) in REPORTED_SEVERITIES


async def diagnose(supervisor: LspSupervisor, ledger: DiagnosticLedger, path: Path) -> str:
    client = await supervisor.client_for(path)
    before_write = client.published.get(path.as_uri())
    if before_write is not None:
        # diagnostics the agent could already have seen are not news after its write
        ledger.seed(path, [d for d in before_write.items if _reported(d)])
    await client.refresh_documents()
    before = client.publish_seq
    doc, sent = await client.sync_document(path)
    await client.save(doc)
    rel = supervisor.relative(path)
    timeout = supervisor.config.diagnostics_timeout_s
    items = await client.current_diagnostics(doc, before if sent else None, timeout)
    if items is None:
        return (
            f"({client.spec.id} sent no diagnostics for {rel} within "
            f"{supervisor.config.diagnostics_timeout_s:g} s)"
        )
    relevant = [d for d in items if _reported(d)]
    fresh = ledger.new_since_last(path, relevant)
    if not fresh:
        return ""
    rows = format_diagnostics(fresh, rel, doc.text, client.encoding)
    shown, note = cap(rows, CAP, "diagnostics shown")
    head = f"New diagnostics from {client.spec.id} ({len(fresh)}"
    head += f", {note})" if note else ")"
    return head + ":\n" + "\n".join(shown)

"""Diagnostics on write: after a host write tool, the new diagnostics of the written files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tether
from tether.text import cap
from tether_lsp.ledger import DiagnosticLedger
from tether_lsp.render import format_diagnostics
from tether_lsp.supervisor import LspSupervisor

_PATH_KEYS = ("path", "file", "file_path", "filename")
_META_KEYS = ("paths", "files", "changed", "written")
REPORTED_SEVERITIES = (1, 2)  # errors and warnings; hints and infos are noise after a write
CAP = 30


def written_paths(call: Any, result: Any) -> list[str]:
    """Paths a write tool touched: its path argument, or the list its result names."""
    found: list[str] = []
    for key in _META_KEYS:
        value = (result.meta or {}).get(key)
        if isinstance(value, list | tuple):
            found += [item for item in value if isinstance(item, str)]
    raw = call.raw_args or {}
    for key in _PATH_KEYS:
        if isinstance(raw.get(key), str):
            found.append(raw[key])
    return list(dict.fromkeys(found))


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
    doc, _ = await client.sync_document(path)
    await client.save(doc)
    rel = supervisor.relative(path)
    timeout = supervisor.config.diagnostics_timeout_s
    items = await client.current_diagnostics(doc, timeout)
    if items is None:
        # not "nothing new": the answer is on its way and the next question gets it
        return (
            f"({client.spec.id} is still computing the diagnostics of {rel} after {timeout:g} s;"
            f" `lsp diagnostics` for {rel} gives them once it is done)"
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

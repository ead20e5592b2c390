"""Diagnostics a staged change would introduce (``tether_preview_diagnostics``): its files'
current and proposed texts go to the running servers as unsaved versions, the proposed ones
all sent before any is diagnosed, and each is compared with its current text's diagnostics (the
rule of diagnostics on write). Then the servers get the disk's text back; nothing is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import attrs
from lsprotocol import types

import tether
from tether.text import cap
from tether_lsp.after_write import (
    CAP,
    diagnose_change,
    diagnosing_clients,
    is_reported,
    time_left,
)
from tether_lsp.client import LspClient
from tether_lsp.ledger import key_counts, new_against, renamed_identifiers, with_renames
from tether_lsp.queries import Answers, format_merged, merge_diagnostics
from tether_lsp.supervisor import LspSupervisor

MAX_FILES = 20  # files of one change a preview sends to the servers; the rest are named


@attrs.define
class _Answer:
    """One server's word on one staged file."""

    baseline: list[types.Diagnostic] | None = None
    items: list[types.Diagnostic] | None = None
    failure: str | None = None


async def preview_note(
    supervisor: LspSupervisor, change: tether.StagedChange
) -> tether.ResultNote | None:
    """What the servers say ``change`` would introduce, per file; None when no server
    handles any of its files."""
    handled = [s for s in change.files if not supervisor.quiet_without_server(s.path)]
    if not handled:
        return None
    # each file costs two diagnostics rounds per server: a big edit previews its first files
    files = {staged.path: staged for staged in handled[:MAX_FILES]}
    clients_of, notes, by_client = await diagnosing_clients(supervisor, files)
    answers: dict[tuple[int, Path], _Answer] = {}
    config = supervisor.config
    timeout = config.diagnostics_timeout_s

    async with anyio.create_task_group() as group:
        for client, paths in by_client:
            group.start_soon(_ask, supervisor, files, client, paths, answers)
    out: list[str] = []
    meta: dict[str, list[dict[str, Any]]] = {}
    renames = renamed_identifiers(
        (
            staged.current.decode("utf-8", errors="replace"),
            staged.proposed.decode("utf-8", errors="replace"),
        )
        for staged in files.values()
        if staged.current is not None
    )
    for path, staged in files.items():
        got = [(client, answers[(id(client), path)]) for client in clients_of.get(path, [])]
        text, found = _describe(supervisor, path, staged, got, notes[path], timeout, renames)
        out.append(text)
        meta[supervisor.relative(path)] = found
    if len(handled) > MAX_FILES:
        left = [supervisor.relative(s.path) for s in handled[MAX_FILES:]]
        out.append(
            f"- not previewed: {len(left)} more files (the preview checks the first "
            f"{MAX_FILES}): {', '.join(left[:5])}{' …' if len(left) > 5 else ''}"
        )
    origin = f" by {change.origin}" if change.origin else ""
    head = f"Diagnostics preview of the change staged{origin} (nothing written):"
    return tether.ResultNote(text=head + "\n" + "\n".join(out), meta={"would_introduce": meta})


async def _ask(
    supervisor: LspSupervisor,
    files: dict[Path, tether.StagedFile],
    client: LspClient,
    paths: list[Path],
    answers: dict[tuple[int, Path], _Answer],
) -> None:
    """``client``'s word on the staged ``paths``, into ``answers``: the diagnostics of each
    file's current text, then, the whole change sent unsaved, those of its proposed text."""
    config = supervisor.config
    timeout = config.diagnostics_timeout_s
    for path in paths:
        answers[(id(client), path)] = _Answer()
    try:
        await client.refresh_documents()  # the rest of the project as the disk has it
        deadline = anyio.current_time() + max(config.ready_timeout_s, timeout)
        await client.wait_ready(time_left(deadline), index=False)
        async with client.unsaved() as unsaved:
            # the baseline: each file's current text (a file the change creates has none)
            for path in paths:
                current = files[path].current
                if current is None:
                    answers[(id(client), path)].baseline = []
                    continue
                doc = await unsaved.send(path, current.decode("utf-8", errors="replace"))
                got = await client.current_diagnostics(doc, time_left(deadline))
                if got is not None:
                    answers[(id(client), path)].baseline = [d for d in got if is_reported(d)]
            # the whole change, then its diagnostics
            docs = [
                await unsaved.send(path, files[path].proposed.decode("utf-8", "replace"))
                for path in paths
            ]
            deadline = anyio.current_time() + timeout
            got_all = await diagnose_change(client, docs, deadline, unsaved.resend)
            for path, items in zip(paths, got_all, strict=True):
                answers[(id(client), path)].items = items
    except tether.ToolError as exc:
        for path in paths:
            answers[(id(client), path)].failure = f"{client.spec.id}: {exc}"


def _computed(
    got: list[tuple[LspClient, _Answer]], rel: str, timeout: float, notes: list[str]
) -> tuple[Answers, Answers, bool]:
    """Each server's diagnostics of the staged text and of the current one (its baseline), and
    whether a baseline is missing; what a server did not compute goes into ``notes``."""
    current: Answers = []
    baselines: Answers = []
    baseline_missing = False
    for client, answer in got:
        if answer.failure is not None:
            notes.append(answer.failure)
            continue
        if answer.items is None:
            notes.append(
                f"{client.spec.id} did not finish diagnosing the staged text of {rel} within "
                f"{timeout:g} s: not computed (the change may still introduce errors)"
            )
            continue
        current.append((client, [d for d in answer.items if is_reported(d)]))
        if answer.baseline is None:
            baseline_missing = True
        else:
            baselines.append((client, answer.baseline))
    return current, baselines, baseline_missing


def _describe(
    supervisor: LspSupervisor,
    path: Path,
    staged: tether.StagedFile,
    got: list[tuple[LspClient, _Answer]],
    notes: list[str],
    timeout: float,
    renames: list[tuple[str, str]],
) -> tuple[str, list[dict[str, Any]]]:
    """One file's lines, and the diagnostics it would introduce (for ``meta``)."""
    rel = supervisor.relative(path)
    notes = list(notes)
    current, baselines, baseline_missing = _computed(got, rel, timeout, notes)
    tail = "".join(f"\n  ({note})" for note in notes)
    if not current:
        return f"- {rel}: no diagnostics computed{tail}", []
    merged = merge_diagnostics(current)
    flat = [d for _, items in merged for d in items]
    if baseline_missing:
        known = key_counts([])
    else:
        known = key_counts([d for _, items in merge_diagnostics(baselines) for d in items])
    # a rename's messages name the new name: known, when they were known with the old
    known = with_renames(known, renames)
    fresh = new_against(known, flat)
    if not fresh:
        names = ", ".join(client.spec.id for client, _ in current)
        return f"- {rel}: nothing new from {names}{tail}", []
    fresh_ids = {id(d) for d in fresh}
    news = [(client, [d for d in items if id(d) in fresh_ids]) for client, items in merged]
    names = ", ".join(client.spec.id for client, items in news if items)
    text = staged.proposed.decode("utf-8", errors="replace")
    rows = format_merged(news, rel, text)
    shown, note = cap(rows, CAP, "diagnostics shown")
    count = f"{len(fresh)}, {note}" if note else f"{len(fresh)}"
    if baseline_missing:
        head = (
            f"- {rel}: diagnostics of the staged text from {names} ({count}; baseline unknown: "
            "the current text was not diagnosed in time, so some may be there already):"
        )
    else:
        head = f"- {rel}: would introduce, from {names} ({count}):"
    found = _meta_of(fresh)
    return head + "\n" + "\n".join(f"  {row}" for row in shown) + tail, found


def _meta_of(fresh: list[types.Diagnostic]) -> list[dict[str, Any]]:
    """The diagnostics a file would introduce, as the note's ``meta`` gives them."""
    return [
        {
            "line": d.range.start.line + 1,
            "severity": int(d.severity or 1),
            "code": d.code,
            "source": d.source,
            "message": d.message,
        }
        for d in fresh
    ]

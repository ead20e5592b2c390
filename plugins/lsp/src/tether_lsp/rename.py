"""``lsp_rename``: one WorkspaceEdit applied to every file at once, or to none."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

from lsprotocol import types

import tether
from tether.workdir.paths import confine
from tether.workdir.reading import UnreadableFile, read_bytes
from tether.workdir.writing import FileChange, StaleFiles, apply_changes_async
from tether_lsp import coverage, crosscheck
from tether_lsp.documents import uri_to_path
from tether_lsp.positions import apply_text_edits
from tether_lsp.queries import Session

Edits = dict[str, list[types.TextEdit | types.AnnotatedTextEdit]]


def edits_by_file(edit: types.WorkspaceEdit) -> Edits:
    """``changes`` or ``documentChanges`` -> uri -> TextEdits; file operations are refused."""
    grouped: Edits = {}
    for change in edit.document_changes or []:
        if not isinstance(change, types.TextDocumentEdit):
            uri = change.old_uri if isinstance(change, types.RenameFile) else change.uri
            raise tether.ToolError(
                f"the server's rename also wants to {change.kind} a file "
                f"({uri}); tether applies text edits only, nothing was written"
            )
        edits: list[types.TextEdit | types.AnnotatedTextEdit] = []
        for text_edit in change.edits:
            if isinstance(text_edit, types.SnippetTextEdit):
                raise tether.ToolError(
                    f"the server's rename sent a snippet edit for {change.text_document.uri}; "
                    "tether applies text edits only, nothing was written"
                )
            edits.append(text_edit)
        grouped.setdefault(change.text_document.uri, []).extend(edits)
    for uri, plain in (edit.changes or {}).items():
        grouped.setdefault(uri, []).extend(plain or [])
    return grouped


async def rename(
    session: Session,
    line: int,
    symbol: str,
    new_name: str,
    *,
    force: bool = False,
    preview: bool = False,
) -> str:
    client, supervisor = session.client, session.supervisor
    old_name, grouped, (changes, synced, counts) = await _proposal(session, line, symbol, new_name)
    # part of the proposal: where else the old name occurs, and whether the server could see it
    spans = await crosscheck.covered_spans(
        client, [(uri, e.range) for uri, edits in grouped.items() for e in edits]
    )
    unseen = await crosscheck.uncovered(client, coverage.index_of(supervisor), old_name, spans)
    missed = unseen.found
    outside = [item for item in missed if item.outside is not None]
    if preview:
        return await _preview(session, old_name, new_name, changes, counts, missed, force)
    if outside and not force:
        _refuse_outside(session, old_name, outside, changes, counts)
    await _write(session, changes, synced)
    text = f"renamed `{old_name}` to `{new_name}`: " + _summary(session, changes, counts)
    notes = crosscheck.describe(
        missed, old_name, client.spec.id, supervisor.workdir, suffix="; not renamed"
    )
    unsearched = coverage.unsearched_line(unseen.unsearched, supervisor.workdir)
    notes += [f"{unsearched} for `{old_name}`"] if unsearched else []
    return text + ("\n\n" + "\n".join(notes) if notes else "")


async def _proposal(
    session: Session, line: int, symbol: str, new_name: str
) -> tuple[str, Edits, tuple[list[FileChange], dict[Path, Path], dict[Path, int]]]:
    """The server's rename, computed and read against the files; nothing is written."""
    client = session.client
    if not new_name.strip():
        raise tether.ArgumentError("new_name", "a non-empty name")
    session.require("textDocument/rename", "renameProvider", "rename")
    pos, params = session.position(line, symbol)
    old_name = pos.line_text[pos.start : pos.end]
    old_name = await _prepared_name(session, line, params, old_name)
    asked = types.RenameParams(
        text_document=params.text_document, position=params.position, new_name=new_name
    )
    edit = await client.ask("textDocument/rename", asked)
    grouped = edits_by_file(edit or types.WorkspaceEdit())
    if not grouped:
        raise tether.ToolError(
            f"{client.spec.id} returned no edits for renaming `{old_name}` at "
            f"{session.rel}:{line}; nothing was written"
        )
    planned = await _planned_changes(session, grouped)
    if not planned[0]:
        raise tether.ToolError(
            f"renaming `{old_name}` to `{new_name}` changes nothing "
            f"({client.spec.id} returned edits that leave every file as it is)"
        )
    return old_name, grouped, planned


async def proposed_change(
    session: Session, line: int, symbol: str, new_name: str
) -> tether.StagedChange:
    """What the rename would write (for its approval card); nothing is written."""
    _, _, (changes, _, _) = await _proposal(session, line, symbol, new_name)
    files = tuple(tether.StagedFile(c.path, c.expected, c.new) for c in changes)
    return tether.StagedChange(files, origin="lsp_rename")


async def _prepared_name(
    session: Session, line: int, params: types.TextDocumentPositionParams, old_name: str
) -> str:
    """Ask a server that prepares renames whether the position can be renamed (once more when
    it is still taking in our changes); the name it would rename (its placeholder)."""
    client, supervisor = session.client, session.supervisor
    provider = client.capabilities.rename_provider
    if isinstance(provider, types.RenameOptions) and provider.prepare_provider:
        settled = client.settled
        prepared = await client.ask("textDocument/prepareRename", params)
        if not prepared and session.fresh:
            # pyright refuses a symbol whose files it is still taking in; ask again once the
            # work our changes started has ended (bounded), instead of sleeping
            await client.wait_until(
                lambda: client.settled > settled and client.is_ready(),
                supervisor.config.ready_timeout_s,
            )
            prepared = await client.ask("textDocument/prepareRename", params)
        if not prepared:
            raise tether.ToolError(
                f"{client.spec.id} cannot rename `{old_name}` at {session.rel}:{line} "
                "(prepareRename refused the position); nothing was written"
            )
        if isinstance(prepared, types.PrepareRenamePlaceholder):
            old_name = prepared.placeholder
    return old_name


async def _planned_changes(
    session: Session, grouped: Edits
) -> tuple[list[FileChange], dict[Path, Path], dict[Path, int]]:
    """The files the edits change: their changes, the path the server knows each written one
    by, and the edits per file; a :class:`tether.ToolError` for any file that cannot be
    edited (not a file, outside the workdir, unreadable, not UTF-8, changed meanwhile)."""
    client, supervisor = session.client, session.supervisor
    changes: list[FileChange] = []
    synced: dict[Path, Path] = {}  # written path -> the path the server knows it by
    counts: dict[Path, int] = {}
    for uri, edits in grouped.items():
        path = uri_to_path(uri)
        if path is None:
            raise tether.ToolError(
                f"the rename touches {uri}, which is not a file; nothing was written"
            )
        try:
            # the real file (symlinks resolved): the write re-checks that nothing on the way
            # became a symlink since
            real = confine(supervisor.workdir, str(path), field="file")
        except tether.ArgumentError:
            raise tether.ToolError(
                f"the rename would edit {path}, outside the workdir; nothing was written"
            ) from None
        rel = supervisor.relative(path)
        try:
            # the core's reader: off the event loop, a FIFO or device refused by name
            before = await read_bytes(supervisor.workdir, real, field="file", shown=rel)
        except UnreadableFile as exc:
            raise tether.ToolError(
                f"the rename edits {rel}, which tether does not read: {exc.expected}; "
                "nothing was written"
            ) from None
        try:
            text = before.decode("utf-8")
        except UnicodeDecodeError:
            raise tether.ToolError(
                f"{supervisor.relative(path)} is not UTF-8 text; nothing was written"
            ) from None
        doc = client.documents.get(uri)
        if doc is not None and doc.text != text:
            raise tether.ToolError(
                f"{supervisor.relative(path)} changed while the server computed the rename; "
                "nothing was written, try again"
            )
        after = apply_text_edits(text, edits, client.encoding)
        if after != text:
            changes.append(FileChange(real, before, after.encode("utf-8")))
            synced[real] = path
            counts[path] = len(edits)
    return changes, synced, counts


def _refuse_outside(
    session: Session,
    old_name: str,
    outside: list[crosscheck.Uncovered],
    changes: list[FileChange],
    counts: dict[Path, int],
) -> NoReturn:
    """Refuse a rename that would leave uses of the old name the server cannot see broken."""
    client, supervisor = session.client, session.supervisor
    total = sum(counts.values())
    rows = crosscheck.describe(
        outside,
        old_name,
        client.spec.id,
        supervisor.workdir,
        suffix="; the server cannot rename it there",
    )
    raise tether.ToolError(
        f"nothing was written: {client.spec.id}'s rename of `{old_name}` edits {total} "
        f"place{'s' if total != 1 else ''} in {len(changes)} file"
        f"{'s' if len(changes) != 1 else ''}, but\n"
        + "\n".join(rows)
        + "\nRenaming only what the server sees would leave those uses broken. Rename them "
        "too (by hand, after this rename), or call again with `force: true` to "
        "rename what the server found and leave them as they are."
    )


async def _write(session: Session, changes: list[FileChange], synced: dict[Path, Path]) -> None:
    """Write every change or none, then give the server the written text of its open files."""
    client, supervisor = session.client, session.supervisor
    try:
        await apply_changes_async(changes, root=supervisor.workdir)
    except StaleFiles as exc:
        names = ", ".join(supervisor.relative(Path(p)) for p in exc.paths)
        raise tether.ToolError(
            f"nothing was written: {names} changed since the rename was computed; try again"
        ) from None
    except OSError as exc:
        # apply_changes has put back every file it had already replaced
        raise tether.ToolError(f"nothing was written: {exc}") from None
    for change in changes:
        known = synced[change.path]
        if known.as_uri() in client.documents:
            doc, _ = await client.sync_document(known)
            await client.save(doc)


def _summary(session: Session, changes: list[FileChange], counts: dict[Path, int]) -> str:
    """``3 edits in 2 files (server)`` and a row per file."""
    relative = session.supervisor.relative
    total = sum(counts.values())
    rows = [
        f"  {relative(path)}: {count} edit{'s' if count != 1 else ''}"
        for path, count in sorted(counts.items())
    ]
    return (
        f"{total} edit{'s' if total != 1 else ''} in {len(changes)} "
        f"file{'s' if len(changes) != 1 else ''} ({session.client.spec.id})\n" + "\n".join(rows)
    )


async def _preview(
    session: Session,
    old_name: str,
    new_name: str,
    changes: list[FileChange],
    counts: dict[Path, int],
    missed: list[crosscheck.Uncovered],
    force: bool,
) -> str:
    """The rename as it would be written, and the diagnostics it would introduce (the core's
    preview: every family that checks code answers); nothing is written."""
    client, supervisor = session.client, session.supervisor
    text = (
        f"(preview, nothing written) renaming `{old_name}` to `{new_name}` would make "
        + _summary(session, changes, counts)
    )
    outside = any(item.outside is not None for item in missed)
    suffix = (
        "; the server cannot rename it there: without `force: true` the rename is refused"
        if outside and not force
        else "; would not be renamed"
    )
    notes = crosscheck.describe(missed, old_name, client.spec.id, supervisor.workdir, suffix=suffix)
    staged = tether.StagedChange(
        tuple(tether.StagedFile(c.path, c.expected, c.new) for c in changes), origin="lsp_rename"
    )
    checked = await supervisor.run.preview_diagnostics(staged)
    return text + ("\n\n" + "\n".join(notes) if notes else "") + "\n\n" + checked.text

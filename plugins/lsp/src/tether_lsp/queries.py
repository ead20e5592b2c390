"""The read-only ``lsp`` actions against a file's server."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import attrs
from lsprotocol import types

import tether
from tether.text import cap, truncate
from tether.workdir.reading import Reader, UnreadableFile, off_loop
from tether_lsp import coverage, crosscheck
from tether_lsp.client import LspClient
from tether_lsp.documents import OpenDocument, uri_to_path
from tether_lsp.ledger import Seen, diagnostic_key
from tether_lsp.positions import SymbolPosition, resolve_position, to_lsp_character
from tether_lsp.render import (
    SYMBOL_KINDS,
    Place,
    SourceLines,
    diagnostic_order,
    display_path,
    format_diagnostics,
    hover_text,
    location_ranges,
    outside_note,
    places,
    symbol_rows,
)
from tether_lsp.servers import ServerSpec
from tether_lsp.supervisor import SKIP_DIRS, Choice, LspSupervisor

REFERENCES_CAP = 50
#: the severities a write reports and a checkpoint compares: errors and warnings (hints and
#: infos are noise after a write)
REPORTED_SEVERITIES = (1, 2)
WORKSPACE_SYMBOLS_CAP = 100
DOCUMENT_SYMBOLS_CAP = 200
CODE_ACTIONS_CAP = 50

#: action -> (LSP method, server capability, what the model is told it found)
NAVIGATION = {
    "definition": ("textDocument/definition", "definitionProvider", "definition"),
    "type_definition": ("textDocument/typeDefinition", "typeDefinitionProvider", "type definition"),
    "implementation": ("textDocument/implementation", "implementationProvider", "implementation"),
    "references": ("textDocument/references", "referencesProvider", "reference"),
}


class Session:
    """One query: the server for a file, the synced document, the resolved position."""

    def __init__(
        self,
        supervisor: LspSupervisor,
        client: LspClient,
        doc: OpenDocument,
        fresh: bool,
        before: Busy | None = None,
    ) -> None:
        self.supervisor = supervisor
        self.client = client
        self.doc = doc
        #: this call told the server about new content (it may still be digesting it)
        self.fresh = fresh
        #: the server's state when the call reached it
        self.before = before or Busy.of(client)

    def with_indexing(self, text: str) -> str:
        """``text`` followed by the server's indexing state, when it is still busy or the
        call waited on it — and, in the server's first answer, that its root is the workdir
        for want of a root marker."""
        text = with_indexing(text, self.client, self.before)
        note = self.supervisor.root_note(self.client)
        return f"{text}\n({note})" if note else text

    @property
    def rel(self) -> str:
        return self.supervisor.relative(self.doc.path)

    def position(
        self, line: int, symbol: str
    ) -> tuple[SymbolPosition, types.TextDocumentPositionParams]:
        doc = self.doc
        pos = resolve_position(doc.text, line, symbol, where=self.rel, lines=doc.lines())
        character = to_lsp_character(pos.line_text, pos.start, self.client.encoding)
        params = types.TextDocumentPositionParams(
            text_document=types.TextDocumentIdentifier(uri=self.doc.uri),
            position=types.Position(line=pos.line, character=character),
        )
        return pos, params

    def require(self, method: str, capability: str, action: str) -> None:
        if not self.client.supports(method, capability):
            raise tether.ToolError(
                f'action "{action}" is not supported by {self.client.spec.id} '
                f"(the server answering {self.rel})"
            )

    def indexing_note(self) -> str | None:
        if self.client.is_ready():
            return None
        return f"{self.client.spec.id} is still indexing ({self.client.busy_with()})"


#: a wait shorter than this for a server that was busy goes unmentioned
WAIT_WORTH_SAYING_S = 0.5


@attrs.frozen
class Busy:
    """A server's state when a call reached it: what it was busy with, its progress count."""

    what: str
    events: int
    started: float

    @classmethod
    def of(cls, client: LspClient) -> Busy:
        what = "" if client.is_ready() else client.busy_with()
        return cls(what, client.progress_events, time.monotonic())


def indexing_line(client: LspClient, before: Busy) -> str:
    """``(still indexing — clangd: indexing: 12/121 (9%))`` while the server reports work in
    progress — in its own words and numbers, never counts it did not send — or how long the
    call waited on a server that was busy meanwhile."""
    if not client.alive:
        return ""
    if not client.is_ready():
        return f"(still indexing — {client.spec.id}: {client.busy_with()})"
    waited = time.monotonic() - before.started
    what = before.what or (client.last_busy if client.progress_events != before.events else "")
    if what and waited >= WAIT_WORTH_SAYING_S:
        return f"(waited {waited:.1f} s while {client.spec.id} was busy: {what})"
    return ""


def with_indexing(text: str, client: LspClient, before: Busy) -> str:
    stale = coverage.stale_note(client)
    text = f"{text}\n({stale})" if stale else text
    line = indexing_line(client, before)
    if not line or (line.startswith("(still indexing") and "still indexing" in text):
        return text  # the answer already says so (an empty answer while indexing)
    return f"{text}\n{line}"


#: actions whose answer spans the project: they wait for indexing to end (bounded)
PROJECT_WIDE = frozenset(
    {"references", "implementation", "rename", "incoming_calls", "outgoing_calls"}
)
CALLS_CAP = REFERENCES_CAP


#: action -> (LSP method, server capability) the answering server must offer
OFFERS = {
    **{action: (method, capability) for action, (method, capability, _) in NAVIGATION.items()},
    "hover": ("textDocument/hover", "hoverProvider"),
    "symbols": ("textDocument/documentSymbol", "documentSymbolProvider"),
    "code_actions": ("textDocument/codeAction", "codeActionProvider"),
    "rename": ("textDocument/rename", "renameProvider"),
    "incoming_calls": ("textDocument/prepareCallHierarchy", "callHierarchyProvider"),
    "outgoing_calls": ("textDocument/prepareCallHierarchy", "callHierarchyProvider"),
}


async def require_regular_file(supervisor: LspSupervisor, path: Path) -> None:
    """Before any server starts: ``path`` is a regular file the core's reader will read (a FIFO,
    a device, a directory or a file over the cap is refused by name, never opened)."""
    rel = supervisor.relative(path)
    try:
        await off_loop(
            supervisor.workdir, lambda reader: reader.stat(path, field="file", shown=rel)
        )
    except UnreadableFile as exc:
        raise _refused(exc, rel) from None


def _refused(exc: UnreadableFile, rel: str) -> tether.ArgumentError:
    """A file the reader refused, as a query says it: a missing one is a wrong argument."""
    if exc.reason == "missing":
        return tether.ArgumentError("file", f"an existing file, {rel} is not one")
    return exc


async def open_session(supervisor: LspSupervisor, path: Path, action: str) -> Session:
    """The first server of the file's language that offers ``action``, with the file synced."""
    needs = OFFERS.get(action)
    offers = None if needs is None else lambda c: c.supports(*needs)
    # a server answering already looks at the file when it syncs it, through the same reader
    # (the same refusals): the check before a start is one trip off the loop saved per query
    client = await supervisor.running_client_for(path, offers=offers, action=action)
    if client is None:
        await require_regular_file(supervisor, path)
        client = await supervisor.client_for(path, offers=offers, action=action)
    try:
        return await session_on(supervisor, client, path, action)
    except UnreadableFile as exc:
        raise _refused(exc, supervisor.relative(path)) from None


async def session_on(
    supervisor: LspSupervisor, client: LspClient, path: Path, action: str
) -> Session:
    before = Busy.of(client)
    doc, refreshed, opened_now = await client.sync_for_query(path)
    config = supervisor.config
    if opened_now and client.spec.open_waits_for_diagnostics:
        await client.diagnostics_for(doc, config.ready_timeout_s)
    # a hover or a definition in one file need not wait for a whole-project index
    index = action in PROJECT_WIDE or client.spec.navigation_waits_for_index
    await client.wait_ready(config.ready_timeout_s, index=index)
    return Session(supervisor, client, doc, refreshed or opened_now, before)


def _capped(lines: list[str], limit: int, noun: str) -> tuple[list[str], str]:
    shown, note = cap(lines, limit, f"{noun} shown")
    return list(shown), note or ""


async def navigate(session: Session, action: str, line: int, symbol: str) -> str:
    method, capability, noun = NAVIGATION[action]
    session.require(method, capability, action)
    pos, params = session.position(line, symbol)
    asked: types.TextDocumentPositionParams | types.ReferenceParams = params
    if action == "references":
        asked = types.ReferenceParams(
            context=types.ReferenceContext(include_declaration=True),
            text_document=params.text_document,
            position=params.position,
        )
    result = await session.client.ask(method, asked)
    found = places(result)
    target = f"`{pos.line_text[pos.start : pos.end]}` at {session.rel}:{line}"
    if not found:
        note = session.indexing_note()
        if note:
            return f"{note}; no {noun} for {target} yet — ask again in a moment"
        return f"no {noun} found for {target} ({session.client.spec.id})"
    sources = SourceLines(session.client)
    await sources.load(place.uri for place in found)
    rows = [sources.describe(place, session.supervisor.workdir) for place in found]
    shown, note = _capped(rows, REFERENCES_CAP, f"{noun}s")
    head = f"{len(found)} {noun}{'s' if len(found) != 1 else ''} of {target}"
    head += f" ({note})" if note else ""
    tail = session.indexing_note()
    text = head + ":\n" + "\n".join(shown)
    outside = outside_note(found, session.supervisor.workdir)
    if outside:
        text += "\n" + outside
    if tail and action == "references":
        text += f"\n(partial: {tail})"
    if action in ("references", "implementation"):
        # the server answers for its own project: say where else the name occurs
        client = session.client
        spans = await crosscheck.covered_spans(client, location_ranges(result))
        name = pos.line_text[pos.start : pos.end]
        index = coverage.index_of(session.supervisor)
        unseen = await crosscheck.uncovered(client, index, name, spans)
        missed = [
            item
            for item in unseen.found
            if item.outside is not None or (action == "references" and not item.touched)
        ]
        rows = crosscheck.describe(missed, name, client.spec.id, session.supervisor.workdir)
        unsearched = coverage.unsearched_line(unseen.unsearched, session.supervisor.workdir)
        rows += [f"{unsearched} for `{name}`"] if unsearched else []
        if rows:
            text += "\n\n" + "\n".join(rows)
    return text


async def call_hierarchy(session: Session, action: str, line: int, symbol: str) -> str:
    """``incoming_calls``: every call site of the function, with the function holding it;
    ``outgoing_calls``: every function it calls, where it is declared and called from."""
    client = session.client
    session.require("textDocument/prepareCallHierarchy", "callHierarchyProvider", action)
    pos, params = session.position(line, symbol)
    target = f"`{pos.line_text[pos.start : pos.end]}` at {session.rel}:{line}"
    items = await client.ask("textDocument/prepareCallHierarchy", params) or []
    if not items:
        note = session.indexing_note()
        if note:
            return f"{note}; no call hierarchy for {target} yet — ask again in a moment"
        return f"{client.spec.id} finds no function or method at {target} to follow calls of"
    item = items[0]
    incoming = action == "incoming_calls"
    method = "callHierarchy/incomingCalls" if incoming else "callHierarchy/outgoingCalls"
    asked = (
        types.CallHierarchyIncomingCallsParams(item=item)
        if incoming
        else types.CallHierarchyOutgoingCallsParams(item=item)
    )
    calls = [call for call in await client.ask(method, asked) or [] if call]
    workdir = session.supervisor.workdir
    sources = SourceLines(client)
    await sources.load([item.uri, *(_other(call).uri for call in calls)])
    rows = _call_rows(calls, item, incoming, sources, workdir)
    if not rows:
        note = session.indexing_note()
        if note:
            return f"{note}; no calls for {target} yet — ask again in a moment"
        noun = "callers" if incoming else "calls"
        return f"no {noun} found for {target} ({client.spec.id})"
    noun = "calls" if incoming else "functions called"
    shown, note = _capped(rows, CALLS_CAP, noun)
    head = (
        f"{len(rows)} call{'s' if len(rows) != 1 else ''} of {target}"
        if incoming
        else f"{len(rows)} function{'s' if len(rows) != 1 else ''} called by {target}"
    )
    head += f" ({client.spec.id})" + (f" ({note})" if note else "")
    return head + ":\n" + "\n".join(shown)


Call = types.CallHierarchyIncomingCall | types.CallHierarchyOutgoingCall


def _other(call: Call) -> types.CallHierarchyItem:
    """The function at the other end of a call: the caller (incoming), the callee (outgoing)."""
    return call.from_ if isinstance(call, types.CallHierarchyIncomingCall) else call.to


def _call_rows(
    calls: list[Call],
    item: types.CallHierarchyItem,
    incoming: bool,
    sources: SourceLines,
    workdir: Path,
) -> list[str]:
    """One line per call site (incoming) or per function called (outgoing), repeats dropped."""
    rows: list[str] = []
    for call in calls:
        other = _other(call)
        kind = SYMBOL_KINDS.get(int(other.kind), "symbol")
        name = other.name
        # incoming: the call sites are in the caller; outgoing: in the function asked about
        site_uri = other.uri if incoming else item.uri
        site_path = uri_to_path(site_uri)
        sites = [
            sources.describe(Place(site_path, site_uri, r.start.line, r.start.character), workdir)
            for r in call.from_ranges or []
        ]
        if incoming:
            holder = name if name.startswith("(") else f"{kind} {name}"  # "(module) use.py"
            rows += [f"{site} — in {holder}" for site in sites]
        else:
            start = other.selection_range.start
            declared = sources.describe(
                Place(uri_to_path(other.uri), other.uri, start.line, start.character), workdir
            )
            at = ", ".join(site.split(": ", 1)[0] for site in sites)
            rows.append(f"{kind} {name} — {declared} (called at {at})")
    return list(dict.fromkeys(rows))  # basedpyright repeats a caller per overload it matched


async def hover(session: Session, line: int, symbol: str) -> str:
    session.require("textDocument/hover", "hoverProvider", "hover")
    pos, params = session.position(line, symbol)
    text = hover_text(await session.client.ask("textDocument/hover", params))
    if not text:
        note = session.indexing_note()
        target = f"`{pos.line_text[pos.start : pos.end]}` at {session.rel}:{line}"
        if note:
            return f"{note}; no hover for {target} yet — ask again in a moment"
        return f"no hover information for {target} ({session.client.spec.id})"
    return truncate(text, 8000)


async def document_symbols(session: Session) -> str:
    session.require("textDocument/documentSymbol", "documentSymbolProvider", "symbols")
    document = types.TextDocumentIdentifier(uri=session.doc.uri)
    result = await session.client.ask(
        "textDocument/documentSymbol", types.DocumentSymbolParams(text_document=document)
    )
    rows = symbol_rows(result)
    if not rows:
        note = session.indexing_note()
        return f"{note}; no symbols yet" if note else f"no symbols in {session.rel}"
    sources = SourceLines(session.client)
    lines = []
    for depth, kind, name, place, _container in rows:
        where = ""
        if place is not None:
            own = Place(session.doc.path, session.doc.uri, place.line, place.character)
            where = " " + sources.describe(own, session.supervisor.workdir).split(": ", 1)[0]
        lines.append(f"{'  ' * depth}{kind} {name}{where}")
    shown, note = _capped(lines, DOCUMENT_SYMBOLS_CAP, "symbols")
    head = f"{len(rows)} symbols in {session.rel}" + (f" ({note})" if note else "")
    return head + ":\n" + "\n".join(shown)


async def workspace_symbols(supervisor: LspSupervisor, query: str, path: Path | None) -> str:
    """``symbols`` with a query: the file's server, else every language rooted at the workdir."""
    if path is not None:
        choices = [await supervisor.choose(path)]
    else:
        choices = []
        reasons = []
        for language in sorted({spec.language for spec in supervisor.specs.values()}):
            for spec in supervisor.candidates(language):
                root = supervisor.find_root(spec, supervisor.workdir)
                if root is None:
                    continue
                if not spec.root_markers or "navigation" not in spec.roles:
                    # a server that needs no project (shell, yaml, json) is not started for
                    # a workspace search: pass `file` to search its files
                    continue
                probe = await supervisor.probe(spec, root)
                if probe.ok:
                    choices.append(Choice(spec, root))
                    break
                reasons.append(f"{spec.id}: {probe.detail}")
        if not choices and reasons:
            # the workdir is a project (Cargo.toml): what is missing is its server
            raise tether.ToolError(
                "no usable language server for the workdir's projects; pass `file` to pick "
                "another project to search (its server and root are used):\n  "
                + "\n  ".join(reasons)
            )
        if not choices:
            raise tether.ToolError(
                "no language server has a root marker at the workdir; pass `file` to pick the "
                "project to search (its server and root are used)"
            )
    sections: list[str] = []
    unsupported: list[str] = []
    for choice in choices:
        try:
            section = await _workspace_search(supervisor, choice, query)
        except tether.ToolError as exc:
            if len(choices) == 1:
                raise
            # one server's failure never hides the others' answers
            unsupported.append(f"{choice.spec.id} failed: {exc}")
            continue
        if section is None:
            unsupported.append(
                f'action "symbols" with a query is not supported by {choice.spec.id}'
            )
            continue
        sections.append(section)
    if not sections:
        raise tether.ToolError("\n".join(unsupported))
    return "\n\n".join(sections + [f"({note})" for note in unsupported])


async def _workspace_search(supervisor: LspSupervisor, choice: Choice, query: str) -> str | None:
    """One server's section of a workspace symbol search (None: it has no such search)."""
    client = await supervisor.client(choice.spec, choice.root)
    if not client.supports("workspace/symbol", "workspaceSymbolProvider"):
        return None
    before = Busy.of(client)
    await client.refresh_documents()
    opened = ""
    if client.spec.workspace_needs_open_file and not client.documents:
        first = await off_loop(
            choice.root, lambda reader: _first_source_file(client, choice.root, reader)
        )
        if first is not None:
            doc, _ = await client.sync_document(first)
            # its diagnostics come once the server has loaded the file's project
            loaded = await client.current_diagnostics(doc, supervisor.config.ready_timeout_s)
            if loaded is None:
                opened = supervisor.relative(first)
    await client.wait_ready(supervisor.config.ready_timeout_s)
    result = await client.ask("workspace/symbol", types.WorkspaceSymbolParams(query=query))
    sources = SourceLines(client)
    await sources.load(place.uri for *_, place, _ in symbol_rows(result) if place is not None)
    section = _workspace_section(supervisor, client, query, result, sources)
    # the server searched its own (loaded) projects: what the text says of the rest
    answered = {
        place.path.resolve()
        for *_, place, _ in symbol_rows(result)
        if place is not None and place.path is not None
    }
    exact = any(name == query for _, _, name, _, _ in symbol_rows(result))
    covered = await coverage.symbol_coverage(supervisor, client, query, answered, exact)
    section += "".join(f"\n{line}" for line in covered)
    if opened and not symbol_rows(result):
        # an empty answer from a project not loaded yet is not "no such symbol"
        section += (
            f"\n({client.spec.id} had not loaded the project of {opened} after "
            f"{supervisor.config.ready_timeout_s:g} s: ask again in a moment)"
        )
    return with_indexing(section, client, before)


def _first_source_file(client: LspClient, root: Path, reader: Reader) -> Path | None:
    """A file the server's project includes, to open so it loads that project: the first of
    ``compile_commands.json``, the first of tsconfig's ``files`` or under its ``include``; else
    the first source file (a file no project covers loads an inferred project, and tsserver's
    workspace symbols then find nothing)."""
    return _project_file(client.spec, root, reader) or _first_source_file_in(client.spec, root)


def _project_file(spec: ServerSpec, root: Path, reader: Reader) -> Path | None:
    import json
    import re

    suffixes = set(spec.extensions)
    database = root / "compile_commands.json"
    if database.is_file():
        try:
            entries = json.loads(reader.read_text(database, field="compile_commands.json"))
        except (UnreadableFile, tether.ToolError, ValueError):
            entries = []
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
                continue
            path = Path(str(entry.get("directory") or root)) / entry["file"]
            if path.suffix in suffixes and path.is_file():
                return path
    config = root / "tsconfig.json"
    if config.is_file():
        try:
            # tsconfig allows comments and trailing commas
            raw = reader.read_text(config, field="tsconfig.json")
            text = re.sub(r"(?m)^\s*//[^\n]*|/\*[\s\S]*?\*/", "", raw)
            data = json.loads(re.sub(r",(\s*[}\]])", r"\1", text))
        except (UnreadableFile, tether.ToolError, ValueError):
            data = {}
        for name in data.get("files") or [] if isinstance(data, dict) else []:
            path = root / str(name)
            if path.suffix in suffixes and path.is_file():
                return path
        for pattern in data.get("include") or [] if isinstance(data, dict) else []:
            # the directory before the first wildcard
            base = re.split(r"[*?{\[]", str(pattern), maxsplit=1)[0].rstrip("/")
            start = root / base if base else root
            if start.is_file() and start.suffix in suffixes:
                return start
            if start.is_dir():
                found = _first_source_file_in(spec, start)
                if found is not None:
                    return found
    return None


def _first_source_file_in(spec: ServerSpec, root: Path, limit: int = 5000) -> Path | None:
    """The first file (in sorted walk order) the server handles, looking at ``limit`` files."""
    suffixes = set(spec.extensions)
    for directory, dirnames, filenames in os.walk(root):
        limit -= len(filenames)
        if limit < 0:
            return None
        for name in sorted(filenames):
            if Path(name).suffix in suffixes:
                return Path(directory) / name
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
    return None


def _workspace_section(
    supervisor: LspSupervisor,
    client: LspClient,
    query: str,
    result: list[types.SymbolInformation] | list[types.WorkspaceSymbol] | None,
    sources: SourceLines,
) -> str:
    rows = symbol_rows(result)
    if not rows:
        if not client.is_ready():
            return (
                f"{client.spec.id} is still indexing ({client.busy_with()}); no symbols "
                f"matching {query!r} yet — ask again in a moment"
            )
        return f"no workspace symbols match {query!r} ({client.spec.id})"
    lines = []
    for _depth, kind, name, place, container in rows:
        where = ""
        if place is not None and place.uri:
            if (place.line, place.character) == (0, 0) and place.path is not None:
                where = display_path(place, supervisor.workdir)
            else:
                where = sources.describe(place, supervisor.workdir).split(": ", 1)[0]
        inside = f" in {container}" if container else ""
        lines.append(f"{kind} {name}{inside} — {where}")
    shown, note = _capped(lines, WORKSPACE_SYMBOLS_CAP, "symbols")
    head = f"{len(rows)} symbols matching {query!r} ({client.spec.id})"
    head += f" ({note})" if note else ""
    return head + ":\n" + "\n".join(shown)


def diagnostics_wait_s(supervisor: LspSupervisor) -> float:
    """An explicit question waits as long as any request; a write's note waits less."""
    config = supervisor.config
    return max(config.diagnostics_timeout_s, config.request_timeout_s)


async def current_diagnostics(session: Session) -> list[types.Diagnostic] | None:
    """The diagnostics of the document's current version (waiting for them, bounded)."""
    timeout = diagnostics_wait_s(session.supervisor)
    return await session.client.current_diagnostics(session.doc, timeout)


Answers = list[tuple[LspClient, list[types.Diagnostic]]]


def merge_diagnostics(answers: Answers) -> Answers:
    """Every server's diagnostics, each tagged with its source (the server's id when it names
    none); the same (severity, code, message) at one place is kept once, from the first."""
    merged: Answers = []
    seen: set[tuple[Any, ...]] = set()
    for client, items in answers:
        kept = []
        for item in items:
            start = item.range.start
            key = (*diagnostic_key(item), start.line, start.character)
            if key in seen:
                continue
            seen.add(key)
            kept.append(item if item.source else attrs.evolve(item, source=client.spec.id))
        merged.append((client, kept))
    return merged


def format_merged(answers: Answers, rel: str, text: str) -> list[str]:
    """Rows of every server's diagnostics in file order, each in its server's encoding."""
    rows = [
        (diagnostic_order(item), row)
        for client, items in answers
        for item, row in zip(
            sorted(items, key=diagnostic_order),
            format_diagnostics(items, rel, text, client.encoding),
            strict=True,
        )
    ]
    return [row for _, row in sorted(rows, key=lambda pair: pair[0])]


@attrs.define
class FileDiagnostics:
    """Every server's word on one file's current text: the merged answers, what could not be
    had (a server failing or still computing) and the document they are about."""

    answers: Answers
    notes: list[str]
    doc: OpenDocument | None


async def gather_diagnostics(supervisor: LspSupervisor, path: Path) -> FileDiagnostics:
    """The file's diagnostics from every server that gives them, merged; one server that fails
    or is still computing is named in the notes, and never hides the others' answers. The run
    records what it was told (:meth:`DiagnosticLedger.record`) when every server answered."""
    await require_regular_file(supervisor, path)
    clients, notes = await supervisor.diagnostic_clients(path)
    rel = supervisor.relative(path)
    answers: Answers = []
    waited = diagnostics_wait_s(supervisor)
    doc: OpenDocument | None = None
    complete = not notes
    for client in clients:
        try:
            session = await session_on(supervisor, client, path, "diagnostics")
            items = await current_diagnostics(session)
        except tether.ToolError as exc:
            notes.append(f"{client.spec.id}: {exc}")
            complete = False
            continue
        doc = doc or session.doc
        root_note = supervisor.root_note(client)
        if root_note:
            notes.append(root_note)
        # a file's diagnostics do not wait for the project's index: no "still indexing" here,
        # only a long wait on a busy server is said
        line = indexing_line(client, session.before)
        if line.startswith("(waited"):
            notes.append(line[1:-1])
        stale = coverage.stale_note(client)
        if stale:
            notes.append(stale)
        if items is None:
            # still at it: a pull stays pending, a push will be kept when it comes
            notes.append(
                f"{client.spec.id} is still computing the diagnostics of {rel} (not computed "
                f"yet for its current text; waited {waited:g} s); ask again with the same call "
                "to get them"
            )
            complete = False
            continue
        answers.append((client, items))
    merged = merge_diagnostics(answers)
    if complete and doc is not None:
        supervisor.ledger.record(path, seen_of(merged, rel, doc))
    return FileDiagnostics(merged, notes, doc)


def seen_of(answers: Answers, rel: str, doc: OpenDocument) -> Seen:
    """What the run is told of a file, as the ledger keeps it: the errors and warnings (the
    diagnostics a write reports), each with its row, and the stamp of the text on disk (None
    when the server has a text that is not the disk's)."""
    items = tuple(
        (item, format_diagnostics([item], rel, doc.text, client.encoding)[0])
        for client, found in answers
        for item in found
        if (item.severity or 1) in REPORTED_SEVERITIES
    )
    stamp = (doc.mtime_ns, doc.size) if doc.size >= 0 else None
    return Seen(items, stamp)


async def file_diagnostics(supervisor: LspSupervisor, path: Path) -> str:
    """The file's diagnostics from every server that gives them (merged); one server that
    fails or is still computing is named, and never hides the others' answers."""
    got = await gather_diagnostics(supervisor, path)
    rel = supervisor.relative(path)
    if not got.answers:
        raise tether.ToolError("\n".join(got.notes))
    names = ", ".join(client.spec.id for client, _ in got.answers)
    tail = "".join(f"\n({note})" for note in got.notes)
    if not any(items for _, items in got.answers):
        return f"no diagnostics for {rel} ({names})" + tail
    assert got.doc is not None
    rows = format_merged(got.answers, rel, got.doc.text)
    shown, note = _capped(rows, 100, "diagnostics")
    head = f"{len(rows)} diagnostics for {rel} ({names})"
    return head + (f" ({note})" if note else "") + ":\n" + "\n".join(shown) + tail


async def code_actions(session: Session, line: int, symbol: str) -> str:
    session.require("textDocument/codeAction", "codeActionProvider", "code_actions")
    pos, params = session.position(line, symbol)
    end = to_lsp_character(pos.line_text, pos.end, session.client.encoding)
    rng = types.Range(start=params.position, end=types.Position(line=pos.line, character=end))
    # quick fixes are offered for the diagnostics in the request: wait (briefly) for this
    # version's
    current = await session.client.current_diagnostics(
        session.doc, session.supervisor.config.diagnostics_timeout_s
    )
    missing = ""
    if current is None:
        # not the same as "no diagnostics": the answer must not pass for a complete one
        timeout = session.supervisor.config.diagnostics_timeout_s
        missing = (
            f"\n(diagnostics of {session.rel} did not arrive from {session.client.spec.id} "
            f"within {timeout:g} s; quick fixes for them may be missing)"
        )
        current = []
    on_line = [d for d in current if d.range.start.line <= pos.line <= d.range.end.line]
    context = types.CodeActionContext(
        diagnostics=on_line, trigger_kind=types.CodeActionTriggerKind.Invoked
    )
    asked = types.CodeActionParams(text_document=params.text_document, range=rng, context=context)
    actions = await session.client.ask("textDocument/codeAction", asked) or []
    target = f"`{pos.line_text[pos.start : pos.end]}` at {session.rel}:{line}"
    if not actions:
        return f"no code actions offered by {session.client.spec.id} for {target}{missing}"
    rows = []
    for action in actions:
        rows.append(f"- {action.title}{_action_flags(action)}")
    shown, note = _capped(rows, CODE_ACTIONS_CAP, "code actions")
    head = f"{len(actions)} code actions for {target} ({session.client.spec.id})"
    return head + (f" ({note})" if note else "") + ":\n" + "\n".join(shown) + missing


def _action_flags(action: types.CodeAction | types.Command) -> str:
    """`` [quickfix, preferred, edits 2 files]`` for a code action; "" for a bare command."""
    if isinstance(action, types.Command):
        return ""
    flags = []
    if action.kind:
        flags.append(str(getattr(action.kind, "value", action.kind)))
    if action.is_preferred:
        flags.append("preferred")
    edit = action.edit
    files = len(edit.changes or {}) or len(edit.document_changes or []) if edit else 0
    if files:
        flags.append(f"edits {files} file{'s' if files != 1 else ''}")
    return f" [{', '.join(flags)}]" if flags else ""

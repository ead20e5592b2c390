"""Diagnostics on write: after a host write tool, the new diagnostics of the written files.

Three rules make "new" true. A file's baseline — the diagnostics of the text it had before the
call — is taken before the server sees the new text: from the run's earlier reports, else by
giving the server the file's previous content (``ToolResult.before``) and asking; without one,
the answer says "baseline unknown" instead of calling old errors new. Every file of a change is
sent to a server before any of its diagnostics are asked for, so none is computed on a
half-applied change. And an answer is only the server's report on the text just written (see
:meth:`LspClient.current_diagnostics`); without one in time, it says so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import anyio
import attrs
from lsprotocol import types

import tether
from tether.text import cap
from tether.workdir import reading
from tether_lsp import coverage
from tether_lsp.client import LspClient
from tether_lsp.dependents import Dependents, changed_names, find_dependents
from tether_lsp.documents import OpenDocument
from tether_lsp.ledger import DiagnosticLedger, Seen, renamed_identifiers
from tether_lsp.queries import (
    REPORTED_SEVERITIES,
    Answers,
    format_merged,
    merge_diagnostics,
    seen_of,
)
from tether_lsp.render import format_diagnostics
from tether_lsp.supervisor import LspSupervisor

CAP = 30


@attrs.define
class _Answer:
    """One server's word on one written file."""

    #: diagnostics of the text before the call (None: no baseline from this server)
    baseline: list[types.Diagnostic] | None = None
    #: diagnostics of the text written (None: not reported in time)
    items: list[types.Diagnostic] | None = None
    text: str = ""
    #: the document the diagnostics are about (its text and disk stamp)
    doc: OpenDocument | None = None
    failure: str | None = None
    #: the text the baseline is about
    before_text: str = ""

    def take(self, items: list[types.Diagnostic] | None, doc: OpenDocument) -> None:
        """Record the server's report (``items``) on ``doc``, the text just written."""
        self.items = items
        self.text = doc.text
        self.doc = doc


@attrs.define
class _Dependents:
    """One server's word on the files that use names a write changed (``found``): the
    diagnostics of those it checked, before and after, and those it did not check."""

    found: Dependents
    written: list[Path]
    #: per file checked: its answer (``items`` None: not reported within the budget)
    answers: dict[Path, _Answer] = attrs.field(factory=dict)
    #: the files beyond the file budget
    beyond: list[Path] = attrs.field(factory=list)
    failure: str | None = None


async def new_diagnostics_note(supervisor: LspSupervisor, result: tether.ToolResult) -> str | None:
    """What to add to a successful call's result: the new diagnostics of every file it wrote
    (``result.written``, absolute paths inside the workdir), or None."""
    ledger = supervisor.ledger
    paths = [
        path
        for path in result.written
        # no server handles this kind of file: nothing to check, nothing to say
        if path.is_file() and not supervisor.quiet_without_server(path)
    ]
    await _note_renames(supervisor, result)
    clients_of, notes, by_client = await diagnosing_clients(supervisor, paths)
    answers: dict[tuple[int, Path], _Answer] = {}
    dependents: dict[int, _Dependents] = {}
    timeout = supervisor.config.diagnostics_timeout_s

    # every server at once: one slow server does not make the others wait behind it
    async with anyio.create_task_group() as group:
        for client, files in by_client:
            group.start_soon(_ask, supervisor, result, client, files, answers, dependents)
    out: list[str] = []
    for path in paths:
        clients = clients_of.get(path, [])
        got = [(client, answers[(id(client), path)]) for client in clients]
        note = _describe(supervisor, ledger, path, got, notes[path], timeout)
        if note:
            out.append(note)
    for client, _ in by_client:
        if id(client) in dependents:
            note = _describe_dependents(supervisor, client, dependents[id(client)])
            stale = coverage.stale_note(client)
            lines = [line for line in (note, stale and f"({stale})") if line]
            if lines:
                out.append("\n".join(lines))
    return "\n" + "\n\n".join(out) if out else None


async def _note_renames(supervisor: LspSupervisor, result: tether.ToolResult) -> None:
    """Tell the ledger which identifiers the call renamed (a message naming the new name is
    then not new for having been renamed)."""
    texts: list[tuple[str, str]] = []
    for path, previous in result.before.items():
        if previous is None:
            continue
        try:
            new = await reading.read_text(supervisor.run.workdir, path, errors="replace")
        except (OSError, tether.ToolError):
            continue
        texts.append((previous.decode("utf-8", errors="replace"), new))
    supervisor.ledger.renamed(renamed_identifiers(texts))


async def diagnosing_clients(
    supervisor: LspSupervisor, paths: Iterable[Path]
) -> tuple[dict[Path, list[LspClient]], dict[Path, list[str]], list[tuple[LspClient, list[Path]]]]:
    """The servers that diagnose each of ``paths`` with the notes about them, and the same
    grouped by server (each server is asked once for all its files). A path a server should
    answer for but cannot (missing, broken, no root marker) gets a note saying why: silence
    would read as "no new problems"."""
    clients_of: dict[Path, list[LspClient]] = {}
    notes: dict[Path, list[str]] = {}
    for path in paths:
        try:
            clients_of[path], notes[path] = await supervisor.diagnostic_clients(path)
        except tether.ToolError as exc:
            notes[path] = [f"diagnostics unavailable: {exc}"]
    by_client: dict[int, tuple[LspClient, list[Path]]] = {}
    for path, clients in clients_of.items():
        for client in clients:
            by_client.setdefault(id(client), (client, []))[1].append(path)
    return clients_of, notes, list(by_client.values())


async def _ask(
    supervisor: LspSupervisor,
    result: tether.ToolResult,
    client: LspClient,
    files: list[Path],
    answers: dict[tuple[int, Path], _Answer],
    dependents: dict[int, _Dependents],
) -> None:
    """``client``'s word on ``files``, into ``answers``: the baseline of each file the run has
    not seen yet, then, once the whole change has reached it, the diagnostics of the new text;
    and the same for the files that use names the change altered, into ``dependents``."""
    for path in files:
        answers[(id(client), path)] = _Answer()
    mine = {path: answers[(id(client), path)] for path in files}
    deps = await _find_dependents(supervisor, client, files, result.before)
    if deps is not None:
        dependents[id(client)] = deps
    try:
        await _ask_baselines(supervisor, client, mine, result.before, deps)
        await _ask_written(supervisor, client, mine, deps)
    except tether.ToolError as exc:
        for answer in mine.values():
            answer.failure = f"{client.spec.id}: {exc}"
        if deps is not None:
            deps.failure = f"{client.spec.id}: {exc}"


async def _ask_baselines(
    supervisor: LspSupervisor,
    client: LspClient,
    answers: dict[Path, _Answer],
    before: Any,
    deps: _Dependents | None,
) -> None:
    """The baseline of each written file (``answers``' keys) the run has not seen yet, and of
    each dependent: the server is given the text every file had before the call, all of it,
    then asked for its diagnostics."""
    ledger = supervisor.ledger
    previous = {}
    for path in answers:
        if not ledger.knows(path):
            previous[path] = await _send_previous(client, path, before)
    if deps is not None and any(not ledger.knows(p) for p in deps.answers):
        # a dependent's baseline is its diagnostics against the old text of the change
        for path in answers:
            if path not in previous:
                await _send_previous(client, path, before)
    # a first look at a file waits as a query's does (a cold server loads its
    # configuration and project meanwhile), so its start-up does not cost the baseline
    config = supervisor.config
    deadline = anyio.current_time() + max(config.ready_timeout_s, config.diagnostics_timeout_s)
    if previous:
        await client.wait_ready(time_left(deadline), index=False)
    for path, doc in previous.items():
        if doc is not None:
            got = await client.current_diagnostics(doc, time_left(deadline))
            answers[path].baseline = None if got is None else [d for d in got if is_reported(d)]
            answers[path].before_text = doc.text
        elif path in before:
            answers[path].baseline = []  # created by the call
    if deps is not None:
        deadline = anyio.current_time() + config.dependents_timeout_s
        await _dependent_baselines(client, ledger, deps, deadline)


async def _ask_written(
    supervisor: LspSupervisor,
    client: LspClient,
    answers: dict[Path, _Answer],
    deps: _Dependents | None,
) -> None:
    """The diagnostics of the new text of each written file (``answers``' keys) and of each
    dependent: the whole change reaches the server before any of it is diagnosed."""
    await client.refresh_documents()
    docs = []
    for path in answers:
        doc, _ = await client.sync_document(path)
        await client.save(doc)
        docs.append(doc)
    deadline = anyio.current_time() + supervisor.config.diagnostics_timeout_s
    got_all = await diagnose_change(client, docs, deadline, client.resend)
    for answer, doc, items in zip(answers.values(), docs, got_all, strict=True):
        answer.take(items, doc)
    if deps is not None:
        deadline = anyio.current_time() + supervisor.config.dependents_timeout_s
        await _dependent_diagnostics(client, deps, deadline)


async def _find_dependents(
    supervisor: LspSupervisor, client: LspClient, files: list[Path], before: Any
) -> _Dependents | None:
    """The files of ``client``'s root that use a name the write changed in ``files``, the
    first ``dependents_limit`` of them to check; None for a diagnostics-only server (a linter
    sees no other file) or when nothing names a declaration."""
    limit = supervisor.config.dependents_limit
    if client.spec.companion or limit == 0:
        return None
    declared: list[str] = []
    others: list[str] = []
    for path in files:
        if path in before and before[path] is None:
            continue  # created by the call: nothing used it before
        old = _previous_text(client, path, before)
        if old is None:
            continue
        try:
            new = await reading.read_text(supervisor.run.workdir, path, errors="replace")
        except (OSError, tether.ToolError):
            continue
        first, rest = changed_names(old, new)
        declared += [name for name in first if name not in declared]
        others += [name for name in rest if name not in others]
    others = [name for name in others if name not in declared]
    if not declared and not others:
        return None
    candidates = client.source_files()
    found = await reading.off_loop(
        supervisor.run.workdir,
        lambda reader: find_dependents(reader, candidates, files, declared, others),
    )
    if not found.files and not found.unread:
        return _Dependents(found, files) if found.searched else None
    deps = _Dependents(found, files, beyond=list(found.files[limit:]))
    for path in found.files[:limit]:
        deps.answers[path] = _Answer()
    return deps


def _previous_text(client: LspClient, path: Path, before: Any) -> str | None:
    """``path``'s text before the call: as the core recorded it, else as the server has it."""
    if path in before:
        previous = before[path]
        return "" if previous is None else previous.decode("utf-8", errors="replace")
    doc = client.documents.get(path.as_uri())
    return None if doc is None else doc.text


async def _dependent_baselines(
    client: LspClient, ledger: DiagnosticLedger, deps: _Dependents, deadline: float
) -> None:
    """Each dependent the run has no baseline for, opened while the server still has the old
    text of the change: its diagnostics then are its baseline."""
    opened = []
    for path in deps.answers:
        if ledger.knows(path):
            continue
        try:
            doc, _ = await client.sync_document(path)
        except reading.UnreadableFile:
            continue
        opened.append((path, doc))
    for path, doc in opened:
        got = await client.current_diagnostics(doc, time_left(deadline))
        deps.answers[path].baseline = None if got is None else [d for d in got if is_reported(d)]


async def _dependent_diagnostics(client: LspClient, deps: _Dependents, deadline: float) -> None:
    """The dependents' diagnostics once the whole change has reached the server: each is
    sent again (a new version, so its next report is on the new state — clangd rebuilds its
    preamble from the changed header then), bounded by ``deadline``."""
    docs = []
    for path in deps.answers:
        try:
            doc, _ = await client.sync_document(path)
        except reading.UnreadableFile:
            continue
        docs.append((path, doc))
        if client.pushes_diagnostics:
            await client.resend(doc, rebuild=True)
    got = await diagnose_change(client, [doc for _, doc in docs], deadline, client.resend, True)
    for (path, doc), items in zip(docs, got, strict=True):
        deps.answers[path].take(items, doc)


#: how long a pushing server must send nothing before a multi-file change's pushes are taken
SETTLE_S = 0.5


async def diagnose_change(
    client: LspClient,
    docs: list[OpenDocument],
    deadline: float,
    resend: Callable[[OpenDocument], Awaitable[None]],
    resent: bool = False,
) -> list[list[types.Diagnostic] | None]:
    """The diagnostics of every document of a change, each sent already (None: not in time),
    taken once the whole change has reached the server (``resent``: each was sent again
    after all of it already)."""
    if (len(docs) > 1 or resent) and client.pushes_diagnostics:
        # a pushing server may have diagnosed the first files before the rest arrived
        # (clangd: a source before its edited header): each is sent again, after all
        if not resent:
            for doc in docs:
                await resend(doc)
        # and a version's first push may still be on the old state (clangd publishes
        # main.c once with its stale preamble, then again ~0.1 s later): its pushes
        # are taken once it has been quiet for a moment
        for doc in docs:
            await client.diagnostics_for(doc, time_left(deadline))
        await _quiet(client, deadline)
    return [await client.current_diagnostics(doc, time_left(deadline)) for doc in docs]


async def _quiet(client: LspClient, deadline: float) -> None:
    """Until ``client`` has published nothing for :data:`SETTLE_S` (bounded by ``deadline``)."""
    while anyio.current_time() < deadline:
        seq = client.publish_seq
        wait = min(SETTLE_S, deadline - anyio.current_time())
        if not await client.wait_until(lambda: client.publish_seq != seq, wait):  # noqa: B023
            return


def time_left(deadline: float) -> float:
    """What remains of one wait shared by several files (a little, when nothing does)."""
    return max(0.05, deadline - anyio.current_time())


async def _send_previous(client: LspClient, path: Path, before: Any) -> OpenDocument | None:
    """Give the server ``path``'s text from before the call, so its diagnostics can be the
    baseline: the previous content the core recorded, else the document the server has open
    (the disk already holds the new text). None when the call created the file (an empty
    baseline) or neither is known (no baseline)."""
    uri = path.as_uri()
    if path in before:
        previous = before[path]
        if previous is None:
            return None
        text = previous.decode("utf-8", errors="replace")
    elif uri in client.documents:
        text = client.documents[uri].text
    else:
        return None
    had = client.documents.get(uri)
    reverted = had is not None and had.text != text
    doc = await client.send_text(path, text)
    doc.previous_text = True
    if reverted and client.pushes_diagnostics:
        # back to a text it may have built already, the new one in between never built
        # (clangd debounces): it skips the version as unchanged and publishes nothing
        await client.resend(doc, rebuild=True)
    return doc


def is_reported(diagnostic: types.Diagnostic) -> bool:
    return (diagnostic.severity or 1) in REPORTED_SEVERITIES


@attrs.define
class _Gathered:
    """The servers' answers on one written file, sorted out."""

    notes: list[str]
    #: every server answered: what the run saw is the whole picture
    complete: bool
    #: each answering server's reported diagnostics of the text written
    current: Answers = attrs.field(factory=list)
    #: their baselines (None: some answering server has none)
    baselines: Answers | None = attrs.field(factory=list)
    text: str = ""
    doc: OpenDocument | None = None


def _describe(
    supervisor: LspSupervisor,
    ledger: DiagnosticLedger,
    path: Path,
    got: list[tuple[LspClient, _Answer]],
    notes: list[str],
    timeout: float,
) -> str:
    """The note for one written file: its new diagnostics, and why any server is missing."""
    rel = supervisor.relative(path)
    seen = _gather(supervisor, rel, got, notes, timeout)
    if seen.current and seen.baselines is not None and not ledger.knows(path):
        merged_before = merge_diagnostics(seen.baselines)
        before_text = next((answer.before_text for _, answer in got if answer.before_text), "")
        ledger.seed(
            path,
            [d for _, items in merged_before for d in items],
            _seen_before(merged_before, rel, before_text),
        )
    tail = "\n\n".join(f"({note})" for note in seen.notes)
    if not seen.current:
        return tail
    merged = merge_diagnostics(seen.current)
    known = ledger.knows(path)
    fresh = ledger.new_since_last(path, [d for _, items in merged for d in items])
    if seen.doc is not None and seen.complete:
        # what the run was told of the text just written: a checkpoint's baseline
        ledger.record(path, seen_of(merged, rel, seen.doc))
    fresh_ids = {id(d) for d in fresh}
    news = [(client, [d for d in items if id(d) in fresh_ids]) for client, items in merged]
    if not fresh:
        return tail
    return _news_note(news, len(fresh), rel, seen.text, known, tail)


def _gather(
    supervisor: LspSupervisor,
    rel: str,
    got: list[tuple[LspClient, _Answer]],
    notes: list[str],
    timeout: float,
) -> _Gathered:
    """Each server's answer on ``rel`` (``got``) sorted into diagnostics, baselines and notes
    (after ``notes``) on the servers that failed or are late."""
    seen = _Gathered(notes=list(notes), complete=not notes)
    for client, answer in got:
        if answer.failure is not None:
            seen.notes.append(answer.failure)
            seen.complete = False
            continue
        if answer.items is None:
            # not "nothing new": the answer is on its way and the next question gets it
            seen.notes.append(
                f"{client.spec.id} is still computing the diagnostics of {rel} after "
                f"{timeout:g} s: not computed yet for the text just written; `lsp diagnostics` "
                f"for {rel} gives them once it is done"
            )
            seen.complete = False
            continue
        seen.current.append((client, [d for d in answer.items if is_reported(d)]))
        root_note = supervisor.root_note(client)
        if root_note:
            seen.notes.append(root_note)
        seen.text = answer.text
        seen.doc = seen.doc or answer.doc
        if answer.baseline is None:
            seen.baselines = None
        elif seen.baselines is not None:
            seen.baselines.append((client, answer.baseline))
    return seen


def _seen_before(answers: Answers, rel: str, text: str) -> Seen:
    """A write's baseline as the ledger keeps it for a checkpoint: each diagnostic with its
    row on the text it was computed on."""
    items = tuple(
        (item, format_diagnostics([item], rel, text, client.encoding)[0])
        for client, found in answers
        for item in found
    )
    return Seen(items, None)


def _news_note(news: Answers, count_new: int, rel: str, text: str, known: bool, tail: str) -> str:
    """The new diagnostics of one written file (``news``, ``count_new`` of them), capped, with
    the notes (``tail``) after them."""
    rows = format_merged(news, rel, text)
    shown, note = cap(rows, CAP, "diagnostics shown")
    names = ", ".join(client.spec.id for client, items in news if items)
    count = f"{count_new}, {note}" if note else f"{count_new}"
    if known:
        head = f"New diagnostics from {names} ({count}):"
    else:
        # never call an old error new: without the text's earlier diagnostics nobody knows
        head = (
            f"Diagnostics of {rel} from {names} ({count}; baseline unknown: {rel} was not "
            "checked before this write and its earlier text is unknown, so some may predate it):"
        )
    return head + "\n" + "\n".join(shown) + ("\n\n" + tail if tail else "")


def _listed(rels: list[str], limit: int = 8) -> str:
    shown = ", ".join(rels[:limit])
    return shown + (f" and {len(rels) - limit} more" if len(rels) > limit else "")


@attrs.define
class _DependentNews:
    """What the dependents' answers say: their new diagnostics' rows and the files seen."""

    rows: list[str] = attrs.field(factory=list)
    #: new diagnostics in all
    count: int = 0
    #: files with new diagnostics but no baseline
    unknown: list[str] = attrs.field(factory=list)
    checked: list[str] = attrs.field(factory=list)
    #: files the server did not report on in time
    late: list[str] = attrs.field(factory=list)


def _describe_dependents(supervisor: LspSupervisor, client: LspClient, deps: _Dependents) -> str:
    """The note on the files that use names the write changed: their new diagnostics (under
    the ledger's rule, as a written file's), then where the server looked and what it did not
    check. Said even when nothing is new: an empty answer says where it looked."""
    server = client.spec.id
    where = ", ".join(supervisor.relative(path) for path in deps.written)
    used = _listed([f"`{name}`" for name in deps.found.names], 5)
    if len(deps.found.names) > 1:
        used = f"one of {used}"
    if deps.failure is not None:
        return f"({deps.failure}: the files that use names changed in {where} were not checked)"
    if not deps.answers and not deps.found.unread:
        searched = deps.found.searched
        return (
            f"(none of the {searched} other file{'s' if searched != 1 else ''} {server} "
            f"covers uses a name changed in {where})"
        )
    news = _dependent_news(supervisor, client, deps)
    notes = _dependent_notes(supervisor, server, deps, news, used, where)
    tail = "\n".join(f"({note})" for note in notes)
    if not news.rows:
        return tail
    shown, note = cap(news.rows, CAP, "diagnostics shown")
    total = f"{news.count}, {note}" if note else f"{news.count}"
    head = f"New diagnostics in files that use {used} (changed in {where}), from {server} ({total}"
    if news.unknown:
        head += (
            f"; baseline unknown for {_listed(news.unknown)}: not checked before this write, "
            "so some may predate it"
        )
    return head + "):\n" + "\n".join(shown) + ("\n" + tail if tail else "")


def _dependent_news(
    supervisor: LspSupervisor, client: LspClient, deps: _Dependents
) -> _DependentNews:
    """The dependents' new diagnostics under the ledger's rule (each answer's baseline seeds
    the ledger when it has none), recording what the run is told of each."""
    ledger = supervisor.ledger
    news = _DependentNews()
    for path, answer in deps.answers.items():
        rel = supervisor.relative(path)
        if answer.items is None or answer.doc is None:
            news.late.append(rel)
            continue
        news.checked.append(rel)
        merged = merge_diagnostics([(client, [d for d in answer.items if is_reported(d)])])
        items = merged[0][1]
        if not ledger.knows(path) and answer.baseline is not None:
            before = merge_diagnostics([(client, answer.baseline)])
            ledger.seed(path, answer.baseline, _seen_before(before, rel, answer.text))
        known = ledger.knows(path)
        fresh = ledger.new_since_last(path, items)
        ledger.record(path, seen_of(merged, rel, answer.doc))
        if not fresh:
            continue
        if not known:
            news.unknown.append(rel)
        ids = {id(d) for d in fresh}
        news.rows += format_merged([(client, [d for d in items if id(d) in ids])], rel, answer.text)
        news.count += len(fresh)
    return news


def _dependent_notes(
    supervisor: LspSupervisor,
    server: str,
    deps: _Dependents,
    news: _DependentNews,
    used: str,
    where: str,
) -> list[str]:
    """Where ``server`` looked for the files that use ``used`` and what it did not check."""
    notes: list[str] = []
    timeout = supervisor.config.dependents_timeout_s
    if news.checked and not news.rows:
        notes.append(
            f"{server} checked {_listed(news.checked)}, the files that use {used} (changed in "
            f"{where}): nothing new there"
        )
    elif news.checked:
        notes.append(f"checked by {server}: {_listed(news.checked)}, the files that use {used}")
    if news.late:
        notes.append(
            f"{server} did not report on {_listed(news.late)} within {timeout:g} s of the write: "
            "not checked; `lsp diagnostics` on them gives their diagnostics"
        )
    if deps.beyond:
        rels = [supervisor.relative(path) for path in deps.beyond]
        notes.append(
            f"{len(rels)} more file{'s' if len(rels) != 1 else ''} use {used}; not checked "
            f"(beyond `dependents_limit` = {supervisor.config.dependents_limit}): {_listed(rels)}"
        )
    if deps.found.unread:
        rels = [supervisor.relative(path) for path in deps.found.unread]
        notes.append(f"not searched for those names (too large or unreadable): {_listed(rels)}")
    return notes

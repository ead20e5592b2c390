"""Checkpoints: a harness marks one (per turn, say) and later asks which diagnostics were
introduced, fixed or already there since it, whoever wrote the files meanwhile.

A checkpoint's baseline is what the run already knows, taken at once without asking a server:
the diagnostics it last saw of each file (the ledger), kept only when the file on disk still has
the text they were computed on. A file the run had not seen, or that changed on disk since, has
no baseline, and its answer says "baseline unknown" instead of calling its diagnostics new.
"""

from __future__ import annotations

import os
import stat as stat_mode
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import attrs

import tether
from tether.text import LISTED_NAME_CHARS, cap, listing, truncate
from tether.workdir.reading import Reader, UnreadableFile, off_loop
from tether_lsp.ledger import Seen, Stamp, diagnostic_key

if TYPE_CHECKING:
    from tether_lsp.supervisor import LspSupervisor

#: files one ``since`` answer checks (each is asked of its servers)
FILES_CAP = 50
#: rows shown per file and kind
ROWS_CAP = 20
#: checkpoints a run keeps; marking one more forgets the oldest (and says so)
CHECKPOINTS_CAP = 100
#: a file's mtime comes from the kernel's coarse clock, which may lag the wall clock by a tick
#: (4-10 ms): a write just after the mark can carry a time just before it
MTIME_SLACK_NS = 50_000_000


@attrs.frozen
class Checkpoint:
    name: str
    #: wall clock at the mark (ns), for the files changed on disk since
    marked_ns: int
    #: what the run knew of each file then; None: the file changed on disk since it was seen
    baseline: dict[Path, Seen | None]


class Checkpoints:
    """The checkpoints of one run, by name."""

    def __init__(self) -> None:
        self._marked: dict[str, Checkpoint] = {}

    def get(self, name: str) -> Checkpoint:
        found = self._marked.get(name)
        if found is None:
            known = listing(self._marked, empty="none yet")
            raise tether.ArgumentError(
                "since",
                f'a checkpoint marked in this run with action "checkpoint" (marked: {known}), '
                f"not {truncate(name, LISTED_NAME_CHARS)!r}",
            )
        return found

    async def mark(self, supervisor: LspSupervisor, name: str | None) -> str:
        name = name or f"cp{len(self._marked) + 1}"
        marked_ns = time.time_ns()
        seen = supervisor.ledger.seen()
        stamps = await off_loop(supervisor.workdir, lambda reader: _stamps(reader, list(seen)))
        baseline = {
            path: item if item.stamp is not None and stamps.get(path) == item.stamp else None
            for path, item in seen.items()
        }
        replaced = name in self._marked
        self._marked.pop(name, None)
        forgotten = []
        while len(self._marked) >= CHECKPOINTS_CAP:
            oldest = next(iter(self._marked))
            forgotten.append(oldest)
            del self._marked[oldest]
        self._marked[name] = Checkpoint(name, marked_ns, baseline)
        known = sum(1 for item in baseline.values() if item is not None)
        stale = len(baseline) - known
        text = (
            f'checkpoint "{name}" {"marked again" if replaced else "marked"}: a baseline for '
            f"{known} file{'s' if known != 1 else ''} (the diagnostics this run last saw of them)"
        )
        if stale:
            text += f"; {stale} changed on disk since they were seen (baseline unknown)"
        text += (
            "; any other file's baseline is unknown. Ask "
            f'{{"action": "diagnostics", "since": "{name}"}} for what changed since.'
        )
        if forgotten:
            text += (
                f" A run keeps {CHECKPOINTS_CAP} checkpoints: the oldest, "
                f"{listing(forgotten)}, is forgotten."
            )
        return text


def _stamps(reader: Reader, paths: list[Path]) -> dict[Path, Stamp]:
    found: dict[Path, Stamp] = {}
    for path in paths:
        try:
            info = reader.stat(path)
        except (UnreadableFile, tether.ToolError):
            continue
        found[path] = (info.st_mtime_ns, info.st_size)
    return found


def _changed_since(reader: Reader, suffixes: frozenset[str], since_ns: int) -> list[str]:
    """Source files under the reader's root modified at or after ``since_ns``."""
    from tether_lsp.documents import scan_root  # with the first server, not when a run opens

    return [
        path
        for path, (mtime_ns, _) in scan_root(reader, suffixes).items()
        if mtime_ns >= since_ns - MTIME_SLACK_NS
    ]


async def changed_files(supervisor: LspSupervisor, since_ns: int) -> set[Path]:
    """Files written by any process since ``since_ns``, in the roots of the running servers."""
    roots: dict[Path, set[str]] = {}
    for client in supervisor.clients:
        roots.setdefault(client.root, set()).update(client.spec.extensions)
    found: set[Path] = set()
    for root, suffixes in roots.items():
        if root != supervisor.workdir and supervisor.workdir not in root.parents:
            continue
        look = partial(_changed_since, suffixes=frozenset(suffixes), since_ns=since_ns)
        changed = await off_loop(root, look)
        found.update(Path(path) for path in changed)
    return found


@attrs.frozen
class _Change:
    introduced: list[str]
    fixed: list[str]
    already: list[str]


def compare(baseline: Seen, now: Seen) -> _Change:
    """Rows introduced, fixed and already there, by (severity, code, message) counts: a
    diagnostic that only moved is already there."""
    before = Counter(diagnostic_key(item) for item, _ in baseline.items)
    budget = Counter(before)
    introduced: list[str] = []
    already: list[str] = []
    for item, row in now.items:
        key = diagnostic_key(item)
        if budget[key] > 0:
            budget[key] -= 1
            already.append(row)
        else:
            introduced.append(row)
    left = Counter(budget)
    fixed: list[str] = []
    for item, row in baseline.items:
        key = diagnostic_key(item)
        if left[key] > 0:
            left[key] -= 1
            fixed.append(row)
    return _Change(introduced, fixed, already)


def _rows(kind: str, rows: list[str]) -> list[str]:
    if not rows:
        return []
    shown, note = cap(rows, ROWS_CAP, "shown")
    return [f"  {kind}{f' ({note})' if note else ''}:", *(f"    {row}" for row in shown)]


async def since(supervisor: LspSupervisor, checkpoint: Checkpoint, path: Path | None) -> str:
    """What changed in the diagnostics since ``checkpoint``: of ``path``, or of every file the
    checkpoint has a word on and every file written since (by any process)."""
    if path is not None:
        files = [path]
    else:
        changed = await changed_files(supervisor, checkpoint.marked_ns)
        files = sorted(set(checkpoint.baseline) | changed)
    header = f'Since checkpoint "{checkpoint.name}"'
    if not files:
        return (
            f"{header}: no file to compare — the run had seen no file's diagnostics when it was "
            "marked, and no source file changed since"
        )
    shown_files, cap_note = cap(files, FILES_CAP, "files checked")
    totals = Counter[str]()
    blocks: list[str] = []
    quiet: list[str] = []
    for file in shown_files:
        block = await _file_since(supervisor, checkpoint, file, totals)
        if block is None:
            quiet.append(supervisor.relative(file))
        else:
            blocks.append(block)
    summary = (
        f"{header} (errors and warnings; {len(shown_files)} file"
        f"{'s' if len(shown_files) != 1 else ''}{f', {cap_note}' if cap_note else ''}): "
        f"{totals['introduced']} introduced, {totals['fixed']} fixed, "
        f"{totals['already']} already there"
    )
    if totals["unknown"]:
        summary += f"; {totals['unknown']} with baseline unknown"
    if quiet:
        blocks.append(f"no diagnostics then or now: {', '.join(quiet)}")
    return summary + "\n" + "\n".join(blocks)


async def _file_since(
    supervisor: LspSupervisor, checkpoint: Checkpoint, file: Path, totals: Counter[str]
) -> str | None:
    """``file``'s block of :func:`since`, its counts added to ``totals``; None when it had no
    diagnostics then and has none now."""
    from tether_lsp.queries import gather_diagnostics

    rel = supervisor.relative(file)
    if not await anyio.to_thread.run_sync(_is_regular, file):
        had = checkpoint.baseline.get(file)
        count = len(had.items) if had is not None else 0
        return f"{rel}: deleted since the checkpoint ({count} diagnostics then)"
    try:
        got = await gather_diagnostics(supervisor, file)
    except tether.ToolError as exc:
        return f"{rel}: diagnostics unavailable: {exc}"
    notes = "".join(f"\n  ({note})" for note in got.notes)
    if got.doc is None or not got.answers:
        return f"{rel}: not computed yet{notes}"
    from tether_lsp.queries import seen_of

    now = seen_of(got.answers, rel, got.doc)
    names = ", ".join(client.spec.id for client, _ in got.answers)
    baseline = checkpoint.baseline.get(file)
    if baseline is None and file not in checkpoint.baseline:
        # the run's first write of it came after the mark: that write's baseline is the
        # diagnostics of the text it had then
        baseline = supervisor.ledger.baseline_since(file, checkpoint.marked_ns)
    if baseline is None:
        why = (
            "it changed on disk after the run last saw its diagnostics"
            if file in checkpoint.baseline
            else "the run had not seen its diagnostics"
        )
        totals["unknown"] += 1
        rows = [row for _, row in now.items]
        head = f"{rel} ({names}): baseline unknown ({why}): {len(rows)} now"
        return "\n".join([head, *_rows("now", rows)]) + notes
    change = compare(baseline, now)
    totals["introduced"] += len(change.introduced)
    totals["fixed"] += len(change.fixed)
    totals["already"] += len(change.already)
    if not (change.introduced or change.fixed or change.already):
        return None
    head = (
        f"{rel} ({names}): {len(change.introduced)} introduced, {len(change.fixed)} fixed, "
        f"{len(change.already)} already there"
    )
    lines = [head, *_rows("introduced", change.introduced)]
    lines += _rows("fixed (as they were at the checkpoint)", change.fixed)
    lines += _rows("already there", change.already)
    return "\n".join(lines) + notes


def _is_regular(path: Path) -> bool:
    try:
        return stat_mode.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False

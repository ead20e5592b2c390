"""Which diagnostics a run has already been told about.

Keyed on (severity, code, message) per file — the position is deliberately left out, so a
diagnostic that merely moved is not new; a key whose count grows is new. Nothing old is ever
new: what the run first knew of a file (its first answer, or the baseline of its first write)
stays known, so a write that restores a file's original text does not report the file's old
diagnostics again; a diagnostic the run itself introduced, fixed and brought back is reported
again. A rename maps the old name into messages: after a change that replaced identifiers
(``_OBJ_SETATTR`` → ``_OBJECT_SETATTR`` on every line it touched, by ``lsp_rename`` or by an
edit), a known diagnostic's message with the old name replaced by the new one is known too.
Beside the keys, the last set seen of each file (with its rendered rows and the disk
stamp of the text it was computed on) is kept for checkpoints (:mod:`tether_lsp.checkpoints`),
and so is each first write's baseline, which is a later checkpoint's baseline for that file.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from lsprotocol import types

Key = tuple[int, str, str]
#: (mtime_ns, size) of the file on disk when its text was sent to the server
Stamp = tuple[int, int]


@attrs.frozen
class Seen:
    """The diagnostics the run last saw of a file: each with its row as it was shown then, and
    the stamp of the disk text they were computed on (None: not the disk's text)."""

    items: tuple[tuple[types.Diagnostic, str], ...]
    stamp: Stamp | None


def diagnostic_key(diagnostic: types.Diagnostic) -> Key:
    code = diagnostic.code
    return (
        int(diagnostic.severity or 1),
        "" if code is None else str(code),
        diagnostic.message.strip(),
    )


class DiagnosticLedger:
    def __init__(self) -> None:
        self._known: dict[Path, Counter[Key]] = {}
        self._seen: dict[Path, Seen] = {}
        #: what the run first knew of each file: never new
        self._first: dict[Path, Counter[Key]] = {}
        #: the baseline of the run's first write of a file it had not seen: (wall clock ns
        #: when taken, the diagnostics of the text before the write)
        self._baselines: dict[Path, tuple[int, Seen]] = {}
        #: the identifiers the run's changes renamed, (old, new), in order
        self._renames: list[tuple[str, str]] = []

    def renamed(self, pairs: Iterable[tuple[str, str]]) -> None:
        """A change renamed these identifiers: from now on a known message with the old name
        is known with the new one too."""
        self._renames += [pair for pair in pairs if pair not in self._renames]

    def record(self, path: Path, seen: Seen) -> None:
        """The run was told ``seen`` of ``path`` (an answer or a write's note): it is what is
        known now, for the next write's "new" and for the next checkpoint."""
        counts = Counter(diagnostic_key(item) for item, _ in seen.items)
        self._known[path] = counts
        self._first.setdefault(path, counts)
        self._seen[path] = seen

    def seen(self) -> dict[Path, Seen]:
        """What the run last saw of each file (a copy: a checkpoint keeps it as it is now)."""
        return dict(self._seen)

    def knows(self, path: Path) -> bool:
        """Whether ``path`` has a baseline: what the run was told of it before."""
        return path in self._known

    def seed(
        self, path: Path, diagnostics: list[types.Diagnostic], seen: Seen | None = None
    ) -> None:
        """What the server said about ``path``'s text before this run's first write to it
        (``seen``: the same with their rows, for a checkpoint marked before the write)."""
        if path not in self._known:
            counts = key_counts(diagnostics)
            self._known[path] = counts
            self._first.setdefault(path, counts)
            if seen is not None:
                self._baselines[path] = (time.time_ns(), seen)

    def baseline_since(self, path: Path, since_ns: int) -> Seen | None:
        """The diagnostics ``path`` had before the run's first write to it, when that write
        came after ``since_ns`` (a checkpoint's mark): the file's text at the mark, unless
        another process changed it in between."""
        got = self._baselines.get(path)
        return got[1] if got is not None and got[0] >= since_ns else None

    def new_since_last(
        self, path: Path, diagnostics: list[types.Diagnostic]
    ) -> list[types.Diagnostic]:
        """The diagnostics not reported before for ``path`` (nor known when the run first saw
        it); remembers the current set."""
        known = self._known.get(path, Counter()) | self._first.get(path, Counter())
        known = with_renames(known, self._renames)
        fresh = new_against(known, diagnostics)
        # a fixed diagnostic is forgotten, so breaking it again is reported again
        self._known[path] = key_counts(diagnostics)
        return fresh


def key_counts(diagnostics: list[types.Diagnostic]) -> Counter[Key]:
    return Counter(diagnostic_key(d) for d in diagnostics)


def new_against(known: Counter[Key], diagnostics: list[types.Diagnostic]) -> list[types.Diagnostic]:
    """The diagnostics beyond ``known`` (counts per key): a key whose count grew is new."""
    current = key_counts(diagnostics)
    budget = {key: count - known.get(key, 0) for key, count in current.items()}
    fresh: list[types.Diagnostic] = []
    # a second copy is usually the later one in the file: report from the end
    for diagnostic in reversed(diagnostics):
        key = diagnostic_key(diagnostic)
        if budget[key] > 0:
            budget[key] -= 1
            fresh.append(diagnostic)
    fresh.reverse()
    return fresh


_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")


def renamed_identifiers(changes: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The identifiers a change renamed, (old, new), from each file's (text before, text
    after): on the lines it replaced one for one, those whose text differs only by identifiers,
    each old name always replaced by the same new one, and declared in one of the texts before
    (``def``, ``class``, ``struct`` …): a use of one undefined name swapped for another is a new
    error, not a rename."""
    from tether_lsp.coverage import declaration_pattern

    befores: list[str] = []
    seen: dict[str, str | None] = {}
    import difflib  # only when a change replaced lines: not at start-up

    for before, after in changes:
        befores.append(before)
        old_lines, new_lines = before.splitlines(), after.splitlines()
        matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "replace" or i2 - i1 != j2 - j1:
                continue
            for old, new in zip(old_lines[i1:i2], new_lines[j1:j2], strict=True):
                if _IDENTIFIER.split(old) != _IDENTIFIER.split(new):
                    continue  # more than identifiers changed on this line
                for a, b in zip(_IDENTIFIER.findall(old), _IDENTIFIER.findall(new), strict=True):
                    if a != b:
                        seen[a] = b if seen.get(a, b) == b else None

    def declared(name: str) -> bool:
        pattern = declaration_pattern(name)
        return any(
            name in text and any(pattern.search(line) for line in text.splitlines())
            for text in befores
        )

    return [(a, b) for a, b in seen.items() if b is not None and declared(a)]


def with_renames(known: Counter[Key], renames: list[tuple[str, str]]) -> Counter[Key]:
    """``known`` and, for each rename in order, each known message with the old name (as a
    whole identifier) replaced by the new one."""
    if not renames:
        return known
    result = Counter(known)
    for old, new in renames:
        pattern = re.compile(rf"(?<![\w$]){re.escape(old)}(?![\w$])")
        for (severity, code, message), count in list(result.items()):
            mapped = pattern.sub(new.replace("\\", "\\\\"), message)
            if mapped != message:
                key = (severity, code, mapped)
                result[key] = max(result[key], count)
    return result

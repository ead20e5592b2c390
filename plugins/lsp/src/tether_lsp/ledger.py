"""Which diagnostics a run has already been told about.

Keyed on (severity, code, message) per file — the position is deliberately left out, so a
diagnostic that merely moved is not new; a key whose count grows is new.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

Key = tuple[int, str, str]


def diagnostic_key(diagnostic: dict[str, Any]) -> Key:
    code = diagnostic.get("code")
    return (
        int(diagnostic.get("severity") or 1),
        "" if code is None else str(code),
        str(diagnostic.get("message", "")).strip(),
    )


class DiagnosticLedger:
    def __init__(self) -> None:
        self._known: dict[Path, Counter[Key]] = {}

    def knows(self, path: Path) -> bool:
        """Whether ``path`` has a baseline: what the run was told of it before."""
        return path in self._known

    def seed(self, path: Path, diagnostics: list[dict[str, Any]]) -> None:
        """What the server said about ``path``'s text before this run's first write to it."""
        if path not in self._known:
            self._known[path] = key_counts(diagnostics)

    def new_since_last(self, path: Path, diagnostics: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The diagnostics not reported before for ``path``; remembers the current set."""
        fresh = new_against(self._known.get(path, Counter()), diagnostics)
        # a fixed diagnostic is forgotten, so breaking it again is reported again
        self._known[path] = key_counts(diagnostics)
        return fresh


def key_counts(diagnostics: list[dict[str, Any]]) -> Counter[Key]:
    return Counter(diagnostic_key(d) for d in diagnostics)


def new_against(known: Counter[Key], diagnostics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The diagnostics beyond ``known`` (counts per key): a key whose count grew is new."""
    current = key_counts(diagnostics)
    budget = {key: count - known.get(key, 0) for key, count in current.items()}
    fresh: list[dict[str, Any]] = []
    # a second copy is usually the later one in the file: report from the end
    for diagnostic in reversed(diagnostics):
        key = diagnostic_key(diagnostic)
        if budget[key] > 0:
            budget[key] -= 1
            fresh.append(diagnostic)
    fresh.reverse()
    return fresh

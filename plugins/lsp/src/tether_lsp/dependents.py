"""The files that depend on a written one: where a write's effect on other files is looked for.

A change breaks other files through the names it changes (a function's parameters, a type, an
export): the names on the lines that differ between the text before and after the write — less
the languages' keywords — are looked up as whole words in the server's other source files
(those of its root with its extensions, as its scan knows them), a cheap textual pass bounded by
a byte budget. A file is ranked by how rare the names it uses are (a file using
``strbuffer_init`` before one that only says ``size``); the first ``limit`` are the ones whose
diagnostics are asked for, the others are named as not checked. The same rule holds for every
server and language: the header's callers in other ``.c`` files, a Go function's call sites in
other files of its package and its importers, a TypeScript export's importers, a Python
function's callers.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable
from pathlib import Path

import attrs

#: words of C/C++, Go, TypeScript/JavaScript, Python and Rust that name no declaration
_KEYWORDS = frozenset(
    """
    and as assert async await break case catch char class const continue def default del delete
    do double elif else enum except export extern false final finally float for from func go
    goto if impl import in int interface is lambda let long match mod none nonlocal not null or
    package pass pub raise range register return self short signed sizeof static struct super
    switch this throw true try type typedef typeof union unsigned use var void volatile while
    with yield bool string number any unknown never undefined function new void str bytes dict
    list tuple set object none true false int8 int16 int32 int64 uint uint8 uint16 uint32 uint64
    float32 float64 error byte rune map chan defer select fallthrough inline auto size_t const_cast
    template typename namespace using public private protected virtual override noexcept
    constexpr readonly declare abstract implements extends keyof infer satisfies of print
    """.split()
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: a source file larger than this is not read for names (generated code, bundles)
FILE_CAP = 1 << 20
#: the textual pass reads at most this much in all, then says what it left unread
SCAN_BUDGET = 64 << 20


def changed_names(before: str, after: str) -> list[str]:
    """The names on the lines that differ between ``before`` and ``after``, keywords and
    one-letter names left out, in order of first appearance."""
    old, new = before.splitlines(), after.splitlines()
    names: dict[str, None] = {}
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for line in (*old[i1:i2], *new[j1:j2]):
            for name in _WORD.findall(_code_part(line)):
                if len(name) > 1 and name.lower() not in _KEYWORDS:
                    names.setdefault(name)
    return list(names)


def _code_part(line: str) -> str:
    """The line without a trailing comment (``//`` or ``#`` after code): a comment's words
    name no declaration."""
    stripped = line.lstrip()
    if stripped.startswith(("//", "#", "/*", "*")) and not stripped.startswith(
        ("#include", "#define", "#import")
    ):
        return ""
    return line


@attrs.frozen
class Dependents:
    """The files that use names a write changed, best first (``files``); ``unread``: files the
    textual pass did not read (over the budget or unreadable)."""

    names: tuple[str, ...]
    files: tuple[Path, ...]
    unread: tuple[Path, ...] = ()
    #: how many files were searched
    searched: int = 0


def find_dependents(
    candidates: Iterable[Path], written: Iterable[Path], names: list[str]
) -> Dependents:
    """The files of ``candidates`` (not among ``written``) that use one of ``names`` as a
    whole word, those using the rarest names first. Blocking: run it off the event loop."""
    if not names:
        return Dependents((), ())
    skip = {Path(p) for p in written}
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b")
    uses: dict[Path, set[str]] = {}
    unread: list[Path] = []
    budget = SCAN_BUDGET
    searched = sorted(set(candidates) - skip)
    for path in searched:
        try:
            size = os.stat(path).st_size
            if size > FILE_CAP or size > budget:
                unread.append(path)
                continue
            budget -= size
            with open(path, "rb") as handle:
                text = handle.read().decode("utf-8", errors="replace")
        except OSError:
            unread.append(path)
            continue
        found = set(pattern.findall(text))
        if found:
            uses[path] = found
    frequency: dict[str, int] = {}
    for found in uses.values():
        for name in found:
            frequency[name] = frequency.get(name, 0) + 1

    def rank(path: Path) -> tuple[float, str]:
        return (-sum(1 / frequency[name] for name in uses[path]), str(path))

    files = sorted(uses, key=rank)
    used = {name for found in uses.values() for name in found}
    return Dependents(
        tuple(n for n in names if n in used), tuple(files), tuple(unread), len(searched)
    )

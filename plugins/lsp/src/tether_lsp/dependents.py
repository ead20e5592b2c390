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

from tether import ToolError
from tether.workdir.reading import Reader

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


#: a name declared or called on a line: before ``(`` or ``<`` (a function, a generic), or after
#: a word that declares one (``def``, ``func``, ``class``, ``type``, ``const`` …)
_DECLARED = re.compile(
    r"\b([A-Za-z_][A-Za-z0-9_]*)\s*[(<]"
    r"|\b(?:def|func|function|class|struct|enum|union|interface|type|typedef|const|let|var"
    r"|trait|impl|fn|module|namespace|define)\s+\*?([A-Za-z_][A-Za-z0-9_]*)"
)


def changed_names(before: str, after: str) -> tuple[list[str], list[str]]:
    """The names on the lines that differ between ``before`` and ``after``, keywords and
    one-letter names left out: (the names declared or called there — ``strbuffer_init`` of
    ``int strbuffer_init(strbuffer_t *strbuff)`` —, the others), each in order of first
    appearance."""
    old, new = before.splitlines(), after.splitlines()
    declared: dict[str, None] = {}
    names: dict[str, None] = {}
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for line in (*old[i1:i2], *new[j1:j2]):
            code = _code_part(line)
            for match in _DECLARED.finditer(code):
                # ``JANSSON_ATTRS((…))``: a macro around a declaration declares nothing
                if match[2] or not match[1].isupper():
                    declared.setdefault(match[1] or match[2])
            for name in _WORD.findall(code):
                names.setdefault(name)

    def kept(found: Iterable[str]) -> list[str]:
        return [name for name in found if len(name) > 1 and name.lower() not in _KEYWORDS]

    return kept(declared), kept(name for name in names if name not in declared)


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
    reader: Reader,
    candidates: Iterable[Path],
    written: Iterable[Path],
    declared: list[str],
    others: list[str],
) -> Dependents:
    """The files of ``candidates`` (not among ``written``) that use one of the names as a
    whole word: those using one of ``declared`` first, then by how rare the names they use
    are. Each is read through the core's ``reader`` (regular files only, no symlink followed,
    never blocking on a FIFO): run it with :func:`tether.workdir.reading.off_loop`."""
    names = [*declared, *others]
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
            text = reader.read(path, max_bytes=FILE_CAP).decode("utf-8", errors="replace")
        except (OSError, ToolError):
            unread.append(path)
            continue
        found = set(pattern.findall(text))
        if found:
            uses[path] = found
    frequency: dict[str, int] = {}
    for found in uses.values():
        for name in found:
            frequency[name] = frequency.get(name, 0) + 1

    # the files that use the rarest names declared on a changed line first, then by the
    # rarity of all the names they use
    first = set(declared)

    def rank(path: Path) -> tuple[float, float, str]:
        declared_score = sum(1 / frequency[name] for name in uses[path] & first)
        score = sum(1 / frequency[name] for name in uses[path])
        return (-declared_score, -score, str(path))

    files = sorted(uses, key=rank)
    used = {name for found in uses.values() for name in found}
    return Dependents(
        tuple(n for n in names if n in used), tuple(files), tuple(unread), len(searched)
    )

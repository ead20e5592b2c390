"""Regular expressions whose text or subject comes from outside tether (a rule's ``regex``, a
checkout's ignore globs, what a pattern or a configuration file spells): matched by RE2, in time
linear in the subject, never by a backtracking engine that a crafted expression can pin for
years.

RE2 has the syntax and the limits of ast-grep's own engine (Rust's ``regex`` crate): no
backreferences, no lookaround; an expression that needs either is refused with the reason, never
handed to Python's ``re``. Compiling is bounded too: a pattern whose program would exceed
:data:`MAX_PROGRAM_BYTES` (``a{1000}{1000}``) is refused.
"""

from __future__ import annotations

from typing import Any, AnyStr, Generic

import re2
from re2 import _re2

#: memory RE2 may give one compiled expression (its default: 8 MB)
MAX_PROGRAM_BYTES = 8 << 20


class RegexError(ValueError):
    """A pattern the linear engine cannot run; the message says why, for the model."""


def _options(latin1: bool) -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would print each refusal on the process's stderr
    options.max_mem = MAX_PROGRAM_BYTES
    if latin1:
        # a bytes pattern matches bytes: `[^\n]` takes any byte, not only valid UTF-8
        options.encoding = re2.Options.Encoding.LATIN1
    return options


_TEXT_OPTIONS = _options(latin1=False)
_BYTES_OPTIONS = _options(latin1=True)


#: inputs up to this many bytes have their answer remembered by :meth:`Regex.matches`
MEMO_INPUT_BYTES = 128
#: answers remembered per expression (admission, not eviction: past it, nothing more is kept)
MEMO_ENTRIES = 65_536


class Regex(Generic[AnyStr]):
    """A compiled expression; the subset of :class:`re.Pattern` tether uses, and
    :meth:`matches`, the fast test a matcher runs on every node."""

    __slots__ = ("_compiled", "_memo", "_program", "pattern")

    pattern: AnyStr

    def __init__(self, pattern: AnyStr, compiled: Any) -> None:
        self.pattern = pattern
        self._compiled = compiled
        self._program: Any = None
        self._memo: dict[bytes, bool] = {}

    def matches(self, data: bytes) -> bool:
        """Whether the expression matches somewhere in ``data`` (UTF-8 text, as bytes; for a
        text pattern an invalid sequence reads as U+FFFD).

        A matcher asks this of every node of a kind, most of them short and many the same
        (identifiers): the answer for a short input is remembered, and the call goes to RE2
        without the wrapper's str/offset conversions (they made it ten times Python's `re`)."""
        found = self._memo.get(data)
        if found is None:
            found = self._search(data)
            if len(data) <= MEMO_INPUT_BYTES and len(self._memo) < MEMO_ENTRIES:
                self._memo[data] = found  # the first ones seen stay: common ones come early
        return found

    def _search(self, data: bytes) -> bool:
        program = self._program
        if program is None:
            program = self._program = self._compile_program()
        if not data.isascii() and isinstance(self.pattern, str):
            # an invalid sequence reads as U+FFFD (which `.` matches), as when decoded
            data = data.decode("utf-8", "replace").encode()
        found: bool = program.Match(_UNANCHORED, data, 0, len(data))[0] != _NO_MATCH
        return found

    def _compile_program(self) -> Any:
        pattern = self.pattern
        options = _options(latin1=isinstance(pattern, bytes))
        options.never_capture = True
        raw = pattern.encode() if isinstance(pattern, str) else pattern
        return _re2.RE2(raw, options)

    def search(self, text: AnyStr, pos: int = 0, endpos: int | None = None) -> Any:
        if endpos is None:
            return self._compiled.search(text, pos)
        return self._compiled.search(text, pos, endpos)

    def match(self, text: AnyStr, pos: int = 0, endpos: int | None = None) -> Any:
        if endpos is None:
            return self._compiled.match(text, pos)
        return self._compiled.match(text, pos, endpos)

    def fullmatch(self, text: AnyStr, pos: int = 0, endpos: int | None = None) -> Any:
        if endpos is None:
            return self._compiled.fullmatch(text, pos)
        return self._compiled.fullmatch(text, pos, endpos)

    def sub(self, repl: AnyStr, text: AnyStr) -> AnyStr:
        """Every match replaced by ``repl`` (``\\1``, ``\\g<name>`` as in :func:`re.sub`)."""
        out: AnyStr = self._compiled.sub(repl, text)
        return out

    def finditer(self, text: AnyStr) -> Any:
        return self._compiled.finditer(text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Regex) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __repr__(self) -> str:
        return f"Regex({self.pattern!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # a worker process receives a rule pickled: it compiles the expression again
        return (compile, (self.pattern,))


def compile(pattern: AnyStr) -> Regex[AnyStr]:
    """``pattern`` compiled for linear-time matching, or :class:`RegexError` saying why not."""
    try:
        options = _BYTES_OPTIONS if isinstance(pattern, bytes) else _TEXT_OPTIONS
        compiled = re2.compile(pattern, options)
    except re2.error as exc:
        raise RegexError(_reason(pattern, exc)) from None
    return Regex(pattern, compiled)


def _reason(pattern: str | bytes, exc: Exception) -> str:
    detail = exc.args[0] if exc.args else str(exc)
    if isinstance(detail, bytes):
        detail = detail.decode("utf-8", "replace")
    text = pattern if isinstance(pattern, str) else pattern.decode("utf-8", "replace")
    if "invalid perl operator: (?=" in detail or "invalid perl operator: (?!" in detail:
        return "lookahead ((?=…), (?!…)) is not supported: like ast-grep's own engine, " + WHY
    if "(?<=" in text or "(?<!" in text:
        return "lookbehind ((?<=…), (?<!…)) is not supported: like ast-grep's own engine, " + WHY
    if "invalid escape sequence: \\" in detail and (detail[-1:].isdigit() or detail[-1:] == "k"):
        return "backreferences (\\1) are not supported: like ast-grep's own engine, " + WHY
    if "pattern too large" in detail:
        return (
            f"too large: its compiled program would exceed {MAX_PROGRAM_BYTES >> 20} MB "
            "(a repetition of a repetition, such as a{1000}{1000})"
        )
    return f"invalid regular expression: {detail}"


_UNANCHORED = _re2.RE2.Anchor.UNANCHORED
_NO_MATCH = (-1, -1)

#: why the two features are missing, said once
WHY = "tether matches with a linear-time engine (RE2), which has no backtracking"


def superset(pattern: bytes) -> bytes:
    """A pattern written for a backtracking engine, made runnable here by matching *more*:
    possessive quantifiers (``*+``) become greedy ones and lookaround assertions are dropped.
    Each change only widens what matches, so the result serves where a superset is sound (a
    prefilter that rules files out), never where the exact language matters."""
    out = bytearray()
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i : i + 1]
        if ch == b"\\":
            out += pattern[i : i + 2]
            i += 2
        elif ch == b"[":
            end = _class_end(pattern, i)
            out += pattern[i:end]
            i = end
        elif pattern.startswith((b"(?=", b"(?!", b"(?<=", b"(?<!"), i):
            i = _group_end(pattern, i)
        elif ch == b"+" and out[-1:] in (b"*", b"+", b"?", b"}") and not _escaped(out):
            i += 1  # possessive: the quantifier before it stays, greedy
        else:
            out += ch
            i += 1
    return bytes(out)


def _escaped(out: bytearray) -> bool:
    """Whether the last byte of ``out`` is escaped (``\\*``: a literal, not a quantifier)."""
    slashes = len(out) - 1 - len(bytes(out[:-1]).rstrip(b"\\"))
    return slashes % 2 == 1


def _class_end(pattern: bytes, i: int) -> int:
    """The index after the character class opening at ``i``."""
    j = i + 1
    if pattern[j : j + 1] == b"^":
        j += 1
    if pattern[j : j + 1] == b"]":
        j += 1  # a leading `]` is a member
    while j < len(pattern) and pattern[j : j + 1] != b"]":
        j += 2 if pattern[j : j + 1] == b"\\" else 1
    return j + 1


def _group_end(pattern: bytes, i: int) -> int:
    """The index after the group opening at ``i``."""
    depth, j = 0, i
    while j < len(pattern):
        ch = pattern[j : j + 1]
        if ch == b"\\":
            j += 2
            continue
        if ch == b"[":
            j = _class_end(pattern, j)
            continue
        if ch == b"(":
            depth += 1
        elif ch == b")":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return j

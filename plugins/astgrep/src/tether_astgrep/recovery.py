"""Reading past a grammar's ERROR regions: the file parsed again with a few tokens respelled
or blanked, every other byte where it was.

tree-sitter-kotlin 1.1.0 reads `var final = false; final = true` up to the second `final`, which
it takes for a modifier, and from there leaves the rest of the class in one ERROR node; a
primary constructor written on the line after its class (`class A\\ninternal constructor(…)`)
does the same, as do C++'s unknown macros (`FMT_BEGIN_NAMESPACE` on its own line,
`FMT_CONSTEXPR inline void f()`, `class GTEST_API_ X {`). Every match in such a region is lost,
or worse, read from a wrong tree. Here a file whose parse has an error is parsed again with
edits near its errors, each kept when the parser then reads further:

- **respell**: a keyword the language also allows as a name (`Grammar.name_keywords`, inside
  `Grammar.name_keyword_scopes`, with an operator beside it) becomes another name of the same
  length that no token of the file spells (`final` -> `qzzzz`): the parser reads it as the
  name it is. A match holding it is kept: the word *is* that name.
- **blank**: a short balanced run of code becomes spaces (line breaks kept): an ERROR node of
  a few tokens, a line from its first token, a declaration's head up to the end of the
  bracketed group holding the error; and, in one edit first, every all-caps macro beside an
  error or between `class` and a name (`macros`).

- **directives** (`Grammar.conditional_directives`): a conditional directive line (`#if`,
  `#ifdef`, … `#endif`) the parser could not place (in a parameter list, an enum, between a
  method's head and its body: tree-sitter-c-sharp then reads the whole file as one ERROR
  node) is left out, every such line at once, with every branch kept or only the first
  (`{ body }` under `#if`, `;` under `#else`), whichever reads more; first, an angled header
  name in such a line (`__has_include(<string_view>)`, which neither tree-sitter-c nor -cpp
  reads in a condition) is spelled as a name of its length (`_sys_stat_h_`). A directive
  line left out stands apart: code beside it is not one construct with it.
- **island**: the directive lines alone, every other byte a space, parsed once more, so a
  directive the plain parse could not read is found with its condition (`#if $C`, `#ifdef
  $X`). A match of that tree is shown only if it starts such a line and each capture lies on
  it (read from the file's bytes), only for a pattern of one line (it says nothing of the code
  the directive governs, which the island did not read: `#if $C` then `#endif` is never
  searched there), and as that line alone: its text holds no byte left out.

Edits never move a byte, so positions, lines and the texts of matches (read from the original
source) are those of the file. The search engine (`engine._merged`) takes the re-read tree's
matches where it decides (`Recovery.held`: no run left out in or beside a match but inside a
`$$$` capture) and the plain parse's elsewhere, so a re-read never loses a match. The result
says how many lines were re-read and how many stay unread. The budget is counted in parses
(`MAX_TRIALS`, `BYTES_PARSED`, each parse incremental), so what a search finds does not depend
on the machine's load; the time limit only guards.
"""

from __future__ import annotations

import bisect
import functools
import re
import time
from collections.abc import Iterator, Mapping

import attrs
import tree_sitter as ts

from tether_astgrep.grammars import Grammar

MAX_TRIALS = 32  # parses per file
PARSES_OF_TIME = 30.0  # a guard: the time a recovery may take, in plain parses of the file
MIN_SECONDS = 0.5
BYTES_PARSED = 5_000_000  # the parses of a large file: 30 of fmt's format.h (164 KB)
MAX_FAILED = 3  # errors in a row no edit mends, before the search gives up
ERROR_NODE_LINES = 2  # an error node costs as much as this many unread lines (`_cost`)
MAX_PER_ERROR = 12  # edits tried per error
SMALL_ROWS = 3  # an ERROR node this short may be blanked whole
MAX_BLANK_ROWS = 12  # a blanked run spans at most this many lines
WINDOW_ROWS = 8  # lines of a large ERROR node where a blanked run may start
_OPEN = {b"(": b")", b"[": b"]", b"{": b"}"}
_CLOSE = {v: k for k, v in _OPEN.items()}
_BRACKETS = frozenset(("(", ")", "[", "]", "{", "}"))
_QUOTES = frozenset((b'"', b"'", b"`", b'"""', b"'''"))
_FILL = b"qzjxkvwy"
_MACRO = re.compile(rb"[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9_]")  # FMT_CONSTEXPR, GTEST_API_
_CLASS_MACRO = re.compile(
    rb"\b(?:class|struct|union)[ \t]+([A-Z][A-Z0-9]*_[A-Z0-9_]*)[ \t]+(?=[A-Za-z_])"
)
_MACRO_WORD = re.compile(rb"(?<![\w$])" + _MACRO.pattern + rb"(?![\w$])")
# One edit tried: byte spans (each respelled, or blanked) and which of the two.
_Edit = tuple[tuple[tuple[int, int], ...], bool]
_WORDISH = re.compile(rb"[A-Za-z0-9_$\"'`]")
# an angled header name as an argument: `__has_include(<string_view>)`
_ANGLED = re.compile(rb"\(\s*(<[^<>()\"'\s]+>)\s*\)")
_NOT_NAME = re.compile(rb"[^A-Za-z0-9_]")


def _as_name(header: bytes) -> bytes:
    """`<sys/stat.h>` as a name of its length (`_sys_stat_h_`): tree-sitter-c and -cpp read
    neither an angled nor a quoted header name as an argument in a condition."""
    return _NOT_NAME.sub(b"_", header)


def directive_lines(text: bytes, words: frozenset[str]) -> list[tuple[int, int]]:
    """The conditional directives of `text` (`Grammar.conditional_directives`): each from its
    `#` to the end of its line, `\\` continuation lines included, trailing blanks not."""
    if not words:
        return []
    return [m.span(1) for m in _directive_regex(words).finditer(text)]


@functools.cache
def _directive_regex(words: frozenset[str]) -> re.Pattern[bytes]:
    alternatives = b"|".join(re.escape(w.encode()) for w in sorted(words, key=len, reverse=True))
    return re.compile(
        rb"(?m)^[ \t]*(#[ \t]*(?:" + alternatives + rb")\b(?:[^\n]*\\\r?\n)*[^\n]*?)[ \t\r]*$"
    )


@attrs.frozen
class Recovery:
    """The re-read parse of a file: its tree and what was changed to get it."""

    tree: ts.Tree
    text: bytes  # what `tree` was parsed from: the file with the edits below
    blanked: tuple[tuple[int, int], ...]  # byte ranges read as spaces
    respelled: tuple[tuple[int, int], ...]  # keyword tokens read as names
    unread_before: int  # lines ERROR nodes of the plain parse span
    unread_after: int  # lines ERROR nodes still span, or blanked
    reread: int  # lines the plain parse left in ERROR nodes that are read now
    still: tuple[tuple[int, int], ...] = ()  # byte ranges of ERROR nodes left in `tree`
    # blanked runs that are whole directive lines: code beside one is not one construct with it
    apart: tuple[tuple[int, int], ...] = ()
    requoted: tuple[tuple[int, int], ...] = ()  # `<x.h>` of `__has_include(<x.h>)`, read as a name
    # The conditional directive lines alone, every other byte a space (`_island`), and those of
    # them the plain parse left in ERROR nodes: where a match of the island tree may start.
    island: ts.Tree | None = None
    island_lines: tuple[tuple[int, int], ...] = ()

    def island_end(self, start: int, captures: Mapping[str, tuple[int, int]]) -> int | None:
        """Where a match of the island tree starting at `start` is shown to end, or None if
        it is not shown: it starts a directive line the plain parse could not read and each
        capture lies on that line (its condition, read from the file's own bytes). It is
        shown as that line alone: the code the directive governs was not read in the
        island, so the match's text holds no byte left out."""
        line = next(((a, b) for a, b in self.island_lines if a == start), None)
        if line is None:
            return None
        if any(a >= 0 and not (line[0] <= a and b <= line[1]) for a, b in captures.values()):
            return None
        return line[1]

    def speaks_for(self, source: bytes, start: int, end: int) -> bool:
        """Whether the re-read tree decides about a match over [start, end): it lies in no
        ERROR node left there, and `admits` it. Where it does not, the plain parse's answer
        stands (a match inside an ERROR node, beside a macro line left out, as before); it
        stands too beside a directive line left out (`i =` under `#ifndef X` then `#endif`
        then `b->wds = 1;`: the re-read joins them, the plain parse reads the statement)."""
        return self.admits(source, start, end, directives=True) and not any(
            a < end and b > start for a, b in self.still
        )

    def held(
        self,
        source: bytes,
        start: int,
        end: int,
        captures: Mapping[str, tuple[int, int]],
        runs: frozenset[str] = frozenset(),
    ) -> dict[str, tuple[int, int]] | None:
        """A match of the re-read tree over [start, end) as shown, or None if it is not:
        no blanked run borders it, and each blanked run or ERROR node left inside it lies
        within what one metavariable captured (`$$$B` of `namespace $N { $$$B }`: code the
        pattern says nothing of, shown as written), a `$$$` capture (named in `runs`) being
        widened over a run left out at its edge (`FMT_CONSTEXPR` before the first
        declaration) so it stays whole; a single one (`$C`) is one node, never widened. An
        ERROR node around the match is as in a plain parse. Returns the captures."""
        spans = {name: span for name, span in captures.items() if span[0] >= 0}
        for a, b in self.blanked:
            if a >= end or b <= start:
                continue
            name = next((n for n, (s, e) in spans.items() if s <= a and b <= e), None)
            if name is None:
                name = next(
                    (n for n, (s, e) in spans.items() if n in runs and _edge(source, a, b, s, e)),
                    None,
                )
                if name is None:
                    return None
                s, e = spans[name]
                spans[name] = (min(s, a), max(e, b))
        for a, b in self.still:
            if start <= a and b <= end and not any(s <= a and b <= e for s, e in spans.values()):
                return None
        if not self._unbordered(source, start, end):
            return None
        return {**captures, **spans}

    def admits(self, source: bytes, start: int, end: int, directives: bool = False) -> bool:
        """Whether a match over [start, end) reads only code as written: it holds no blanked
        run and has only code (not whitespace alone) between itself and each one (each but
        a directive line, unless `directives`)."""
        if any(a < end and b > start for a, b in self.blanked):
            return False
        return self._unbordered(source, start, end, directives)

    def _unbordered(self, source: bytes, start: int, end: int, directives: bool = False) -> bool:
        """No blanked run right beside [start, end): only whitespace between, no empty line;
        a directive line left out counts only with `directives`."""
        apart = set() if directives else set(self.apart)
        for a, b in self.blanked:
            if (a, b) in apart:
                continue  # a directive line stands apart from the code beside it
            if a >= end and _adjacent(source[end:a]):
                return False
            if b <= start and _adjacent(source[b:start]):
                return False
        return True


def _edge(source: bytes, a: int, b: int, s: int, e: int) -> bool:
    """Whether the run [a, b) stands right at an edge of the capture [s, e): only
    whitespace between."""
    return (b <= s and not source[b:s].strip()) or (a >= e and not source[e:a].strip())


def _adjacent(gap: bytes) -> bool:
    """Whether code separated by `gap` may be one construct: only whitespace, and no empty
    line (`FMT_BEGIN_NAMESPACE`, an empty line, then `namespace detail {` are two)."""
    return not gap.strip() and gap.count(b"\n") < 2


def error_rows(tree: ts.Tree) -> tuple[set[int], int]:
    """The rows the parser could not read, and how many ERROR and MISSING nodes there are.

    A row is unread when a MISSING node stands on it or a token of an ERROR node lies on it;
    a well-formed declaration inside an ERROR node (tree-sitter keeps them) is read: the
    search walks into it like anywhere else."""
    rows: set[int] = set()
    count = 0
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_missing:
            rows.add(node.start_point[0])
            count += 1
            continue
        if not node.has_error:
            continue
        if node.is_error:
            count += 1
            for child in node.children:
                if child.has_error or child.is_missing:
                    stack.append(child)
                elif child.child_count == 0 or not child.is_named:
                    end = child.end_point[0] - (
                        child.end_point[1] == 0 and child.end_point[0] > child.start_point[0]
                    )
                    rows.update(range(child.start_point[0], end + 1))
            continue
        stack.extend(node.children)
    return rows, count


def _innermost_errors(tree: ts.Tree) -> list[ts.Node]:
    """MISSING nodes and the ERROR nodes holding no other, in document order."""
    out: list[ts.Node] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_missing:
            out.append(node)
            continue
        if not node.has_error:
            continue
        inner = [c for c in node.children if c.has_error or c.is_missing]
        if node.is_error and not inner:
            out.append(node)
        stack.extend(reversed(node.children))
    out.sort(key=lambda n: (n.start_byte, n.end_byte))
    return out


class _Search:
    """One file's recovery: the current text and tree, the edits kept, the trials left."""

    def __init__(
        self,
        parser: ts.Parser,
        source: bytes,
        tree: ts.Tree,
        words: frozenset[str],
        scopes: frozenset[str] = frozenset(),
        directives: frozenset[str] = frozenset(),
    ):
        self.parser = parser
        self.directives = directives
        self.apart: list[tuple[int, int]] = []
        self.requoted: list[tuple[int, int]] = []
        self.source = source
        self.text = source
        self.tree = tree
        self.words = words
        self.scopes = scopes
        self.blanked: list[tuple[int, int]] = []
        self.respelled: list[tuple[int, int]] = []
        self.spellings: dict[bytes, bytes] = {}
        self.trials = 0
        self.skip_to = -1
        self.line_starts = [0, *(m.end() for m in re.finditer(b"\n", source))]
        self.kept_rows: set[int] = set()  # the blanked runs' lines
        self.deadline = 0.0
        rows, count = error_rows(tree)
        self.score = _cost(count, len(rows))

    def point(self, offset: int) -> tuple[int, int]:
        """(row, byte column) of `offset`: every edit keeps the line breaks where they are."""
        row = bisect.bisect_right(self.line_starts, offset) - 1
        return row, offset - self.line_starts[row]

    def blank_rows(self, extra: tuple[tuple[int, int], ...] = ()) -> set[int]:
        """The lines left without code by the kept blanked runs and `extra`: a line where a
        macro word was left out but code stays is read."""
        rows = set(self.kept_rows)
        for a, b in extra:
            for row in range(self.point(a)[0], self.point(max(a, b - 1))[0] + 1):
                start = self.line_starts[row]
                end = self.source.find(b"\n", start)
                end = len(self.source) if end < 0 else end
                left = [(max(a, start), min(b, end))]
                code = bytearray(self.source[start:end])
                for x, y in [*left, *((p, q) for p, q in self.blanked if p < end and q > start)]:
                    code[max(x, start) - start : min(y, end) - start] = b" " * (
                        min(y, end) - max(x, start)
                    )
                if not bytes(code).strip():
                    rows.add(row)
        return rows

    def attempt(
        self,
        spans: tuple[tuple[int, int], ...],
        respell: bool,
        apart: bool = False,
        counted: tuple[tuple[int, int], ...] = (),
    ) -> tuple[tuple[int, int], bytes, ts.Tree] | None:
        """The score, text and tree with each span respelled or blanked (same length), or
        None when no name is left to respell with. `apart`: the spans are directive lines,
        blanked without counting as unread (the island reads them) but for those also in
        `counted` (code left out with them), or (with `respell`)
        the angled header names to read as names (`_as_name`)."""
        self.trials += 1
        text = self.text
        old = self.tree.copy()
        for start, end in spans:
            new: bytes | None
            if respell and apart:
                new = _as_name(self.text[start:end])
            elif respell:
                new = self.fresh_word(self.text[start:end])
            else:
                new = bytes(b if b in b"\r\n" else 32 for b in self.text[start:end])
            if new is None:
                return None
            text = text[:start] + new + text[end:]
            p0, p1 = self.point(start), self.point(end)
            old.edit(start, end, end, p0, p1, p1)
        tree = self.parser.parse(text, old)
        rows, count = error_rows(tree)
        extra = counted if apart else () if respell else spans
        return _cost(count, len(rows | self.blank_rows(extra))), text, tree

    def fresh_word(self, word: bytes) -> bytes | None:
        """A name as long as `word` that no token of the file spells."""
        known = self.spellings.get(word)
        if known is not None:
            return known
        used = set(self.spellings.values())
        for c in _FILL:
            for d in _FILL:
                new = bytes([c]) + bytes([d]) * (len(word) - 1)
                if new in used or new.decode() in self.words or _has_word(self.source, new):
                    continue
                self.spellings[word] = new
                return new
        return None

    def run(self) -> None:
        self.skip_to = -1
        self.macros()
        self.conditionals()
        failed = 0  # errors in a row no edit mended: past a few, the rest will not be either
        while self.budget_left() and failed < MAX_FAILED:
            target = self.first_error(self.tree)
            if target is None:
                return
            if self.improve(target):
                failed = 0
            else:
                failed += 1
                self.skip_to = target.start_byte

    def budget_left(self) -> bool:
        """Parses left: at most `MAX_TRIALS`, fewer for a large file (`BYTES_PARSED`), so what
        a search finds does not depend on the machine's load; the deadline only guards."""
        trials = min(MAX_TRIALS, BYTES_PARSED // max(len(self.source), 1))
        return self.trials < trials and time.perf_counter() < self.deadline

    def macros(self) -> None:
        """Unknown macros left out at once, if that mends more than it costs: beside an error,
        an all-caps word alone on the line above it (`FMT_BEGIN_NAMESPACE`) or just before it
        on its line (`FMT_CONSTEXPR inline void f()`, which the parser reads as a type before
        `inline`); anywhere, one between `class` or `struct` and the name (`class GTEST_API_
        AssertHelper {`, else read as a function whose body holds calls). C and C++ code
        names its macros so; a grammar with no such words never gets this edit."""
        spans: set[tuple[int, int]] = {m.span(1) for m in _CLASS_MACRO.finditer(self.text)}
        for target in _innermost_errors(self.tree):
            line_start = self.text.rfind(b"\n", 0, target.start_byte) + 1
            found = [
                m.span() for m in _MACRO_WORD.finditer(self.text, line_start, target.start_byte)
            ][-3:]
            above = _line_above(self.text, line_start)
            if above is not None and _MACRO.fullmatch(self.text[above[0] : above[1]]):
                found.append(above)
            for a, b in found:
                leaf = self.tree.root_node.descendant_for_byte_range(a, b)
                if (
                    leaf is not None
                    and leaf.is_named
                    and leaf.child_count == 0
                    and (leaf.start_byte, leaf.end_byte) == (a, b)
                    and self.text[b : b + 1] != b"("
                ):
                    spans.add((a, b))
        if not spans:
            return
        tried = self.attempt(tuple(sorted(spans)), False)
        if tried is not None and tried[0] < self.score:
            self.score, self.text, self.tree = tried
            self.blanked.extend(sorted(spans))
            self.kept_rows = self.blank_rows(tuple(spans))

    def conditionals(self) -> None:
        """Conditional directive lines the parser could not place (`#if` in a parameter list,
        an enum, between a method's head and body), each whole line left out at once, if
        that mends more than it costs; first the angled header names of those lines
        (`__has_include(<string_view>)`) read as names of their length, which the C and
        C++ grammars cannot read in a condition. Two parses at most; none for a grammar without directives."""
        lines = self._stuck_directives()
        angled = tuple(m.span(1) for a, b in lines for m in _ANGLED.finditer(self.text, a, b))
        if angled:
            tried = self.attempt(angled, True, apart=True)
            if tried is not None and tried[0] < self.score:
                self.score, self.text, self.tree = tried
                self.requoted.extend(angled)
                lines = self._stuck_directives()
        if not lines:
            return
        # every branch kept (a parameter in each), or only the first (`{ body }` under `#if`,
        # `;` under `#else`): whichever leaves fewer lines in ERROR regions or left out (a
        # few stray tokens left may still hold a whole class in an ERROR node)
        best = None
        for spans, alternatives in ((lines, []), self._first_branches(lines)):
            tried = self.attempt(
                tuple(spans + alternatives), False, apart=True, counted=tuple(alternatives)
            )
            if tried is None or tried[0] >= self.score:
                continue
            key = (len(region_rows(tried[2]) | self.blank_rows(tuple(alternatives))), tried[0])
            if best is None or key < best[0]:
                best = key, tried, spans, alternatives
        if best is not None:
            _, (self.score, self.text, self.tree), spans, alternatives = best
            self.blanked.extend(spans + alternatives)
            self.apart.extend(spans)
            self.kept_rows = self.blank_rows(tuple(alternatives))

    def _first_branches(
        self, lines: list[tuple[int, int]]
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """The directive lines outside `#else`/`#elif` branches, and those branches (each
        from its first `#else`/`#elif` to the end of its `#endif`), of the groups `lines`
        holds whole; every line and no branch when one is open at the end."""
        kept: list[tuple[int, int]] = []
        branches: list[tuple[int, int]] = []
        stack: list[int | None] = []  # per open group: where its alternative starts, if seen
        for a, b in lines:
            word = self.text[a + 1 : b].lstrip().split(maxsplit=1)[0]
            inside = any(x is not None for x in stack)
            if word.startswith(b"if"):
                stack.append(None)
            elif word.startswith(b"el") and stack:
                if stack[-1] is None:
                    stack[-1] = a
                continue
            elif word.startswith(b"endif") and stack:
                start = stack.pop()
                if start is not None:
                    if not any(x is not None for x in stack):
                        branches.append((start, b))
                    continue
            if not inside:
                kept.append((a, b))
        if any(x is not None for x in stack):
            return lines, []
        return kept, branches

    def _stuck_directives(self) -> list[tuple[int, int]]:
        """The conditional directive lines that start on a line ERROR nodes span."""
        if not self.directives:
            return []
        rows = stuck_rows(self.tree)
        spans = directive_lines(self.text, self.directives)
        return [(a, b) for a, b in spans if self.point(a)[0] in rows]

    def first_error(self, tree: ts.Tree) -> ts.Node | None:
        """The first innermost error not given up on."""
        return next((e for e in _innermost_errors(tree) if e.start_byte > self.skip_to), None)

    def improve(self, target: ts.Node) -> bool:
        """Keep the edit near `target` that leaves no error where it was and the fewest lines
        unread (a respelled word must be read as a name); False if no edit does. A respelled
        word, which leaves nothing out, goes before any run left out; a run left out must
        leave fewer lines unread, counting its own. After a respelled word the count may grow
        for a while (the next error now spans more) if the parser gets further: `recover`
        keeps the edits only if they leave fewer lines unread in the end."""
        best: tuple[tuple[int, int], bytes, ts.Tree, tuple[tuple[int, int], ...], bool] | None
        best = None
        for n, (spans, respell) in enumerate(self.candidates(target)):
            if n >= MAX_PER_ERROR or not self.budget_left():
                break
            if best is not None and best[4] and not respell:
                break  # no run left out beats a respelled word
            tried = self.attempt(spans, respell)
            if tried is None:
                continue
            score, text, tree = tried
            if best is not None and (best[4], score) >= (respell, best[0]):
                continue
            if not respell and score >= self.score:
                continue
            if respell and score >= self.score and not self._past(tree, target):
                continue
            if not self._mended(tree, target, spans):
                continue
            if respell and not all(
                _read_as_name(tree, a, b, text, self.scopes, unsure=True) for a, b in spans
            ):
                continue
            best = (score, text, tree, spans, respell)
        if best is None:
            return False
        self.score, self.text, self.tree, spans, respell = best
        (self.respelled if respell else self.blanked).extend(spans)
        if not respell:
            self.kept_rows = self.blank_rows(spans)
        return True

    def _mended(self, tree: ts.Tree, target: ts.Node, spans: tuple[tuple[int, int], ...]) -> bool:
        """No error left where an edit is and (for a short target) where the target was."""
        for start, end in spans:
            low = min(start, target.start_byte) if self._short(target) else start
            if _errors_within(tree, low, max(end, target.start_byte + 1)):
                return False
        return True

    def candidates(self, target: ts.Node) -> Iterator[_Edit]:
        """Edits near `target`: keywords the parser stumbled on, to respell; then runs of
        tokens to blank: the ERROR node itself when short, a line from its first token, a
        declaration's head up to the end of the bracketed group that holds `target`."""
        row = target.start_point[0]
        small = target.is_error and target.end_point[0] - row < SMALL_ROWS
        rows = [row, row - 1]
        if target.is_error:
            # where its well-formed part ends: lone tokens past its head, and the line above
            for child in target.children[3:]:
                if _lone_leaf(child) is not None and child.type not in _BRACKETS:
                    rows += [child.start_point[0], child.start_point[0] - 1]
            rows = sorted(set(rows))[:WINDOW_ROWS]
        if target.is_error and target.end_point[0] - row < MAX_BLANK_ROWS:
            window = _leaves(target)
        elif target.is_error:
            window = [leaf for c in target.children if (leaf := _lone_leaf(c)) is not None]
        else:  # MISSING: the tokens of its line and the line before
            window = self._leaves_on_rows(row - 1, row)
        seen: set[_Edit] = set()
        # the words just before it on its line: `get` in `get(copy)`, read as a getter
        lead = [n for n in self._leaves_on_rows(row, row) if n.end_byte <= target.start_byte]
        words = [leaf for leaf in [*window, *lead[-2:]] if self._keyword(leaf)]
        for leaf in words:
            yield from _once(seen, ((leaf.start_byte, leaf.end_byte),), True)
        for word in dict.fromkeys(leaf.text or b"" for leaf in words):
            # `final` twice in one region: each alone leaves it broken, and past the first
            # the parser may have skipped the text without a token
            every = self._unnamed(word, target.start_byte, target.end_byte)
            if len(every) > 1:
                yield from _once(seen, every, True)
        if small and self._balanced(target.start_byte, target.end_byte):
            yield from _once(seen, ((target.start_byte, target.end_byte),), False)
        heads = [self._line_head(r) for r in rows]
        node = target.parent
        for _ in range(4):
            if node is None or node.parent is None:
                break
            if row - node.start_point[0] <= SMALL_ROWS:
                heads.append(node.start_byte)
            node = node.parent
        for head in heads:
            if head is None:
                continue
            found = self.tree.root_node.descendant_for_byte_range(head, head)
            if found is not None and found.start_byte == head and found.child_count == 0:
                end = self._run_end(found)
                if end is not None and self._balanced(head, end):
                    yield from _once(seen, ((head, end),), False)
        yield from self._ancestor_runs(target, seen)

    def _unnamed(self, word: bytes, start: int, end: int) -> tuple[tuple[int, int], ...]:
        """Where `word` stands as a whole word in text[start:end], not read as a name."""
        out = []
        for m in re.finditer(
            rb"(?<![\w$])" + re.escape(word) + rb"(?![\w$])", self.text[start:end]
        ):
            a, b = start + m.start(), start + m.end()
            leaf = self.tree.root_node.descendant_for_byte_range(a, b)
            if (
                leaf is None
                or not leaf.is_named
                or leaf.child_count
                or (leaf.start_byte, leaf.end_byte) != (a, b)
            ):
                out.append((a, b))
        return tuple(out)

    def _past(self, tree: ts.Tree, target: ts.Node) -> bool:
        """Whether the first error of `tree` starts after `target` (or there is none)."""
        first = self.first_error(tree)
        return first is None or first.start_byte > target.start_byte

    @staticmethod
    def _short(target: ts.Node) -> bool:
        return not target.is_error or target.end_point[0] - target.start_point[0] < MAX_BLANK_ROWS

    def _line_head(self, row: int) -> int | None:
        """Where the first token of line `row` starts."""
        if row < 0:
            return None
        start = _row_offset(self.text, row)
        end = self.text.find(b"\n", start)
        line = self.text[start : len(self.text) if end < 0 else end]
        if not line.strip():
            return None
        return start + len(line) - len(line.lstrip())

    def _ancestor_runs(self, target: ts.Node, seen: set[_Edit]) -> Iterator[_Edit]:
        """From the start of a declaration around `target` to the end of the bracketed group
        that holds it (`private constructor(…)` around a parameter the parser refused)."""
        chain: list[ts.Node] = []
        node = target.parent
        while node is not None and len(chain) < 4 and node.parent is not None:
            chain.append(node)
            node = node.parent
        groups = [g for g in chain if g.child_count and g.children[0].type.encode() in _OPEN]
        for group in groups[:2]:
            for outer in chain:
                if outer.start_byte >= group.start_byte or outer.end_byte < group.end_byte:
                    continue
                if group.start_point[0] - outer.start_point[0] > SMALL_ROWS:
                    continue
                if self._balanced(outer.start_byte, group.end_byte):
                    yield from _once(seen, ((outer.start_byte, group.end_byte),), False)

    def _leaves_on_rows(self, first: int, last: int) -> list[ts.Node]:
        start = _row_offset(self.text, max(first, 0))
        end = _row_offset(self.text, last + 1)
        return list(_leaves_in(self.tree.root_node, start, end))

    def _keyword(self, leaf: ts.Node) -> bool:
        text = leaf.text or b""
        return not leaf.is_missing and text.decode("utf-8", "replace") in self.words

    def _balanced(self, start: int, end: int) -> bool:
        depth = 0
        for _, char in _brackets(self.text, start, end):
            depth += 1 if char in b"([{" else -1
            if depth < 0:
                return False
        return depth == 0 and _quotes_closed(self.text[start:end])

    def _run_end(self, leaf: ts.Node) -> int | None:
        """Where a balanced run of code from `leaf` ends: at the end of its line, or past
        the bracket left open there (within `MAX_BLANK_ROWS` lines), before a bracket that
        closes one opened earlier. Brackets are read from the text: inside an ERROR node the
        tokens may be garbage (a string running on over the rest of the file)."""
        start = leaf.start_byte
        line_end = self.text.find(b"\n", start)
        line_end = len(self.text) if line_end < 0 else line_end
        depth = 0
        for pos, char in _brackets(self.text, start, len(self.text)):
            if depth == 0 and pos > line_end:
                break
            depth += 1 if char in b"([{" else -1
            if depth < 0:
                end = self.text[start:pos].rstrip()
                return start + len(end) if end else None
            if depth == 0 and pos > line_end:
                return pos + 1
            if self.text.count(b"\n", start, pos) > MAX_BLANK_ROWS:
                return None
        if depth:
            return None
        end = self.text[start:line_end].rstrip()
        return start + len(end) if end else None


def _brackets(text: bytes, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """The brackets in text[start:end], outside quotes and `//` comments (a rough reading:
    the parse that follows any edit is the judge)."""
    quote = 0
    pos = start
    while pos < end:
        c = text[pos]
        if quote:
            if c == 92:  # backslash
                pos += 1
            elif c == quote or c == 10:
                quote = 0
        elif c in b"\"'":
            quote = c
        elif c == 47 and text[pos + 1 : pos + 2] == b"/":
            nl = text.find(b"\n", pos)
            pos = end if nl < 0 else nl
            continue
        elif c in b"()[]{}":
            yield pos, bytes([c])
        pos += 1


def _quotes_closed(chunk: bytes) -> bool:
    return all(line.count(b'"') % 2 == 0 for line in chunk.replace(b'\\"', b"").split(b"\n"))


def _errors_within(tree: ts.Tree, start: int, end: int) -> bool:
    """Whether an ERROR or MISSING node starts within [start, end) (one that starts before
    it is another error, further out)."""
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.end_byte < start or node.start_byte >= end:
            continue
        if (node.is_missing or node.is_error) and node.start_byte >= start:
            return True
        if node.has_error:
            stack.extend(node.children)
    return False


def _read_as_name(
    tree: ts.Tree, start: int, end: int, text: bytes, scopes: frozenset[str], unsure: bool = False
) -> bool:
    """Whether [start, end) is one named leaf of `tree` (the respelled word read as a name)
    inside one of `scopes` (if any) with an operator beside it on its line (`final = true`,
    `by.write(…)`, `!final`): a keyword the parser could not place before a word (`public
    fun` in a block) is no name. `unsure`: an ERROR node around it (another error further on,
    still to mend) stands for the scope; the final parse is checked without."""
    leaf = tree.root_node.descendant_for_byte_range(start, end)
    if (
        leaf is None
        or leaf.child_count
        or not leaf.is_named
        or (leaf.start_byte, leaf.end_byte) != (start, end)
    ):
        return False
    if scopes:
        up = leaf.parent
        while up is not None and up.type not in scopes and not (unsure and up.is_error):
            up = up.parent
        if up is None:
            return False
    line_end = text.find(b"\n", end)
    after = text[end : len(text) if line_end < 0 else line_end].lstrip()[:1]
    before = text[text.rfind(b"\n", 0, start) + 1 : start].rstrip()[-1:]
    return bool(after and not _WORDISH.match(after) and after not in b"@") or bool(
        before and not _WORDISH.match(before) and before not in b"{}();,[@"
    )


def _once(seen: set[_Edit], spans: tuple[tuple[int, int], ...], respell: bool) -> Iterator[_Edit]:
    if (spans, respell) not in seen and all(b > a for a, b in spans):
        seen.add((spans, respell))
        yield spans, respell


def _has_word(source: bytes, word: bytes) -> bool:
    """Whether `word` stands in `source` as a whole word (`engine.has_word`, without the
    import cycle)."""
    pos = source.find(word)
    while pos >= 0:
        end = pos + len(word)
        before = source[pos - 1 : pos]
        after = source[end : end + 1]
        if not (before.isalnum() or before == b"_") and not (after.isalnum() or after == b"_"):
            return True
        pos = source.find(word, pos + 1)
    return False


def _line_above(text: bytes, line_start: int) -> tuple[int, int] | None:
    """The span of the code on the last non-empty line before the one at `line_start`."""
    end = line_start - 1
    while end > 0:
        start = text.rfind(b"\n", 0, end) + 1
        line = text[start:end]
        if line.strip():
            lead = len(line) - len(line.lstrip())
            return start + lead, start + len(line.rstrip())
        end = start - 1
    return None


def _row_offset(text: bytes, row: int) -> int:
    """The byte offset where line `row` (0-based) starts, or the text's end."""
    offset = 0
    for _ in range(row):
        offset = text.find(b"\n", offset) + 1
        if offset == 0:
            return len(text)
    return offset


def _cost(nodes: int, rows: int) -> tuple[int, int]:
    """How much of a file is unread: its unread lines, each error node counted as
    `ERROR_NODE_LINES` more (around one the tree is unsure beyond the tokens it holds); then
    the nodes alone."""
    return rows + ERROR_NODE_LINES * nodes, nodes


def _lone_leaf(node: ts.Node) -> ts.Node | None:
    """The one token `node` is (a keyword the parser wrapped as a modifier), else None."""
    while node.child_count == 1:
        node = node.children[0]
    return node if node.child_count == 0 and not _comment(node) else None


def _comment(node: ts.Node) -> bool:
    """An extra that is no ERROR node (which tree-sitter may mark extra too): a comment."""
    return node.is_extra and not node.is_error


def _leaves(node: ts.Node) -> list[ts.Node]:
    return list(_leaves_in(node, node.start_byte, node.end_byte))


def _small_leaves(node: ts.Node) -> list[ts.Node]:
    """The leaves of a direct child of a large ERROR node that is a token or a one-line node
    (a well-formed declaration inside the region is not where the parser went wrong)."""
    if node.child_count == 0:
        return [node]
    if node.end_point[0] == node.start_point[0] and not _comment(node):
        return _leaves(node)
    return []


def _leaves_in(root: ts.Node, start: int, end: int) -> Iterator[ts.Node]:
    """The leaves (comments excluded) that lie within [start, end), in order."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.end_byte <= start or node.start_byte >= end or _comment(node):
            continue
        if node.child_count == 0:
            if node.start_byte >= start and node.end_byte <= end and not node.is_missing:
                yield node
            continue
        stack.extend(reversed(node.children))


def recover(
    parser: ts.Parser,
    source: bytes,
    tree: ts.Tree,
    grammar: Grammar,
    parse_seconds: float = 0.0,
) -> Recovery | None:
    """The file re-read past its ERROR regions, or None when no edit helped. The keywords
    respelled are the grammar's `name_keywords`, within its `name_keyword_scopes`; `parse_seconds`,
    how long the plain parse took: the search stops after `PARSES_OF_TIME` times that (at
    least `MIN_SECONDS`), keeping what it found so far. Conditional directive lines in ERROR
    regions are also read as an island (`_island`, one parse more)."""
    if not tree.root_node.has_error:
        return None
    search = _Search(
        parser,
        source,
        tree,
        grammar.name_keywords,
        grammar.name_keyword_scopes,
        grammar.conditional_directives,
    )
    search.deadline = time.perf_counter() + max(MIN_SECONDS, PARSES_OF_TIME * parse_seconds)
    search.run()
    spans = region_rows(tree)
    got = _reread(parser, search, tree, grammar, spans)
    island = _island(parser, source, stuck_rows(tree), grammar.conditional_directives)
    if island is None:
        return got
    island_tree, lines = island
    if got is None:  # no edit helped: the plain parse, and the island's directive lines
        rows = {source.count(b"\n", 0, a) for a, _ in lines}
        got = Recovery(tree, source, (), (), len(spans), len(spans), len(rows))
        got = attrs.evolve(got, still=tuple(_error_spans(tree)))
    return attrs.evolve(got, island=island_tree, island_lines=lines)


def _reread(
    parser: ts.Parser, search: _Search, tree: ts.Tree, grammar: Grammar, spans: set[int]
) -> Recovery | None:
    """The re-read parse `search` found, or None if it reads no line more."""
    if not search.blanked and not search.respelled and not search.requoted:
        return None
    before_rows, before_nodes = error_rows(tree)
    final = parser.parse(search.text)  # the kept edits read afresh, not incrementally
    rows, nodes = error_rows(final)
    if _cost(nodes, len(rows | search.blank_rows())) >= _cost(before_nodes, len(before_rows)):
        return None
    scopes = grammar.name_keyword_scopes
    if not all(_read_as_name(final, a, b, search.text, scopes) for a, b in search.respelled):
        return None
    unread = region_rows(final) | search.blank_rows()
    # the lines read now: of the ERROR nodes' own tokens, or of their spans (a class whose
    # constructor head the parser could not place spans more than the tokens it skipped)
    read_now = max(len(before_rows - rows - search.blank_rows()), len(spans - unread))
    if not read_now or len(unread) > len(spans):
        return None  # no line more is read, or more are said to be unsearchable
    return Recovery(
        final,
        search.text,
        tuple(search.blanked),
        tuple(search.respelled),
        len(spans),
        len(unread),
        read_now,
        tuple(_error_spans(final)),
        tuple(search.apart),
        tuple(search.requoted),
    )


def _island(
    parser: ts.Parser, source: bytes, rows: set[int], words: frozenset[str]
) -> tuple[ts.Tree, tuple[tuple[int, int], ...]] | None:
    """The file's conditional directive lines parsed alone, every other byte a space (line
    breaks kept), angled header names in them read as names (`_as_name`); and those of them that start
    on a line ERROR nodes span. None when there are none: a directive the grammar could not
    place (`#ifdef` in an enum) is then read with its condition, whatever the code around."""
    lines = directive_lines(source, words)
    starts = [0, *(m.end() for m in re.finditer(b"\n", source))]
    stuck = tuple((a, b) for a, b in lines if bisect.bisect_right(starts, a) - 1 in rows)
    if not stuck:
        return None
    text = bytearray(b if b in b"\r\n" else 32 for b in source)
    for a, b in lines:
        text[a:b] = source[a:b]
        for m in _ANGLED.finditer(source, a, b):
            x, y = m.span(1)
            text[x:y] = _as_name(source[x:y])
    return parser.parse(bytes(text)), stuck


def _error_spans(tree: ts.Tree) -> Iterator[tuple[int, int]]:
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            yield node.start_byte, max(node.end_byte, node.start_byte + 1)
        elif node.has_error:
            stack.extend(node.children)


def stuck_rows(tree: ts.Tree) -> set[int]:
    """The rows ERROR nodes span, and the first row of each directive holding an error (a
    `#if` in an enum whose last member lacks the `,` the parser wants before `#endif`)."""
    rows = region_rows(tree)
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if not node.has_error:
            continue
        if node.child_count and node.children[0].type.startswith("#"):
            rows.add(node.start_point[0])
        stack.extend(node.children)
    return rows


def region_rows(tree: ts.Tree) -> set[int]:
    """The rows ERROR nodes span (as the search reports them: `unsearchable_lines`)."""
    rows: set[int] = set()
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if not node.has_error:
            continue
        if node.is_error and node.end_byte > node.start_byte:
            end = node.end_point[0] - (node.end_point[1] == 0)
            rows.update(range(node.start_point[0], max(end, node.start_point[0]) + 1))
            continue
        stack.extend(node.children)
    return rows

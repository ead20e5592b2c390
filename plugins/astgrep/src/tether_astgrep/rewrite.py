"""Rewrite templates: substitute captures, re-indent, splice into the file."""

from __future__ import annotations

import re
import warnings

import attrs
import tree_sitter as ts

from tether_astgrep.grammars import Grammar
from tether_astgrep.matcher import Match
from tether_astgrep.pattern import METAVAR_RE

_INDENT = re.compile(rb"[ \t]*")
# A metavariable in a template, standing alone or glued to other text (`Base$COMP`,
# `$R$MAYBE_COMMA$$$ARGS`, as ast-grep's `fix` reads them): a glued one is replaced only when
# the match binds it, so `$ZodType` in a template stays literal code.
_TEMPLATE_VAR = re.compile(rb"\$\$\$([A-Z_][A-Z0-9_]*)|\$([A-Z_][A-Z0-9_]*)")
_GLUE = re.compile(rb"[\w$]")


def template_vars(template: str) -> list[str]:
    """Names the template uses (wildcards excluded)."""
    names = []
    for m in METAVAR_RE.finditer(template):
        name = m.group(1) if m.group(0).startswith("$$$") else m.group(2)
        if name and not name.startswith("_"):
            names.append(name)
    return names


def _line_start(source: bytes, offset: int) -> int:
    return source.rfind(b"\n", 0, offset) + 1


def _line_indent(source: bytes, offset: int) -> bytes:
    start = _line_start(source, offset)
    m = _INDENT.match(source, start)
    return m.group(0) if m else b""


def _verbatim_line(tree: ts.Tree, grammar: Grammar, offset: int) -> bool:
    """Whether the line starting at `offset` continues a literal whose lines are data: the
    line break before it is inside a string, a heredoc, a block scalar (`verbatim_ids`)."""
    if offset <= 0:
        return False
    node: ts.Node | None = tree.root_node.descendant_for_byte_range(offset - 1, offset)
    verbatim = grammar.verbatim_ids
    while node is not None:
        if node.kind_id in verbatim and node.start_byte < offset <= node.end_byte:
            return True
        node = node.parent
    return False


def _reindent_capture(
    source: bytes, tree: ts.Tree, grammar: Grammar, start: int, end: int, ref: bytes, column: bytes
) -> bytes:
    """The capture's text, each continuation line moved from indentation `ref` to `column`."""
    text = source[start:end]
    if b"\n" not in text:
        return text
    lines = text.split(b"\n")
    out = [lines[0]]
    offset = start + len(lines[0]) + 1
    for line in lines[1:]:
        if _verbatim_line(tree, grammar, offset):
            out.append(line)  # a string, heredoc or block scalar keeps every byte
        else:
            if line.startswith(ref):
                stripped = line[len(ref) :]
            else:
                stripped = line.lstrip(b" \t")
            out.append(column + stripped if stripped.strip() else b"")
        offset += len(line) + 1
    return b"\n".join(out)


def _ends_in_line_comment(source: bytes, tree: ts.Tree, end: int) -> bool:
    """Whether the text before `end` is a comment that runs to the end of its line."""
    if end <= 0 or source[end : end + 1] not in (b"\n", b"\r"):
        return False
    node = tree.root_node.descendant_for_byte_range(end - 1, end)
    return (
        node is not None
        and node.is_extra
        and node.end_byte == end
        and b"\n" not in (node.text or b"")
        and not (node.text or b"").rstrip().endswith((b"*/", b"-}", b"*)"))
    )


_BEFORE = re.compile(rb",[ \t]*$")
_AFTER = re.compile(rb"[ \t]*,[ \t]*")


def _standalone_at(body: bytes, start: int, end: int) -> bool:
    """Whether the metavariable at body[start:end] stands as a whole token (nothing that
    continues a name or a metavariable right before or after it)."""
    before = body[start - 1 : start] if start else b""
    after = body[end : end + 1]
    return not (before and _GLUE.match(before)) and not (after and _GLUE.match(after))


def _drop_separator(pieces: list[bytes], body: bytes, end: int) -> int:
    """An empty `$$$` run ending at `end` in the template: drop the comma before it (in the
    last piece) or else the one after it; where the template goes on."""
    before = _BEFORE.search(pieces[-1]) if pieces else None
    if before is not None:
        pieces[-1] = pieces[-1][: before.start()].rstrip(b" \t")
        return end
    after = _AFTER.match(body, end)
    return after.end() if after is not None else end


def render(template: str, match: Match, source: bytes, tree: ts.Tree, grammar: Grammar) -> bytes:
    """The replacement text for one match.

    The template's lines after the first are indented like the match's line. A multi-line
    capture keeps its shape relative to where it lands: standing alone on its line (`$$$B`
    unwrapping a block), its lines keep their indentation relative to its own first line;
    placed after other code (`z.strictObject({ $$$P })`), relative to the match's line.
    """
    start = match.edit_start if match.edit_start >= 0 else match.start_byte
    indent = _line_indent(source, start)
    before_match = source[_line_start(source, start) : start]
    t_lines = template.encode().split(b"\n")
    body = t_lines[0] + b"".join(
        b"\n" + (indent + line if line.strip() else line) for line in t_lines[1:]
    )
    pieces: list[bytes] = []
    pos = 0
    for m in _TEMPLATE_VAR.finditer(body):
        multi = m.group(0).startswith(b"$$$")
        name = (m.group(1) if multi else m.group(2)) or b""
        span = match.captures.get(name.decode())
        computed = getattr(match, "texts", {}).get(name.decode())  # a rule's `transform`
        if span is None and computed is None and not _standalone_at(body, m.start(), m.end()):
            continue  # glued to other text and unbound: literal code
        pieces.append(body[pos : m.start()])
        line_start = body.rfind(b"\n", 0, m.start()) + 1
        landing = body[line_start : m.start()]
        if line_start == 0:
            landing = before_match + landing
        column = _INDENT.match(landing)
        column_bytes = column.group(0) if column else b""
        if computed is not None:
            # computed de-indented (ast-grep's rule): its lines take the landing line's indent
            pieces.append(
                computed.replace(b"\n", b"\n" + column_bytes) if column_bytes else computed
            )
        elif span is None or span[0] < 0:
            if multi:
                # An empty run takes a separator next to it in the template along:
                # `xpcall($F, debug.traceback, $$$A)` on `pcall(f)` is `xpcall(f, debug.traceback)`.
                pos = _drop_separator(pieces, body, m.end())
                continue
            pieces.append(b"")
        else:
            alone = not landing.strip()
            ref = _line_indent(source, span[0]) if alone else indent
            pieces.append(
                _reindent_capture(source, tree, grammar, span[0], span[1], ref, column_bytes)
            )
            rest = body[m.end() : body.find(b"\n", m.end()) % (len(body) + 1)]
            if rest.strip() and _ends_in_line_comment(source, tree, span[1]):
                # `{ $$$B }` whose run ends with `// note`: the `}` goes on the next line.
                pieces.append(b"\n" + (indent if line_start == 0 else column_bytes))
                pos = m.end() + len(rest) - len(rest.lstrip(b" \t"))
                continue
        pos = m.end()
    pieces.append(body[pos:])
    return b"".join(pieces)


@attrs.frozen
class Applied:
    new: bytes
    replaced: int
    skipped_inner: int  # inside a match that was rewritten
    lossy_lines: tuple[int, ...]  # matches left alone: the rewrite would drop code (1-based)
    kept_lines: tuple[int, ...] = ()  # rewritten, keeping unmentioned code before/after
    # Comments in replaced code that no capture the template uses carries over: (line, text).
    dropped_comments: tuple[tuple[int, str], ...] = ()


def _comments(tree: ts.Tree, start: int, end: int) -> list[ts.Node]:
    """The comments within source[start:end]."""
    found: list[ts.Node] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.end_byte <= start or node.start_byte >= end:
            continue
        if node.is_extra and "comment" in node.type:
            if start <= node.start_byte and node.end_byte <= end:
                found.append(node)
            continue
        stack.extend(node.children)
    return sorted(found, key=lambda n: n.start_byte)


def apply_matches(
    template: str, matches: list[Match], source: bytes, tree: ts.Tree, grammar: Grammar
) -> Applied:
    """Splice each match's replacement in (outermost first), keeping what it did not consume.

    The range replaced is what the pattern accounted for (`Match.edit_start/edit_end`):
    an unmentioned leading modifier or trailing clause stays verbatim. A match with
    unmentioned code in the middle is left alone and reported, never half-rewritten.
    """
    out: list[bytes] = []
    pos = 0
    done = skipped = 0
    lossy: list[int] = []
    kept: list[int] = []
    dropped: list[tuple[int, str]] = []
    used = set(template_vars(template))
    trailing = [t.encode() for t in grammar.optional_trailing]
    for m in sorted(matches, key=lambda m: (m.start_byte, -m.end_byte)):
        if m.start_byte < pos or 0 <= m.edit_start < pos:  # edit_start: a fix's expandStart
            skipped += 1
            continue
        if m.lossy_line is not None:
            lossy.append(m.lossy_line)
            continue
        start = m.edit_start if m.edit_start >= 0 else m.start_byte
        end = m.edit_end if m.edit_end >= 0 else m.end_byte
        text = render(template, m, source, tree, grammar)
        for token in trailing:  # `x;` kept from the source, and the template ends with `;`
            if text.rstrip().endswith(token) and source.startswith(token, end):
                end += len(token)
        carried = [span for name, span in m.captures.items() if name in used and span[0] >= 0]
        for comment in _comments(tree, start, end):
            if not any(a <= comment.start_byte and comment.end_byte <= b for a, b in carried):
                words = (comment.text or b"").decode("utf-8", "replace").split("\n")[0]
                dropped.append((comment.start_point[0] + 1, words[:80]))
        out.append(source[pos:start])
        out.append(text)
        pos = end
        done += 1
        if m.kept_line is not None:
            kept.append(m.kept_line)
    out.append(source[pos:])
    return Applied(b"".join(out), done, skipped, tuple(lossy), tuple(kept), tuple(dropped))


def error_lines(tree: ts.Tree) -> list[int]:
    """1-based lines of ERROR and MISSING nodes."""
    lines: list[int] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if not node.has_error:
            continue
        if node.is_error or node.is_missing:
            lines.append(node.start_point[0] + 1)
            continue
        stack.extend(node.children)
    return sorted(set(lines))


# What a tree-sitter parse cannot see, said wherever it is the only check that ran.
_TREE_SITTER_BLIND = {
    "c": "macro bodies (parsed as opaque text), types, undeclared names",
    "python": "indentation errors, `break`/`return` outside their block, names",
}
_GENERIC_BLIND = "types, undeclared names, and rules beyond the grammar"


@attrs.frozen
class SyntaxCheck:
    """Which check looked at a rewritten file, and what it found new."""

    check: str  # "python compile()" or "tree-sitter"
    new_error_lines: tuple[int, ...] = ()
    detail: str = ""  # the first new error, in words
    cannot_see: str = ""  # tree-sitter only: the classes of error it is blind to
    why: str = ""  # why the language's own checker did not run, if it exists


def _compile_error(source: bytes, path: str) -> tuple[int, str] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as exc:  # IndentationError and TabError included
        return exc.lineno or 1, exc.msg
    except (ValueError, RecursionError, MemoryError) as exc:
        return 1, f"{type(exc).__name__}: {exc}"
    return None


def check_syntax(
    grammar: Grammar, path: str, old: bytes, old_tree: ts.Tree, new: bytes, new_tree: ts.Tree
) -> SyntaxCheck:
    """New syntax errors of a rewrite: Python's own compile() where it accepts the original,
    else tree-sitter's ERROR/MISSING nodes, saying what those cannot see."""
    why = ""
    if grammar.id == "python":
        before = _compile_error(old, path)
        if before is None:
            after = _compile_error(new, path)
            if after is None:
                return SyntaxCheck("python compile()")
            line, msg = after
            return SyntaxCheck("python compile()", (line,), f"line {line}: {msg}")
        why = f"compile() rejects the original too (line {before[0]}: {before[1]})"
    old_errors = error_lines(old_tree) if old_tree.root_node.has_error else []
    new_errors = error_lines(new_tree) if new_tree.root_node.has_error else []
    fresh = tuple(new_errors) if len(new_errors) > len(old_errors) else ()
    detail = f"ERROR nodes at lines {', '.join(map(str, fresh[:10]))}" if fresh else ""
    blind = _TREE_SITTER_BLIND.get(grammar.id, _GENERIC_BLIND)
    return SyntaxCheck("tree-sitter", fresh, detail, blind, why)

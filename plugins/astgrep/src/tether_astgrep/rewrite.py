"""Rewrite templates: substitute captures, re-indent, splice into the file."""

from __future__ import annotations

import re

import tree_sitter as ts

from tether_astgrep.grammars import Grammar
from tether_astgrep.matcher import Match
from tether_astgrep.pattern import METAVAR_RE

_INDENT = re.compile(rb"[ \t]*")


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


def _inside_string(tree: ts.Tree, grammar: Grammar, offset: int) -> bool:
    node: ts.Node | None = tree.root_node.descendant_for_byte_range(offset, offset)
    string_ids = grammar.string_ids
    while node is not None:
        if node.kind_id in string_ids and node.start_byte < offset < node.end_byte:
            return True
        node = node.parent
    return False


def _reindent_capture(
    source: bytes, tree: ts.Tree, grammar: Grammar, start: int, end: int, column: bytes
) -> bytes:
    text = source[start:end]
    if b"\n" not in text:
        return text
    base = _line_indent(source, start)
    lines = text.split(b"\n")
    out = [lines[0]]
    offset = start + len(lines[0]) + 1
    for line in lines[1:]:
        if _inside_string(tree, grammar, offset):
            out.append(line)  # a multi-line string literal keeps every byte
        else:
            if line.startswith(base):
                stripped = line[len(base) :]
            else:
                stripped = line.lstrip(b" \t")
            out.append(column + stripped if stripped else stripped)
        offset += len(line) + 1
    return b"\n".join(out)


def render(template: str, match: Match, source: bytes, tree: ts.Tree, grammar: Grammar) -> bytes:
    """The replacement text for one match."""
    indent = _line_indent(source, match.start_byte)
    t_lines = template.encode().split(b"\n")
    body = t_lines[0] + b"".join(
        b"\n" + (indent + line if line.strip() else line) for line in t_lines[1:]
    )
    pieces: list[bytes] = []
    pos = 0
    var_re = re.compile(METAVAR_RE.pattern.encode())
    for m in var_re.finditer(body):
        pieces.append(body[pos : m.start()])
        multi = m.group(0).startswith(b"$$$")
        name = (m.group(1) if multi else m.group(2)) or b""
        span = match.captures.get(name.decode())
        if span is None or span[0] < 0:
            pieces.append(b"")
        else:
            column = _line_indent(body, m.start())
            pieces.append(_reindent_capture(source, tree, grammar, span[0], span[1], column))
        pos = m.end()
    pieces.append(body[pos:])
    return b"".join(pieces)


def apply_matches(
    template: str, matches: list[Match], source: bytes, tree: ts.Tree, grammar: Grammar
) -> tuple[bytes, int, int]:
    """New content, replacements made, inner matches skipped (an outer match won)."""
    out: list[bytes] = []
    pos = 0
    done = skipped = 0
    for m in sorted(matches, key=lambda m: (m.start_byte, -m.end_byte)):
        if m.start_byte < pos:
            skipped += 1
            continue
        out.append(source[pos : m.start_byte])
        out.append(render(template, m, source, tree, grammar))
        pos = m.end_byte
        done += 1
    out.append(source[pos:])
    return b"".join(out), done, skipped


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

"""`ast_grep` with `dump`: how tether parses a snippet, so an agent can fix its own pattern."""

from __future__ import annotations

import tree_sitter as ts

from tether.text import truncate
from tether_astgrep.grammars import Grammar
from tether_astgrep.pattern import CompiledPattern, MetaVar, PatternError, PItem, compile_readings

MAX_DUMP_LINES = 300
LEAF_CHARS = 60


def syntax_tree(root: ts.Node, source: bytes, most: int = MAX_DUMP_LINES) -> list[str]:
    """One line per node, indented by depth: `field: kind "text"` (a leaf's text), unnamed
    tokens quoted, ERROR and MISSING nodes marked."""
    lines: list[str] = []

    def visit(node: ts.Node, depth: int, field: str | None) -> None:
        if len(lines) >= most:
            return
        label = node.type if node.is_named else repr(node.type)
        if node.is_missing:
            label = f"MISSING {label}"
        parts = ["  " * depth + (f"{field}: " if field else "") + label]
        if node.is_named and node.child_count == 0:
            text = source[node.start_byte : node.end_byte].decode("utf-8", "replace")
            parts.append(repr(truncate(text, LEAF_CHARS)))
        row, col = node.start_point
        parts.append(f"@{row + 1}:{col + 1}")
        lines.append(" ".join(parts))
        for i, child in enumerate(node.children):
            visit(child, depth + 1, node.field_name_for_child(i))

    visit(root, 0, None)
    if len(lines) >= most:
        lines.append(f"… (first {most} nodes shown)")
    return lines


def pattern_tree(items: tuple[PItem, ...]) -> list[str]:
    """The compiled pattern: what each node must be (`$X`: any one node, `$$$X`: a run)."""
    lines: list[str] = []

    def visit(item: PItem, depth: int) -> None:
        pad = "  " * depth
        if isinstance(item, MetaVar):
            name = item.name or "_"
            lines.append(f"{pad}{'$$$' if item.multi else '$'}{name}")
            return
        label = item.kind if item.named else repr(item.kind)
        if item.named and item.text is not None:
            label += " " + repr(item.text.decode("utf-8", "replace"))
        lines.append(pad + label)
        for child in item.children:
            visit(child, depth + 1)

    for item in items:
        visit(item, 0)
    return lines


def dump(snippet: str, grammar: Grammar, strictness: str) -> tuple[str, dict[str, object]]:
    """The text and structured result of a dump: the readings the pattern compiler found (the
    first is the one a search uses), then the snippet parsed as a whole file."""
    lines: list[str] = []
    readings: list[CompiledPattern] = []
    refused = None
    try:
        readings = compile_readings(snippet, grammar, strictness=strictness, most=4)
    except PatternError as exc:
        refused = str(exc)
    if refused is not None:
        lines.append(f"as a pattern: refused: {refused}")
    for i, reading in enumerate(readings):
        which = "used by a search" if i == 0 else "another reading (used only to explain misses)"
        lines.append(
            f"reading {i + 1} ({which}): {reading.interpretation} [context: {reading.rung}]"
        )
        lines.extend("  " + line for line in pattern_tree(reading.items))
    source = snippet.encode()
    tree = grammar.parser().parse(source)
    errors = " (has ERROR/MISSING nodes)" if tree.root_node.has_error else ""
    lines.append(f"the snippet parsed as a whole {grammar.id} file{errors}:")
    as_file = syntax_tree(tree.root_node, source)
    lines.extend("  " + line for line in as_file)
    return "\n".join(lines), {
        "readings": [
            {
                "interpreted_as": r.interpretation,
                "context": r.rung,
                "tree": pattern_tree(r.items),
            }
            for r in readings
        ],
        "refused": refused,
        "file_tree": as_file,
        "file_has_errors": tree.root_node.has_error,
    }

"""Pattern compiler: a code fragment with metavariables → a tree to match.

The fragment is parsed with the target grammar inside each rung of the grammar's scaffold
ladder; the first rung that parses with no ERROR or MISSING node is used.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence

import attrs
import tree_sitter as ts

from tether_astgrep.grammars import Grammar, Scaffold

# `$NAME`, `$$$NAME`, `$_`, `$_NAME`, `$$$`: ast-grep's spelling.
METAVAR_RE = re.compile(r"\$\$\$([A-Z_][A-Z0-9_]*)?|\$([A-Z_][A-Z0-9_]*)")


class PatternError(Exception):
    """The pattern cannot be used; the message says why."""


@attrs.frozen
class MetaVar:
    """`name` None means a wildcard that binds nothing."""

    name: str | None
    multi: bool


@attrs.frozen
class PNode:
    """A pattern node: a leaf compares by text, an inner node by kind and children."""

    kind: str
    named: bool
    text: bytes | None
    children: tuple[PNode | MetaVar, ...] = ()


PItem = PNode | MetaVar


@attrs.frozen
class CompiledPattern:
    source: str
    grammar_id: str
    items: tuple[PItem, ...]  # one item: a node pattern; several: consecutive siblings
    rung: str
    interpretation: str
    literals: tuple[bytes, ...]  # every token the match must contain verbatim
    var_names: frozenset[str]  # binding metavariables (single or multi)
    # Regexes (bytes) that every file holding a match contains: runs of consecutive tokens
    # with only whitespace, comments and insignificant punctuation between them.
    chains: tuple[bytes, ...] = ()

    @property
    def is_sequence(self) -> bool:
        return len(self.items) > 1

    @property
    def root(self) -> PItem:
        return self.items[0]


def _alone_as_statement(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] stands where a statement would (after `{`/`;`/a line start,
    before `}`/a line end)."""
    before = text[:start].rstrip(" \t")
    after = text[end:].lstrip(" \t")
    return (not before or before[-1] in "{;\n") and (not after or after[0] in "}\n")


def placeholders_for(
    pattern: str,
    terminator: str = "",
    template: str = "{}",
    respell: Mapping[int, str] | None = None,
) -> tuple[str, dict[bytes, MetaVar]]:
    """Replace metavariables by identifiers the grammar can parse.

    With a `terminator`, a `$$$X` alone as a statement becomes `ident;`, and the mapping also
    knows `ident;` (the expression statement that then stands for the run of statements).
    `template` spells each placeholder (`Grammar.metavar_template`: JSON's is a string);
    `respell` another spelling for some of them, by occurrence (`Grammar.typed_placeholders`).
    """
    mapping: dict[bytes, MetaVar] = {}
    anonymous = 0
    occurrence = -1

    def sub(m: re.Match[str]) -> str:
        nonlocal anonymous, occurrence
        occurrence += 1
        multi = m.group(0).startswith("$$$")
        name = m.group(1) if multi else m.group(2)
        if name is None or name.startswith("_"):
            anonymous += 1
            ident = f"__tmv{'s' if multi else ''}__{anonymous}"
            var = MetaVar(None, multi)
        else:
            ident = f"__tmv{'s' if multi else ''}_{name}"
            var = MetaVar(name, multi)
        ident = (respell or {}).get(occurrence, template).format(ident)
        mapping[ident.encode()] = var
        if multi and terminator and _alone_as_statement(pattern, m.start(), m.end()):
            mapping[(ident + terminator).encode()] = var
            return ident + terminator
        return ident

    return METAVAR_RE.sub(sub, pattern), mapping


def _locate(root: ts.Node, start: int, end: int, grammar: Grammar) -> list[ts.Node]:
    node = root.descendant_for_byte_range(start, end)
    if node is None:
        return []
    if node.start_byte == start and node.end_byte == end:
        while (
            node.parent is not None
            and node.parent.start_byte == start
            and node.parent.end_byte == end
            and node.parent != root
        ):
            node = node.parent
        if node == root:
            return grammar.significant(node)
        return [node]
    kids = grammar.significant(node)
    first = next((i for i, k in enumerate(kids) if k.start_byte == start), None)
    last = next((i for i, k in enumerate(kids) if k.end_byte == end), None)
    if first is None or last is None or last < first:
        return []
    return kids[first : last + 1]


def _strip(nodes: list[ts.Node], terminator: bytes, grammar: Grammar) -> list[ts.Node]:
    """Drop a terminator we added, and wrappers that add nothing (statement → expression)."""
    if terminator and len(nodes) == 1 and nodes[0].type.endswith("expression_statement"):
        # The user wrote an expression; we added the `;` only to make it parse.
        kids = [c for c in nodes[0].children if not c.is_extra]
        if kids and not kids[-1].is_named and kids[-1].text == terminator:
            nodes = kids[:-1]
    while len(nodes) == 1:
        kids = grammar.significant(nodes[0])
        only = nodes[0]
        if (
            len(kids) == 1
            and kids[0].start_byte == only.start_byte
            and kids[0].end_byte == only.end_byte
        ):
            nodes = kids
        else:
            break
    return nodes


def _convert(
    node: ts.Node,
    mapping: dict[bytes, MetaVar],
    grammar: Grammar,
    literals: list[tuple[bytes, int, int]],
) -> PItem:
    text = node.text or b""
    mv = mapping.get(text)
    if mv is not None:
        literals.append((b"", 0, 0))  # a chain break: anything may stand here
        if mv.multi and node.type in grammar.block_kinds:
            return PNode(node.type, node.is_named, None, (mv,))
        return mv
    if node.child_count == 0:
        literals.append((text, node.start_byte, node.end_byte))
        return PNode(node.type, node.is_named, text)
    kids = grammar.significant(node)
    return PNode(
        node.type,
        node.is_named,
        None,
        tuple(_convert(k, mapping, grammar, literals) for k in kids),
    )


def _chains(
    tokens: list[tuple[bytes, int, int]], src: bytes, grammar: Grammar, sequence: bool
) -> tuple[bytes, ...]:
    """Regexes for runs of adjacent pattern tokens (b"" in `tokens` marks a metavariable).

    Two tokens chain only if the pattern text between them is itself nothing but gap
    characters, so a token the grammar hides from the tree always breaks the chain.
    """
    if grammar.comment_regex is None or sequence:
        return ()
    gap = rb"(?:[\s,;\\]|" + grammar.comment_regex.encode() + rb")*"
    gap_re = re.compile(gap)
    out: list[bytes] = []
    run: list[bytes] = []
    last_end = -1
    for text, start, end in [*tokens, (b"", 0, 0)]:
        if text and run and gap_re.fullmatch(src, last_end, start) is not None:
            run.append(text)
            last_end = end
            continue
        if len(run) > 1:
            out.append(gap.join(re.escape(t) for t in run))
        run = [text] if text else []
        last_end = end
    return tuple(out)


def _kind_words(item: PItem) -> str:
    if isinstance(item, MetaVar):
        return "any node" if not item.multi else "any nodes"
    return item.kind.replace("_", " ") if item.named else repr(item.kind)


def _read(
    scaffold: Scaffold,
    text: str,
    substituted: str,
    mapping: dict[bytes, MetaVar],
    grammar: Grammar,
    parser: ts.Parser,
    tried: list[str],
) -> tuple[CompiledPattern, str] | None:
    """The fragment read in one rung (and the kind it was read as, before unwrapping)."""
    for terminator in scaffold.terminators:
        body = substituted + terminator
        indented = "\n".join(scaffold.indent + line for line in body.split("\n"))
        prefix = (scaffold.prefix + scaffold.indent).encode()
        src = (scaffold.prefix + indented + scaffold.suffix).encode()
        end = len((scaffold.prefix + indented).encode())
        tree = parser.parse(src)
        tried.append(scaffold.rung + (f" (+{terminator!r})" if terminator else ""))
        if tree.root_node.has_error:
            continue
        located = _locate(tree.root_node, len(prefix), end, grammar)
        nodes = _strip(located, terminator.encode(), grammar)
        if not nodes:
            continue
        literals: list[tuple[bytes, int, int]] = []
        items = tuple(_convert(n, mapping, grammar, literals) for n in nodes)
        if len(items) == 1:
            what = _kind_words(items[0])
        else:
            what = "sequence of " + ", ".join(_kind_words(i) for i in items)
        names = frozenset(mv.name for mv in mapping.values() if mv.name is not None)
        chains = _chains(literals, src, grammar, len(items) > 1)
        compiled = CompiledPattern(
            source=text,
            grammar_id=grammar.id,
            items=items,
            rung=scaffold.rung,
            interpretation=f"{what} (as {'an' if scaffold.rung[0] in 'aeiou' else 'a'} {scaffold.rung})",
            literals=tuple(sorted({t for t, _, _ in literals if t}, key=lambda b: (-len(b), b))),
            var_names=names,
            chains=chains,
        )
        return compiled, located[0].type if len(located) == 1 else ""
    return None


def compile_pattern(
    pattern: str, grammar: Grammar, rungs: Sequence[str] | None = None
) -> CompiledPattern:
    """Parse `pattern` in the first scaffold rung that accepts it cleanly.

    The exception (`Grammar.declaration_first`): a fragment read as a kind that marks a
    declaration in disguise is read at the declaration rung when that rung accepts it.
    """
    text = pattern.strip()
    if not text:
        raise PatternError("pattern: must not be empty")
    substituted, mapping = placeholders_for(
        text, grammar.statement_terminator, grammar.metavar_template
    )
    parser = grammar.parser()
    tried: list[str] = []
    scaffolds = [s for s in grammar.scaffolds if rungs is None or s.rung in rungs]
    declaration = next((s for s in scaffolds if s.rung == "declaration"), None)
    for scaffold in scaffolds:
        read = _read(scaffold, text, substituted, mapping, grammar, parser, tried)
        if read is None:
            read = _respelled(text, grammar, scaffold, parser)
        if read is None:
            continue
        compiled, kind = read
        finds = grammar.declaration_first.get(kind)
        if finds is not None and declaration is not None and declaration is not scaffold:
            as_declaration = _read(
                declaration, text, substituted, mapping, grammar, parser, []
            ) or _respelled(text, grammar, declaration, parser)
            if as_declaration is not None:
                first, _ = as_declaration
                what = first.interpretation.removesuffix(" (as a declaration)")
                return attrs.evolve(
                    first,
                    interpretation=(
                        f"{what} (as a declaration, not as a {kind.replace('_', ' ')}: "
                        f"finds {finds})"
                    ),
                )
        return compiled
    raise PatternError(
        f"pattern: not parseable as {grammar.id} in any context "
        f"(tried {', '.join(tried) or 'no rung'}); "
        "write one complete statement, expression, member or declaration"
    )


# Respellings tried in a rung that does not read the plain fragment: at most this many
# metavariables at once, and this many choices in all (so an unparseable pattern fails fast).
MAX_RESPELLED = 2
MAX_RESPELLINGS = 96


def _respelled(
    text: str, grammar: Grammar, scaffold: Scaffold, parser: ts.Parser
) -> tuple[CompiledPattern, str] | None:
    """The fragment read in `scaffold` with some metavariables spelled as typed items
    (`$$$P` in Kotlin's `fun $F($$$P)` as `P: _T`, a parameter), fewest respelled first."""
    spellings = grammar.typed_placeholders
    count = len(METAVAR_RE.findall(text))
    if not spellings or not count:
        return None
    # `$$$` ones first: parameter lists, arms and bodies are what needs respelling most.
    found = list(METAVAR_RE.finditer(text))
    order = sorted(range(count), key=lambda i: not found[i].group(0).startswith("$$$"))
    choices = (
        dict(zip(chosen, spelled, strict=True))
        for k in range(1, min(count, MAX_RESPELLED) + 1)
        for chosen in itertools.combinations(order, k)
        for spelled in itertools.product(spellings, repeat=k)
    )
    for respell in itertools.islice(choices, MAX_RESPELLINGS):
        substituted, mapping = placeholders_for(
            text, grammar.statement_terminator, grammar.metavar_template, respell
        )
        read = _read(scaffold, text, substituted, mapping, grammar, parser, [])
        # Every respelled placeholder must have been read as one whole node.
        if read is not None and _metavars(read[0].items) == count:
            return read
    return None


def _metavars(items: Sequence[PItem]) -> int:
    return sum(1 if isinstance(i, MetaVar) else _metavars(i.children) for i in items)

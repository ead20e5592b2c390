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

# `$NAME`, `$$$NAME`, `$_`, `$_NAME`, `$$$`: ast-grep's spelling. A metavariable stands as a
# whole token: `$ZodType` or `core.$ZodError` (a `$` inside an identifier) is literal code.
METAVAR_RE = re.compile(r"(?<![\w$])(?:\$\$\$([A-Z_][A-Z0-9_]*)?|\$([A-Z_][A-Z0-9_]*))(?![\w$])")


# How much of a candidate a pattern must account for (ast-grep's levels; `relaxed` is `ast`
# here, since comments never count): see plugins/astgrep/docs/patterns.md, matching rules.
STRICTNESS = ("cst", "smart", "ast", "signature")


class PatternError(Exception):
    """The pattern cannot be used; the message says why."""


@attrs.frozen
class MetaVar:
    """`name` None means a wildcard that binds nothing."""

    name: str | None
    multi: bool
    # The kind of list the grammar made of the metavariable alone (Ruby's `puts $X` reads
    # `$X` as an `argument_list`, Go's `return $X` as an `expression_list`): it binds such a
    # node only when that holds one item, so `puts $X` does not find `puts a, nil`.
    container: str | None = None


@attrs.frozen
class PNode:
    """A pattern node: a leaf compares by text, an inner node by kind and children."""

    kind: str
    named: bool
    text: bytes | None
    children: tuple[PNode | MetaVar, ...] = ()
    # A token the rung added after a `$$$` run (C++ `template<typename $T> $$$D` reads as
    # `… D;`): matched when the code has it, so the run does not capture it, never required.
    optional: bool = False
    # The fields its children fill (`name`, `parameters`, `body`): a candidate's child in a
    # field the pattern's node leaves empty (`return_type`, `type_parameters`) is an optional
    # part the pattern does not mention (the pattern parsed without it).
    fields: frozenset[str] = frozenset()
    # A token the grammar supplied where the fragment has none (MISSING: C's `;` after a
    # macro call with a body, `FOR_EACH($X, $Y) { $$$B }`): it matches only a token the
    # grammar supplied in the code too, never a written one.
    missing: bool = False


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
    # Compiled as "cst" (the reading above); `_with_strictness` relaxes the prefilters.
    strictness: str = "cst"
    named_literals: tuple[bytes, ...] = ()  # the literals that are named leaves
    # The chains smart strictness keeps: runs of consecutive tokens of one node.
    sibling_chains: tuple[bytes, ...] = ()
    # Other readings whose matches also count (`Grammar.also_read`); the prefilters above
    # hold for every one of them.
    also: tuple[CompiledPattern, ...] = ()

    @property
    def is_sequence(self) -> bool:
        return len(self.items) > 1

    @property
    def root(self) -> PItem:
        return self.items[0]


def _alone_as_statement(text: str, start: int, end: int, opens: str = "{;\n") -> bool:
    """Whether text[start:end] stands where a statement would (after `{`/`;`/a line start,
    before `}`/a line end); with wider `opens`, where an item would."""
    before = text[:start].rstrip(" \t")
    after = text[end:].lstrip(" \t")
    closes = "})\n" if "(" in opens else "}\n"
    return (not before or before[-1] in opens) and (not after or after[0] in closes)


def placeholders_for(
    pattern: str,
    terminator: str = "",
    filler: str | None = None,
    template: str = "{}",
    respell: Mapping[int, str] | None = None,
) -> tuple[str, dict[bytes, MetaVar]]:
    """Replace metavariables by identifiers the grammar can parse.

    With a `terminator`, a `$$$X` alone as a statement becomes `ident;`, and the mapping also
    knows `ident;` (the expression statement that then stands for the run of statements).
    A `filler` (`"fn {}() {{}}"`, `"case {}:"`) spells such a `$$$X` as one item of another
    sequence (impl items, switch cases…); the node spelled so stands for the run.
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
        mapping[ident.strip().encode()] = var  # a spelling may end with the line it needs
        if multi and terminator:
            mapping[(ident + terminator).encode()] = var
        if (
            multi
            and filler is not None
            and _alone_as_statement(pattern, m.start(), m.end(), "{;:(\n")
        ):
            spelled = filler.format(ident)
            mapping[spelled.strip().encode()] = var
            return spelled
        if multi and terminator and _alone_as_statement(pattern, m.start(), m.end()):
            return ident + terminator
        return ident

    return METAVAR_RE.sub(sub, pattern), mapping


def _locate(
    root: ts.Node, start: int, end: int, grammar: Grammar, src: bytes = b""
) -> list[ts.Node]:
    node = root.descendant_for_byte_range(start, end)
    if node is None:
        return []
    if (
        node.start_byte == start
        and node.end_byte > end
        and node.parent is not None
        and not src[end : node.end_byte].strip()
    ):
        # A node that ends with the line break after the fragment (C's `#define … \n`).
        end = node.end_byte
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


# What a grammar may consume between tokens without a visible node: whitespace, a line
# continuation, and a `;` that Kotlin and Swift read as a hidden separator token.
_UNSEEN = re.compile(rb"(?:\s|\\\r?\n|;)*")


def quoted_literal(node: ts.Node) -> bool:
    """A literal between two equal quote tokens (YAML's `"name"`), whose text between them
    may be no child even where the grammar does not list it as a string kind."""
    if node.child_count < 2 or node.named_child_count:
        return False  # (a string whose text is a child, `string_fragment`, is no such literal)
    first, last = node.children[0], node.children[-1]
    return (
        not first.is_named
        and not last.is_named
        and first.text == last.text
        and first.text in (b'"', b"'", b"`", b'"""', b"'''")
    )


def whole_literal(node: ts.Node) -> bool:
    """A node compared by its whole text: a quoted literal, or a node whose own text begins
    before its first child (CSS's `100%` is an `integer_value` whose only child is the unit
    `%`: the number is no child, so comparing the children alone would equal `50%`)."""
    if quoted_literal(node):
        return True
    if not node.child_count:
        return False
    gap = node.children[0].start_byte - node.start_byte
    return gap > 0 and _UNSEEN.fullmatch((node.text or b"")[:gap]) is None


def lost_text(
    root: ts.Node, src: bytes, start: int, end: int, opaque: frozenset[int] = frozenset()
) -> str | None:
    """The first text in src[start:end] that no leaf of the tree covers (what the grammar
    dropped without an error node), or None when every token of it is in the tree. Nodes of
    the `opaque` kinds (strings, whose text between the quotes may be no child) count as
    leaves."""
    covered = start
    stack = [root]
    while stack:
        node = stack.pop()
        if node.end_byte <= covered or node.start_byte >= end:
            continue
        if node.child_count and node.kind_id not in opaque and not whole_literal(node):
            stack.extend(reversed(node.children))
            continue
        if node.start_byte > covered and not _UNSEEN.fullmatch(src, covered, node.start_byte):
            return src[covered : node.start_byte].strip().decode("utf-8", "replace")
        covered = max(covered, node.end_byte)
    if covered < end and not _UNSEEN.fullmatch(src, covered, end):
        return src[covered:end].strip().decode("utf-8", "replace")
    return None


def _strip(nodes: list[ts.Node], terminator: bytes, grammar: Grammar) -> list[ts.Node]:
    """Drop a terminator we added, and wrappers that add nothing (statement → expression)."""
    if terminator and len(nodes) > 1 and not nodes[-1].is_named and nodes[-1].text == terminator:
        # `enum E {…}` + our `;` reads as the enum then a `;`: the `;` is not the user's.
        nodes = nodes[:-1]
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
    literals: list[Token],
    named: set[bytes],
    src: bytes = b"",
    slot: tuple[int, int] | None = None,
    added: tuple[int, int] = (0, 0),
) -> PItem:
    """`added` is the span of the terminator the rung put after the fragment: a token of it
    right after a `$$$` is dropped (the run stands for what is there, `;` or not)."""
    text = node.text or b""
    mv = mapping.get(text)
    if mv is not None:
        literals.append((b"", 0, 0, None))  # a chain break: anything may stand here
        if mv.multi and node.type in grammar.block_kinds:
            return PNode(node.type, node.is_named, None, (mv,))
        if not mv.multi and node.child_count:
            return attrs.evolve(mv, container=node.type)
        return mv
    if node.child_count == 0 or (whole_literal(node) and b"__tmv" not in text):
        # (a literal whose text is no child, YAML's `"name"`, CSS's `100%`, is compared whole)
        return _convert_leaf(node, text, literals, named, slot)
    return _convert_children(node, mapping, grammar, literals, named, src, added)


def _convert_leaf(
    node: ts.Node,
    text: bytes,
    literals: list[Token],
    named: set[bytes],
    slot: tuple[int, int] | None,
) -> PNode:
    """A leaf (or a literal compared whole): its text, recorded among the literals."""
    if node.is_missing:
        literals.append((b"", 0, 0, None))  # no text: a chain break
        return PNode(node.type, node.is_named, b"", missing=True)
    if not node.is_named and text.startswith(b"#"):
        # A preprocessor directive's token (`#define`) is a regex: `#  define` is one too.
        literals.append((b"", 0, 0, None))
        return PNode(node.type, node.is_named, text)
    literals.append((text, node.start_byte, node.end_byte, slot))
    if node.is_named and text:
        named.add(text)
    return PNode(node.type, node.is_named, text)


def _convert_children(
    node: ts.Node,
    mapping: dict[bytes, MetaVar],
    grammar: Grammar,
    literals: list[Token],
    named: set[bytes],
    src: bytes,
    added: tuple[int, int],
) -> PNode:
    """An inner node: its significant children converted in order."""
    kids = grammar.significant(node)
    out: list[PItem] = []
    i = 0
    while i < len(kids):
        # A filler the grammar spells as two siblings (Dart's `var x` then `;`) is one `$$$`.
        if i + 1 < len(kids) and src:
            pair = mapping.get(src[kids[i].start_byte : kids[i + 1].end_byte])
            ours = added[0] <= kids[i + 1].start_byte and kids[i + 1].end_byte <= added[1]
            if pair is not None and pair.multi and not ours:
                literals.append((b"", 0, 0, None))
                out.append(pair)
                i += 2
                continue
        kid = kids[i]
        if kid.is_missing and kid.type in grammar.supplied_closers:
            # The `#endif` of `#ifdef $X` (`supplied_closers`): matched when the code has it
            # there (an empty block, which is all `cst` finds), never required.
            literals.append((b"", 0, 0, None))
            out.append(PNode(kid.type, kid.is_named, kid.type.encode(), optional=True))
            i += 1
            continue
        if (
            out
            and isinstance(out[-1], MetaVar)
            and out[-1].multi
            and added[0] <= kid.start_byte
            and kid.end_byte <= added[1]
            and kid.start_byte < kid.end_byte
            and kid.child_count == 0
        ):
            # C++ `template<typename $T> $$$D` reads as `… D;`: that `;` is ours; required,
            # it would find only the templates that end in one.
            literals.append((b"", 0, 0, None))
            out.append(PNode(kid.type, kid.is_named, kid.text, optional=True))
            i += 1
            continue
        out.append(_convert(kid, mapping, grammar, literals, named, src, (node.id, i), added))
        i += 1
    fields = frozenset(
        f for k in range(node.child_count) if (f := node.field_name_for_child(k)) is not None
    )
    return PNode(node.type, node.is_named, None, tuple(out), fields=fields)


def _chains(
    tokens: list[Token], src: bytes, grammar: Grammar, sequence: bool, siblings: bool = False
) -> tuple[bytes, ...]:
    """Regexes for runs of adjacent pattern tokens (b"" in `tokens` marks a metavariable).

    Two tokens chain only if the pattern text between them is itself nothing but gap
    characters, so a token the grammar hides from the tree always breaks the chain. With
    `siblings` (smart strictness), they must also be consecutive children of one node: code
    the pattern does not mention may end a node (trailing children) or start one (`async`)."""
    if grammar.comment_regex is None or sequence or grammar.inner_tokens:
        return ()
    gap = rb"(?:[\s,;\\]|" + grammar.comment_regex.encode() + rb")*"
    gap_re = re.compile(gap)
    out: list[bytes] = []
    run: list[bytes] = []
    last_end = -1
    last_slot: tuple[int, int] | None = None
    for text, start, end, slot in [*tokens, (b"", 0, 0, None)]:
        adjacent = not siblings or (
            slot is not None
            and last_slot is not None
            and slot[0] == last_slot[0]
            and slot[1] == last_slot[1] + 1
        )
        if text and run and adjacent and gap_re.fullmatch(src, last_end, start) is not None:
            run.append(text)
            last_end, last_slot = end, slot
            continue
        if len(run) > 1:
            out.append(gap.join(re.escape(t) for t in run))
        run = [text] if text else []
        last_end, last_slot = end, slot
    return tuple(out)


def _kind_words(item: PItem) -> str:
    if isinstance(item, MetaVar):
        return "any node" if not item.multi else "any nodes"
    return item.kind.replace("_", " ") if item.named else repr(item.kind)


Variant = tuple[str, dict[bytes, MetaVar]]
Token = tuple[bytes, int, int, tuple[int, int] | None]  # text, span in the scaffold, slot


def _keywords_as_names(item: PItem, keywords: frozenset[str]) -> list[str]:
    """The keywords of the pattern that this reading takes for names (`switch` as a method)."""
    if isinstance(item, MetaVar) or not keywords:
        return []
    if item.text is not None:
        word = item.text.decode("utf-8", "replace")
        return [word] if item.named and "identifier" in item.kind and word in keywords else []
    return [w for child in item.children for w in _keywords_as_names(child, keywords)]


def _read(
    scaffold: Scaffold,
    text: str,
    variants: Sequence[Variant],
    grammar: Grammar,
    parser: ts.Parser,
    tried: dict[str, str],
    as_names: list[tuple[CompiledPattern, str]] | None = None,
    *,
    missing_ok: bool = False,
) -> tuple[CompiledPattern, str] | None:
    """The fragment read in one rung (and the kind it was read as, before unwrapping).

    Each spelling of the metavariables (`variants`) is tried with each terminator; a reading
    that takes one of the grammar's keywords for a name is put aside in `as_names` (used only
    when no rung reads the word otherwise). `tried` gets, per rung and terminator, why the
    first spelling was refused there."""
    for substituted, mapping in variants:
        for terminator in scaffold.terminators:
            read = _read_one(
                scaffold, text, substituted, mapping, terminator, grammar, parser, missing_ok
            )
            label = scaffold.rung + (f" (+{terminator!r})" if terminator else "")
            if isinstance(read, str):
                tried.setdefault(label, read)
                continue
            words = [
                w for i in read[0].items for w in _keywords_as_names(i, grammar.reserved_words)
            ]
            if not words:
                return read
            tried.setdefault(label, f"reads the keyword {words[0]!r} as a name")
            if as_names is not None and grammar.soft_keywords.issuperset(words):
                as_names.append(read)
    return None


def _only_missing_tokens(root: ts.Node, src: bytes, start: int, end: int, grammar: Grammar) -> bool:
    """Whether the only defects of a scaffolded fragment are statement terminators the grammar
    supplied inside it, before more of the fragment (MISSING leaves), or closing tokens it
    supplied after the whole fragment (`Grammar.supplied_closers`): C reads
    `FOR_EACH(x, xs) { … }` as a call whose `;` is missing, then a block, in the code as in the
    pattern; `#ifdef $X` as the directive with its `#endif` missing. A fragment cut short
    (`def f(`, a `)` missing) is still refused."""
    found = False
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_missing:
            closer = node.type in grammar.supplied_closers and not node.is_named
            if closer and start <= node.start_byte and not src[node.start_byte : end].strip():
                found = True
                continue
            if (
                node.type != grammar.statement_terminator
                or node.is_named
                or not start <= node.start_byte < end
            ):
                return False
            found = True
        elif node.is_error:
            return False
        elif node.has_error:
            stack.extend(node.children)
    return found


def _with_missing_tokens(
    text: str,
    variants: Sequence[Variant],
    grammar: Grammar,
    parser: ts.Parser,
    scaffolds: Sequence[Scaffold],
) -> list[CompiledPattern]:
    """The first reading in which the grammar supplies statement terminators the fragment
    lacks (a macro call with a body in C), or a closing token at its end (`#ifdef $X` without
    its `#endif`), for a fragment no rung reads cleanly."""
    if not grammar.statement_terminator and not grammar.supplied_closers:
        return []
    for scaffold in scaffolds:
        read = _read(scaffold, text, variants, grammar, parser, {}, missing_ok=True)
        if read is not None:
            return [read[0]]
    return []


def _error_at(root: ts.Node, src: bytes, start: int) -> str:
    """Where the first ERROR or MISSING node of a scaffolded fragment is, for a refusal."""
    stack = [root]
    while stack:
        node = stack.pop()
        if not node.has_error and not node.is_missing:
            continue
        if node.is_missing:
            return f"syntax error: {node.type!r} missing"
        if node.is_error:
            bad = src[max(node.start_byte, start) : node.end_byte].strip().split(b"\n")[0]
            return f"syntax error at {bad[:40].decode('utf-8', 'replace')!r}"
        stack.extend(reversed(node.children))
    return "syntax error"


def _read_one(
    scaffold: Scaffold,
    text: str,
    substituted: str,
    mapping: dict[bytes, MetaVar],
    terminator: str,
    grammar: Grammar,
    parser: ts.Parser,
    missing_ok: bool = False,
) -> tuple[CompiledPattern, str] | str:
    """The reading, or why there is none in this rung (`missing_ok`: also one where the grammar
    supplied a token the fragment lacks, as it does in the code)."""
    body = substituted + terminator
    indented = "\n".join(scaffold.indent + line for line in body.split("\n"))
    prefix = (scaffold.prefix + scaffold.indent).encode()
    src = (scaffold.prefix + indented + scaffold.suffix).encode()
    end = len((scaffold.prefix + indented).encode())
    tree = parser.parse(src)
    fragment = (len(prefix), end - len(terminator.encode()))
    if tree.root_node.has_error and not (
        missing_ok and _only_missing_tokens(tree.root_node, src, *fragment, grammar)
    ):
        return _error_at(tree.root_node, src, len(prefix))
    lost = lost_text(tree.root_node, src, len(prefix), end, grammar.string_ids)
    if lost is not None:
        # The grammar dropped part of the fragment without an error node (Kotlin's
        # `val X: T != null` ends at `T`): a reading of what is left would match anything.
        return f"the grammar drops {lost!r} (no node holds it)"
    located = _locate(tree.root_node, len(prefix), end, grammar, src)
    nodes = _strip(located, terminator.encode(), grammar)
    if not nodes:
        return "no node or run of sibling nodes is exactly the fragment"
    literals: list[Token] = []
    named: set[bytes] = set()
    added = (end - len(terminator.encode()), end)
    items = tuple(_convert(n, mapping, grammar, literals, named, src, added=added) for n in nodes)
    if len(items) == 1:
        what = _kind_words(items[0])
    else:
        what = "sequence of " + ", ".join(_kind_words(i) for i in items)
    names = frozenset(mv.name for mv in mapping.values() if mv.name is not None)
    chains = _chains(literals, src, grammar, len(items) > 1)
    sibling_chains = _chains(literals, src, grammar, len(items) > 1, siblings=True)
    compiled = CompiledPattern(
        source=text,
        grammar_id=grammar.id,
        items=items,
        rung=scaffold.rung,
        interpretation=f"{what} (as {'an' if scaffold.rung[0] in 'aeiou' else 'a'} {scaffold.rung})",
        literals=tuple(sorted({t[0] for t in literals if t[0]}, key=lambda b: (-len(b), b))),
        var_names=names,
        chains=chains,
        sibling_chains=sibling_chains,
        named_literals=tuple(sorted(named, key=lambda b: (-len(b), b))),
    )
    return compiled, located[0].type if len(located) == 1 else ""


def compile_pattern(
    pattern: str,
    grammar: Grammar,
    rungs: Sequence[str] | None = None,
    strictness: str = "smart",
) -> CompiledPattern:
    """Parse `pattern` in the first scaffold rung that accepts it cleanly.

    The exception (`Grammar.declaration_first`): a fragment read as a kind that marks a
    declaration in disguise is read at the declaration rung when that rung accepts it.
    """
    return compile_readings(pattern, grammar, rungs, strictness)[0]


def compile_readings(
    pattern: str,
    grammar: Grammar,
    rungs: Sequence[str] | None = None,
    strictness: str = "smart",
    most: int = 1,
) -> list[CompiledPattern]:
    """The reading `compile_pattern` uses, then up to `most - 1` other clean readings (later
    rungs, read differently), for a search that finds nothing to say what else would."""
    if strictness not in STRICTNESS:
        raise PatternError(f"strictness: {strictness!r} is not one of {', '.join(STRICTNESS)}")
    text = pattern.strip()
    if not text:
        raise PatternError("pattern: must not be empty")
    variants = _variants(text, grammar)
    reader = _Reader(text, variants, grammar, grammar.parser())
    tried: dict[str, str] = {}
    scaffolds = [s for s in grammar.scaffolds if rungs is None or s.rung in rungs]
    declaration = next((s for s in scaffolds if s.rung == "declaration"), None)
    found: list[CompiledPattern] = []
    # Readings that take soft keywords for names (Python's `match($X)`): used when no rung
    # reads them as keywords. One that takes `switch` for a name (`switch ($X) {…}` as a
    # method) never is.
    as_names: list[tuple[CompiledPattern, str]] = []
    for scaffold in scaffolds:
        if len(found) >= most:
            break
        read = _read(scaffold, text, variants, grammar, reader.parser, tried, as_names)
        if read is None:
            read = _respelled(text, grammar, scaffold, reader.parser)
        if read is None:
            continue
        compiled, kind = read
        compiled = _as_declaration(reader, compiled, kind, scaffold, declaration)
        compiled, earlier = _read_first(reader, compiled, kind, scaffold, scaffolds)
        compiled = _also_read(reader, compiled, kind, scaffold)
        compiled = _also_call_with_body(reader, compiled, kind)
        for reading in (compiled, earlier):
            if reading is not None and all(reading.items != f.items for f in found):
                found.append(reading)
    if not found and as_names:
        found.append(as_names[0][0])
    if not found:
        found.extend(_with_missing_tokens(text, variants, grammar, reader.parser, scaffolds))
    if not found:
        raise _not_parseable(grammar, tried)
    return [_with_strictness(c, strictness) for c in found]


def _variants(text: str, grammar: Grammar) -> list[Variant]:
    """The pattern with its metavariables replaced, once per distinct filler of a `$$$`."""
    terminator = grammar.statement_terminator
    variants: list[Variant] = []
    for filler in (None, "{}", *grammar.item_fillers):
        variant = placeholders_for(text, terminator, filler, grammar.metavar_template)
        if all(variant[0] != v[0] for v in variants):
            variants.append(variant)
    return variants


@attrs.frozen
class _Reader:
    """The pattern read again in another rung, to weigh the reading a rung gave."""

    text: str
    variants: list[Variant]
    grammar: Grammar
    parser: ts.Parser

    def read(self, scaffold: Scaffold) -> tuple[CompiledPattern, str] | None:
        return _read(scaffold, self.text, self.variants, self.grammar, self.parser, {})

    def read_or_respell(self, scaffold: Scaffold) -> tuple[CompiledPattern, str] | None:
        return self.read(scaffold) or _respelled(self.text, self.grammar, scaffold, self.parser)


def _as_declaration(
    reader: _Reader,
    compiled: CompiledPattern,
    kind: str,
    scaffold: Scaffold,
    declaration: Scaffold | None,
) -> CompiledPattern:
    """A kind the grammar reads as a declaration first: the declaration rung's reading, which
    says what the other reading would find."""
    finds = reader.grammar.declaration_first.get(kind)
    if finds is None or declaration is None or declaration is scaffold:
        return compiled
    as_declaration = reader.read_or_respell(declaration)
    if as_declaration is None:
        return compiled
    first, _ = as_declaration
    what = first.interpretation.removesuffix(" (as a declaration)")
    return attrs.evolve(
        first,
        interpretation=(
            f"{what} (as a declaration, not as a {kind.replace('_', ' ')}: finds {finds})"
        ),
    )


def _read_first(
    reader: _Reader,
    compiled: CompiledPattern,
    kind: str,
    scaffold: Scaffold,
    scaffolds: Sequence[Scaffold],
) -> tuple[CompiledPattern, CompiledPattern | None]:
    """A kind the grammar reads first in an earlier rung: that rung's reading, then this one
    (`earlier`, None when the other rung reads it the same way)."""
    first_at = reader.grammar.read_first_at.get(kind)
    if first_at is None or first_at[0] == scaffold.rung:
        return compiled, None
    rung, finds = first_at
    other = next((s for s in scaffolds if s.rung == rung), None)
    there = other and reader.read_or_respell(other)
    if not there or _root_kind(there[0]) == _root_kind(compiled):
        return compiled, None
    return attrs.evolve(
        there[0],
        interpretation=(
            f"{there[0].interpretation}: finds {finds}; also readable as "
            f"{compiled.interpretation}: to search that reading, give `rule` "
            "`{pattern: {context: <the code around it>, selector: "
            f"{_root_kind(compiled)}}}}}`"
        ),
    ), compiled


def _also_read(
    reader: _Reader, compiled: CompiledPattern, kind: str, scaffold: Scaffold
) -> CompiledPattern:
    """`compiled`, whose matches also include those of the rungs the grammar also reads
    `kind` in."""
    for also_rung in reader.grammar.also_read.get(kind, ()):
        other = next((s for s in reader.grammar.scaffolds if s.rung == also_rung), None)
        if other is not None and other is not scaffold:
            extra = reader.read(other)
            if extra is not None:
                compiled = _union(compiled, extra[0])
    return compiled


# `NAME(` (or `$M(`) opening a fragment: a definition without a type, or a macro call
_CALL_START = re.compile(r"\s*(?:[A-Za-z_]\w*|\$[A-Z_][A-Z0-9_]*)\s*\(")


def _also_call_with_body(reader: _Reader, compiled: CompiledPattern, kind: str) -> CompiledPattern:
    """`compiled`, a definition `NAME(…) { … }` without a type (`Grammar.call_with_body`),
    whose matches also include those of the same text read as a macro call whose terminator
    the grammar supplied, then a block: the shape of the code when an argument is no
    parameter (`TEST_CASE("name") { … }`). That reading spells each metavariable between the
    parentheses as a string literal, which no parameter can be."""
    grammar, text = reader.grammar, reader.text
    start = _CALL_START.match(text)
    if kind not in grammar.call_with_body or start is None:
        return compiled
    close = _closing_paren(text, start.end() - 1)
    inside = {
        i
        for i, m in enumerate(METAVAR_RE.finditer(text))
        if start.end() <= m.start() and m.end() <= close
    }
    statement = next((s for s in grammar.scaffolds if s.rung == "statement"), None)
    if not inside or statement is None:  # no argument can differ from a parameter
        return compiled
    respell = dict.fromkeys(inside, STRING_PLACEHOLDER)
    variant = placeholders_for(
        text, grammar.statement_terminator, None, grammar.metavar_template, respell
    )
    read = _read(statement, text, [variant], grammar, reader.parser, {}, missing_ok=True)
    if read is None or not any(_supplies_terminator(i, grammar) for i in read[0].items):
        return compiled
    call = attrs.evolve(read[0], interpretation="a macro call with a body (as a statement)")
    return _union(compiled, call)


def _closing_paren(text: str, opening: int) -> int:
    """The index of the `)` closing the `(` at `opening` (the end of `text` if none)."""
    depth = 0
    for i in range(opening, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return len(text)


def _supplies_terminator(item: PItem, grammar: Grammar) -> bool:
    if isinstance(item, MetaVar):
        return False
    if item.missing:
        return item.kind == grammar.statement_terminator
    return any(_supplies_terminator(child, grammar) for child in item.children)


def _not_parseable(grammar: Grammar, tried: Mapping[str, str]) -> PatternError:
    """The error of a pattern no rung reads, with what each rung said."""
    why = "; ".join(
        f"as {'an' if label[0] in 'aeiou' else 'a'} {label}: {reason}"
        for label, reason in tried.items()
    )
    return PatternError(
        f"pattern: not parseable as {grammar.id} ({why or 'no rung'}); "
        "write one complete statement, expression, member or declaration"
    )


def _root_kind(compiled: CompiledPattern) -> str:
    root = compiled.root
    return "" if isinstance(root, MetaVar) else root.kind


def _union(first: CompiledPattern, extra: CompiledPattern) -> CompiledPattern:
    """`first`, whose matches also include those of `extra`; prefilters both satisfy."""
    return attrs.evolve(
        first,
        interpretation=f"{first.interpretation}, and {extra.interpretation}",
        literals=tuple(t for t in first.literals if t in extra.literals),
        named_literals=tuple(t for t in first.named_literals if t in extra.named_literals),
        chains=tuple(c for c in first.chains if c in extra.chains),
        sibling_chains=tuple(c for c in first.sibling_chains if c in extra.sibling_chains),
        also=(*first.also, extra),
    )


# Where a grammar wants a string literal (`import { $$$I } from $M`, Go's `import $M`), a
# metavariable is spelled as one, in every grammar, after its own typed placeholders; it then
# stands for the whole literal, quotes included (`"$M"` captures the text inside them).
STRING_PLACEHOLDER = '"{}"'

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
    if grammar.metavar_template != STRING_PLACEHOLDER:
        spellings = (*spellings, STRING_PLACEHOLDER)
    found = list(METAVAR_RE.finditer(text))
    count = len(found)
    if not spellings or not count:
        return None
    # `$$$` ones first: parameter lists, arms and bodies are what needs respelling most.
    order = sorted(range(count), key=lambda i: not found[i].group(0).startswith("$$$"))
    # A spelling that ends a statement (`{}();`, `_T {};`) stands only where a statement does:
    # in `$X + 1` it would split the expression in two statements, `X();` and `+1;`.
    alone = [_alone_as_statement(text, m.start(), m.end()) for m in found]
    choices = (
        dict(zip(chosen, spelled, strict=True))
        for k in range(1, min(count, MAX_RESPELLED) + 1)
        for chosen in itertools.combinations(order, k)
        for spelled in itertools.product(spellings, repeat=k)
        if all(alone[i] or not s.endswith(";") for i, s in zip(chosen, spelled, strict=True))
    )
    for respell in itertools.islice(choices, MAX_RESPELLINGS):
        variant = placeholders_for(
            text, grammar.statement_terminator, None, grammar.metavar_template, respell
        )
        read = _read(scaffold, text, [variant], grammar, parser, {})
        # Every respelled placeholder must have been read as one whole node.
        if read is not None and _metavars(read[0].items) == count:
            return read
    return None


def _metavars(items: Sequence[PItem]) -> int:
    return sum(1 if isinstance(i, MetaVar) else _metavars(i.children) for i in items)


def _with_strictness(compiled: CompiledPattern, strictness: str) -> CompiledPattern:
    """The prefilters each level keeps sound: which tokens a match surely contains verbatim."""
    if strictness == compiled.strictness:
        return compiled
    also = tuple(_with_strictness(a, strictness) for a in compiled.also)
    if strictness == "cst":
        return attrs.evolve(compiled, strictness=strictness, also=also)
    # Below cst, code the pattern does not mention may stand between its tokens: smart keeps
    # the runs inside one node (its matcher never skips code between two adjacent tokens),
    # ast and signature none.
    literals: tuple[bytes, ...] = compiled.literals if strictness == "smart" else ()
    chains = compiled.sibling_chains if strictness == "smart" else ()
    if strictness == "ast":  # the pattern's own unnamed tokens may be missing
        literals = compiled.named_literals
    return attrs.evolve(
        compiled, strictness=strictness, literals=literals, chains=chains, also=also
    )

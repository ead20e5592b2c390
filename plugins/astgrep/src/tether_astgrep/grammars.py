"""Grammar descriptions (language object, extensions, scaffold ladder) and the built-in set.

A grammar is plain data so that third-party plugins can contribute one through the
`tether_astgrep_grammars()` hook, and so that forked worker processes can use it unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cached_property
from typing import Any

import attrs
import tree_sitter as ts

# A keyword's spelling: Ruby's `defined?`, Rust's `macro_rules!` are words too.
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*[?!]?")


def _index(parent: ts.Node, child: ts.Node) -> int:
    """`child`'s position among all of `parent`'s children."""
    return next(i for i, c in enumerate(parent.children) if c == child)


RUNGS = ("statement", "expression", "class member", "declaration")


@attrs.frozen
class Scaffold:
    """One rung of a grammar's ladder: the code put around a pattern fragment.

    The fragment is indented with `indent` and placed between `prefix` and `suffix`.
    Each of `terminators` is tried in turn after the fragment: `("", ";")` lets a
    statement rung supply the `;` that a grammar needs after a bare statement.
    """

    rung: str
    prefix: str
    suffix: str
    indent: str = ""
    terminators: tuple[str, ...] = ("",)


@attrs.frozen(eq=False)
class Grammar:
    """A language that `ast_grep` can search.

    `language` returns a `tree_sitter.Language` (or the capsule a grammar package's
    `language()` returns). `string_kinds` are literal nodes whose inside is never searched,
    except for children whose kind is in `code_in_string_kinds` (interpolations).
    """

    id: str
    extensions: tuple[str, ...]
    language: Callable[[], Any]
    scaffolds: tuple[Scaffold, ...]
    string_kinds: frozenset[str] = frozenset()
    code_in_string_kinds: frozenset[str] = frozenset()
    # Beyond the strings, nodes whose lines a rewrite never re-indents, since their
    # indentation is data (bash's heredoc with its terminator line, YAML's block scalar).
    verbatim_kinds: frozenset[str] = frozenset()
    # Undelimited statement containers (Python's indented block): `$$$X` alone in one
    # stands for the statements inside it, not for the block among its siblings.
    block_kinds: frozenset[str] = frozenset()
    # Tokens that are insignificant as the last child of a node (JavaScript's `;`, which
    # automatic semicolon insertion makes optional).
    optional_trailing: frozenset[str] = frozenset()
    # Statement separators a line end stands for in the same place (bash's, Go's, Ruby's `;`:
    # `if $C; then $$$B; fi` is the `if` written on several lines too). Like commas, they
    # never count on either side.
    separators: frozenset[str] = frozenset()
    # A regex for one comment, used by the prefilter that skips files before parsing them
    # (adjacent pattern tokens may be separated only by whitespace, commas, `;` and comments).
    # None turns that prefilter off for the grammar (e.g. nested comments a regex cannot span).
    comment_regex: str | None = None
    # Grammars that spell `a.b.c()` as flat siblings (Dart: identifier, selector, selector…):
    # these kinds continue the expression before them, so `$X` absorbs them (`$X.dispose()`
    # binds `a.b` in `a.b.dispose()`) and no match starts at one.
    continuation_kinds: frozenset[str] = frozenset()
    # Tokens that, with the named node after them, continue the node before them as flat
    # siblings (Dart's `.` in a qualified type: `extends p.Q<T>` is `p`, `.`, `Q`, `<T>`):
    # `$B` binds the whole `p.Q<T>`, never `p` alone.
    continuation_tokens: frozenset[str] = frozenset()
    # What ends a statement when the grammar requires it (C's and Dart's `;`): a `$$$X` standing
    # alone as a statement (`{ $$$BODY }`) is parsed as `X;` so that it reads as statements.
    statement_terminator: str = ""
    # Closing tokens a fragment may leave for the grammar to supply at its end, the node they
    # close standing for itself whatever it encloses (the C preprocessor's `#endif`: a person
    # writes `#ifdef $X` to find the directive). The supplied token is no part of the pattern,
    # so at smart strictness the code's body and its own `#endif` are unmentioned trailing code.
    supplied_closers: frozenset[str] = frozenset()
    # The one exception to "first clean rung wins": a fragment that an earlier rung reads as
    # one of these kinds looks like a declaration (Dart reads `void f() {…}` in a block as a
    # local function), so the declaration rung is tried first; the value is what that reading
    # finds, for the result's "interpreted as".
    declaration_first: Mapping[str, str] = attrs.field(factory=dict)
    # Like `declaration_first`, for other rungs: a fragment an earlier rung reads as one of
    # these kinds is read at the rung named first, when that rung reads it as another kind
    # (C#'s `using $N;` is a using declaration in a method, a using directive at the top
    # level: a person means the directives). The value: (rung, what that reading finds).
    # The result names the earlier reading too ("also readable as …").
    read_first_at: Mapping[str, tuple[str, str]] = attrs.field(factory=dict)
    # Clauses beyond the kinds named `…_clause` (Kotlin's `catch_block`, Ruby's `elsif`): a
    # clause the pattern does not mention may stand before one it does.
    clause_kinds: frozenset[str] = frozenset()
    # Candidate nodes a pattern looks through when they wrap one significant node of another
    # kind (Dart's `method_signature` around a method's `function_signature`), so a function
    # pattern also finds methods.
    wrapper_kinds: frozenset[str] = frozenset()
    # A fragment an earlier rung reads as one of these kinds is also read at the rungs named,
    # and matches of every reading count (Dart: `final String $N;` reads as a local variable
    # in a block, a field in a class body, a top-level variable; a person means all three).
    also_read: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    # Kinds a fragment `NAME(…) { … }` may read as where the same text with other arguments is
    # a call whose statement terminator the grammar supplied, then a block: C reads
    # `FOR_EACH(x, xs) { … }` as a function definition, `FOR_EACH(x, xs.all) { … }` and
    # Catch2's `TEST_CASE("name") { … }` as a call and a block. A pattern read as one of these
    # kinds also finds the other shape (`tether_astgrep.pattern._also_call_with_body`).
    call_with_body: frozenset[str] = frozenset()
    # Named kinds that are leading modifiers (Dart's `abstract`, `sealed`): like kinds named
    # `…modifier…` (Rust's `visibility_modifier`), a pattern that does not mention one still
    # matches code that has it.
    modifier_kinds: frozenset[str] = frozenset()
    # Named leaf kinds that are keywords however they are spelled (Swift's `throws` node is
    # also `rethrows`): a pattern that leaves one out still matches, as for any keyword.
    keyword_kinds: frozenset[str] = frozenset()
    # Tokens a definition of the kind (the key) may carry between two keywords or punctuation
    # a pattern writes side by side (Swift's failable `init?(…)` and `init!(…)`): at smart
    # strictness a pattern without them still finds it, as it finds one without a leading
    # modifier (`cst` is the strict reading). The prefilter's token chains are off for such a
    # grammar (they would keep `init(` together).
    inner_tokens: Mapping[str, frozenset[str]] = attrs.field(factory=dict)
    # Kinds other builds of the grammar have (ast-grep's, a catalog rule's) that this one does
    # not, with what to use instead: a rule's `kind` naming one is refused with that advice.
    kind_hints: Mapping[str, str] = attrs.field(factory=dict)
    # Reserved words beyond those derived from the grammar itself (`reserved_words`): a
    # pattern reading that takes one for a name (`switch ($X) {…}` as a method named
    # `switch`) is refused, so the ladder goes on to the reading meant.
    keywords: frozenset[str] = frozenset()
    # Kinds a pattern node also matches when it holds nothing but metavariables and tokens
    # (Kotlin's `class $C { $$$B }` reads its body as an `enum_class_body`, a lone name being an
    # enum entry to tree-sitter-kotlin 1.1.0: it is any class body).
    body_aliases: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    # Kinds a pattern node also matches whatever it holds: the grammar's names for the same
    # construct in one context (C#'s `#if` among a member's attributes is a
    # `preproc_if_in_attribute_list`; `#if $C` and `#if DEBUG` find it too).
    kind_aliases: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    # Keywords the language also allows as names (Kotlin's soft and modifier keywords: `var
    # final`, `val by`). Where the parser takes one for a keyword and fails, a search re-reads
    # the region with it spelled as a name (`recovery.py`); no other keyword is ever respelled.
    name_keywords: frozenset[str] = frozenset()
    # Where such a word may be read as a name: inside nodes of these kinds (Kotlin's code
    # blocks and lambdas; never a class body, where `get() = x` after an annotation is a
    # getter the parser could not place, not a call).
    name_keyword_scopes: frozenset[str] = frozenset()
    # The conditional preprocessor directives (`if`, `ifdef`, … `endif`, each spelled after a
    # `#` at the start of a line). Where the grammar does not accept one (a `#if` inside a
    # parameter list, an enum), a search re-reads the region with those lines left out and
    # reads the directives themselves as an island (`recovery.py`).
    conditional_directives: frozenset[str] = frozenset()
    # Spellings (`str.format` with the placeholder) for a `$$$X` standing alone in a body
    # that holds no statements: impl items, struct fields, match arms, switch cases…
    # Tried in order after the plain placeholder, in every rung.
    item_fillers: tuple[str, ...] = ()
    # The tether-astgrep extra that installs this grammar's wheel (`pip install
    # 'tether-astgrep[kotlin]'`); None for a grammar that is always installed.
    extra: str | None = None
    # How a metavariable's placeholder identifier is spelled in a pattern: a language with no
    # identifiers where values go (JSON) needs `'"{}"'`, a string.
    metavar_template: str = "{}"
    # Whether candidates of a pattern with no literal token are found with a tree-sitter query
    # (fast in C) rather than a walk; off where compiling the query is slower than any walk.
    query_candidates: bool = True
    # Other spellings of a placeholder (`{}` is the identifier), tried on some metavariables
    # in a rung that does not read the plain fragment: where the grammar wants a typed item,
    # not a name (Kotlin's `fun $F($$$P)` needs a parameter, `P: _T`; PHP's `$A = $B` a
    # variable, `$A`; Java's `{ $$$B }` a statement, `B();`).
    typed_placeholders: tuple[str, ...] = ()
    # Files that accompany a project's code (shell scripts, configuration, data, markup: bash,
    # JSON, YAML, HTML, CSS): beside code in another language they do not stop a directory's
    # `language` being inferred.
    auxiliary: bool = False

    def missing(self) -> str | None:
        """Why this grammar cannot be used here (its package is not installed), or None."""
        try:
            self.ts_language  # noqa: B018 - loading it is the check
        except ImportError as exc:
            how = (
                f"pip install 'tether-astgrep[{self.extra}]'"
                if self.extra
                else f"install the package that provides {exc.name or 'it'}"
            )
            return f"the {self.id} grammar is not installed ({exc}): {how}"
        return None

    @cached_property
    def ts_language(self) -> ts.Language:
        lang = self.language()
        return lang if isinstance(lang, ts.Language) else ts.Language(lang)

    @cached_property
    def kind_names(self) -> tuple[str, ...]:
        lang = self.ts_language
        return tuple(lang.node_kind_for_id(i) or "" for i in range(lang.node_kind_count))

    @cached_property
    def reserved_words(self) -> frozenset[str]:
        """The grammar's keyword tokens (its anonymous word kinds, and leaf kinds named
        `<word>_keyword` or `<word>_builtin`) and `keywords`. Words the grammar reads only as
        names (Kotlin's `null`, C++'s `static_cast`) are none of them."""
        lang = self.ts_language
        words = set(self.keywords)
        for i, name in enumerate(self.kind_names):
            if lang.node_kind_is_named(i):
                name = re.sub(r"^_|_(?:keyword|builtin)$", "", name)
                if name == self.kind_names[i].lstrip("_"):
                    continue
            elif not lang.node_kind_is_visible(i):
                continue
            if _WORD.fullmatch(name):
                words.add(name)
        return frozenset(words)

    @cached_property
    def soft_keywords(self) -> frozenset[str]:
        """The reserved words the parser reads as a name when one stands alone as a statement
        (Kotlin's `value`, Python's `match`): a pattern reading them as names is used when no
        reading takes them as keywords. The others (`switch`, `object`) are never names."""
        probe = next((s for s in self.scaffolds if s.rung == "statement"), self.scaffolds[0])
        start = len(f"{probe.prefix}{probe.indent}".encode())
        parser = self.parser()
        soft = set()
        for word in self.reserved_words:
            for terminator in probe.terminators:
                src = f"{probe.prefix}{probe.indent}{word}{terminator}{probe.suffix}".encode()
                tree = parser.parse(src)
                leaf = tree.root_node.descendant_for_byte_range(start, start + len(word))
                if (
                    not tree.root_node.has_error
                    and leaf is not None
                    and leaf.child_count == 0
                    and leaf.is_named
                    and "identifier" in leaf.type
                    and leaf.text == word.encode()
                ):
                    soft.add(word)
                    break
        return frozenset(soft)

    @cached_property
    def _value_kinds(self) -> dict[str, bool]:
        return {}

    def is_value_kind(self, kind: str) -> bool:
        """Whether a leaf of the named kind `kind` is a value (`true`, `nil`, `this`,
        `identifier`): the grammar reads the kind's name alone, in its expression rung (every
        rung where it has none), as one leaf of that kind. A value is never skipped as an
        unmentioned keyword; a named keyword (Swift's `throws`) is no value. Probed once per
        kind, on first use."""
        known = self._value_kinds.get(kind)
        if known is not None:
            return known
        found = False
        if _WORD.fullmatch(kind):
            rungs = [s for s in self.scaffolds if s.rung == "expression"] or list(self.scaffolds)
            parser = self.parser()
            for scaffold in rungs:
                start = len(f"{scaffold.prefix}{scaffold.indent}".encode())
                for terminator in scaffold.terminators:
                    src = f"{scaffold.prefix}{scaffold.indent}{kind}{terminator}{scaffold.suffix}"
                    tree = parser.parse(src.encode())
                    leaf = tree.root_node.descendant_for_byte_range(start, start + len(kind))
                    if (
                        not tree.root_node.has_error
                        and leaf is not None
                        and leaf.is_named
                        and leaf.type == kind
                        and leaf.start_byte == start
                        and leaf.end_byte == start + len(kind)
                    ):
                        found = True
                        break
                if found:
                    break
        self._value_kinds[kind] = found
        return found

    @cached_property
    def list_comma_ids(self) -> frozenset[int]:
        """The comma tokens: what separates the items of a list (arguments, parameters,
        elements, type arguments)."""
        lang = self.ts_language
        return frozenset(
            i
            for i in range(lang.node_kind_count)
            if self.kind_names[i] == "," and not lang.node_kind_is_named(i)
        )

    def listed(self, node: ts.Node) -> bool:
        """Whether `node` is one item of a list: a comma stands right before or after it (comments
        aside), or its field repeats the field of the sibling before it (bash's words, each
        an `argument`). An item the pattern does not mention is never skipped."""
        commas = self.list_comma_ids
        before = node.prev_sibling
        while before is not None and before.is_extra:
            before = before.prev_sibling
        if before is not None and before.kind_id in commas:
            return True
        after = node.next_sibling
        while after is not None and after.is_extra:
            after = after.next_sibling
        if after is not None and after.kind_id in commas:
            return True
        parent = node.parent
        if before is None or parent is None or not node.is_named or not before.is_named:
            return False
        field = parent.field_name_for_child(_index(parent, node))
        return field is not None and field == parent.field_name_for_child(_index(parent, before))

    def listed_at(self, parent: ts.Node, kids: list[ts.Node], k: int) -> bool:
        """`listed(kids[k])`, where `kids` are all of `parent`'s children: the same rule read
        from the list, without asking tree-sitter for siblings (`test_listed_at`)."""
        commas = self.list_comma_ids
        b = k - 1
        while b >= 0 and kids[b].is_extra:
            b -= 1
        if b >= 0 and kids[b].kind_id in commas:
            return True
        a = k + 1
        while a < len(kids) and kids[a].is_extra:
            a += 1
        if a < len(kids) and kids[a].kind_id in commas:
            return True
        if b < 0 or not kids[k].is_named or not kids[b].is_named:
            return False
        field = parent.field_name_for_child(k)
        return field is not None and field == parent.field_name_for_child(b)

    def is_list(self, node: ts.Node) -> bool:
        """Whether `node` holds more than one item of a list (commas between its children, or
        a field repeated)."""
        commas = self.list_comma_ids
        comma = False
        fields: list[str | None] = []
        for i, child in enumerate(node.children):
            if child.kind_id in commas:
                comma = True
            elif child.is_named and not child.is_extra:
                field = node.field_name_for_child(i)
                if field is not None and field in fields:
                    return True
                fields.append(field)
        return comma and len(fields) > 1

    def is_compound(self, node: ts.Node) -> bool:
        """Whether `node` is one value made of items of its own kind, opened and closed by
        tokens (Swift's tuple pattern `(a, b)`, `(x: a, y: b)`, `case let (a, b)`: a `pattern`
        holding `pattern`s up to a `)`), not a bare list of items (Go's `a, b`, an
        `expression_list` of expressions; Ruby's `(a, nil)`, an `argument_list` of
        arguments): a metavariable that stood for one such node binds it whole, as it binds
        `(a, b)` in a grammar with a tuple kind of its own."""
        kids = [c for c in node.children if not c.is_extra]
        if len(kids) < 2 or kids[0].is_named or kids[-1].is_named:
            return False
        commas = self.list_comma_ids
        if kids[0].kind_id in commas or kids[-1].kind_id in commas:
            return False
        return any(c.is_named and c.kind_id == node.kind_id for c in kids)

    @cached_property
    def comma_ids(self) -> frozenset[int]:
        """Tokens that never count: commas and the grammar's `separators`."""
        lang = self.ts_language
        skipped = {",", *self.separators}
        return frozenset(
            i
            for i in range(lang.node_kind_count)
            if self.kind_names[i] in skipped and not lang.node_kind_is_named(i)
        )

    @cached_property
    def trailing_ids(self) -> frozenset[int]:
        lang = self.ts_language
        return frozenset(
            i
            for i in range(lang.node_kind_count)
            if self.kind_names[i] in self.optional_trailing and not lang.node_kind_is_named(i)
        )

    def significant(self, node: ts.Node) -> list[ts.Node]:
        """Children that take part in matching: no comments, no commas or separators, no
        optional `;` last."""
        comma = self.comma_ids
        kids = [c for c in node.children if not c.is_extra and c.kind_id not in comma]
        if kids and kids[-1].kind_id in self.trailing_ids:
            kids.pop()
        return kids

    @cached_property
    def continuation_ids(self) -> frozenset[int]:
        return frozenset(i for i, n in enumerate(self.kind_names) if n in self.continuation_kinds)

    @cached_property
    def continuation_token_ids(self) -> frozenset[int]:
        return frozenset(i for i, n in enumerate(self.kind_names) if n in self.continuation_tokens)

    @cached_property
    def wrapper_ids(self) -> frozenset[int]:
        return frozenset(i for i, n in enumerate(self.kind_names) if n in self.wrapper_kinds)

    @cached_property
    def inner_token_ids(self) -> frozenset[int]:
        """The kinds `inner_tokens` names, under any parent."""
        inner = frozenset(name for names in self.inner_tokens.values() for name in names)
        return frozenset(i for i, n in enumerate(self.kind_names) if n in inner)

    @cached_property
    def string_ids(self) -> frozenset[int]:
        return frozenset(i for i, n in enumerate(self.kind_names) if n in self.string_kinds)

    @cached_property
    def verbatim_ids(self) -> frozenset[int]:
        kinds = self.string_kinds | self.verbatim_kinds
        return frozenset(i for i, n in enumerate(self.kind_names) if n in kinds)

    @cached_property
    def code_in_string_ids(self) -> frozenset[int]:
        return frozenset(i for i, n in enumerate(self.kind_names) if n in self.code_in_string_kinds)

    def parser(self) -> ts.Parser:
        return ts.Parser(self.ts_language)


@attrs.frozen
class LazyLanguage:
    """``module.attr()``, imported when first called: a reference by name, so it pickles and a
    worker started without fork (``spawn``) rebuilds the grammar from it."""

    module: str
    attr: str = "language"

    def __call__(self) -> Any:
        import importlib

        return getattr(importlib.import_module(self.module), self.attr)()


def lazy_language(module: str, attr: str = "language") -> Callable[[], Any]:
    """A grammar's ``language``: imports ``module`` only when a search needs it (grammars
    here, in languages.py and in other plugins). Prefer it (or a module-level function) to a
    lambda or closure, which workers started without fork cannot rebuild."""
    return LazyLanguage(module, attr)


BRACE_TERMINATORS = ("", ";")


def braced_ladder(
    function: str,
    expression: tuple[str, str],
    member: str,
    *,
    semicolon: bool,
    member_end: str = "}",
) -> tuple[Scaffold, ...]:
    """The ladder of a language with braces: a function body, an initialiser, a class body
    and the top level (`function` and `member` are the openings; each closes with `}`)."""
    terms = BRACE_TERMINATORS if semicolon else ("",)
    return (
        Scaffold(
            "statement", function + " {\n", "\n}" * (function.count("{") + 1), terminators=terms
        ),
        Scaffold("expression", expression[0], expression[1]),
        Scaffold("class member", member + " {\n", "\n" + member_end, terminators=terms),
        Scaffold("declaration", "", "", terminators=terms),
    )


# Possessive (`*+`) so that a run of comments has one way to match: no backtracking blow-up.
C_COMMENT = r"//[^\n]*+|/\*(?:[^*]|\*(?!/))*+\*/"
_JS_STRINGS = frozenset({"string", "template_string", "regex"})
_JS_CODE = frozenset({"template_substitution"})


_JS_FILLERS = ("case {0}:",)
# A `$$$` between a class's name and its body (`class $C $$$_ { $$$_ }`) stands for its heritage.
_JS_TYPED = ("extends {}",)


def decorator_rung(rung: str, prefix: str, declaration: str) -> Scaffold:
    """The last rung of a grammar with decorators, annotations or attributes: the fragment
    before a `declaration` it decorates, so that a lone one (`@property`, `@Override`,
    `[Obsolete($$$A)]`) reads as what it is; it finds that decorator on any declaration."""
    return Scaffold(rung, prefix, "\n" + declaration + "\n")


def builtin_grammars() -> list[Grammar]:
    """The grammars shipped with tether-astgrep (one PyPI grammar package each)."""
    js_ladder = (
        *braced_ladder(
            "function _t()", ("function _t() { (\n", "\n); }"), "class _T", semicolon=True
        ),
        decorator_rung("decorator", "", "class _T {}"),
    )
    return [
        Grammar(
            id="python",
            separators=frozenset({";"}),  # a line end is the same separator
            extensions=(".py", ".pyi"),
            language=lazy_language("tree_sitter_python"),
            scaffolds=(
                Scaffold("statement", "", ""),
                Scaffold("expression", "_ = (\n", "\n)"),
                Scaffold("class member", "class _T:\n", "\n", indent="    "),
                Scaffold("declaration", "def _t():\n", "\n", indent="    "),
                decorator_rung("decorator", "", "def _t(): pass"),
            ),
            string_kinds=frozenset({"string"}),
            code_in_string_kinds=frozenset({"interpolation"}),
            block_kinds=frozenset({"block"}),
            comment_regex=r"#[^\n]*+",
            item_fillers=("\n    case {0}: pass",),
        ),
        Grammar(
            id="javascript",
            extensions=(".js", ".mjs", ".cjs", ".jsx"),
            language=lazy_language("tree_sitter_javascript"),
            scaffolds=js_ladder,
            string_kinds=_JS_STRINGS,
            code_in_string_kinds=_JS_CODE,
            optional_trailing=frozenset({";"}),
            comment_regex=C_COMMENT,
            item_fillers=_JS_FILLERS,
            typed_placeholders=_JS_TYPED,
        ),
        Grammar(
            id="typescript",
            extensions=(".ts", ".mts", ".cts"),
            language=lazy_language("tree_sitter_typescript", "language_typescript"),
            scaffolds=js_ladder,
            string_kinds=_JS_STRINGS,
            code_in_string_kinds=_JS_CODE,
            optional_trailing=frozenset({";"}),
            comment_regex=C_COMMENT,
            item_fillers=_JS_FILLERS,
            typed_placeholders=_JS_TYPED,
        ),
        Grammar(
            id="tsx",
            extensions=(".tsx",),
            language=lazy_language("tree_sitter_typescript", "language_tsx"),
            scaffolds=js_ladder,
            string_kinds=_JS_STRINGS,
            code_in_string_kinds=_JS_CODE,
            optional_trailing=frozenset({";"}),
            comment_regex=C_COMMENT,
            item_fillers=_JS_FILLERS,
            typed_placeholders=_JS_TYPED,
        ),
        Grammar(
            id="rust",
            extensions=(".rs",),
            language=lazy_language("tree_sitter_rust"),
            scaffolds=(
                Scaffold("statement", "fn _t() {\n", "\n}", terminators=("", ";")),
                Scaffold("expression", "fn _t() { let _ = (\n", "\n); }"),
                Scaffold("class member", "impl _T {\n", "\n}", terminators=("", ";")),
                Scaffold("declaration", "", "", terminators=("", ";")),
            ),
            string_kinds=frozenset({"string_literal", "raw_string_literal", "char_literal"}),
            item_fillers=("fn {0}() {{}}", "{0}: u8", "{0} => {0}"),
        ),
        Grammar(
            id="c",
            extensions=(".c", ".h"),
            language=lazy_language("tree_sitter_c"),
            scaffolds=braced_ladder(
                "void _t(void)",
                ("void _t(void) { (\n", "\n); }"),
                "struct _T",
                semicolon=True,
                member_end="};",
            ),
            comment_regex=C_COMMENT,
            statement_terminator=";",
            supplied_closers=frozenset({"#endif"}),  # `#ifdef $X`, `#if $C`: the directive
            call_with_body=frozenset({"function_definition"}),  # `FOR_EACH(x, xs.all) { … }`
            string_kinds=frozenset({"string_literal", "char_literal", "system_lib_string"}),
            item_fillers=("int {0};",),
            conditional_directives=CONDITIONAL_DIRECTIVES,
        ),
        Grammar(
            id="go",
            separators=frozenset({";"}),  # a line end is the same separator
            extensions=(".go",),
            language=lazy_language("tree_sitter_go"),
            scaffolds=(
                Scaffold("statement", "package _t\nfunc _t() {\n", "\n}\n"),
                Scaffold("expression", "package _t\nvar _ = ", "\n"),
                Scaffold("class member", "package _t\ntype _T struct {\n", "\n}\n"),
                Scaffold("declaration", "package _t\n", "\n"),
            ),
            string_kinds=frozenset(
                {"interpreted_string_literal", "raw_string_literal", "rune_literal"}
            ),
            comment_regex=C_COMMENT,
            item_fillers=("case {0}:", "case <-{0}:", '"{0}"', "{0} int"),
        ),
        Grammar(
            id="dart",
            extensions=(".dart",),
            language=lazy_language("tree_sitter_dart"),
            scaffolds=(
                Scaffold("statement", "void _t() {\n", "\n}", terminators=("", ";")),
                Scaffold("expression", "var _t = (\n", "\n);"),
                Scaffold("class member", "class _T {\n", "\n}", terminators=("", ";")),
                Scaffold("declaration", "", "", terminators=("", ";")),
                decorator_rung("annotation", "", "void _t() {}"),
            ),
            string_kinds=frozenset({"string_literal"}),
            code_in_string_kinds=frozenset({"template_substitution"}),
            comment_regex=C_COMMENT,
            continuation_kinds=frozenset(
                {
                    "selector",
                    "cascade_section",
                    "unconditional_assignable_selector",
                    "conditional_assignable_selector",
                    # a type's arguments and `?` (`Future<List<int>>`, `String?`) are siblings
                    # of its name: `$T` binds the whole type
                    "type_arguments",
                    "nullable_type",
                }
            ),
            continuation_tokens=frozenset({"."}),
            statement_terminator=";",
            declaration_first={
                "local_function_declaration": "top-level functions, methods and local functions"
            },
            wrapper_kinds=frozenset({"method_signature"}),
            item_fillers=("case {0}:", "var {0};"),
            also_read={"local_variable_declaration": ("class member", "declaration")},
            modifier_kinds=frozenset({"abstract", "base", "interface", "sealed", "mixin"}),
            kind_hints={
                kind: (
                    "this Dart grammar has no call node: a call is its callee then `selector` "
                    "siblings, the last holding an `argument_part` (`(…)`); use a pattern "
                    "(`$F($$$A)`, `$O.$M($$$A)`) or `kind: argument_part`"
                )
                for kind in ("call_expression", "method_invocation", "function_call")
            },
        ),
    ]


CONDITIONAL_DIRECTIVES = frozenset(
    ("if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif")
)


def all_grammars() -> list[Grammar]:
    """The built-in grammars and the optional ones (`languages.py`), installed or not."""
    from tether_astgrep.languages import optional_grammars

    return [*builtin_grammars(), *optional_grammars()]


class GrammarError(Exception):
    """A grammar contributed through `tether_astgrep_grammars()` is unusable."""


class GrammarRegistry:
    """Grammars by id and by file extension; duplicates are refused, naming both."""

    def __init__(self, grammars: Iterable[Grammar] = ()) -> None:
        self._by_id: dict[str, Grammar] = {}
        self._by_ext: dict[str, Grammar] = {}
        self._origin: dict[str, str] = {}
        for grammar in grammars:
            self.add(grammar)

    def add(self, grammar: Grammar, origin: str = "tether-astgrep") -> None:
        if not isinstance(grammar, Grammar):
            raise GrammarError(
                f"tether_astgrep_grammars() of {origin} returned {grammar!r}, not a Grammar"
            )
        if grammar.id in self._by_id:
            raise GrammarError(
                f"grammar {grammar.id!r} is contributed twice: by {self._origin[grammar.id]} "
                f"and by {origin}"
            )
        rungs = [s.rung for s in grammar.scaffolds]
        if not rungs:
            raise GrammarError(f"grammar {grammar.id!r} has an empty scaffold ladder")
        self._by_id[grammar.id] = grammar
        self._origin[grammar.id] = origin
        for ext in grammar.extensions:
            self._by_ext.setdefault(ext.lower(), grammar)

    def get(self, grammar_id: str) -> Grammar | None:
        return self._by_id.get(grammar_id)

    def for_path(self, path: str) -> Grammar | None:
        dot = path.rfind(".")
        if dot < 0 or "/" in path[dot:]:
            return None
        return self._by_ext.get(path[dot:].lower())

    @property
    def ids(self) -> list[str]:
        return sorted(self._by_id)

    def __iter__(self) -> Iterator[Grammar]:
        return iter(self._by_id.values())

"""The grammars beyond the built-in eight: one optional extra (and PyPI grammar wheel) each.

`pip install 'tether-astgrep[kotlin]'` brings `tree-sitter-kotlin`; `[all]` brings every one.
A grammar whose wheel is not installed is still known by its id and extensions, so that asking
for it is an error naming the extra to install, not "unknown language".

The prefilter that skips files before parsing needs a regex for one comment; it is off
(`comment_regex=None`) where comments nest (Haskell, Kotlin, Scala, Swift) or where a
comment's end depends on its start (Lua's `--[==[ … ]==]`), which a regex cannot follow.
"""

from __future__ import annotations

from tether_astgrep.grammars import (
    BRACE_TERMINATORS,
    C_COMMENT,
    CONDITIONAL_DIRECTIVES,
    Grammar,
    Scaffold,
    braced_ladder,
    decorator_rung,
    lazy_language,
)

_HASH_COMMENT = r"#[^\n]*+"


# Kotlin's soft keywords and modifier keywords: names everywhere they are not keywords.
_KOTLIN_NAME_KEYWORDS = frozenset(
    "by catch constructor delegate dynamic field file finally get import init param property "
    "receiver set setparam value where abstract actual annotation companion const crossinline "
    "data enum expect external final infix inline inner internal lateinit noinline open "
    "operator out override private protected public reified sealed suspend tailrec "
    "vararg".split()
)


def _members_first(ladder: tuple[Scaffold, ...]) -> tuple[Scaffold, ...]:
    """The class member rung first: where a function body reads `init {…}`, `deinit {…}` or
    `companion object {…}` as a call or an expression, a class body reads what they are."""
    return tuple(sorted(ladder, key=lambda s: s.rung != "class member"))


def optional_grammars() -> list[Grammar]:
    """Every optional grammar, installed or not (`Grammar.missing()` says which)."""
    return [
        Grammar(
            id="bash",
            separators=frozenset({";"}),  # a line end is the same separator
            extensions=(".sh", ".bash", ".zsh", ".ksh", ".bats"),
            language=lazy_language("tree_sitter_bash"),
            extra="bash",
            auxiliary=True,
            scaffolds=(
                Scaffold("statement", "", ""),
                Scaffold("case item", "case _t in\n", "\nesac", terminators=("", ";;")),
            ),
            string_kinds=frozenset({"string", "raw_string", "ansi_c_string", "heredoc_body"}),
            verbatim_kinds=frozenset({"heredoc_redirect"}),  # the body and the `EOF` line
            code_in_string_kinds=frozenset(
                {"expansion", "simple_expansion", "command_substitution", "arithmetic_expansion"}
            ),
            comment_regex=_HASH_COMMENT,
            statement_terminator="\n",  # `{ $$$B }` reads as `{ B\n }`: bash needs an end there
            typed_placeholders=("{})",),  # a case item: `case $X in $$$C esac`
        ),
        Grammar(
            id="cpp",
            extensions=(
                ".cpp",
                ".cc",
                ".cxx",
                ".c++",
                ".hpp",
                ".hh",
                ".hxx",
                ".h++",
                ".cu",
                ".ino",
            ),
            language=lazy_language("tree_sitter_cpp"),
            extra="cpp",
            item_fillers=("case {}:",),  # `switch ($X) { $$$C }`: C the cases
            scaffolds=braced_ladder(
                "void _t()",
                ("void _t() { (\n", "\n); }"),
                "struct _T",
                semicolon=True,
                member_end="};",
            ),
            read_first_at={
                # `[$$$C]($$$P) { $$$B }` is a lambda before it is a function whose
                # declarator is a structured binding
                "function_definition": ("expression", "lambdas"),
            },
            string_kinds=frozenset(
                {"string_literal", "char_literal", "raw_string_literal", "system_lib_string"}
            ),
            comment_regex=C_COMMENT,
            # `{ $$$B }` reads as statements (`B;`), as in C: a function body, not a brace
            # initializer (`auto $F($$$P) -> $R { $$$B }`)
            statement_terminator=";",
            supplied_closers=frozenset({"#endif"}),  # `#ifdef $X`, `#if $C`: the directive
            call_with_body=frozenset({"function_definition"}),  # `TEST_CASE("x") { … }`
            typed_placeholders=(
                "{};",
            ),  # a statement: `{ $$$B }` (an enum's `{ $$$V }` needs none)
            conditional_directives=CONDITIONAL_DIRECTIVES,
        ),
        Grammar(
            id="csharp",
            extensions=(".cs",),
            language=lazy_language("tree_sitter_c_sharp"),
            extra="csharp",
            item_fillers=("case {}:",),  # `switch ($X) { $$$C }`: C the cases
            # A member is a declaration in C#; the statement rung reads `void F() {…}` as a
            # local function, so a method-like fragment is read in a class body first.
            scaffolds=(
                Scaffold(
                    "statement", "class _T { void _t() {\n", "\n}\n}", terminators=BRACE_TERMINATORS
                ),
                Scaffold("expression", "class _T { object _t = (\n", "\n); }"),
                Scaffold("declaration", "class _T {\n", "\n}", terminators=BRACE_TERMINATORS),
                Scaffold("top level", "", "", terminators=BRACE_TERMINATORS),
                decorator_rung("attribute", "class _T {\n", "void _t() {}\n}"),
            ),
            declaration_first={"local_function_statement": "methods, not local functions"},
            read_first_at={
                "local_declaration_statement": ("top level", "using directives, not statements"),
                # `[Obsolete($$$A)]` is an attribute list before it is a collection
                "collection_expression": ("attribute", "attributes, not collection expressions"),
            },
            string_kinds=frozenset(
                {
                    "string_literal",
                    "verbatim_string_literal",
                    "raw_string_literal",
                    "character_literal",
                    "interpolated_string_expression",
                }
            ),
            code_in_string_kinds=frozenset({"interpolation"}),
            comment_regex=C_COMMENT + r"|#[^\n]*+",  # `#region`, `#pragma`… lines are extras too
            supplied_closers=frozenset({"#endif"}),  # `#if $C`: the directive
            # the same directive among a member's attributes is another kind
            kind_aliases={"preproc_if": ("preproc_if_in_attribute_list",)},
            conditional_directives=CONDITIONAL_DIRECTIVES,
            # a parameter; a statement (a bare name is none); a member; a switch arm
            typed_placeholders=("_T {}", "{}();", "_T {};", "{} => _"),
        ),
        Grammar(
            id="css",
            extensions=(".css",),
            language=lazy_language("tree_sitter_css"),
            extra="css",
            auxiliary=True,
            scaffolds=(
                Scaffold("rule", "", ""),
                Scaffold("declaration", "_t {\n", "\n}", terminators=("", ";")),
                Scaffold("value", "_t { _t: ", "; }"),
            ),
            string_kinds=frozenset({"string_value"}),
            optional_trailing=frozenset({";"}),  # `color: red` is the same with its `;` or not
            comment_regex=C_COMMENT,
            statement_terminator=": _",  # `{ $$$D }` reads as `{ D: _ }`, a declaration
            # a keyframe: `@keyframes $N { $$$F }` (spelled `from {…}`, `border: $$$V` would
            # read as a rule whose selector is `border:from`)
            item_fillers=("0% {{ {0}: _ }}",),
        ),
        Grammar(
            id="elixir",
            separators=frozenset({";"}),  # a line end is the same separator
            extensions=(".ex", ".exs"),
            language=lazy_language("tree_sitter_elixir"),
            extra="elixir",
            # Everything is an expression, at the top level too: one rung reads them all.
            scaffolds=(Scaffold("expression", "", ""),),
            string_kinds=frozenset({"string", "charlist", "sigil"}),
            code_in_string_kinds=frozenset({"interpolation"}),
            comment_regex=_HASH_COMMENT,
            clause_kinds=frozenset({"else_block", "rescue_block", "catch_block", "after_block"}),
        ),
        Grammar(
            id="haskell",
            extensions=(".hs",),
            language=lazy_language("tree_sitter_haskell"),
            extra="haskell",
            # Declarations first: in a `do` block `import M` would read as an application.
            scaffolds=(
                Scaffold("declaration", "", ""),
                Scaffold("statement", "_t = do\n", "\n", indent="  "),
                Scaffold("expression", "_t =\n", "\n", indent="  "),
                # `let` binds the same way before `in`: read so, it is the `let` and the
                # bindings that open a `let … in …` expression (another kind than a `do` let)
                Scaffold("let expression", "_t =\n", "\n  in _", indent="  "),
            ),
            also_read={"let": ("let expression",)},  # `let $X = $Y` finds both
            string_kinds=frozenset({"string", "char"}),
            comment_regex=None,  # `{- {- -} -}` nests
            # a `case` alternative; a name that must be upper-case (a module, type, constructor);
            # a binding (`instance $C $T where $$$B`)
            typed_placeholders=("{} -> _", "T{}", "{} = _"),
        ),
        Grammar(
            id="html",
            extensions=(".html", ".htm", ".xhtml"),
            language=lazy_language("tree_sitter_html"),
            extra="html",
            auxiliary=True,
            # Attributes first: the element rung reads any fragment at all as text.
            scaffolds=(
                Scaffold("attribute", "<t ", "></t>"),
                Scaffold("element", "", ""),
            ),
            string_kinds=frozenset({"raw_text"}),
            comment_regex=r"<!--(?:[^-]|-(?!->))*+-->",
        ),
        Grammar(
            id="java",
            extensions=(".java",),
            language=lazy_language("tree_sitter_java"),
            extra="java",
            item_fillers=("case {}:",),  # `switch ($X) { $$$C }`: C the cases
            scaffolds=(
                *braced_ladder(
                    "class _T { void _t()",
                    ("class _T { Object _t = (\n", "\n); }"),
                    "class _T",
                    semicolon=True,
                ),
                decorator_rung("annotation", "class _T {\n", "void _t() {}\n}"),
            ),
            string_kinds=frozenset({"string_literal", "character_literal"}),
            code_in_string_kinds=frozenset({"string_interpolation"}),
            comment_regex=C_COMMENT,
            # a parameter (`void $M($$$P)`); a statement (a bare name is none: `{ $$$B }`);
            # a member (`class $C { $$$B }`)
            typed_placeholders=("_T {}", "{}();", "_T {};"),
        ),
        Grammar(
            id="json",
            extensions=(".json",),
            language=lazy_language("tree_sitter_json"),
            extra="json",
            auxiliary=True,
            scaffolds=(
                Scaffold("value", "", ""),
                Scaffold("pair", "{\n", "\n}"),
            ),
            comment_regex=C_COMMENT,
            metavar_template='"{}"',  # JSON has no names: a metavariable stands as a string
            typed_placeholders=('"{}": null',),  # a pair: `"k": { $$$P }`, `{ "k": $V, $$$R }`
        ),
        Grammar(
            id="kotlin",
            extensions=(".kt", ".kts", ".ktm"),
            language=lazy_language("tree_sitter_kotlin"),
            extra="kotlin",
            # Members first, in an `object`: a `class` body would read `println(x)` as an enum entry.
            scaffolds=(
                *_members_first(
                    braced_ladder("fun _t()", ("val _t = (\n", "\n)"), "object _T", semicolon=False)
                ),
                decorator_rung("annotation", "", "fun _t() {}"),
            ),
            # `@Suppress($$$A)` is an annotation before it is an annotated `($$$A)`; and both:
            # tree-sitter-kotlin 1.1.0 reads a top-level `@Throws(X::class)` before `fun`, after
            # a `package` line or a class, as an annotated `(X::class)` (with no error)
            read_first_at={"annotated_expression": ("annotation", "annotations")},
            also_read={"annotated_expression": ("expression",)},
            string_kinds=frozenset(
                {"string_literal", "multiline_string_literal", "character_literal"}
            ),
            code_in_string_kinds=frozenset({"interpolation"}),
            comment_regex=None,  # `/* /* */ */` nests
            clause_kinds=frozenset({"catch_block", "finally_block"}),
            # a parameter; a `when` entry; a class member; one alone in a one-line body
            # (`object $O { $$$B }`), which Kotlin ends with a line break
            typed_placeholders=("{}: _T", "{} -> _", "val {}: _T", "val {}: _T\n"),
            name_keywords=_KOTLIN_NAME_KEYWORDS,
            name_keyword_scopes=frozenset({"block", "lambda_literal"}),
            body_aliases={"enum_class_body": ("class_body",)},
        ),
        Grammar(
            id="lua",
            extensions=(".lua",),
            language=lazy_language("tree_sitter_lua"),
            extra="lua",
            scaffolds=(
                Scaffold("statement", "", ""),
                Scaffold("expression", "local _t = (\n", "\n)"),
            ),
            string_kinds=frozenset({"string"}),
            comment_regex=None,  # `--[==[ … ]==]` ends with as many `=` as it began
            typed_placeholders=("{}()",),  # a bare name is no statement: `$$$B` reads as `B()`
        ),
        Grammar(
            id="php",
            extensions=(".php",),
            language=lazy_language("tree_sitter_php", "language_php"),
            extra="php",
            item_fillers=("case {}:",),  # `switch ($X) { $$$C }`: C the cases
            scaffolds=(
                Scaffold(
                    "statement", "<?php\nfunction _t() {\n", "\n}", terminators=BRACE_TERMINATORS
                ),
                Scaffold("expression", "<?php\n$_t = (\n", "\n);"),
                Scaffold(
                    "class member", "<?php\nclass _T {\n", "\n}", terminators=BRACE_TERMINATORS
                ),
                Scaffold("declaration", "<?php\n", "", terminators=BRACE_TERMINATORS),
                decorator_rung("attribute", "<?php\n", "function _t() {}"),
            ),
            string_kinds=frozenset(
                {"string", "encapsed_string", "heredoc", "heredoc_body", "nowdoc", "nowdoc_body"}
            ),
            # PHP's interpolations have no wrapper node: the expression stands in the string
            # itself (`"{$this->f($x)}"`, `"$a->b"`), so every kind that may stand there is code.
            code_in_string_kinds=frozenset(
                {
                    "variable_name",
                    "dynamic_variable_name",
                    "member_access_expression",
                    "nullsafe_member_access_expression",
                    "member_call_expression",
                    "nullsafe_member_call_expression",
                    "scoped_property_access_expression",
                    "scoped_call_expression",
                    "class_constant_access_expression",
                    "subscript_expression",
                    "function_call_expression",
                }
            ),
            # comments, and `?> html <?php` (also an extra of the tree)
            comment_regex=(
                r"(?://|#)[^\n]*+|/\*(?:[^*]|\*(?!/))*+\*/"
                r"|\?>(?:[^<]|<(?!\?))*+(?:<\?(?:php|=)?)?"
            ),
            # a variable (`$A = $B;`); a statement; a member (`class $C { $$$B }`)
            typed_placeholders=("${}", "{};", "public ${};"),
        ),
        Grammar(
            id="ruby",
            separators=frozenset({";"}),  # a line end is the same separator
            extensions=(".rb", ".rbw", ".rake", ".gemspec"),
            language=lazy_language("tree_sitter_ruby"),
            extra="ruby",
            typed_placeholders=("C{}",),  # a class or module name is a constant: `class $C`
            scaffolds=(
                Scaffold("statement", "", ""),
                Scaffold("expression", "_t = (\n", "\n)"),
            ),
            string_kinds=frozenset(
                {"string", "heredoc_body", "regex", "delimited_symbol", "subshell", "character"}
            ),
            code_in_string_kinds=frozenset({"interpolation"}),
            clause_kinds=frozenset({"elsif", "else", "rescue", "ensure"}),
            comment_regex=r"#[^\n]*+|=begin\b(?:[^\n]|\n(?!=end\b))*+\n=end\b[^\n]*+",
        ),
        Grammar(
            id="scala",
            separators=frozenset({";"}),  # a line end is the same separator
            extensions=(".scala", ".sc", ".sbt"),
            language=lazy_language("tree_sitter_scala"),
            extra="scala",
            scaffolds=(
                *braced_ladder(
                    "object _T { def _t() =", ("val _t = (\n", "\n)"), "class _T", semicolon=False
                ),
                decorator_rung("annotation", "object _T {\n", "def _t = 1\n}"),
            ),
            string_kinds=frozenset({"string", "interpolated_string", "character_literal"}),
            code_in_string_kinds=frozenset({"interpolation"}),
            comment_regex=None,  # `/* /* */ */` nests
            typed_placeholders=("{}: _T", "case {} => _"),  # a parameter; a case
        ),
        Grammar(
            id="swift",
            extensions=(".swift",),
            language=lazy_language("tree_sitter_swift"),
            extra="swift",
            scaffolds=(
                *_members_first(
                    braced_ladder("func _t()", ("let _t = (\n", "\n)"), "class _T", semicolon=False)
                ),
                decorator_rung("attribute", "", "func _t() {}"),
            ),
            string_kinds=frozenset(
                {"line_string_literal", "multi_line_string_literal", "raw_string_literal"}
            ),
            code_in_string_kinds=frozenset({"interpolated_expression"}),
            clause_kinds=frozenset({"catch_block"}),
            # failable initialisers (`init!`'s `!` is a named `bang`)
            inner_tokens={"init_declaration": frozenset({"?", "bang"})},
            keyword_kinds=frozenset({"throws"}),  # `throws` and `rethrows`
            comment_regex=None,  # `/* /* */ */` nests
            query_candidates=False,  # compiling one query for `guard let …` took 90 s
            # a parameter; a case; a member
            typed_placeholders=("{}: _T", "case {}: break", "var {}: _T"),
        ),
        Grammar(
            id="yaml",
            extensions=(".yaml", ".yml"),
            language=lazy_language("tree_sitter_yaml"),
            extra="yaml",
            auxiliary=True,
            scaffolds=(Scaffold("document", "", ""),),
            comment_regex=_HASH_COMMENT,
        ),
    ]

"""The optional grammars (one extra each): every rung, matching, the prefilter, ast-grep agreement
and the error that names the extra when a grammar's wheel is not installed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tree_sitter as ts

from tether.testing import require_real
from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.languages import optional_grammars
from tether_astgrep.matcher import Matcher
from tether_astgrep.pattern import PatternError, compile_pattern

OPTIONAL = sorted(g.id for g in optional_grammars())

# (language, rung) -> (fragment, what it is read as)
RUNG_CASES: dict[tuple[str, str], tuple[str, str]] = {
    ("bash", "statement"): ("echo $X", "command"),
    ("bash", "case item"): ("$P) $$$B ;;", "case item"),
    ("cpp", "statement"): ("for (auto $X : $Y) { $$$B }", "for range loop"),
    ("cpp", "expression"): ("$A << $B", "binary expression"),
    ("cpp", "class member"): ("virtual void $F() = 0;", "field declaration"),
    ("cpp", "declaration"): ("template <typename $T> struct $S {};", "template declaration"),
    ("csharp", "statement"): ("using ($X) { $$$B }", "using statement"),
    ("csharp", "expression"): ("$X ?? $Y", "binary expression"),
    ("csharp", "declaration"): ("public $T $N { get; set; }", "property declaration"),
    ("csharp", "top level"): ("namespace $N;", "file scoped namespace declaration"),
    ("csharp", "attribute"): ("[Obsolete($$$A)]", "attribute list"),
    ("css", "rule"): ("$S { $$$D }", "rule set"),
    ("css", "declaration"): ("color: $C", "declaration"),
    ("css", "value"): ("rgba($$$A)", "call expression"),
    ("elixir", "expression"): ("def $F($$$A) do $$$B end", "call"),
    ("haskell", "declaration"): ("$F :: $T", "signature"),
    ("haskell", "statement"): ("$X <- $Y", "bind"),
    ("haskell", "expression"): ("\\$X -> $Y", "lambda"),
    ("haskell", "let expression"): ("let $X = $Y", "sequence of 'let', local binds"),
    ("html", "attribute"): ('class="$C"', "attribute"),
    ("html", "element"): ('<a href="$H">$$$T</a>', "element"),
    ("java", "statement"): ("throw new $E($$$A);", "throw statement"),
    ("java", "expression"): ("$X -> $Y", "lambda expression"),
    ("java", "class member"): ("@Override public String toString() { $$$B }", "method declaration"),
    ("java", "declaration"): ("import $X;", "import declaration"),
    ("java", "annotation"): ("@Override", "marker annotation"),
    ("json", "value"): ("[$$$A]", "array"),
    ("json", "pair"): ('"name": $V', "pair"),
    ("kotlin", "statement"): ("val $X = $Y", "property declaration"),
    ("kotlin", "expression"): ("$X ?: $Y", "binary expression"),
    ("kotlin", "class member"): ("init { $$$B }", "anonymous initializer"),
    ("kotlin", "declaration"): ("import $X", "import"),
    ("kotlin", "annotation"): ("@Suppress($$$A)", "annotation"),
    ("lua", "statement"): ("local $X = $Y", "variable declaration"),
    ("lua", "expression"): ("function($$$A) return $X end", "function definition"),
    ("php", "statement"): ("echo $X;", "echo statement"),
    ("php", "expression"): ("$A ?? $B", "binary expression"),
    ("php", "class member"): ("public function $F() { $$$B }", "method declaration"),
    ("php", "declaration"): ("namespace $N;", "namespace definition"),
    ("php", "attribute"): ("#[Route($$$A)]", "attribute group"),
    ("ruby", "statement"): ("puts $X", "call"),
    ("ruby", "expression"): ("$X ? $Y : $Z", "conditional"),
    ("scala", "statement"): ("val $X = $Y", "val definition"),
    ("scala", "expression"): ("$X => $Y", "lambda expression"),
    ("scala", "class member"): ("override def toString = $X", "function definition"),
    ("scala", "declaration"): ("import $X", "import declaration"),
    ("scala", "annotation"): ("@tailrec", "annotation"),
    ("swift", "statement"): ("guard let $X = $Y else { return }", "guard statement"),
    ("swift", "expression"): ("{ $X in $Y }", "lambda literal"),
    ("swift", "class member"): ("deinit { $$$B }", "deinit declaration"),
    ("swift", "declaration"): ("import $M", "import declaration"),
    ("swift", "attribute"): ("@objc", "attribute"),
    ("yaml", "document"): ("$K: $V", "block mapping pair"),
}


def test_every_optional_grammar_is_contributed_with_its_extra(registry: GrammarRegistry) -> None:
    assert OPTIONAL == sorted(
        "bash cpp csharp css elixir haskell html java json kotlin lua php ruby scala swift yaml".split()
    )
    for gid in OPTIONAL:
        grammar = registry.get(gid)
        assert grammar is not None, gid
        assert grammar.extra == gid
        assert grammar.missing() is None, gid  # the test extra installs every one
        assert grammar.extensions and all(
            registry.for_path("x" + e) is grammar for e in grammar.extensions
        )


def test_every_rung_of_every_optional_grammar_has_a_case(registry: GrammarRegistry) -> None:
    for gid in OPTIONAL:
        grammar = registry.get(gid)
        assert grammar is not None
        assert sorted(s.rung for s in grammar.scaffolds) == sorted(
            rung for lang, rung in RUNG_CASES if lang == gid
        ), gid


@pytest.mark.parametrize(("language", "rung"), sorted(RUNG_CASES))
def test_rung_parses_its_fragment(registry: GrammarRegistry, language: str, rung: str) -> None:
    fragment, expected = RUNG_CASES[(language, rung)]
    grammar = registry.get(language)
    assert grammar is not None
    compiled = compile_pattern(fragment, grammar, rungs=[rung])
    article = "an" if rung[0] in "aeiou" else "a"
    assert compiled.rung == rung
    assert compiled.interpretation == f"{expected} (as {article} {rung})"


@pytest.mark.parametrize(
    ("language", "pattern", "rung"),
    [
        ("haskell", "import Data.Map", "declaration"),  # not an application in a `do` block
        ("html", 'class="$C"', "attribute"),  # not text of an element
        ("csharp", "public $T $N { get; set; }", "declaration"),
        ("ruby", "def $M($$$A)\n  $$$B\nend", "statement"),
        ("swift", "init($$$P) { $$$B }", "class member"),  # not a call with a closure
        ("swift", "deinit { $$$B }", "class member"),
        ("swift", "print($X)", "statement"),
        ("kotlin", "println($X)", "statement"),  # a Kotlin class body would read an enum entry
        ("kotlin", "init { $$$B }", "class member"),  # not a call with a lambda
        ("kotlin", "companion object {\n  $$$B\n}", "class member"),
        ("kotlin", "class $C($$$P)", "class member"),
    ],
)
def test_ladder_order(registry: GrammarRegistry, language: str, pattern: str, rung: str) -> None:
    grammar = registry.get(language)
    assert grammar is not None
    assert compile_pattern(pattern, grammar).rung == rung


def test_csharp_method_fragment_is_read_as_a_method_not_a_local_function(
    registry: GrammarRegistry,
) -> None:
    csharp = registry.get("csharp")
    assert csharp is not None
    pattern = "public void $F() { $$$B }"
    assert compile_pattern(pattern, csharp, rungs=["statement"]).interpretation == (
        "local function statement (as a statement)"
    )
    compiled = compile_pattern(pattern, csharp)
    assert compiled.interpretation == (
        "method declaration (as a declaration, not as a local function statement: "
        "finds methods, not local functions)"
    )
    code = "class A {\n    public void Run() { Go(); }\n    void Other() {}\n}\n"
    assert _find(registry, "csharp", pattern, code) == ["public void Run() { Go(); }"]


# Where a metavariable must stand as a typed item (a parameter, a case, a statement, a member),
# a rung does not read the plain placeholder; the grammar's `typed_placeholders` respell it.
TYPED: dict[str, tuple[str, str, list[dict[str, str]]]] = {
    "java": (
        "void $M($$$P) { $$$B }",
        "class A {\n  void a() {}\n  void c(int x, String y) { f(); }\n  int d() { return 1; }\n}\n",
        [{"M": "a", "P": "", "B": ""}, {"M": "c", "P": "int x, String y", "B": "f();"}],
    ),
    "csharp": (
        "public $T $M($$$P) { $$$B }",
        "class A {\n  public int b(int x) { return x; }\n  private void c() {}\n}\n",
        [{"T": "int", "M": "b", "P": "int x", "B": "return x;"}],
    ),
    "kotlin": (
        "fun $F($$$P) { $$$B }",
        "fun a() {}\nfun c(x: Int, y: String) { f(); g() }\n",
        [{"F": "a", "P": "", "B": ""}, {"F": "c", "P": "x: Int, y: String", "B": "f(); g()"}],
    ),
    "swift": (
        "switch $X { $$$C }",
        "switch x {\ncase 1: f()\ndefault: g()\n}\n",
        [{"X": "x", "C": "case 1: f()\ndefault: g()\n"}],
    ),
    "scala": (
        "def $F($$$P) = $B",
        "object A {\n  def a() = 1\n  def c(x: Int, y: String) = y\n}\n",
        [{"F": "a", "P": "", "B": "1"}, {"F": "c", "P": "x: Int, y: String", "B": "y"}],
    ),
    "php": (
        "$A = $B;",
        "<?php\n$a = 1;\nf($a);\n",
        [{"A": "$a", "B": "1"}],
    ),
    "java enum": (
        "enum $E { $$$V }",
        "enum Color { RED, GREEN }\nclass A { enum B { X(1), Y(2); } }\n",
        [{"E": "Color", "V": "RED, GREEN"}, {"E": "B", "V": "X(1), Y(2);"}],
    ),
    "java class": (
        "class $C { $$$B }",
        "class A { int x; void f() {} }\nclass B {}\n",
        [{"C": "A", "B": "int x; void f() {}"}, {"C": "B", "B": ""}],
    ),
    "lua": (
        "function $F($$$A) $$$B end",
        "function f(a, b) return a + b end\nfunction g() end\n",
        [{"F": "f", "A": "a, b", "B": "return a + b"}, {"F": "g", "A": "", "B": ""}],
    ),
    "lua table": (
        "local $T = { $$$A }",
        "local t = { 1, 2, x = 3 }\nlocal u = {}\n",
        [{"T": "t", "A": "1, 2, x = 3"}, {"T": "u", "A": ""}],
    ),
    "swift init": (
        "init($$$P) { $$$B }",
        "class A {\n  init(x: Int) { self.x = x }\n  init() {}\n}\nfoo.init(x) { y }\n",
        [{"P": "x: Int", "B": "self.x = x"}, {"P": "", "B": ""}],
    ),
    "kotlin data class": (
        "data class $C($$$P)",
        "data class P(val x: Int, val y: Int)\nclass Q(val x: Int)\n",
        [{"C": "P", "P": "val x: Int, val y: Int"}],
    ),
    "php class": (
        "class $C { $$$B }",
        "<?php\nclass A { public $x; function f() {} }\nclass B {}\n",
        [{"C": "A", "B": "public $x; function f() {}"}, {"C": "B", "B": ""}],
    ),
    "ruby": (
        "class $C < $P\n  $$$B\nend",
        "class A < B\n  def f; end\nend\nclass C\nend\n",
        [{"C": "A", "P": "B", "B": "def f; end"}],
    ),
    "java switch": (
        "switch ($X) { $$$C }",
        "class A { void f() { switch (x) { case 1: a(); break; default: b(); } } }\n",
        [{"X": "x", "C": "case 1: a(); break; default: b();"}],
    ),
    "php switch": (
        "switch ($X) { $$$C }",
        "<?php switch ($x) { case 1: a(); break; default: b(); }\n",
        [{"X": "$x", "C": "case 1: a(); break; default: b();"}],
    ),
    "haskell import": (
        "import $M",
        "import Data.Map\nimport qualified Data.Set as S\nf = g\n",
        [{"M": "Data.Map"}],
    ),
    "haskell data": (
        "data $T = $$$C",
        "data Color = Red | Green\n",
        [{"T": "Color", "C": "Red | Green"}],
    ),
    "haskell": (
        "case $X of\n  $$$A",
        "f x = case x of\n  1 -> a\n  _ -> b\n",
        [{"X": "x", "A": "1 -> a\n  _ -> b"}],
    ),
}


@pytest.mark.parametrize("language", sorted(TYPED))
def test_typed_placeholders_read_parameters_and_cases(
    registry: GrammarRegistry, language: str
) -> None:
    pattern, code, expected = TYPED[language]
    grammar = registry.get(language.split()[0])
    assert grammar is not None
    compiled = compile_pattern(pattern, grammar)
    assert not any(b"__tmv" in lit or lit == b"_T" for lit in compiled.literals), compiled
    source = code.encode()
    tree = grammar.parser().parse(source)
    assert not tree.root_node.has_error
    found = Matcher(compiled, grammar).find(tree, source)
    assert [
        {k: "" if a < 0 else source[a:b].decode() for k, (a, b) in m.captures.items()}
        for m in found
    ] == expected


def test_a_respelling_that_leaves_placeholder_text_behind_is_not_used(
    registry: GrammarRegistry,
) -> None:
    # `def __tmv_F: _T(…)` parses in Scala, but `$F` would be two literal tokens there.
    scala = registry.get("scala")
    assert scala is not None
    compiled = compile_pattern("def $F($$$P) = $B", scala)
    assert {"F", "P", "B"} <= compiled.var_names
    assert compiled.literals == tuple(
        sorted({b"def", b"(", b")", b"="}, key=lambda b: (-len(b), b))
    )


# One typical pattern per language: the code holds a match, a near miss, and the pattern's text
# inside a string and a comment (never matched).
SHAPES: dict[str, tuple[str, str, list[str]]] = {
    "bash": (
        "rm -rf $DIR",
        """
        rm -rf "$tmp"
        rm -f "$tmp"
        echo "rm -rf x" # rm -rf y
        """,
        ['rm -rf "$tmp"'],
    ),
    "cpp": (
        "delete $P;",
        """
        void f() {
            delete p;
            delete[] q;
            const char *s = "delete p;"; // delete p;
        }
        """,
        ["delete p;"],
    ),
    "csharp": (
        "Console.WriteLine($X)",
        """
        class A {
            void F() {
                Console.WriteLine(x);
                Console.Write(x);
                var s = "Console.WriteLine(x)"; // Console.WriteLine(x)
            }
        }
        """,
        ["Console.WriteLine(x)"],
    ),
    "css": (
        "color: $C",
        """
        a { color: red; background: blue; }
        c { color: blue }
        b { background-color: red; }
        /* a { color: red; } */
        """,
        ["color: red;", "color: blue"],
    ),
    "elixir": (
        "IO.puts($X)",
        """
        IO.puts(x)
        IO.inspect(x)
        s = "IO.puts(x)" # IO.puts(x)
        """,
        ["IO.puts(x)"],
    ),
    "haskell": (
        "map $F $X",
        """
        f = map g xs
        h = fmap g xs
        s = "map g xs" -- map g xs
        """,
        ["map g xs"],
    ),
    "html": (
        '<img src="$S">',
        """
        <img src="a.png">
        <img alt="a.png">
        <!-- <img src="b.png"> -->
        <script>var s = '<img src="c.png">';</script>
        """,
        ['<img src="a.png">'],
    ),
    "java": (
        "$A.equals($B)",
        """
        class A {
            boolean f() {
                return a.equals(b) && a.equalsIgnoreCase(b);
                // a.equals(b)
            }
            String s = "a.equals(b)";
        }
        """,
        ["a.equals(b)"],
    ),
    "json": (
        '"name": $V',
        """
        {"name": "tether", "names": ["x"], "deps": {"name": 1}, "s": "\\"name\\": 2"}
        """,
        ['"name": "tether"', '"name": 1'],
    ),
    "kotlin": (
        "$X?.let { $$$B }",
        """
        fun f() {
            a?.let { use(it) }
            a?.also { use(it) }
            val s = "a?.let { use(it) }" /* a?.let { /* nested */ use(it) } */
        }
        """,
        ["a?.let { use(it) }"],
    ),
    "lua": (
        "local $X = require($M)",
        """
        local json = require("json")
        json = require("json")
        local s = "local x = require('y')" --[==[ local x = require("y") ]==]
        """,
        ['local json = require("json")'],
    ),
    "php": (
        "isset($X)",
        """
        <?php
        if (isset($a)) { unset($a); }
        $s = "isset($a)"; // isset($a)
        # isset($b)
        """,
        ["isset($a)"],
    ),
    "ruby": (
        "require $X",
        """
        require "json"
        require_relative "x"
        s = "require 'y'" # require "z"
        =begin
        require "w"
        =end
        """,
        ['require "json"'],
    ),
    "scala": (
        "val $X = $Y",
        """
        object A {
          val x = 1
          var y = 2
          val s = "val z = 3" /* val w = /* nested */ 4 */
        }
        """,
        ["val x = 1", 'val s = "val z = 3"'],
    ),
    "swift": (
        "guard let $X = $Y else { return }",
        """
        func f() {
            guard let x = y else { return }
            guard let x = y else { throw e }
            let s = "guard let x = y else { return }" // guard let x = y else { return }
        }
        """,
        ["guard let x = y else { return }"],
    ),
    "yaml": (
        "runs-on: $R",
        """
        jobs:
          test:
            runs-on: ubuntu-latest
            run-on: x
            name: "runs-on: y" # runs-on: z
        """,
        ["runs-on: ubuntu-latest"],
    ),
}


def _find(registry: GrammarRegistry, language: str, pattern: str, code: str) -> list[str]:
    grammar = registry.get(language)
    assert grammar is not None
    source = textwrap.dedent(code).lstrip("\n").encode()
    tree = grammar.parser().parse(source)
    assert not tree.root_node.has_error, language
    matcher = Matcher(compile_pattern(pattern, grammar), grammar)
    with_anchors = matcher.find(tree, source)
    assert with_anchors == matcher.find(tree)  # both candidate strategies agree
    return [source[m.start_byte : m.end_byte].decode() for m in with_anchors]


def test_every_optional_grammar_has_a_shape() -> None:
    assert sorted(SHAPES) == OPTIONAL


@pytest.mark.parametrize("language", sorted(SHAPES))
def test_shape_per_language(registry: GrammarRegistry, language: str) -> None:
    pattern, code, expected = SHAPES[language]
    assert _find(registry, language, pattern, code) == expected


def _ast_grep() -> str | None:
    return shutil.which("ast-grep", path=str(Path(sys.executable).parent)) or shutil.which(
        "ast-grep"
    )


@pytest.mark.parametrize("language", sorted(set(SHAPES) - {"css", "json"}))
def test_shape_agrees_with_the_ast_grep_cli(
    registry: GrammarRegistry, language: str, tmp_path: Path
) -> None:
    # css: ast-grep finds nothing for `color: $C` (it cannot read a lone declaration); json: it
    # refuses `"name": $V` ("Cannot parse query as a valid pattern"). See the README's table.
    binary = _ast_grep()
    require_real(binary is not None, "the ast-grep CLI (tether-astgrep's test extra)")
    assert binary is not None
    pattern, code, _ = SHAPES[language]
    grammar = registry.get(language)
    assert grammar is not None
    path = tmp_path / f"code{grammar.extensions[0]}"
    path.write_text(textwrap.dedent(code).lstrip("\n"))
    proc = subprocess.run(
        [binary, "run", "-p", pattern, "-l", language, "--json=compact", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    theirs = [m["text"] for m in json.loads(proc.stdout)]
    assert _find(registry, language, pattern, code) == theirs


# Every comment form of each language whose prefilter is on; None: the prefilter is off.
COMMENTS: dict[str, str | None] = {
    "bash": "# a\necho x # b\n",
    "cpp": "// a\n/* b * / */ int x;\n",
    "csharp": "// a\n/* b */ class A {}\n/// <summary>c</summary>\nclass B {}\n",
    "css": "/* a */ a { color: red; /* b */ }\n",
    "elixir": "# a\nx = 1 # b\n",
    "haskell": None,
    "html": "<!-- a -- b -->\n<p>x</p><!---->\n",
    "java": "// a\n/* b */ /** c */ class A {}\n",
    "json": '// a\n/* b */ {"a": 1}\n',
    "kotlin": None,
    "lua": None,
    "php": "<?php\n// a\n# b\n/* c */ $x = 1; ?> <p>d</p> <?php\n",
    "ruby": "# a\n=begin\nb\n=end\nx = 1\n",
    "scala": None,
    "swift": None,
    "yaml": "# a\nk: v # b\n",
}


def test_every_optional_grammar_says_whether_its_prefilter_is_on(registry: GrammarRegistry) -> None:
    assert sorted(COMMENTS) == OPTIONAL
    for gid, sample in COMMENTS.items():
        grammar = registry.get(gid)
        assert grammar is not None
        assert (grammar.comment_regex is None) == (sample is None), gid


@pytest.mark.parametrize("language", sorted(k for k, v in COMMENTS.items() if v is not None))
def test_comment_regex_spans_every_comment_the_grammar_parses(
    registry: GrammarRegistry, language: str
) -> None:
    grammar = registry.get(language)
    assert grammar is not None and grammar.comment_regex is not None
    source = (COMMENTS[language] or "").encode()
    tree = grammar.parser().parse(source)
    assert not tree.root_node.has_error
    regex = re.compile(grammar.comment_regex.encode())
    comments: list[bytes] = []
    stack: list[ts.Node] = [tree.root_node]
    while stack:
        node = stack.pop()
        if "comment" in node.type or node.type == "text_interpolation":
            comments.append(node.text or b"")
            continue
        stack.extend(node.children)
    assert len(comments) >= 2, comments
    for text in comments:
        assert regex.fullmatch(text.rstrip(b"\n")), (language, text)


# Pattern tokens split by a comment in the file: the prefilter must not skip the file.
SPLIT: dict[str, tuple[str, str]] = {
    "bash": ("rm -rf $X", "rm \\\n  -rf x # gone\n"),
    "cpp": ("std::move($X)", "auto y = std:: /* ! */ move(x);\n"),
    "csharp": (
        "Console.WriteLine($X)",
        "class A { void F() { Console /* ! */ .\n#region r\nWriteLine(x); } }\n",
    ),
    "css": ("color: $C", "a { color /* ! */ : red }\n"),
    "elixir": ("IO.puts($X)", "IO # !\n.puts(x)\n"),
    "html": ('<img src="$S">', '<img <!-- ! --> src="a.png">\n'),
    "java": ("$A.equals($B)", "class A { boolean f() { return a. /* ! */ equals(b); } }\n"),
    "json": ('"name": $V', '{"name" /* ! */ : 1}\n'),
    "php": ("isset($X)", "<?php\nif (isset # !\n?><b>html</b><?php ($a)) {}\n"),
    "ruby": ("require $X", 'x = [require \\\n "json"]\n'),
    "yaml": ("runs-on: $R", "runs-on : x\n"),
    "haskell": ("map $F $X", "f = map {- a {- b -} c -} g xs\n"),
    "kotlin": ("listOf($X)", "val x = listOf /* a /* b */ c */ (1)\n"),
    "scala": ("List($X)", "val x = List /* a /* b */ c */ (1)\n"),
    "swift": ("print($X)", "print /* a /* b */ c */ (1)\n"),
    "lua": ("print($X)", "print --[==[ a ]] b ]==] (1)\n"),
}


def test_every_optional_grammar_has_a_split_case() -> None:
    assert sorted(SPLIT) == OPTIONAL


@pytest.mark.anyio
@pytest.mark.parametrize("language", sorted(SPLIT))
async def test_prefilter_keeps_matches_split_by_comments(astgrep_run, language: str) -> None:
    pattern, code = SPLIT[language]
    grammar = next(g for g in optional_grammars() if g.id == language)
    name = f"a{grammar.extensions[0]}"
    async with astgrep_run({name: code}) as run:
        result = await run.call("ast_grep", {"pattern": pattern, "language": language})
        assert not result.is_error, result.text_content
        assert result.meta["total"] == 1, result.text_content


# -- a grammar whose wheel is not installed ---------------------------------------------------


@pytest.fixture
def no_kotlin_wheel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hide the installed `tree_sitter_kotlin` as if its wheel were not installed."""
    monkeypatch.setitem(sys.modules, "tree_sitter_kotlin", None)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"pattern": "println($X)", "language": "kotlin"}, "language"),
        ({"pattern": "println($X)", "path": "src/Main.kt"}, "path"),
        ({"pattern": "println($X)"}, "path"),  # the only files under the workdir are Kotlin
    ],
)
async def test_a_grammar_not_installed_is_an_error_naming_its_extra(
    astgrep_run, no_kotlin_wheel: None, args: dict[str, str], field: str
) -> None:
    async with astgrep_run({"src/Main.kt": 'fun main() { println("x") }\n'}) as run:
        result = await run.call("ast_grep", args)
        assert result.is_error, result.text_content
        text = result.text_content
        assert f"{field}:" in text
        assert "the kotlin grammar is not installed" in text
        assert "pip install 'tether-astgrep[kotlin]'" in text
        edit = await run.call("ast_edit", {**args, "rewrite": "print($X)"})
        assert edit.is_error and "pip install 'tether-astgrep[kotlin]'" in edit.text_content


@pytest.mark.anyio
async def test_other_grammars_still_work_without_one_wheel(
    astgrep_run, no_kotlin_wheel: None
) -> None:
    files = {"src/Main.kt": "fun main() {}\n", "app.rb": 'require "json"\n'}
    async with astgrep_run(files) as run:
        result = await run.call("ast_grep", {"pattern": "require $X", "language": "ruby"})
        assert not result.is_error, result.text_content
        assert "app.rb:1:1: require" in result.text_content


# -- rewrites ----------------------------------------------------------------------------------

EDITS: dict[str, tuple[str, str, str, str, str]] = {
    # language: (file, before, pattern, rewrite, after)
    "kotlin": (
        "src/A.kt",
        "fun f() {\n    if (x == null) {\n        println(x)\n    }\n}\n",
        "println($X)",
        "log.info($X)",
        "fun f() {\n    if (x == null) {\n        log.info(x)\n    }\n}\n",
    ),
    "ruby": (
        "app.rb",
        "def f\n  puts x\nend\n",
        "puts $X",
        "logger.info($X)",
        "def f\n  logger.info(x)\nend\n",
    ),
    "java": (
        "A.java",
        "class A {\n  void f() {\n    System.out.println(x);\n  }\n}\n",
        "System.out.println($X)",
        "LOG.info($X)",
        "class A {\n  void f() {\n    LOG.info(x);\n  }\n}\n",
    ),
    "yaml": (
        "ci.yml",
        "jobs:\n  test:\n    runs-on: ubuntu-20.04\n",
        "runs-on: $R",
        "runs-on: ubuntu-latest",
        "jobs:\n  test:\n    runs-on: ubuntu-latest\n",
    ),
}


@pytest.mark.anyio
@pytest.mark.parametrize("language", sorted(EDITS))
async def test_edit_and_accept_in_an_optional_grammar(
    astgrep_run, tether_workdir: Path, language: str
) -> None:
    name, before, pattern, rewrite, after = EDITS[language]
    async with astgrep_run({name: before}) as run:
        staged = await run.call("ast_edit", {"pattern": pattern, "rewrite": rewrite})
        assert not staged.is_error, staged.text_content
        assert (tether_workdir / name).read_text() == before  # staging writes nothing
        done = await run.call("resolve", {"edit_id": "edit_1", "action": "accept"})
        assert not done.is_error, done.text_content
        assert (tether_workdir / name).read_text() == after


@pytest.mark.parametrize(
    ("language", "pattern"),
    [
        ("java", "if ($X != null"),
        ("kotlin", "fun ( {"),
        # one line: tree-sitter-kotlin reads it only as `companion` infix `object`, a keyword
        # taken for a name, so the reading is refused rather than finding nothing
        ("kotlin", "fun ) {"),
        ("csharp", "$A $B $C $D $E $F $G $H (("),  # respellings are tried, and bounded
        ("json", '{"a": '),
        ("php", "function ( {"),
        ("swift", "func ) {"),
    ],
)
def test_unparseable_pattern_is_an_error_naming_the_rungs(
    registry: GrammarRegistry, language: str, pattern: str
) -> None:
    grammar = registry.get(language)
    assert grammar is not None
    with pytest.raises(PatternError) as info:
        compile_pattern(pattern, grammar)
    message = str(info.value)
    assert f"not parseable as {language}" in message
    for scaffold in grammar.scaffolds:
        assert scaffold.rung in message


# -- inferring the language of a directory ------------------------------------------------------


@pytest.mark.anyio
async def test_scripts_config_and_markup_beside_code_do_not_block_inference(astgrep_run) -> None:
    files = {
        "src/a.py": "f(1)\n",
        "ci.yml": "on: push\n",
        "package.json": "{}\n",
        "docs/index.html": "<p>f(2)</p>\n",
        "docs/site.css": "p { color: red }\n",
        "scripts/run.sh": "f 1\n",
    }
    async with astgrep_run(files) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        assert not result.is_error, result.text_content
        assert "(1 python files searched)" in result.text_content
        assert "src/a.py:1:1: f(1)" in result.text_content
        # Only data files: still a choice to make.
        result = await run.call("ast_grep", {"pattern": "$X", "path": "docs"})
        assert result.is_error and "html: 1 files" in result.text_content


@pytest.mark.anyio
async def test_code_in_two_languages_still_needs_a_language(astgrep_run) -> None:
    async with astgrep_run({"a.py": "f(1)\n", "b.kt": "fun g() { f(1) }\n"}) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        assert result.is_error
        assert "python: 1 files" in result.text_content and "kotlin: 1 files" in result.text_content


@pytest.mark.anyio
async def test_a_grammar_not_installed_does_not_block_inference(
    astgrep_run, no_kotlin_wheel: None
) -> None:
    async with astgrep_run({"a.py": "f(1)\n", "b.kt": "fun g() { f(1) }\n"}) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        assert not result.is_error, result.text_content
        assert "(1 python files searched)" in result.text_content

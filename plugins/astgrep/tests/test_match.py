"""Matching semantics, per language: the seed's examples and the documented rules."""

from __future__ import annotations

import pytest

from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.testing import captures, find

DART = """
void main() {
  if (c != null) c.dispose();
  if (d != null) c.dispose();
  if (c != null) { c.dispose(); }
  if (c != null) c.dispose(); else c.keep();
  print("if (c != null) c.dispose();"); // if (c != null) c.dispose();
}
"""


def test_dart_seed_guard_then_dispose(registry: GrammarRegistry) -> None:
    # The seed's promise: a guard that releases what it checked is found, one that releases
    # something else is not (nor the text inside a string or a comment). The seed says nothing
    # about `else`; since issue 14 the default (smart) strictness also finds the guard that
    # has an `else` branch, as ast-grep does, and `cst` keeps the exact reading.
    found = find(registry, "dart", "if ($X != null) $X.dispose()", DART)
    assert found == ["if (c != null) c.dispose();", "if (c != null) c.dispose(); else c.keep();"]
    exact = find(registry, "dart", "if ($X != null) $X.dispose()", DART, strictness="cst")
    assert exact == ["if (c != null) c.dispose();"]


def test_dart_seed_dispose_call_is_not_a_function_signature(registry: GrammarRegistry) -> None:
    code = """
    dispose(x) {}
    void main() {
      dispose(x);
      var y = dispose(x);
      dispose(y);
      print('dispose(x)');
    }
    """
    found = find(registry, "dart", "dispose(x)", code)
    assert found == ["dispose(x)", "dispose(x)"]
    caps = captures(registry, "dart", "dispose($A)", code)
    assert [c["A"] for c in caps] == ["x", "x", "y"]


DART_FUNCTIONS = """
void dispose() { a(); }
class Holder {
  @override
  void dispose() {
    b();
  }
  static void dispose() {}
  int size(int x) => x;
}
void main() {
  void dispose() { c(); }
  dispose();
  var f = () { d(); };
}
"""


def test_dart_function_pattern_finds_a_top_level_function(registry: GrammarRegistry) -> None:
    found = find(registry, "dart", "void dispose() { $$$B }", "void dispose() { a(); }\n")
    assert found == ["void dispose() { a(); }"]


def test_dart_function_pattern_finds_a_method_in_a_class(registry: GrammarRegistry) -> None:
    code = """
    class Holder {
      @override
      void dispose() {
        b();
      }
    }
    """
    # The annotation is a sibling before the method, so the match starts at `void`.
    assert find(registry, "dart", "void dispose() { $$$B }", code) == [
        "void dispose() {\n    b();\n  }"
    ]


def test_dart_function_pattern_finds_top_level_methods_and_local_functions(
    registry: GrammarRegistry,
) -> None:
    caps = captures(registry, "dart", "void dispose() { $$$B }", DART_FUNCTIONS)
    # Strict children: `static` is part of the method's signature, so that one is left out.
    assert [c["B"] for c in caps] == ["a();", "b();", "c();"]
    caps = captures(registry, "dart", "$T $NAME($$$P) { $$$B }", DART_FUNCTIONS)
    assert [(c["T"], c["NAME"], c["P"]) for c in caps] == [
        ("void", "dispose", ""),
        ("void", "dispose", ""),
        ("void", "main", ""),
        ("void", "dispose", ""),
    ]
    caps = captures(registry, "dart", "$T $NAME($$$P) => $E", DART_FUNCTIONS)
    assert caps == [{"T": "int", "NAME": "size", "P": "int x", "E": "x"}]
    found = find(registry, "dart", "static void dispose() {}", DART_FUNCTIONS)
    assert found == ["static void dispose() {}"]


def test_dart_call_pattern_still_finds_only_calls(registry: GrammarRegistry) -> None:
    assert find(registry, "dart", "dispose()", DART_FUNCTIONS) == ["dispose()"]


# The same shapes (guard then release the same variable) in the other languages: the guarded
# release of the same variable matches; releasing another variable and the braced form do
# not; the form with an else branch does by default (smart), and not with strictness cst.
SAME_SHAPES = {
    "python": (
        "if $X is not None: $X.close()",
        """
        if f is not None: f.close()
        if g is not None: f.close()
        if f is not None:
            f.close()
            other()
        if f is not None: f.close()
        else: pass
        s = "if f is not None: f.close()"  # if f is not None: f.close()
        """,
        ["if f is not None: f.close()"],
    ),
    "javascript": (
        "if ($X != null) $X.dispose()",
        """
        if (c != null) c.dispose();
        if (d != null) c.dispose();
        if (c != null) { c.dispose(); }
        if (c != null) c.dispose(); else c.keep();
        const s = "if (c != null) c.dispose();"; // if (c != null) c.dispose();
        """,
        ["if (c != null) c.dispose();"],
    ),
    "rust": (
        "if let Some($X) = $Y { drop($X) }",
        """
        fn main() {
            if let Some(c) = o { drop(c) }
            if let Some(c) = o { drop(d) }
            if let Some(c) = o { drop(c) } else { keep() }
            let s = "if let Some(c) = o { drop(c) }"; // if let Some(c) = o { drop(c) }
        }
        """,
        ["if let Some(c) = o { drop(c) }"],
    ),
    "go": (
        "if $X != nil { $X.Close() }",
        """
        package main
        func main() {
            if c != nil { c.Close() }
            if d != nil { c.Close() }
            if c != nil { c.Close() } else { keep() }
            s := "if c != nil { c.Close() }" // if c != nil { c.Close() }
        }
        """,
        ["if c != nil { c.Close() }"],
    ),
    "c": (
        "if ($X != NULL) free($X);",
        """
        void f(void) {
            if (p != NULL) free(p);
            if (q != NULL) free(p);
            if (p != NULL) { free(p); }
            if (p != NULL) free(p); else keep();
            char *s = "if (p != NULL) free(p);"; /* if (p != NULL) free(p); */
        }
        """,
        ["if (p != NULL) free(p);"],
    ),
}


ELSE_FORMS = {
    "python": [
        "if f is not None:\n    f.close()\n    other()",
        "if f is not None: f.close()\nelse: pass",
    ],
    "javascript": ["if (c != null) c.dispose(); else c.keep();"],
    "rust": ["if let Some(c) = o { drop(c) } else { keep() }"],
    "go": ["if c != nil { c.Close() } else { keep() }"],
    "c": ["if (p != NULL) free(p); else keep();"],
}


@pytest.mark.parametrize("language", sorted(SAME_SHAPES))
def test_same_shapes_per_language(registry: GrammarRegistry, language: str) -> None:
    pattern, code, expected = SAME_SHAPES[language]
    assert find(registry, language, pattern, code, strictness="cst") == expected
    # Smart (the default): trailing code the pattern does not mention (an else branch, and in
    # Python a block that goes on after the close()) does not prevent a match.
    smart = find(registry, language, pattern, code)
    assert sorted(smart) == sorted(expected + ELSE_FORMS[language])


def test_repeated_metavariable_compares_tokens_ignoring_space_and_comments(
    registry: GrammarRegistry,
) -> None:
    code = """
    g(f(a,b), f(a, b))
    g(f(a, /* c */ b), f(a,b))
    g(f(a, b), f(a, c))
    g(x.y, x.y)
    g(x.y, x.z)
    """
    found = find(registry, "javascript", "g($X, $X)", code)
    assert found == ["g(f(a,b), f(a, b))", "g(f(a, /* c */ b), f(a,b))", "g(x.y, x.y)"]


def test_repeated_multi_metavariable(registry: GrammarRegistry) -> None:
    code = """
    pair(f(1, 2), f(1,2))
    pair(f(1, 2), f(2, 1))
    """
    assert find(registry, "python", "pair(f($$$A), f($$$A))", code) == ["pair(f(1, 2), f(1,2))"]


def test_multi_metavariable_in_argument_lists(registry: GrammarRegistry) -> None:
    code = """
    f(key=1)
    f(a, key=2)
    f(a, b, key=3, c=4)
    f(a, key=5,)
    f(a, b)
    """
    caps = captures(registry, "python", "f($$$A, key=$K, $$$B)", code)
    assert caps == [
        {"A": "", "K": "1", "B": ""},
        {"A": "a", "K": "2", "B": ""},
        {"A": "a, b", "K": "3", "B": "c=4"},
        {"A": "a", "K": "5", "B": ""},
    ]
    assert find(registry, "python", "f($$$ARGS)", "f()\nf(1)\nf(1, 2,)\n") == [
        "f()",
        "f(1)",
        "f(1, 2,)",
    ]


def test_trailing_comma_is_insignificant(registry: GrammarRegistry) -> None:
    code = "f(a, b,)\nf(a, b)\nf(a, b, c)\n"
    assert find(registry, "python", "f($A, $B)", code) == ["f(a, b,)", "f(a, b)"]
    assert find(registry, "rust", "f($A, $B)", "fn m() { f(a, b,); f(a, b); }") == [
        "f(a, b,)",
        "f(a, b)",
    ]


def test_trailing_clauses_match_by_default_but_not_in_cst(registry: GrammarRegistry) -> None:
    code = """
    if a:
        x()
    if a:
        x()
    else:
        y()
    """
    assert find(registry, "python", "if $C: $$$B", code, strictness="cst") == ["if a:\n    x()"]
    assert find(registry, "python", "if $C: $$$B", code) == [
        "if a:\n    x()",
        "if a:\n    x()\nelse:\n    y()",
    ]


def test_strings_and_comments_are_never_matched(registry: GrammarRegistry) -> None:
    code = '''
    # foo(1)
    s = "foo(1)"
    t = """
    foo(1)
    """
    u = f"{foo(1)}"
    foo(1)
    '''
    found = find(registry, "python", "foo($A)", code)
    assert found == ["foo(1)", "foo(1)"]  # the f-string interpolation is code; the rest is not
    assert find(
        registry, "javascript", "foo($A)", "// foo(1)\n/* foo(2) */ x = 'foo(3)'; `${foo(4)}`"
    ) == ["foo(4)"]
    # a bare metavariable never reports string content or comments either
    assert find(registry, "python", "$X", "'abc'  # c\n") == ["'abc'"]


def test_comments_inside_a_candidate_are_ignored(registry: GrammarRegistry) -> None:
    code = "foo(1, # one\n    2)\n"
    assert find(registry, "python", "foo(1, 2)", code) == ["foo(1, # one\n    2)"]


def test_nested_matches_are_all_reported(registry: GrammarRegistry) -> None:
    assert find(registry, "python", "f($X)", "f(f(f(1)))\n") == ["f(f(f(1)))", "f(f(1))", "f(1)"]


def test_literal_strings_compare_by_text(registry: GrammarRegistry) -> None:
    code = "open('a')\nopen('b')\nopen(\"a\")\n"
    assert find(registry, "python", "open('a')", code) == ["open('a')"]


def test_files_with_syntax_errors_are_still_searched(registry: GrammarRegistry) -> None:
    code = "foo(1)\ndef broken(:\n    pass\nfoo(2)\n"
    assert find(registry, "python", "foo($A)", code) == ["foo(1)", "foo(2)"]


def test_dart_member_chains_bind_whole_receivers(registry: GrammarRegistry) -> None:
    code = """
    void main() {
      c.dispose();
      a.b.dispose();
      if (a.b != null) a.b.dispose();
      if (a.b != null) a.c.dispose();
    }
    """
    caps = captures(registry, "dart", "$X.dispose()", code)
    assert [c["X"] for c in caps] == ["c", "a.b", "a.b", "a.c"]  # never the bare `.b` selector
    found = find(registry, "dart", "if ($X != null) $X.dispose()", code)
    assert found == ["if (a.b != null) a.b.dispose();"]


def test_several_statements_match_consecutive_siblings(registry: GrammarRegistry) -> None:
    code = "x = 1\ny = 2\nz = 3\nw = 1\n"
    assert find(registry, "python", "$A = 1\n$B = 2", code) == ["x = 1\ny = 2"]


@pytest.mark.parametrize(
    ("language", "code"),
    [
        ("c", "void f(void) { if (x) { a(); b(); } if (y) { } if (z) w(); }"),
        ("dart", "void f() { if (x) { a(); b(); } if (y) { } if (z) w(); }"),
        ("javascript", "if (x) { a(); b(); } if (y) { } if (z) w();"),
        ("go", "package m\nfunc f() { if x { a(); b() }; if y { }; if z { w() } }\n"),
    ],
)
def test_a_statement_run_in_a_block(registry: GrammarRegistry, language: str, code: str) -> None:
    pattern = "if $C { $$$B }" if language == "go" else "if ($C) { $$$B }"
    found = find(registry, language, pattern, code)
    expected_first = "if x { a(); b() }" if language == "go" else "if (x) { a(); b(); }"
    assert found[0] == expected_first
    assert len(found) == (3 if language == "go" else 2)
    caps = captures(registry, language, pattern, code)
    assert caps[0]["B"].startswith("a()") and caps[1]["B"] == ""

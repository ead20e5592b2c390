"""A literal is never a skippable word, and a list item never unmentioned code: the metamorphic
checks of `metamorphic.py` on a sample of every grammar (issue 36 §1), and the reproductions."""

from __future__ import annotations

import pytest
from metamorphic import Tally, check

from tether.testing import require_real
from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.testing import captures

# Code with lists (arguments, parameters, elements, type arguments) and literals, per grammar.
SAMPLES: dict[str, str] = {
    "python": "def f(a, b=1):\n    g(x, True, None, 'str', 2)\n    return [1, 2], {1: 2}\n",
    "javascript": "function f(a, b) { g(x, true, undefined, this, identifier, 1); return [1, 2]; }\n",
    "typescript": "function f(a: number, b: string): Map<string, number> { g(x, true, null, 1); return [1, 2]; }\n",
    "tsx": "function f(a: number, b: string): Map<string, number> { g(x, true, null, 1); return [1, 2]; }\n",
    "rust": "fn f(a: u8, b: u8) -> HashMap<u8, u8> { g(x, true, 1); let v = vec![1, 2]; let t = (1, 2); }\n",
    "c": "int f(int a, int b) { g(x, NULL, 1, 'c'); int v[] = {1, 2}; }\n",
    "go": "package a\n\nfunc f(a int, b int) {\n\tg(x, nil, true, 1)\n\tv := []int{1, 2}\n}\n",
    "dart": "void f(int a, int b) { g(x, null, true, this, 1); var v = [1, 2]; Map<String, int> m; }\n",
    "bash": "f() { g x 'y' 1; }\n",
    "cpp": "int f(int a, int b) { g(x, nullptr, true, 1); std::map<int, int> m; }\n",
    "csharp": "class C { void F(int a, int b) { G(x, null, true, this, 1); var v = new[] { 1, 2 }; } }\n",
    "css": "a { margin: 1px 2px; color: rgba(1, 2, 3, 0.5); }\n",
    "elixir": "def f(a, b) do\n  g(x, nil, true, 1)\n  [1, 2]\nend\n",
    "haskell": "v = [1, 2]\nt = (1, True)\n",
    "html": '<a href="x" class="y">t</a>\n',
    "java": "class C { void f(int a, int b) { g(x, null, true, this, 1); int[] v = {1, 2}; Map<String, Integer> m; } }\n",
    "json": '{"a": [1, 2], "b": true, "c": null}\n',
    "kotlin": "fun f(a: Int, b: Int) { g(x, null, true, this, 1); val m: Map<String, Int> = h(1, 2) }\n",
    "lua": "function f(a, b) g(x, nil, false, 1) local v = {1, 2} end\n",
    "php": "<?php function f($a, $b) { g($x, null, true, 1); $v = [1, 2]; }\n",
    "ruby": "def f(a, b)\n  g(x, nil, true, self, 1)\n  v = [1, 2]\nend\n",
    "scala": "object O { def f(a: Int, b: Int) = { g(x, null, true, this, 1); val m: Map[String, Int] = h(1, 2) } }\n",
    "swift": "func f(a: Int, b: Int) { g(x, nil, true, self, 1); let v = [1, 2]; let m: [String: Int] = h(1, 2) }\n",
    "yaml": "a: [1, 2]\nb: {c: 1, d: true}\n",
}


def test_every_grammar_has_a_sample(registry: GrammarRegistry) -> None:
    assert sorted(SAMPLES) == registry.ids


@pytest.mark.parametrize("strictness", ["smart", "ast"])
@pytest.mark.parametrize("lang", sorted(SAMPLES))
def test_one_more_item_or_another_literal_is_never_found(
    registry: GrammarRegistry, lang: str, strictness: str
) -> None:
    grammar = registry.get(lang)
    assert grammar is not None
    if grammar.missing():
        require_real(False, grammar.missing() or "")
    source = SAMPLES[lang].encode()
    tree = grammar.parser().parse(source)
    assert not tree.root_node.has_error, lang
    tally = Tally()
    check(grammar, source, tally, strictness)
    # Every sample's lists are searched (a list no rung reads would make the check vacuous);
    # HTML's attributes are no list (no comma, no field).
    assert lang == "html" or (tally.lists >= 1 and tally.mutations >= 2), (lang, tally)
    assert not tally.findings, "\n".join(map(str, tally.findings))


# The reproductions of issue 36 §1, by capture.
@pytest.mark.parametrize(
    ("lang", "pattern", "code", "expected"),
    [
        (
            "javascript",
            "f($X)",
            "f(x, true); f(x, undefined); f(x, this); f(x, identifier); f(y);",
            [{"X": "y"}],
        ),
        (
            "go",
            "http.NewRequest($M, $U)",
            'package a\nfunc f() {\n\thttp.NewRequest("GET", u, nil)\n\thttp.NewRequest("GET", u)\n}\n',
            [{"M": '"GET"', "U": "u"}],
        ),
        ("lua", "print($$$A)", "print(nil, false)", [{"A": "nil, false"}]),
        ("lua", "pcall($F, $A)", "pcall(f, nil, 1)\npcall(f, nil)\n", [{"F": "f", "A": "nil"}]),
        (
            "ruby",
            "def $F($$$A)\n  $$$B\nend",
            "def h(session, identifier)\n  1\nend\n",
            [{"F": "h", "A": "session, identifier", "B": "1"}],
        ),
        ("ruby", "puts $X", "puts a, nil\nputs b\n", [{"X": "b"}]),
        (
            "go",
            "return $X",
            "package a\nfunc f() {\n\treturn a, nil\n\treturn b\n}\n",
            [{"X": "b"}],
        ),
        ("bash", "echo $X", "echo a b\necho c\n", [{"X": "c"}]),
        ("python", "f($X, True)", "f(x, False)\nf(x, True)\n", [{"X": "x"}]),
        ("dart", "f($X)", "void m() { f(x, true); f(x, this); f(y); }", [{"X": "y"}]),
    ],
)
def test_a_literal_or_an_item_is_never_skipped(
    registry: GrammarRegistry, lang: str, pattern: str, code: str, expected: list[dict[str, str]]
) -> None:
    grammar = registry.get(lang)
    assert grammar is not None
    if grammar.missing():
        require_real(False, grammar.missing() or "")
    assert captures(registry, lang, pattern, code) == expected

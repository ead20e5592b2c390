"""A lone decorator, annotation or attribute is a pattern in every grammar that has them
(issue 36 §3): the plain one, one with arguments, and a metavariable for its name."""

from __future__ import annotations

import pytest

from tether.testing import require_real
from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.testing import captures, find

# grammar -> (code, [(pattern, the matches' text)])
DECORATED: dict[str, tuple[str, list[tuple[str, list[str]]]]] = {
    "python": (
        "@property\ndef f(self): pass\n\n@pytest.mark.parametrize('a', [1])\ndef g(a): pass\n",
        [
            ("@property", ["@property"]),
            ("@pytest.mark.parametrize($$$A)", ["@pytest.mark.parametrize('a', [1])"]),
            ("@$D", ["@property", "@pytest.mark.parametrize('a', [1])"]),
        ],
    ),
    "typescript": (
        "@Component({a: 1})\nclass A { @Input() name: string; }\n",
        [("@Component($$$A)", ["@Component({a: 1})"]), ("@Input()", ["@Input()"])],
    ),
    "tsx": ("@Component({a: 1})\nclass A {}\n", [("@Component($$$A)", ["@Component({a: 1})"])]),
    "javascript": ("@sealed\nclass A {}\n", [("@sealed", ["@sealed"])]),
    "java": (
        'class A { @Override public String toString() { return ""; } @SuppressWarnings("x") void f() {} }',
        [
            ("@Override", ["@Override"]),
            ("@SuppressWarnings($$$A)", ['@SuppressWarnings("x")']),
        ],
    ),
    "kotlin": (
        'object A {\n    @JvmStatic fun f() {}\n    @Suppress("x") fun g() {}\n}\n',
        [("@JvmStatic", ["@JvmStatic"]), ("@Suppress($$$A)", ['@Suppress("x")'])],
    ),
    "csharp": (
        'class A { [Obsolete("x")] void F() {} [EditorBrowsable(EditorBrowsableState.Never)] int P { get; } }',
        [
            ("[Obsolete($$$A)]", ['[Obsolete("x")]']),
            ("[EditorBrowsable($$$A)]", ["[EditorBrowsable(EditorBrowsableState.Never)]"]),
        ],
    ),
    "rust": ("#[derive(Debug)]\nstruct A;\n", [("#[derive($$$D)]", ["#[derive(Debug)]"])]),
    "swift": ("class A { @objc func f() {} }", [("@objc", ["@objc"])]),
    "dart": ("class A { @override void f() {} }", [("@override", ["@override"])]),
    "php": ("<?php\n#[Route('/x')]\nfunction f() {}\n", [("#[Route($$$A)]", ["#[Route('/x')]"])]),
    "scala": ("object A { @tailrec def f(): Int = 1 }", [("@tailrec", ["@tailrec"])]),
}


@pytest.mark.parametrize("lang", sorted(DECORATED))
def test_a_lone_decorator_is_a_pattern(registry: GrammarRegistry, lang: str) -> None:
    grammar = registry.get(lang)
    assert grammar is not None
    if grammar.missing():
        require_real(False, grammar.missing() or "")
    code, cases = DECORATED[lang]
    for pattern, expected in cases:
        assert find(registry, lang, pattern, code) == expected, pattern


def test_python_decorator_arguments_are_captured(registry: GrammarRegistry) -> None:
    code = "@pytest.mark.parametrize('a', [1, 2])\ndef t(a): pass\n"
    assert captures(registry, "python", "@pytest.mark.parametrize($$$A)", code) == [
        {"A": "'a', [1, 2]"}
    ]


@pytest.mark.parametrize("lang", ["javascript", "typescript", "tsx"])
def test_a_run_between_a_class_name_and_its_body(registry: GrammarRegistry, lang: str) -> None:
    code = "class A extends B { f() {} }\nclass C { }\n"
    assert find(registry, lang, "class $KLASS $$$_ { $$$_ }", code) == [
        "class A extends B { f() {} }",
        "class C { }",
    ]

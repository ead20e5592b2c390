"""Every rung of every built-in grammar's scaffold ladder, and the ladder's order."""

from __future__ import annotations

import pytest

from tether_astgrep.grammars import RUNGS, GrammarRegistry
from tether_astgrep.pattern import PatternError, compile_pattern

# (language, rung) -> (fragment, expected interpretation prefix)
RUNG_CASES: dict[tuple[str, str], tuple[str, str]] = {
    ("python", "statement"): ("return $X", "return statement"),
    ("python", "expression"): ("$A + $B", "binary operator"),
    ("python", "class member"): ("def $M(self): $$$B", "function definition"),
    ("python", "declaration"): ("yield $X", "yield"),
    ("python", "decorator"): ("@pytest.mark.parametrize($$$A)", "decorator"),
    ("javascript", "statement"): ("return $X", "return statement"),
    ("javascript", "expression"): ("{ a: $X }", "object"),
    ("javascript", "class member"): ("$M($$$P) { $$$B }", "method definition"),
    ("javascript", "declaration"): ("import $X from 'y'", "import statement"),
    ("javascript", "decorator"): ("@sealed", "decorator"),
    ("typescript", "statement"): ("let $X: number = 1", "lexical declaration"),
    ("typescript", "expression"): ("$X as string", "as expression"),
    ("typescript", "class member"): ("private $F: string", "public field definition"),
    ("typescript", "declaration"): ("export type $T = string", "export statement"),
    ("typescript", "decorator"): ("@Component($$$A)", "decorator"),
    ("tsx", "statement"): ("return <div>{$X}</div>", "return statement"),
    ("tsx", "expression"): ("<b>{$X}</b>", "jsx element"),
    ("tsx", "class member"): ("render() { return $X }", "method definition"),
    ("tsx", "declaration"): ("export default $X", "export statement"),
    ("tsx", "decorator"): ("@Component($$$A)", "decorator"),
    ("rust", "statement"): ("let $X = $Y", "let declaration"),
    ("rust", "expression"): ("$A + $B", "binary expression"),
    ("rust", "class member"): ("fn $M(&self) {}", "function item"),
    ("rust", "declaration"): ("use $X::y", "use declaration"),
    ("c", "statement"): ("return $X", "return statement"),
    ("c", "expression"): ("$A + $B", "binary expression"),
    ("c", "class member"): ("int $F", "field declaration"),
    ("c", "declaration"): ("typedef int $T;", "type definition"),
    ("go", "statement"): ("defer $F()", "defer statement"),
    ("go", "expression"): ("$A + $B", "binary expression"),
    ("go", "class member"): ("$F int", "field declaration"),
    ("go", "declaration"): ("func $F() {}", "function declaration"),
    ("dart", "statement"): ("if ($X != null) $X.dispose()", "if statement"),
    ("dart", "expression"): ("$A + $B", "additive expression"),
    ("dart", "class member"): ("int $F = 0", "declaration"),
    ("dart", "declaration"): ("import 'package:x/y.dart'", "import specification"),
    ("dart", "annotation"): ("@override", "annotation"),
}


def test_every_builtin_grammar_has_the_four_rungs(registry: GrammarRegistry) -> None:
    for gid in ("python", "javascript", "typescript", "tsx", "rust", "c", "go", "dart"):
        grammar = registry.get(gid)
        assert grammar is not None, gid
        # and, last, the rung a lone decorator or annotation is read at (`@property`)
        rungs = tuple(s.rung for s in grammar.scaffolds)
        assert rungs[:4] == RUNGS and rungs[4:] in ((), ("decorator",), ("annotation",)), gid
        assert any(k[0] == gid for k in RUNG_CASES)


@pytest.mark.parametrize(("language", "rung"), sorted(RUNG_CASES))
def test_rung_parses_its_fragment(registry: GrammarRegistry, language: str, rung: str) -> None:
    fragment, expected = RUNG_CASES[(language, rung)]
    grammar = registry.get(language)
    assert grammar is not None
    compiled = compile_pattern(fragment, grammar, rungs=[rung])
    assert compiled.rung == rung
    assert compiled.interpretation.startswith(expected), compiled.interpretation
    article = "an" if rung[0] in "aeiou" else "a"
    assert compiled.interpretation.endswith(f"(as {article} {rung})")


def test_ladder_order_statement_first(registry: GrammarRegistry) -> None:
    dart = registry.get("dart")
    assert dart is not None
    # At the top level of Dart this is a function signature; the statement rung reads it as a call.
    compiled = compile_pattern("dispose(x)", dart)
    assert compiled.rung == "statement"
    assert "function signature" not in compiled.interpretation
    assert compiled.interpretation.startswith("sequence of identifier, selector")


@pytest.mark.parametrize(
    "pattern",
    ["void dispose() { $$$B }", "$T $NAME($$$P) { $$$B }", "Future<void> $F() async { $$$B }"],
)
def test_dart_function_declaration_is_read_as_a_declaration_first(
    registry: GrammarRegistry, pattern: str
) -> None:
    # The one exception to the ladder order: the statement rung reads these as local functions,
    # which would find neither top-level functions nor methods.
    dart = registry.get("dart")
    assert dart is not None
    assert compile_pattern(pattern, dart, rungs=["statement"]).interpretation == (
        "lambda expression (as a statement)"
    )
    compiled = compile_pattern(pattern, dart)
    assert compiled.rung == "declaration"
    assert compiled.interpretation == (
        "sequence of function signature, function body (as a declaration, not as a local "
        "function declaration: finds top-level functions, methods and local functions)"
    )


@pytest.mark.parametrize("pattern", ["dispose(x)", "dispose($A)", "$F($$$A)", "$X.dispose()"])
def test_dart_calls_are_not_declarations(registry: GrammarRegistry, pattern: str) -> None:
    dart = registry.get("dart")
    assert dart is not None
    compiled = compile_pattern(pattern, dart)
    assert compiled.rung == "statement"
    assert "signature" not in compiled.interpretation


def test_ladder_falls_through_to_later_rungs(registry: GrammarRegistry) -> None:
    python = registry.get("python")
    assert python is not None
    assert compile_pattern("x for x in y", python).rung == "expression"
    js = registry.get("javascript")
    assert js is not None
    assert compile_pattern("static $M() { $$$B }", js).rung == "class member"


@pytest.mark.parametrize(
    ("language", "pattern"),
    [
        ("python", "def f(:"),
        ("dart", "if ($X != null"),
        ("rust", "fn ( {"),
        ("c", "int int int"),
        ("go", "func ) {"),
        ("javascript", "a +* b"),
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
    for rung in RUNGS:
        assert rung in message

"""A pattern not asked before, searched over trees a run keeps (a served run's usual search,
issue 32): the nodes' significant children the matcher looked at in a kept tree are kept with
it (`Matcher.sig_memo`, `FileCache.memo`), so a later search over the same tree asks
tree-sitter for none of them again. What is kept counts against the cache budget, goes with its
file when the file changes, and never changes an answer: generated over every language's typical
pattern (`test_languages.SHAPES`) and, for Python, over many patterns at every strictness, each
answer is compared with a run that keeps nothing."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from test_languages import SHAPES

from tether_astgrep.candidates import Candidates
from tether_astgrep.engine import FileResult, ProcessState, Task, entry_cost
from tether_astgrep.grammars import Grammar, GrammarRegistry
from tether_astgrep.pattern import STRICTNESS, PatternError, compile_pattern

PYTHON = '''
import os
from typing import Any


@decorated
def f(a, b=1, *args, **kwargs) -> int:
    """doc: def g(x): return x"""
    x = a + b  # y = a + b
    if x and not b or a is None:
        return x * 2
    elif isinstance(x, int):
        print(x, sep="")
    else:
        raise ValueError(x)
    return [y for y in args if y]


class C(Base, metaclass=M):
    z: int = 0

    def m(self, a, /, b, *, c):
        self.a = a
        with open(a) as fh:
            del fh
        try:
            yield a[b]
        except (KeyError, IndexError) as e:
            assert e, "no"
        return lambda q, r: q + r


async def h():
    await g(*a, **k)
    for i in range(3):
        while i:
            i -= 1
    return {"a": 1, **d}
'''

PATTERNS = [
    "def $F($$$A): $$$B",
    "def $F($A, $B): $$$C",
    "def $F($$$A) -> $R: $$$B",
    "def $F(self, $$$A): $$$B",
    "def $F($$$A, **$K): $$$B",
    "@$D\ndef $F($$$A): $$$B",
    "async def $F($$$A): $$$B",
    "class $C($$$B): $$$D",
    "$X = $A + $B",
    "$A + $B",
    "return $X",
    "return $X * $Y",
    "$F($$$A)",
    "$F($A, $$$B)",
    "$O.$M($$$A)",
    "if $C: $$$B",
    "if $C:\n    $$$B\nelif $D:\n    $$$E\nelse:\n    $$$F",
    "for $X in $Y: $$$B",
    "with $X as $Y: $$$B",
    "try:\n    $$$B\nexcept $E as $N:\n    $$$H",
    "lambda $$$A: $B",
    "[$X for $Y in $Z if $C]",
    "{$$$A}",
    "isinstance($X, $T)",
    "$A and $B or $C",
    "self.$A = $B",
    "$X[$Y]",
    "$X: $T = $V",
    "raise $E($$$A)",
    "from $M import $$$N",
    "$F(*$A, **$K)",
]

_VAR = re.compile(r"\$(\$\$)?([A-Z][A-Z0-9_]*)")


def _renamed(pattern: str, suffix: str) -> str:
    """The same pattern with other metavariable names: another search, the same matches."""
    return _VAR.sub(lambda m: f"${m.group(1) or ''}{m.group(2)}{suffix}", pattern)


def _answer(results: list[FileResult]) -> list[tuple[Any, ...]]:
    """What a search answers, without the counts of the work it took."""
    return [
        (r.path, r.skipped, r.count, r.matches, r.parse_errors, r.unsearchable_lines)
        for r in results
    ]


def _search(
    state: ProcessState, grammar: Grammar, root: Path, pattern: str, strictness: str = "smart"
) -> list[FileResult] | None:
    try:
        compiled = compile_pattern(pattern, grammar, strictness=strictness)
    except PatternError:
        return None
    files = sorted(p.name for p in root.iterdir())
    return state.run(Task("search", compiled, None, 2_000_000, keep=3), str(root), files)


def _cold(registry: GrammarRegistry, *args: Any) -> list[FileResult] | None:
    return _search(ProcessState(registry, 0), *args)  # keeps nothing


def _kept(registry: GrammarRegistry) -> ProcessState:
    return ProcessState(registry, 1 << 30, cache_from_search=1)


def _write(root: Path, grammar: Grammar, code: str, copies: int = 2) -> None:
    root.mkdir(exist_ok=True)
    for i in range(copies):
        (root / f"f{i}{grammar.extensions[0]}").write_text(textwrap.dedent(code).lstrip("\n"))


def _consistent(state: ProcessState) -> None:
    """The cache's bytes in use are its entries' sources, trees, results and children kept."""
    cache = state.cache
    entries = cache._entries.values()
    assert cache.used == sum(
        entry_cost(e.source, e.recovery is not None) + e.results_cost + e.sig_cost for e in entries
    )
    assert cache.used <= cache.budget


@pytest.mark.parametrize("language", sorted(SHAPES))
def test_each_language_answers_with_kept_children_as_a_run_that_keeps_nothing(
    registry: GrammarRegistry, tmp_path: Path, language: str
) -> None:
    pattern, code, _ = SHAPES[language]
    grammar = registry.get(language)
    assert grammar is not None
    _write(tmp_path, grammar, code)
    state = _kept(registry)
    assert _search(state, grammar, tmp_path, pattern) is not None  # parses, keeps the trees
    for suffix in ("2", "3"):  # the children kept by the first, then taken from the memo
        other = _renamed(pattern, suffix)
        kept = _search(state, grammar, tmp_path, other)
        assert kept is not None
        assert _answer(kept) == _answer(_cold(registry, grammar, tmp_path, other) or [])
    _consistent(state)


@pytest.mark.parametrize("strictness", STRICTNESS)
def test_python_patterns_answer_with_kept_children_as_a_run_that_keeps_nothing(
    registry: GrammarRegistry, tmp_path: Path, strictness: str
) -> None:
    grammar = registry.get("python")
    assert grammar is not None
    _write(tmp_path, grammar, PYTHON)
    state = _kept(registry)
    _search(state, grammar, tmp_path, "$X")  # parses, keeps the trees
    compared = 0
    for pattern in PATTERNS:
        for suffix in ("2", "3"):
            other = _renamed(pattern, suffix)
            kept = _search(state, grammar, tmp_path, other, strictness)
            cold = _cold(registry, grammar, tmp_path, other, strictness)
            assert (kept is None) == (cold is None), other
            if kept is not None and cold is not None:
                assert _answer(kept) == _answer(cold), (other, strictness)
                compared += sum(r.count for r in cold)
    assert compared > 100  # the patterns do match
    assert all(e.sig for e in state.cache._entries.values())
    _consistent(state)


def test_a_new_pattern_over_kept_trees_asks_tree_sitter_for_no_children_again(
    registry: GrammarRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grammar = registry.get("python")
    assert grammar is not None
    _write(tmp_path, grammar, PYTHON, copies=4)
    state = _kept(registry)
    _search(state, grammar, tmp_path, "def $F($$$A): $$$B")  # parses, keeps the trees
    first = _search(state, grammar, tmp_path, "def $G($$$A): $$$B")  # keeps the children
    asked: list[object] = []
    significant = Grammar.significant

    def counted(self: Grammar, node: Any) -> Any:
        asked.append(node)
        return significant(self, node)

    compiled = compile_pattern("def $H($$$A): $$$B", grammar)  # (reads its own tree)
    files = sorted(p.name for p in tmp_path.iterdir())
    monkeypatch.setattr(Grammar, "significant", counted)
    again = state.run(Task("search", compiled, None, 2_000_000, keep=3), str(tmp_path), files)
    assert first is not None
    assert sum(r.count for r in again) == sum(r.count for r in first) == 12
    assert asked == []
    _consistent(state)


def test_kept_children_count_against_the_budget_and_go_with_their_file(
    registry: GrammarRegistry, tmp_path: Path
) -> None:
    grammar = registry.get("python")
    assert grammar is not None
    _write(tmp_path, grammar, PYTHON, copies=4)
    roomy = _kept(registry)
    _search(roomy, grammar, tmp_path, "$X")
    trees = roomy.cache.used
    _search(roomy, grammar, tmp_path, "$F($$$A)")
    memo = sum(e.sig_cost for e in roomy.cache._entries.values())
    assert memo > 0
    _consistent(roomy)
    # a file that changes takes its kept children with it
    changed = tmp_path / "f0.py"
    changed.write_text(changed.read_text() + "\nx = 1\n")
    _search(roomy, grammar, tmp_path, "$F($$$A)")
    _consistent(roomy)

    # room for the trees and a few results, not for their children: none is kept, the
    # answers are the same
    tight = ProcessState(registry, trees + 2_000, cache_from_search=1)
    _search(tight, grammar, tmp_path, "$X")
    kept = _search(tight, grammar, tmp_path, "$F2($$$A)")
    assert kept is not None
    assert _answer(kept) == _answer(_cold(registry, grammar, tmp_path, "$F2($$$A)") or [])
    assert not any(e.sig for e in tight.cache._entries.values())
    _consistent(tight)


def test_a_new_pattern_over_kept_trees_finds_no_anchored_candidates_again(
    registry: GrammarRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The anchored candidates of a kept tree are kept with it (`Matcher.cand_memo`): a pattern
    with the same anchors (its metavariables renamed) looks for none of them again; one with
    other anchors finds its own."""
    grammar = registry.get("python")
    assert grammar is not None
    _write(tmp_path, grammar, PYTHON, copies=4)
    state = _kept(registry)
    _search(state, grammar, tmp_path, "def $F($$$A): $$$B")  # parses, keeps the trees
    first = _search(state, grammar, tmp_path, "def $G($$$A): $$$B")  # keeps the candidates
    looked: list[object] = []
    anchored = Candidates._anchored

    def counted(self: Candidates, root: Any, source: bytes) -> Any:
        looked.append(root)
        return anchored(self, root, source)

    monkeypatch.setattr(Candidates, "_anchored", counted)
    again = _search(state, grammar, tmp_path, "def $H($$$A): $$$B")
    assert first is not None and again is not None
    assert looked == []
    monkeypatch.undo()
    cold = _cold(registry, grammar, tmp_path, "def $H($$$A): $$$B")
    assert _answer(again) == _answer(cold or [])
    assert sum(r.count for r in again) == sum(r.count for r in first) == 12
    monkeypatch.setattr(Candidates, "_anchored", counted)
    other = _search(state, grammar, tmp_path, "return $X * $Y")
    assert len(looked) == 4  # other anchors: its own candidates, once per file
    assert other is not None
    assert _answer(other) == _answer(_cold(registry, grammar, tmp_path, "return $X * $Y") or [])
    _consistent(state)

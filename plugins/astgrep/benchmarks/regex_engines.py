"""RE2 (what tether matches rule regexes with) against Python's `re` (what it used before), on
ast-grep's rule cases (not a test; not run in CI).

    uv run python plugins/astgrep/benchmarks/regex_engines.py [--corpus DIR] [--repeat 5]

Every Python rule of `tests/test_rules.py` (the cases checked against ast-grep itself) and of
`compare_rules.py` that holds a regex (`regex`, a constraint's, a transform's `replace`) is run
over a corpus (by default every sixth file of this Python's stdlib) in-process, once with each
engine; the time spent inside the regex calls is measured apart from the rest of the search.
Prints, per rule: regex calls, seconds in the regex with each engine (the best of `--repeat`),
the ratio, and whether both found the same matches.
"""

from __future__ import annotations

import argparse
import re
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).parent))

import test_rules as T
from compare_rules import CASES as REAL_CASES

from tether import regex as linear
from tether_astgrep.grammars import GrammarRegistry, builtin_grammars
from tether_astgrep.rules import RuleMatcher, compile_rule


class Timed:
    """A compiled expression whose calls are counted and timed."""

    spent = 0.0
    calls = 0

    def __init__(self, compiled: Any) -> None:
        self._compiled = compiled

    def search(self, *args: Any) -> Any:
        start = time.perf_counter()
        try:
            return self._compiled.search(*args)
        finally:
            Timed.spent += time.perf_counter() - start
            Timed.calls += 1

    def matches(self, data: bytes) -> bool:
        start = time.perf_counter()
        try:
            if isinstance(self._compiled, re.Pattern):  # what the rule engine did before
                return self._compiled.search(data.decode("utf-8", "replace")) is not None
            return bool(self._compiled.matches(data))
        finally:
            Timed.spent += time.perf_counter() - start
            Timed.calls += 1

    def sub(self, *args: Any) -> Any:
        start = time.perf_counter()
        try:
            return self._compiled.sub(*args)
        finally:
            Timed.spent += time.perf_counter() - start
            Timed.calls += 1


def engines() -> dict[str, Any]:
    real = linear.compile
    return {
        "re2": lambda pattern: Timed(real(pattern)),
        "re": lambda pattern: Timed(re.compile(pattern)),
    }


def has_regex(value: Any) -> bool:
    if isinstance(value, dict):
        return "regex" in value or "replace" in value or any(has_regex(v) for v in value.values())
    if isinstance(value, list):
        return any(has_regex(v) for v in value)
    return False


def rules() -> Iterator[tuple[str, dict[str, Any]]]:
    for language, feature, rule, _ in T.CASES:
        if language == "python" and has_regex(rule):
            yield f"test_rules: {feature}", rule
    for _, grammar_id, _, cases in REAL_CASES:
        for feature, config in cases:
            if grammar_id == "python" and has_regex(config):
                yield f"compare_rules: {feature}", config


def corpus_files(root: Path, every: int) -> list[Path]:
    files = sorted(root.rglob("*.py"))
    return files[::every]


def run(rule: dict[str, Any], sources: list[tuple[bytes, Any]], grammar: Any) -> list[Any]:
    compiled = compile_rule(rule, grammar)
    matcher = RuleMatcher(compiled, grammar)
    found = []
    for source, tree in sources:
        found.extend((m.start_byte, m.end_byte) for m in matcher.find(tree, source))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--every", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=5)
    opts = parser.parse_args()
    grammar = GrammarRegistry(builtin_grammars()).get("python")
    assert grammar is not None
    parser_ = grammar.parser()
    sources = []
    for path in corpus_files(opts.corpus, opts.every):
        try:
            source = path.read_bytes()
        except OSError:
            continue
        sources.append((source, parser_.parse(source)))
    print(f"corpus: {len(sources)} files of {opts.corpus}, best of {opts.repeat}")
    print(f"{'rule':<44} {'calls':>8} {'re s':>8} {'re2 s':>8} {'re2/re':>7}  same")
    totals = {"re": 0.0, "re2": 0.0}
    for name, rule in rules():
        best: dict[str, float] = {}
        found: dict[str, list[Any]] = {}
        calls = 0
        for _ in range(opts.repeat):
            for engine, make in engines().items():
                linear_compile = linear.compile
                linear.compile = make  # type: ignore[assignment]
                try:
                    Timed.spent, Timed.calls = 0.0, 0
                    found[engine] = run(rule, sources, grammar)
                finally:
                    linear.compile = linear_compile
                best[engine] = min(best.get(engine, float("inf")), Timed.spent)
                calls = Timed.calls
        for engine in totals:
            totals[engine] += best[engine]
        ratio = best["re2"] / best["re"] if best["re"] else float("nan")
        same = "yes" if found["re"] == found["re2"] else "NO"
        print(f"{name:<44} {calls:>8} {best['re']:>8.4f} {best['re2']:>8.4f} {ratio:>7.2f}  {same}")
    ratio = totals["re2"] / totals["re"] if totals["re"] else float("nan")
    print(f"{'total':<44} {'':>8} {totals['re']:>8.4f} {totals['re2']:>8.4f} {ratio:>7.2f}")


if __name__ == "__main__":
    main()

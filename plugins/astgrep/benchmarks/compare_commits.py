"""Every match, capture and count of this checkout's matcher against another commit's.

    git archive BASE | tar -x -C /tmp/base
    PYTHONPATH=/tmp/base/plugins/astgrep/src uv run python \\
        plugins/astgrep/benchmarks/compare_commits.py dump /tmp/base.json
    uv run python plugins/astgrep/benchmarks/compare_commits.py dump /tmp/this.json
    uv run python plugins/astgrep/benchmarks/compare_commits.py diff /tmp/base.json /tmp/this.json

The corpus: every `--every`th `.py` file of this Python's stdlib and all of tether's core (not
a test; not in CI). Each file is parsed once; each pattern of `PATTERNS`, at each strictness,
is matched against every tree twice: all matches with the tree's children and anchored
candidates kept (as a cached tree is searched), then the first `--keep` with none kept. The
dump holds, per search and file, the count and each match's byte span, captures, edit span
and noted lines.
"""

from __future__ import annotations

import argparse
import json
import sys
import sysconfig
from pathlib import Path
from typing import Any

from tether_astgrep.grammars import GrammarRegistry, all_grammars
from tether_astgrep.matcher import Matcher
from tether_astgrep.pattern import STRICTNESS, PatternError, compile_readings

PATTERNS = [
    "def $F($$$A): $$$B",
    "def $F($A, $B): $$$C",
    "def $F($A): $$$B",
    "def $F(self, $$$A): $$$B",
    "def $F($$$A) -> $R: $$$B",
    "async def $F($$$A): $$$B",
    "def __init__(self, $$$A): $$$B",
    "def $F(a, $$$A): $$$B",
    "def $F($A, b=1): $$$B",
    "def $F($_, $$$A): $$$B",
    "def $F($$$A):\n    $X = $Y\n    return $Z",
    "def $F($$$A): return $X * $N",
    "class $C($$$B): $$$D",
    "class $C: $$$D",
    "$X = $A + $B",
    "x = $A + b",
    "$X = a + $Y",
    "$A + $B",
    "$X * $Y",
    "return $X * $Y",
    "return $X",
    "$A = $B",
    "self.$A = $B",
    "$X == $X",
    "isinstance($X, $T)",
    "$A.append($B)",
    "$A.$B($$$C)",
    "print($$$ARGS)",
    "$F($$$A)",
    "$F($A, $$$B)",
    "$F($$$A, $B)",
    "dict($$$A)",
    "[$$$A]",
    "{$$$A}",
    "($A, $B)",
    "len($X) == 0",
    "raise $E from $C",
    "raise $E($$$A)",
    "super().__init__($$$A)",
    "$D[$K] = $D.get($K, $V)",
    "getattr($O, $N, None)",
    "sorted($$$A, key=$K, $$$B)",
    "if $X is None: $$$B",
    "if $C: $$$B",
    "if $C:\n    $$$B\nelse:\n    $$$E",
    "for $X in $Y: $$$B",
    "while $C: $$$B",
    "with $X as $Y: $$$B",
    "try:\n    $$$A\nexcept $E:\n    $$$B",
    "lambda $$$A: $B",
    "$X if $C else $Y",
    "$X[$Y]",
    "not $X",
    "assert $X",
    "import $M",
    "from $M import $$$N",
    "@$D\ndef $F($$$A): $$$B",
    "$A\n$B",
]


def corpus(every: int) -> list[Path]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    lib = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts)[::every]
    core = sorted((Path(__file__).parents[3] / "core" / "src").rglob("*.py"))
    return lib + core


def dump(out: Path, every: int, keep: int) -> None:
    registry = GrammarRegistry()
    for grammar in all_grammars():
        registry.add(grammar, origin="builtin")
    python = registry.get("python")
    assert python is not None
    parser = python.parser()
    files = [(p, p.read_bytes()) for p in corpus(every)]
    # each tree with its children and anchored candidates kept, across patterns
    trees = [(str(p), source, parser.parse(source), {}, {}) for p, source in files]
    result: dict[str, Any] = {}
    for pattern in PATTERNS:
        for strictness in STRICTNESS:
            try:
                compiled = next(iter(compile_readings(pattern, python, strictness=strictness)))
            except PatternError as exc:
                result[f"{pattern}|{strictness}"] = f"refused: {exc}"
                continue
            matcher = Matcher(compiled, python)
            for limit in (None, keep):
                searched = []
                for path, source, tree, memo, cands in trees:
                    matcher.sig_memo = memo if limit is None else None
                    matcher.cand_memo = cands if limit is None else None  # (none before it)
                    found, count = matcher.find_counted(tree, source, limit)
                    if count:
                        searched.append([path, count, [_plain(m) for m in found]])
                matcher.sig_memo = matcher.cand_memo = None
                result[f"{pattern}|{strictness}|{limit}"] = searched
    out.write_text(json.dumps(result))
    print(
        f"{len(PATTERNS)} patterns × {len(STRICTNESS)} strictness levels × 2 limits over "
        f"{len(trees)} files: {out}"
    )


def _plain(m: Any) -> list[Any]:
    return [
        m.start_byte,
        m.end_byte,
        list(m.start_point),
        list(m.end_point),
        sorted(m.captures.items()),
        m.edit_start,
        m.edit_end,
        m.lossy_line,
        m.kept_line,
    ]


def diff(a: Path, b: Path) -> int:
    left, right = json.loads(a.read_text()), json.loads(b.read_text())
    differ = [k for k in sorted(set(left) | set(right)) if left.get(k) != right.get(k)]
    matches = sum(len(m) for v in left.values() if isinstance(v, list) for _, _, m in v)
    counts = sum(c for v in left.values() if isinstance(v, list) for _, c, _ in v)
    for key in differ[:20]:
        print("DIFFERS", key)
    print(
        f"{len(left)} searches compared ({counts} matches counted, {matches} described): "
        f"{len(differ)} differ"
    )
    return 1 if differ else 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["dump", "diff"])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--every", type=int, default=6)
    parser.add_argument("--keep", type=int, default=3)
    args = parser.parse_args()
    if args.what == "dump":
        dump(args.files[0], args.every, args.keep)
    else:
        sys.exit(diff(*args.files))


if __name__ == "__main__":
    main()

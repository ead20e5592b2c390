"""The metamorphic checks of tests/metamorphic.py over real code (not a test; not in CI).

    uv run python plugins/astgrep/benchmarks/metamorphic.py CORPUS [--only go,lua] [--lists 150]

CORPUS holds one folder per language id (as for compare_languages.py: files copied from fetched
public repositories at run time, never committed). For every list in the code (arguments,
parameters, elements, type arguments; at most `--lists` per language), the node around it is a
pattern, verbatim and with each item a metavariable; one more item, or another literal, must
make it stop matching, and each metavariable must capture its whole item. Prints, per language,
the lists checked, the mutated variants and every finding.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from metamorphic import Tally, check

from tether_astgrep.grammars import GrammarRegistry, all_grammars


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--only", default="")
    parser.add_argument("--lists", type=int, default=150, help="lists checked per language")
    parser.add_argument("--strictness", default="smart")
    args = parser.parse_args()
    registry = GrammarRegistry(all_grammars())
    print("| language | files read | lists checked | mutations | findings |")
    print("|---|---:|---:|---:|---:|")
    for folder in sorted(p for p in args.corpus.iterdir() if p.is_dir()):
        lang = folder.name
        grammar = registry.get(lang)
        if grammar is None or (args.only and lang not in args.only.split(",")):
            continue
        tally = Tally()
        files = 0
        for path in sorted(folder.iterdir()):
            if tally.lists >= args.lists:
                break
            source = path.read_bytes()
            if len(source) > 200_000:
                continue
            files += 1
            check(grammar, source, tally, args.strictness, most=args.lists)
        print(f"| {lang} | {files} | {tally.lists} | {tally.mutations} | {len(tally.findings)} |")
        for finding in tally.findings[:10]:
            print(f"    {finding}", file=sys.stderr)


if __name__ == "__main__":
    main()

"""tether's matcher vs the ast-grep CLI, per optional grammar, on real code (not a test; not in CI).

    uv run python plugins/astgrep/benchmarks/compare_languages.py CORPUS [LANGUAGE ...]

CORPUS holds one folder per language id (`CORPUS/kotlin/*.kt`, …) of real code assembled at run
time (never committed): files already on the machine or from fetched public repositories. For
each language and each of its typical patterns it prints the matches tether finds, those
ast-grep finds (`ast-grep run -p P -l LANG --json`), and how many start lines only one of them
reports. A pattern tether refuses is shown as "refused" with the reason.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tether_astgrep.grammars import GrammarRegistry, all_grammars
from tether_astgrep.matcher import Matcher
from tether_astgrep.pattern import PatternError, compile_pattern

PATTERNS: dict[str, list[str]] = {
    "bash": ["echo $$$A", "[ -z $X ]", "export $$$A"],
    "cpp": ["return $X;", "if ($C) { $$$B }", "$F($$$A);"],
    "csharp": [
        "if ($C) { $$$B }",
        "new $T($$$A)",
        "$X.Add($Y)",
        "public $T $M($$$P) { $$$B }",
        "using $N;",
        "throw new $E($$$A);",
        "return $X;",
        "var $X = $Y;",
        "await $X",
        "foreach (var $X in $Y) { $$$B }",
        "nameof($X)",
        "$X ?? $Y",
    ],
    "css": ["color: $C", "$S { $$$D }", "border: $$$V"],
    "elixir": ["def $F($$$A) do $$$B end", "{:ok, $V}", "$X |> $F($$$A)"],
    "haskell": ["$F :: $T", "import $M", "$X <$> $Y"],
    "html": ['<link rel="stylesheet" href="$H" $$$A>', '<script src="$S"></script>', 'id="$I"'],
    "java": [
        "$A.equals($B)",
        "new $T($$$A)",
        "public $T $M($$$P) { $$$B }",
        "throw new $E($$$A);",
        "if ($X == null) { $$$B }",
        "return $X;",
        "import $N;",
        "for ($T $X : $Y) { $$$B }",
        "try { $$$A } catch ($E $V) { $$$B }",
        "Objects.requireNonNull($$$A)",
        "$X.length()",
        "$X instanceof $T",
    ],
    "json": ['"name": $V', "[$$$A]", '"version": $V'],
    "kotlin": [
        "val $X = $Y",
        "fun $F($$$P): $T { $$$B }",
        "$X?.let { $$$B }",
        "when ($X) { $$$B }",
        "$X != null",
        "$X == null",
        "require($$$A)",
        "check($$$A)",
        "listOf($$$A)",
        "import $N",
        "return $X",
        "throw $E",
    ],
    "lua": ["local $X = $Y", "return $X", "error($$$A)"],
    "php": [
        "isset($X)",
        "$A = $B;",
        "function $F($$$P) { $$$B }",
        "$this->$M($$$A)",
        "new $C($$$A)",
        "throw new $E($$$A);",
        "return $X;",
        "foreach ($X as $K => $V) { $$$B }",
        "if ($C) { $$$B }",
        "use $N;",
        "$X instanceof $C",
        "\\count($X)",
    ],
    "ruby": ["require $X", "$X.each do |$V|\n  $$$B\nend", "def $M($$$A)\n  $$$B\nend"],
    "scala": ["val $X = $Y", "case $P => $E", "def $F($$$P): $T = $B"],
    "swift": [
        "guard let $X else { $$$B }",
        "self.$P = $V",
        "func $F($$$P) { $$$B }",
        "if let $X = $Y { $$$B }",
        "let $X = $Y",
        "switch $X { $$$C }",
        "return $X",
        "$X.append($Y)",
        "import $M",
        "struct $S { $$$B }",
        "throw $E",
        "do { $$$A } catch { $$$B }",
    ],
    "python": [
        "def $F($$$P): $$$B",
        "if $C: $$$B",
        "isinstance($X, $T)",
        "raise $E",
        "return $X",
        "import $M",
        "from $M import $$$N",
        "with $X as $Y: $$$B",
        "for $X in $Y: $$$B",
        "$A.append($B)",
        "assert $X",
        "await $X",
    ],
    "typescript": [
        "import { $$$I } from $M",
        "const $X = $Y",
        "function $F($$$P) { $$$B }",
        "if ($C) { $$$B }",
        "throw new $E($$$A)",
        "await $X",
        "return $X",
        "$A.push($B)",
        "export function $F($$$P) { $$$B }",
        "typeof $X === $T",
        "interface $I { $$$B }",
        "type $T = $V",
    ],
    "javascript": [
        "require($M)",
        "const $X = require($M)",
        "function $F($$$P) { $$$B }",
        "if ($C) { $$$B }",
        "throw new $E($$$A)",
        "return $X",
        "$X.then($$$A)",
        "new Promise($$$A)",
        "typeof $X === $T",
        "import $X from $M",
        "module.exports = $X",
        "await $X",
    ],
    "yaml": ["name: $N", "- $X", "run: $R"],
}


def ast_grep() -> str:
    found = shutil.which("ast-grep", path=str(Path(sys.executable).parent)) or shutil.which(
        "ast-grep"
    )
    if found is None:
        sys.exit("ast-grep is not installed: uv sync --package tether-astgrep --extra test")
    return found


def run_ast_grep(binary: str, pattern: str, lang: str, files: list[Path]) -> set[tuple[str, int]]:
    proc = subprocess.run(
        [binary, "run", "-p", pattern, "-l", lang, "--json=compact", *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode not in (0, 1):
        return set()
    return {
        (Path(m["file"]).name, m["range"]["start"]["line"] + 1) for m in json.loads(proc.stdout)
    }


def run_tether(
    registry: GrammarRegistry, pattern: str, lang: str, files: list[Path]
) -> tuple[set[tuple[str, int]], str]:
    grammar = registry.get(lang)
    assert grammar is not None
    compiled = compile_pattern(pattern, grammar)
    matcher = Matcher(compiled, grammar)
    parser = grammar.parser()
    out: set[tuple[str, int]] = set()
    for f in files:
        source = f.read_bytes()
        for m in matcher.find(parser.parse(source), source):
            out.add((f.name, m.start_point[0] + 1))
    return out, compiled.interpretation


def main() -> None:
    corpus = Path(sys.argv[1])
    binary = ast_grep()
    registry = GrammarRegistry(all_grammars())
    print(
        f"{'language':<9} {'pattern':<34} {'tether':>6} {'ast-grep':>8} {'only t':>6} {'only ag':>7}"
    )
    only = set(sys.argv[2:])
    for lang, patterns in PATTERNS.items():
        if only and lang not in only:
            continue
        grammar = registry.get(lang)
        assert grammar is not None
        files = sorted(p for p in (corpus / lang).glob("*") if p.is_file())
        if not files:
            print(f"{lang:<9} (no files in {corpus / lang})")
            continue
        for pattern in patterns:
            ag = run_ast_grep(binary, pattern, lang, files)
            try:
                tc, _ = run_tether(registry, pattern, lang, files)
            except PatternError as exc:
                print(f"{lang:<9} {pattern!r:<34} refused: {exc}")
                continue
            print(
                f"{lang:<9} {pattern!r:<34} {len(tc):>6} {len(ag):>8} "
                f"{len(tc - ag):>6} {len(ag - tc):>7}"
            )
            for only, side in ((tc - ag, "tether"), (ag - tc, "ast-grep")):
                for name, line in sorted(only)[:3]:
                    print(f"{'':<9}   only {side}: {name}:{line}")


if __name__ == "__main__":
    main()

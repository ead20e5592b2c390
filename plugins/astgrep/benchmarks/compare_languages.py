"""tether's matcher vs the ast-grep CLI, per grammar, on real code (not a test; not in CI).

    uv run python plugins/astgrep/benchmarks/compare_languages.py CORPUS [--only rust,go] [--show 3]

CORPUS holds one folder per language id (`CORPUS/kotlin/*.kt`, …) of real code assembled at run
time (never committed): files copied from fetched public repositories. For each language and
each pattern an agent would ask for, the same file list goes to tether's search engine (the
path the `ast_grep` tool takes) and to `ast-grep run -p P -l LANG --json=stream`; matches are
compared by their start (file:line:column) and, where both start at the same place, by what
every metavariable captured (whitespace, comments, commas and `;` ignored; a `$$$` capture is
ast-grep's nodes joined). It prints both counts, how many start at the same place, how many of
those capture differently, and examples of each side's extras and of the capture differences,
to be judged by hand (RESULTS.md beside this script says which side is right). A pattern tether
refuses is shown as "refused" with the reason.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tether_astgrep.engine import ProcessState, Task
from tether_astgrep.grammars import GrammarRegistry, all_grammars
from tether_astgrep.pattern import PatternError, compile_pattern

PATTERNS: dict[str, list[str]] = {
    "rust": [
        "fn $F($$$P) -> $R { $$$B }",
        "impl $T { $$$B }",
        "impl $T for $U { $$$B }",
        "match $X { $$$A }",
        "$X.unwrap()",
        "if let Some($X) = $Y { $$$B }",
        "let $X = $Y;",
        "use $P;",
        "#[derive($$$D)]",
        "Ok($X)",
        "$X.clone()",
        "$X?",
    ],
    "go": [
        "if err != nil { $$$B }",
        "func $F($$$P) error { $$$B }",
        "for $K, $V := range $X { $$$B }",
        "$X := $Y",
        "return $X, nil",
        "fmt.Errorf($$$A)",
        "switch $X { $$$C }",
        "defer $F()",
        "type $T struct { $$$F }",
        "if $X == nil { $$$B }",
        "$X = append($X, $Y)",
        "strings.$F($$$A)",
    ],
    "c": [
        "if ($X == NULL) { $$$B }",
        "return $X;",
        "free($X);",
        "for ($I = 0; $C; $U) { $$$B }",
        "switch ($X) { $$$C }",
        "case $V: $$$B",
        "#define $N $V",
        "#include $H",
        "sizeof($T)",
        "static $T $F($$$P) { $$$B }",
        "while ($C) { $$$B }",
        "$X->$F = $V;",
    ],
    "cpp": [
        "return $X;",
        "if ($C) { $$$B }",
        "for (const auto& $X : $Y) { $$$B }",
        "throw $E($$$A);",
        "static_cast<$T>($X)",
        "class $C { $$$B };",
        "namespace $N { $$$B }",
        "#include $H",
        "EXPECT_EQ($A, $B);",
        "$X.size()",
        "template <typename $T> $$$D",
        "$F($$$A);",
    ],
    "ruby": [
        "require $X",
        "def $M($$$A)\n  $$$B\nend",
        "$X.each do |$V|\n  $$$B\nend",
        "raise $$$A",
        "if $C\n  $$$B\nend",
        "class $C < $P\n  $$$B\nend",
        "module $M\n  $$$B\nend",
        "attr_reader $$$A",
        "$X.nil?",
        "return $X if $C",
        "$H[$K] = $V",
        "$X.must_equal $Y",
    ],
    "lua": [
        "local $X = $Y",
        "local function $F($$$A) $$$B end",
        "function $F($$$A) $$$B end",
        "return $X",
        "error($$$A)",
        "if $C then $$$B end",
        "for $K, $V in pairs($T) do $$$B end",
        "for $I, $V in ipairs($T) do $$$B end",
        "require($M)",
        "table.insert($T, $V)",
        "if not $X then return nil, $E end",
        "$X:$M($$$A)",
    ],
    "elixir": [
        "def $F($$$A) do $$$B end",
        "defp $F($$$A) do $$$B end",
        "{:ok, $V}",
        "$X |> $F($$$A)",
        "case $X do $$$C end",
        "defmodule $M do $$$B end",
        "@doc $D",
        "import $M",
        "alias $M",
        "assert $X == $Y",
        "Enum.map($L, $F)",
        "raise $E, $$$A",
    ],
    "bash": [
        "echo $$$A",
        "[[ -n $X ]]",
        "export $$$A",
        "local $$$A",
        "if $C; then $$$B; fi",
        "for $X in $$$L; do $$$B; done",
        "case $X in $$$C esac",
        "return $X",
        "printf $$$A",
        "run $$$A",
        "source $F",
        "$F() { $$$B }",
    ],
    "yaml": [
        "name: $N",
        "- $X",
        "run: $R",
        "uses: $U",
        "runs-on: $R",
        "with: $W",
        "if: $C",
        "- name: $N",
        "steps: $S",
        "env: $E",
        "on: $X",
    ],
    "css": [
        "color: $C",
        "$S { $$$D }",
        "border: $$$V",
        "display: flex",
        "@media $Q { $$$R }",
        "@keyframes $N { $$$F }",
        "transform: $T",
        "background-color: $C",
        "@import $U;",
        ".container { $$$D }",
        "margin: 0",
        "font-family: $$$F",
    ],
    "html": [
        '<link rel="stylesheet" href="$H" $$$A>',
        '<link rel="stylesheet" href="$H" />',
        '<script src="$S"></script>',
        'id="$I"',
        'class="$C"',
        "<button $$$A>$$$C</button>",
        '<div class="$C">$$$B</div>',
        "<meta $$$A>",
        '<img src="$S" $$$A>',
        "<input $$$A>",
        '<a href="$H">$$$C</a>',
        "<title>$T</title>",
    ],
    "json": [
        '"name": $V',
        "[$$$A]",
        '"version": $V',
        '"version_added": $V',
        '"flags": [$$$F]',
        '{ "version_added": $V }',
        '"support": { $$$S }',
        '"__compat": $C',
        '"mdn_url": $U',
        '"spec_url": $U',
        "true",
        "null",
    ],
    "scala": [
        "val $X = $Y",
        "case $P => $E",
        "def $F($$$P): $T = $B",
        "$X match { $$$C }",
        "import $I",
        "class $C($$$P) extends $B",
        "object $O { $$$B }",
        "trait $T { $$$B }",
        "new $C($$$A)",
        "if ($C) $A else $B",
        "assertEquals($A, $B)",
        "lazy val $X = $Y",
    ],
    "dart": [
        "final $T $N;",
        "class $C { $$$B }",
        "return $X;",
        "throw $E;",
        "$X.add($Y)",
        "void $F($$$P) { $$$B }",
        "import $I;",
        "test($N, () { $$$B });",
        "expect($A, $B);",
        "if ($C) { $$$B }",
        "for (var $X in $Y) { $$$B }",
        "switch ($X) { $$$C }",
    ],
    "tsx": [
        "const $X = $Y",
        "useState($X)",
        "const [$A, $B] = useState($$$I)",
        "useEffect(() => { $$$B }, [$$$D])",
        "<div>$$$C</div>",
        "onClick={$H}",
        "it($N, async () => { $$$B })",
        "expect($A).toBe($B)",
        "await $X",
        "function $F($$$P) { $$$B }",
        "$X.getState()",
        "create<$T>()($$$A)",
    ],
    "haskell": [
        "$F :: $T",
        "import $M",
        "$X <$> $Y",
        "data $T = $$$C",
        "module $M where",
        "newtype $T = $C $X",
        "$X >>= $F",
        "import qualified $M as $A",
        "instance $C $T where $$$B",
        "let $X = $Y",
        "case $X of $$$A",
        "$F $X = $B",
    ],
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
}

Key = tuple[str, int, int]  # file, 1-based line, 1-based column


def ast_grep() -> str:
    found = shutil.which("ast-grep", path=str(Path(sys.executable).parent)) or shutil.which(
        "ast-grep"
    )
    if found is None:
        sys.exit("ast-grep is not installed: uv sync --package tether-astgrep --extra test")
    return found


Captures = dict[Key, dict[str, str]]
_NOISE = re.compile(r"\s+|[,;]")
_COMMENTS: dict[str, re.Pattern[str]] = {}


def normalized(text: str, comment: str | None = None) -> str:
    """A capture's text without whitespace, comments (the grammar's `comment_regex`), commas
    and `;` (how both tools may differ without capturing different code)."""
    if comment:
        pattern = _COMMENTS.get(comment) or _COMMENTS.setdefault(comment, re.compile(comment))
        text = pattern.sub("", text)
    return _NOISE.sub("", text)


_CUT = re.compile(r"… ?\(\d+ more characters\)$")


def capture_differences(
    mine: Captures, theirs: Captures, comment: str | None = None
) -> list[tuple[Key, str, str, str]]:
    """(start, name, tether's, ast-grep's) for every capture the two differ on, at the starts
    both have (names one side binds and the other does not: ast-grep omits empty runs). A
    capture the search result cut (`…(N more characters)`) is compared by what it shows.
    Two captures are the same when they are with the comments removed or with them kept: the
    comment regex also takes a `//` or `/*` inside a string, or one the cut leaves open."""
    out = []
    for key in sorted(set(mine) & set(theirs)):
        a, b = mine[key], theirs[key]
        for name in sorted(set(a) | set(b)):
            x, y = a.get(name, ""), b.get(name, "")
            cut = _CUT.search(x)
            shown = x[: cut.start()] if cut else x
            same = False
            for regex in (comment, None) if comment else (None,):
                nx, ny = normalized(shown, regex), normalized(y, regex)
                same = same or ((nx == ny) if cut is None else ny.startswith(nx))
            if not same:
                out.append((key, name, x, y))
    return out


def run_ast_grep(
    binary: str, pattern: str, lang: str, root: Path, files: list[str], caps: Captures | None = None
) -> tuple[Counter[Key], dict[Key, str]]:
    proc = subprocess.run(
        [binary, "run", f"--pattern={pattern}", "-l", lang, "--json=stream", *files],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    found: Counter[Key] = Counter()
    text: dict[Key, str] = {}
    if proc.returncode not in (0, 1):  # 1: no match; otherwise it refused the pattern
        return found, {("refused", 0, 0): proc.stderr.strip()[:200]}
    for line in proc.stdout.splitlines():
        m = json.loads(line)
        start = m["range"]["start"]
        key = (m["file"], start["line"] + 1, start["column"] + 1)
        found[key] += 1
        text[key] = m["text"]
        if caps is not None:
            mv = m.get("metaVariables", {})
            got = {k: v["text"] for k, v in mv.get("single", {}).items() if not k.startswith("_")}
            for k, nodes in mv.get("multi", {}).items():
                if not k.startswith("_"):
                    got[k] = "\n".join(n["text"] for n in nodes)
            caps[key] = got
    return found, text


def run_tether(
    state: ProcessState,
    pattern: str,
    lang: str,
    root: Path,
    files: list[str],
    caps: Captures | None = None,
) -> tuple[Counter[Key], dict[Key, str]]:
    grammar = state.registry.get(lang)
    assert grammar is not None
    try:
        compiled = compile_pattern(pattern, grammar)
    except PatternError as exc:
        return Counter(), {("refused", 0, 0): str(exc)}
    found: Counter[Key] = Counter()
    text: dict[Key, str] = {}
    for r in state.run(Task("search", compiled, None, 2_000_000), str(root), files):
        for line, col, _el, _ec, matched, got in r.matches:
            key = (r.path, line, col)
            found[key] += 1
            text[key] = matched
            if caps is not None:
                caps[key] = {k: v for k, v in got.items() if not k.startswith("_")}
    return found, text


Row = tuple[str, str, str, str, int, int]


def compare_pattern(
    state: ProcessState,
    binary: str,
    registry: GrammarRegistry,
    pattern: str,
    lang: str,
    root: Path,
    files: list[str],
    show: int,
) -> Row:
    """Run `pattern` with both tools over `files`, print how they differ, and return the
    summary table's row."""
    shown = pattern.replace("\n", "\\n")
    mine_caps: Captures = {}
    their_caps: Captures = {}
    mine, mine_text = run_tether(state, pattern, lang, root, files, mine_caps)
    theirs, their_text = run_ast_grep(binary, pattern, lang, root, files, their_caps)
    grammar = registry.get(lang)
    comment = grammar.comment_regex if grammar is not None else None
    differs = capture_differences(mine_caps, their_caps, comment)
    n_t = "refused" if ("refused", 0, 0) in mine_text else str(sum(mine.values()))
    n_a = "refused" if ("refused", 0, 0) in their_text else str(sum(theirs.values()))
    same = sum((mine & theirs).values())
    only_t, only_a = mine - theirs, theirs - mine
    print(
        f"{shown!r}: tether {n_t}, ast-grep {n_a}, same {same}, "
        f"only tether {sum(only_t.values())}, only ast-grep {sum(only_a.values())}, "
        f"capture differs {len({d[0] for d in differs})}"
    )
    for key, name, x, y in differs[:show]:
        print(
            f"    capture ${name} at {key[0]}:{key[1]}:{key[2]}: tether "
            f"{x.replace(chr(10), ' ')[:80]!r}, ast-grep {y.replace(chr(10), ' ')[:80]!r}"
        )
    print_extras(mine_text, their_text, only_t, only_a, show)
    return (lang, shown, n_t, n_a, same, len({d[0] for d in differs}))


def print_extras(
    mine_text: dict[Key, str],
    their_text: dict[Key, str],
    only_t: Counter[Key],
    only_a: Counter[Key],
    show: int,
) -> None:
    """Print each side's refusal, and up to `show` matches only that side found."""
    for side, texts in (("tether", mine_text), ("ast-grep", their_text)):
        if ("refused", 0, 0) in texts:
            print(f"    {side} refused: {texts[('refused', 0, 0)][:300]}")
    for label, extra, texts in (
        ("tether", only_t, mine_text),
        ("ast-grep", only_a, their_text),
    ):
        for key in sorted(extra)[:show]:
            snippet = texts[key].replace("\n", "\\n")[:140]
            print(f"    only {label}: {key[0]}:{key[1]}:{key[2]}: {snippet}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--only", default="", help="comma-separated language ids to run")
    parser.add_argument("--show", type=int, default=3, help="examples of each side's extras")
    parser.add_argument(
        "--patterns", type=Path, help="a JSON file {language: [pattern, ...]} instead of PATTERNS"
    )
    args = parser.parse_args()
    binary = ast_grep()
    registry = GrammarRegistry(all_grammars())
    # every file parsed once per language, not once per pattern (1 GB of trees at most)
    state = ProcessState(registry, 1 << 30)
    rows = []
    table = json.loads(args.patterns.read_text()) if args.patterns else PATTERNS
    for lang, patterns in table.items():
        if args.only and lang not in args.only.split(","):
            continue
        root = args.corpus / lang
        files = sorted(p.name for p in root.glob("*") if p.is_file())
        if not files:
            print(f"{lang}: no files in {root}")
            continue
        print(f"\n## {lang} ({len(files)} files)")
        for pattern in patterns:
            rows.append(
                compare_pattern(state, binary, registry, pattern, lang, root, files, args.show)
            )
    print("\n| language | pattern | tether | ast-grep | same start | of which capture differs |")
    print("|---|---|---:|---:|---:|---:|")
    for lang, shown, n_t, n_a, same, capdiff in rows:
        print(f"| {lang} | `{shown}` | {n_t} | {n_a} | {same} | {capdiff} |")


if __name__ == "__main__":
    main()

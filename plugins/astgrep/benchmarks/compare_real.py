"""tether's matcher vs the ast-grep CLI, match for match, on real public repositories.

Not a test; never run in CI; the repositories are never committed. Bring them first with the
search tool's `fetch` (bare git directories under /work/.mirror), then:

    uv sync --package tether-astgrep --group bench
    uv run python plugins/astgrep/benchmarks/compare_real.py [--mirror /work/.mirror] [--show 3]

Each repository's HEAD is extracted (`git archive`) to a temporary directory. The same file
list (tether's: git-less walk honouring .gitignore, one language's extensions) is given to
both tools, so file selection cannot explain a difference. Per pattern it prints both match
counts, how many start at the same file:line:column, and up to `--show` examples of each
side's extras, to be judged by hand (the README's table says which side is right).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path

import anyio

import tether
from tether_astgrep.engine import ProcessState, Task
from tether_astgrep.files import list_files
from tether_astgrep.grammars import GrammarRegistry, builtin_grammars
from tether_astgrep.pattern import PatternError, compile_pattern

# (repository, tether grammar id, ast-grep language, patterns)
CASES: list[tuple[str, str, str, list[str]]] = [
    (
        "pallets/click",
        "python",
        "python",
        [
            "if $C: $$$B",
            "if $X is None: $$$B",
            "isinstance($X, $T)",
            "try:\n    $$$B\nexcept $E as $V:\n    $$$H",
            "with $X as $Y: $$$B",
            "raise $E from $C",
            "$X == $X",
            "def $F($$$P): $$$B",
            "for $X in $Y: $$$B",
            "$A.append($B)",
            "super().__init__($$$A)",
            "return $X",
        ],
    ),
    (
        "colinhacks/zod",
        "typescript",
        "typescript",
        [
            "switch ($X) { $$$C }",
            "z.object({ $$$P })",
            "new core.$ZodAsyncError()",
            "function $F($$$P) { $$$B }",
            "if ($C) { $$$B }",
            "throw new $E($$$A)",
            "typeof $X === $T",
            "$A.push($B)",
            "const $X = $Y",
        ],
    ),
    (
        "expressjs/express",
        "javascript",
        "javascript",
        [
            "switch ($X) { $$$C }",
            "var $A = require($B)",
            "function $F($$$P) { $$$B }",
            "if ($C) { $$$B }",
            "$X.on($E, $H)",
            "res.send($$$A)",
            "return $X",
            "$A === $B",
        ],
    ),
    (
        "BurntSushi/ripgrep",
        "rust",
        "rust",
        [
            "impl $T for $U { $$$B }",
            "impl $T { $$$B }",
            "struct $S { $$$F }",
            "match $X { $$$A }",
            "$X.unwrap()",
            "if let Some($X) = $Y { $$$B }",
            "Ok($X)",
            "pub fn $F($$$P) -> $R { $$$B }",
        ],
    ),
    (
        "spf13/cobra",
        "go",
        "go",
        [
            "if $X != nil { $$$B }",
            "switch $X { $$$C }",
            "import ( $$$I )",
            "fmt.Sprintf($$$A)",
            "for $K, $V := range $X { $$$B }",
            "return $X, nil",
            "defer $F()",
            "$X := $Y",
        ],
    ),
    (
        "DaveGamble/cJSON",
        "c",
        "c",
        [
            "#define $N $V",
            "case $V: $$$B",
            "enum $E { $$$V }",
            "if ($X == NULL) { $$$B }",
            "malloc($S)",
            "return $X;",
            "switch ($X) { $$$C }",
            "sizeof($T)",
        ],
    ),
    (
        "rrousselGit/provider",
        "dart",
        "dart",
        [
            "if ($X != null) $X.dispose()",
            "$X.dispose()",
            "final $T $N;",
            "class $C { $$$B }",
            "void dispose() { $$$B }",
            "switch ($X) { $$$C }",
            "return $X;",
            "throw $E;",
        ],
    ),
]

Key = tuple[str, int, int]  # file, 1-based line, 1-based column


def extract(mirror: Path, repo: str, into: Path) -> Path:
    git_dir = mirror / repo.replace("/", "+") / "repo"
    if not git_dir.is_dir():
        raise SystemExit(f"{git_dir} missing: fetch github:{repo} first")
    dest = into / repo.replace("/", "+")
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "--git-dir", str(git_dir), "archive", "HEAD"], check=True, capture_output=True
    ).stdout
    tar_path = into / "a.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(dest, filter="data")
    tar_path.unlink()
    return dest


def tether_matches(
    state: ProcessState, pattern: str, grammar_id: str, root: Path, files: list[str]
) -> tuple[Counter[Key], dict[Key, str]]:
    grammar = state.registry.get(grammar_id)
    assert grammar is not None
    try:
        compiled = compile_pattern(pattern, grammar)
    except PatternError as exc:  # reported as "refused"
        return Counter(), {("refused", 0, 0): str(exc)}
    results = state.run(Task("search", compiled, None, 2_000_000), str(root), files)
    found: Counter[Key] = Counter()
    text: dict[Key, str] = {}
    for r in results:
        for line, col, _el, _ec, matched, _caps in r.matches:
            key = (r.path, line, col)
            found[key] += 1
            text[key] = matched
    return found, text


def astgrep_matches(
    binary: str, pattern: str, lang: str, root: Path, files: list[str]
) -> tuple[Counter[Key], dict[Key, str]]:
    out = subprocess.run(
        [binary, "run", "-p", pattern, "-l", lang, "--json=stream", *files],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode not in (0, 1):  # 1: no match (it may warn on stderr, e.g. ERROR nodes)
        raise SystemExit(f"ast-grep failed on {pattern!r}: {out.stderr.strip()[:500]}")
    found: Counter[Key] = Counter()
    text: dict[Key, str] = {}
    for line in out.stdout.splitlines():
        m = json.loads(line)
        start = m["range"]["start"]
        key = (m["file"], start["line"] + 1, start["column"] + 1)
        found[key] += 1
        text[key] = m["text"]
    return found, text


async def _list_files(root: Path) -> list[str]:
    """The files a search of ``root`` covers, listed as a run lists them (git as its child)."""
    async with tether.open_run(root, entry_points=False) as run:
        return (await list_files(root, root, run.run_command)).names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--show", type=int, default=3, help="examples of each side's extras")
    parser.add_argument("--only", default="", help="comma-separated repositories to run")
    args = parser.parse_args()
    binary = shutil.which("ast-grep") or shutil.which("sg")
    if binary is None:
        raise SystemExit("ast-grep not found: uv sync --package tether-astgrep --group bench")
    version = subprocess.run(
        [binary, "--version"], capture_output=True, text=True, check=True
    ).stdout
    if not version.strip():
        raise SystemExit(f"{binary} --version printed nothing: is ast-grep installed?")
    print(f"# {version.strip()} vs tether; same file list for both")
    registry = GrammarRegistry(builtin_grammars())
    state = ProcessState(registry, 0)
    rows = []
    with tempfile.TemporaryDirectory(prefix="tether-compare-") as tmp:
        for repo, gid, lang, patterns in CASES:
            if args.only and repo not in args.only.split(","):
                continue
            root = extract(args.mirror, repo, Path(tmp))
            grammar = registry.get(gid)
            assert grammar is not None
            listed = anyio.run(_list_files, root)
            files = [f for f in listed if registry.for_path(f) is grammar]
            print(f"\n## {repo} ({gid}, {len(files)} files)")
            for pattern in patterns:
                t0 = time.perf_counter()
                mine, mine_text = tether_matches(state, pattern, gid, root, files)
                t1 = time.perf_counter()
                theirs, their_text = astgrep_matches(binary, pattern, lang, root, files)
                t2 = time.perf_counter()
                refused = ("refused", 0, 0) in mine_text
                if refused:
                    print(f"{pattern!r}: tether refused it: {mine_text[('refused', 0, 0)][:120]}")
                same = sum((mine & theirs).values())
                only_t = mine - theirs
                only_a = theirs - mine
                n_t, n_a = sum(mine.values()), sum(theirs.values())
                shown = pattern.replace("\n", "\\n")
                print(
                    f"{shown!r}: tether {n_t}, ast-grep {n_a}, same {same}, "
                    f"only tether {sum(only_t.values())}, only ast-grep {sum(only_a.values())} "
                    f"({t1 - t0:.2f} s / {t2 - t1:.2f} s)"
                )
                for label, extra, texts in (
                    ("tether", only_t, mine_text),
                    ("ast-grep", only_a, their_text),
                ):
                    for key in sorted(extra)[: args.show]:
                        snippet = texts[key].replace("\n", "\\n")[:140]
                        print(f"    only {label}: {key[0]}:{key[1]}:{key[2]}: {snippet}")
                rows.append((repo, gid, shown, "refused" if refused else str(n_t), n_a, same))
    print("\n| repository | language | pattern | tether | ast-grep | same start |")
    print("|---|---|---|---:|---:|---:|")
    for repo, gid, shown, n_t, n_a, same in rows:
        print(f"| {repo} | {gid} | `{shown}` | {n_t} | {n_a} | {same} |")


if __name__ == "__main__":
    sys.exit(main())

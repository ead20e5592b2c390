"""tether's rule engine vs `ast-grep scan --inline-rules`, match for match, on real repositories.

    uv run python plugins/astgrep/benchmarks/compare_rules.py [--only pallets/itsdangerous]

Each repository must have been fetched into the mirror (`/work/.mirror/owner+name/repo`); it
is extracted to a temporary directory, and both sides search the same file list.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
from compare_real import Key, _list_files, extract

from tether_astgrep.engine import ProcessState, Task
from tether_astgrep.grammars import GrammarRegistry, builtin_grammars
from tether_astgrep.rules import RuleError, compile_rule

END = {"stopBy": "end"}

# (repository, tether grammar id, ast-grep language, (feature, rule config))
CASES: list[tuple[str, str, str, list[tuple[str, dict[str, Any]]]]] = [
    (
        "pallets/itsdangerous",
        "python",
        "python",
        [
            ("kind", {"rule": {"kind": "return_statement"}}),
            ("pattern", {"rule": {"pattern": "isinstance($X, $T)"}}),
            ("regex", {"rule": {"kind": "identifier", "regex": "^_[a-z]"}}),
            ("inside end", {"rule": {"kind": "call", "inside": {"kind": "for_statement", **END}}}),
            ("inside neighbor", {"rule": {"kind": "call", "inside": {"kind": "return_statement"}}}),
            (
                "inside stopBy rule",
                {
                    "rule": {
                        "kind": "call",
                        "inside": {
                            "kind": "if_statement",
                            "stopBy": {"kind": "function_definition"},
                        },
                    }
                },
            ),
            (
                "inside field",
                {"rule": {"kind": "identifier", "inside": {"kind": "call", "field": "function"}}},
            ),
            (
                "has end",
                {
                    "rule": {
                        "kind": "function_definition",
                        "has": {"kind": "raise_statement", **END},
                    }
                },
            ),
            (
                "has field",
                {"rule": {"kind": "function_definition", "has": {"field": "name", "regex": "^_"}}},
            ),
            (
                "follows",
                {"rule": {"kind": "return_statement", "follows": {"kind": "expression_statement"}}},
            ),
            (
                "precedes end",
                {
                    "rule": {
                        "kind": "expression_statement",
                        "precedes": {"kind": "return_statement", **END},
                    }
                },
            ),
            ("any", {"rule": {"any": [{"pattern": "len($X)"}, {"pattern": "isinstance($X, $T)"}]}}),
            (
                "all + not",
                {
                    "rule": {
                        "all": [
                            {"kind": "call"},
                            {"not": {"has": {"kind": "keyword_argument", **END}}},
                        ],
                        "inside": {"kind": "return_statement"},
                    }
                },
            ),
            (
                "matches + utils",
                {
                    "utils": {"self_attr": {"pattern": "self.$A"}},
                    "rule": {
                        "kind": "assignment",
                        "has": {"field": "left", "matches": "self_attr"},
                    },
                },
            ),
            (
                "constraints",
                {
                    "rule": {"pattern": "$F($$$A)"},
                    "constraints": {"F": {"regex": "^(str|bytes|int)$"}},
                },
            ),
            (
                "nthChild",
                {"rule": {"kind": "identifier", "nthChild": 1, "inside": {"kind": "parameters"}}},
            ),
            (
                "nthChild An+B",
                {
                    "rule": {
                        "kind": "identifier",
                        "nthChild": "2n",
                        "inside": {"kind": "parameters"},
                    }
                },
            ),
            (
                "nthChild reverse ofRule",
                {
                    "rule": {
                        "kind": "expression_statement",
                        "nthChild": {
                            "position": 1,
                            "reverse": True,
                            "ofRule": {"kind": "expression_statement"},
                        },
                    }
                },
            ),
        ],
    ),
    (
        "dtolnay/anyhow",
        "rust",
        "rust",
        [
            ("kind", {"rule": {"kind": "macro_invocation"}}),
            ("pattern", {"rule": {"pattern": "$X.unwrap()"}}),
            (
                "inside end",
                {"rule": {"kind": "macro_invocation", "inside": {"kind": "impl_item", **END}}},
            ),
            (
                "has field",
                {"rule": {"kind": "function_item", "has": {"field": "name", "regex": "^new"}}},
            ),
            ("has end", {"rule": {"kind": "function_item", "has": {"pattern": "$X?", **END}}}),
            (
                "follows",
                {"rule": {"kind": "expression_statement", "follows": {"kind": "let_declaration"}}},
            ),
            (
                "precedes",
                {"rule": {"kind": "let_declaration", "precedes": {"kind": "let_declaration"}}},
            ),
            (
                "not inside",
                {
                    "rule": {
                        "pattern": "$X.unwrap()",
                        "not": {"inside": {"kind": "mod_item", **END}},
                    }
                },
            ),
            ("any", {"rule": {"any": [{"kind": "struct_item"}, {"kind": "enum_item"}]}}),
            (
                "constraints",
                {
                    "rule": {"pattern": "$M!($$$A)"},
                    "constraints": {"M": {"regex": "^(bail|ensure)$"}},
                },
            ),
            ("nthChild", {"rule": {"kind": "parameter", "nthChild": "2n+1"}}),
            (
                "pattern object",
                {
                    "rule": {
                        "pattern": {
                            "context": "impl $T { fn $F(&self) -> $R { $$$B } }",
                            "selector": "function_item",
                        }
                    }
                },
            ),
        ],
    ),
    (
        "sindresorhus/ky",
        "typescript",
        "typescript",
        [
            ("kind", {"rule": {"kind": "await_expression"}}),
            (
                "inside end",
                {"rule": {"kind": "await_expression", "inside": {"kind": "arrow_function", **END}}},
            ),
            (
                "has end",
                {"rule": {"kind": "arrow_function", "has": {"kind": "await_expression", **END}}},
            ),
            (
                "has field",
                {
                    "rule": {
                        "kind": "call_expression",
                        "has": {"field": "function", "regex": "^this\\."},
                    }
                },
            ),
            (
                "not has",
                {"rule": {"kind": "if_statement", "not": {"has": {"kind": "else_clause"}}}},
            ),
            (
                "follows end",
                {"rule": {"kind": "return_statement", "follows": {"kind": "if_statement", **END}}},
            ),
            (
                "pattern object",
                {
                    "rule": {
                        "pattern": {
                            "context": "class A { $F = $V }",
                            "selector": "public_field_definition",
                        }
                    }
                },
            ),
            ("regex", {"rule": {"kind": "string", "regex": "^'http"}}),
            (
                "matches + utils",
                {
                    "utils": {"is_test": {"pattern": "test($$$A)"}},
                    "rule": {"kind": "arrow_function", "inside": {"matches": "is_test", **END}},
                },
            ),
        ],
    ),
]


# Repositories for the rewrite features only (fix object, string-form transforms, rewriters)
CASES += [
    ("pallets/markupsafe", "python", "python", [("kind", {"rule": {"kind": "call"}})]),
    (
        "sindresorhus/p-queue",
        "typescript",
        "typescript",
        [("kind", {"rule": {"kind": "call_expression"}})],
    ),
]

# (repository, tether grammar id, ast-grep language, (feature, rule config with a fix)): the
# files each side rewrites are compared byte for byte (ast-grep: `scan --update-all` on a copy)
EDITS: list[tuple[str, str, str, list[tuple[str, dict[str, Any]]]]] = [
    (
        "pallets/itsdangerous",
        "python",
        "python",
        [
            ("fix", {"rule": {"pattern": "isinstance($X, $T)"}, "fix": "type($X) is $T"}),
            (
                "transform convert",
                {
                    "rule": {"pattern": "$F($$$A)"},
                    "constraints": {"F": {"kind": "identifier", "regex": "^_?[a-z]+_[a-z_]+$"}},
                    "transform": {"G": {"convert": {"source": "$F", "toCase": "camelCase"}}},
                    "fix": "$G($$$A)",
                },
            ),
        ],
    ),
    (
        "dtolnay/anyhow",
        "rust",
        "rust",
        [
            (
                "transform substring",
                {
                    "rule": {"pattern": "$X.unwrap()"},
                    "transform": {
                        "S": {"substring": {"source": "$X", "startChar": 1, "endChar": -1}}
                    },
                    "fix": "$S",
                },
            ),
        ],
    ),
    (
        "sindresorhus/ky",
        "typescript",
        "typescript",
        [
            (
                "transform replace",
                {
                    "rule": {"pattern": "$O.$M($$$A)"},
                    "constraints": {"M": {"regex": "^to"}},
                    "transform": {
                        "N": {"replace": {"source": "$M", "replace": "^to(\\w)", "by": "as$1"}}
                    },
                    "fix": "$O.$N($$$A)",
                },
            ),
        ],
    ),
]


EDITS += [
    (
        "pallets/markupsafe",
        "python",
        "python",
        [
            (
                "fix expandEnd",
                {
                    "rule": {"kind": "keyword_argument"},
                    "fix": {"template": "", "expandEnd": {"regex": ","}},
                },
            ),
            (
                "transform string form",
                {
                    "rule": {"pattern": "$F($$$A)"},
                    "constraints": {"F": {"kind": "identifier", "regex": "^_"}},
                    "transform": {
                        "N": "replace($F, replace='^_+', by='')",
                        "U": "convert($N, toCase=pascalCase)",
                    },
                    "fix": "$U($$$A)",
                },
            ),
            (
                "rewriters",
                {
                    "rule": {"pattern": "return $E"},
                    "rewriters": [{"id": "s", "rule": {"kind": "string"}, "fix": "S"}],
                    "transform": {"R": "rewrite($E, rewriters=[s])"},
                    "fix": "return $R",
                },
            ),
        ],
    ),
    (
        "sindresorhus/p-queue",
        "typescript",
        "typescript",
        [
            (
                "fix expandStart",
                {
                    "rule": {"kind": "pair", "nthChild": {"position": 1, "reverse": True}},
                    "fix": {"template": "", "expandStart": {"regex": ","}},
                },
            ),
            (
                "transform string form",
                {
                    "rule": {"pattern": "this.$M($$$A)"},
                    "transform": {"N": "convert($M, toCase=snakeCase)"},
                    "fix": "this.$N($$$A)",
                },
            ),
            (
                "rewriters joinBy",
                {
                    "rule": {"pattern": "[$$$E]"},
                    "rewriters": [
                        {"id": "q", "rule": {"kind": "identifier", "pattern": "$X"}, "fix": "q($X)"}
                    ],
                    "transform": {
                        "R": {"rewrite": {"source": "$$$E", "rewriters": ["q"], "joinBy": ", "}}
                    },
                    "fix": "[$R]",
                },
            ),
        ],
    ),
]


def tether_edits(
    state: ProcessState, config: dict[str, Any], grammar_id: str, root: Path, files: list[str]
) -> dict[str, bytes]:
    grammar = state.registry.get(grammar_id)
    assert grammar is not None
    compiled = compile_rule(config, grammar, edit=True)
    results = state.run(Task("edit", compiled, compiled.fix, 2_000_000), str(root), files)
    return {r.path: r.new for r in results if r.new is not None and r.new != r.original}


def astgrep_edits(
    binary: str, config: dict[str, Any], lang: str, root: Path, files: list[str]
) -> dict[str, bytes]:
    inline = json.dumps({"id": "compare", "language": lang, "severity": "info", **config})
    with tempfile.TemporaryDirectory(prefix="tether-rules-edit-") as tmp:
        copy = Path(tmp) / "copy"
        shutil.copytree(root, copy)
        subprocess.run(
            [binary, "scan", "--inline-rules", inline, "--update-all", *files],
            cwd=copy,
            capture_output=True,
            check=False,
        )
        out = {}
        for f in files:
            new = (copy / f).read_bytes()
            if new != (root / f).read_bytes():
                out[f] = new
        return out


def tether_matches(
    state: ProcessState, config: dict[str, Any], grammar_id: str, root: Path, files: list[str]
) -> Counter[Key]:
    grammar = state.registry.get(grammar_id)
    assert grammar is not None
    try:
        compiled = compile_rule(config, grammar)
    except RuleError as exc:
        raise SystemExit(f"tether refused {config}: {exc}") from None
    results = state.run(Task("search", compiled, None, 2_000_000), str(root), files)
    return Counter((r.path, m[0], m[1]) for r in results for m in r.matches)


def astgrep_matches(
    binary: str, config: dict[str, Any], lang: str, root: Path, files: list[str]
) -> Counter[Key]:
    inline = json.dumps({"id": "compare", "language": lang, "severity": "info", **config})
    out = subprocess.run(
        [binary, "scan", "--inline-rules", inline, "--json=stream", *files],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode not in (0, 1):
        raise SystemExit(f"ast-grep failed on {inline}: {out.stderr.strip()[:500]}")
    found: Counter[Key] = Counter()
    for line in out.stdout.splitlines():
        m = json.loads(line)
        start = m["range"]["start"]
        found[(m["file"], start["line"] + 1, start["column"] + 1)] += 1
    return found


#: (repository, grammar, feature, rule, tether's count, ast-grep's count, same)
Row = tuple[str, str, str, str, int, int, int]


def _edit_rows(
    state: ProcessState,
    binary: str,
    repo: str,
    gid: str,
    lang: str,
    root: Path,
    files: list[str],
) -> list[Row]:
    """The rewrite cases of `repo`: files each tool rewrites, and how many come out identical."""
    rows: list[Row] = []
    for edits in EDITS:
        if edits[0] != repo:
            continue
        for feature, config in edits[3]:
            mine_files = tether_edits(state, config, gid, root, files)
            their_files = astgrep_edits(binary, config, lang, root, files)
            same = sum(1 for f, new in mine_files.items() if their_files.get(f) == new)
            print(
                f"{feature}: files rewritten: tether {len(mine_files)}, "
                f"ast-grep {len(their_files)}, identical {same}"
            )
            rows.append(
                (
                    repo,
                    gid,
                    f"{feature} (files)",
                    json.dumps(config),
                    len(mine_files),
                    len(their_files),
                    same,
                )
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--only", default="", help="comma-separated repositories to run")
    args = parser.parse_args()
    binary = shutil.which("ast-grep")
    if binary is None:
        raise SystemExit("ast-grep not found: uv sync --package tether-astgrep --group bench")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    print(f"# {version.strip()} (scan --inline-rules) vs tether's rules; same file list")
    registry = GrammarRegistry(builtin_grammars())
    state = ProcessState(registry, 0)
    rows = []
    with tempfile.TemporaryDirectory(prefix="tether-rules-") as tmp:
        for repo, gid, lang, cases in CASES:
            if args.only and repo not in args.only.split(","):
                continue
            root = extract(args.mirror, repo, Path(tmp))
            grammar = registry.get(gid)
            assert grammar is not None
            files = [f for f in anyio.run(_list_files, root) if registry.for_path(f) is grammar]
            print(f"\n## {repo} ({gid}, {len(files)} files)")
            for feature, config in cases:
                t0 = time.perf_counter()
                mine = tether_matches(state, config, gid, root, files)
                t1 = time.perf_counter()
                theirs = astgrep_matches(binary, config, lang, root, files)
                same = sum((mine & theirs).values())
                n_t, n_a = sum(mine.values()), sum(theirs.values())
                print(f"{feature}: tether {n_t}, ast-grep {n_a}, same {same} ({t1 - t0:.2f} s)")
                for label, extra in (("tether", mine - theirs), ("ast-grep", theirs - mine)):
                    for key in sorted(extra)[:3]:
                        print(f"    only {label}: {key[0]}:{key[1]}:{key[2]}")
                rows.append((repo, gid, feature, json.dumps(config), n_t, n_a, same))
            rows.extend(_edit_rows(state, binary, repo, gid, lang, root, files))
    print("\n| repository | feature | rule | tether | ast-grep | same |")
    print("|---|---|---|---:|---:|---:|")
    for repo, _gid, feature, rule, n_t, n_a, same in rows:
        shown = rule.replace("|", "\\|")
        print(f"| {repo} | {feature} | `{shown}` | {n_t} | {n_a} | {same} |")


if __name__ == "__main__":
    sys.exit(main())

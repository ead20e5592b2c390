"""ast-grep's own catalog, rule by rule: tether's rule engine vs `ast-grep scan` (not in CI).

    git clone <mirror of ast-grep/ast-grep.github.io> /tmp/agsite   # fetched, never committed
    uv run python plugins/astgrep/benchmarks/compare_catalog.py /tmp/agsite/website/catalog

Every catalog page (`<language>/<rule>.md`) holds a rule (its ```yaml block) and an example
(the first code block after "Example"). Both sides run the rule on the example, written to a
file: matches are compared by start, and a rule with a `fix` by the rewritten file
(`scan --update-all` on a copy). A row per page: agree, differ (with both counts), tether
refuses (its reason), or not run (a language tether has no grammar for, no example).
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path
from typing import Any

import yaml
from compare_rules import astgrep_edits, astgrep_matches, tether_edits, tether_matches

from tether_astgrep.engine import ProcessState
from tether_astgrep.grammars import GrammarRegistry, all_grammars
from tether_astgrep.rules import RuleError

#: the catalog's language names -> (tether grammar, file extension)
LANGS = {
    "python": ("python", ".py"),
    "typescript": ("typescript", ".ts"),
    "tsx": ("tsx", ".tsx"),
    "javascript": ("javascript", ".js"),
    "js": ("javascript", ".js"),
    "ts": ("typescript", ".ts"),
    "rust": ("rust", ".rs"),
    "go": ("go", ".go"),
    "java": ("java", ".java"),
    "kotlin": ("kotlin", ".kt"),
    "c": ("c", ".c"),
    "cpp": ("cpp", ".cpp"),
    "ruby": ("ruby", ".rb"),
    "dart": ("dart", ".dart"),
    "html": ("html", ".html"),
    "yaml": ("yaml", ".yaml"),
}
_FENCE = re.compile(r"```(\w+)[^\n]*\n(.*?)```", re.S)


def page(md: str) -> tuple[dict[str, Any] | None, str | None]:
    """The page's rule config and its example code."""
    rule = example = None
    for m in _FENCE.finditer(md):
        lang, body = m.group(1).lower(), m.group(2)
        if rule is None and lang in ("yml", "yaml") and "rule:" in body:
            docs = [d for d in yaml.safe_load_all(body) if isinstance(d, dict) and "rule" in d]
            rule = docs[0] if docs else None
        elif rule is not None and example is None and md.rfind("Example", 0, m.start()) >= 0:
            if lang not in ("yml", "yaml", "diff", "bash", "sh", "shell") or "rule" not in body:
                example = body
    return rule, example


def compare(state: ProcessState, binary: str, md_path: Path) -> tuple[str, str, str]:
    """(language, outcome, detail) for one catalog page."""
    text = md_path.read_text()
    rule, example = page(text)
    if rule is None and re.search(r"ast-grep (?:run )?(?:-p|--pattern)", text):
        return md_path.parent.name, "not run", "a pattern page (a command line, no rule)"
    if rule is None or example is None:
        return md_path.parent.name, "not run", "no rule or no example on the page"
    lang = str(rule.get("language") or md_path.parent.name).lower()
    if lang not in LANGS or state.registry.get(LANGS[lang][0]) is None:
        return lang, "not run", "no tether grammar"
    gid, ext = LANGS[lang]
    # what only `scan`'s report uses (its message, labels, notes)
    skip = ("id", "language", "severity", "message", "note", "notes", "labels", "url", "metadata")
    config = {k: v for k, v in rule.items() if k not in (*skip, "files", "ignores")}
    # a search takes no fix, nor what only a fix uses
    search = {k: v for k, v in config.items() if k not in ("fix", "transform", "rewriters")}
    with tempfile.TemporaryDirectory(prefix="tether-catalog-") as tmp:
        root = Path(tmp)
        (root / f"example{ext}").write_text(example)
        files = [f"example{ext}"]
        try:
            mine = tether_matches(state, search, gid, root, files)
        except (SystemExit, RuleError) as exc:
            reason = str(exc).rpartition("}: ")[2][:200]
            try:
                found = astgrep_matches(binary, search, lang, root, files)
            except SystemExit:
                return lang, "both refuse", reason
            return lang, "tether refuses", f"{reason} (ast-grep: {sum(found.values())} matches)"
        theirs = astgrep_matches(binary, search, lang, root, files)
        if mine != theirs:
            return lang, "differ", f"tether {sum(mine.values())}, ast-grep {sum(theirs.values())}"
        if "fix" in config:
            try:
                edits = tether_edits(state, config, gid, root, files)
            except RuleError as exc:
                try:
                    astgrep_matches(binary, config, lang, root, files)
                except SystemExit:
                    return lang, "both refuse", f"the fix: {str(exc)[:200]}"
                return lang, "tether refuses", f"the fix: {str(exc)[:200]}"
            if edits != astgrep_edits(binary, config, lang, root, files):
                return lang, "differ", f"same {sum(mine.values())} matches, fixes differ"
        return (
            lang,
            "agree",
            f"{sum(mine.values())} matches" + (", same fix" if "fix" in config else ""),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("catalog", type=Path)
    args = parser.parse_args()
    from compare_languages import ast_grep

    binary = ast_grep()
    state = ProcessState(GrammarRegistry(all_grammars()), 0)
    print("| page | language | outcome | detail |\n|---|---|---|---|")
    for md in sorted(args.catalog.glob("*/*.md")):
        if md.stem == "index":  # a folder's list of its pages
            continue
        lang, outcome, detail = compare(state, binary, md)
        print(f"| {md.parent.name}/{md.stem} | {lang} | {outcome} | {detail} |", flush=True)


if __name__ == "__main__":
    main()

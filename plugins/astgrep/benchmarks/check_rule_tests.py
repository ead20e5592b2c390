"""Check the expected matches of tests/test_rules.py against the ast-grep CLI itself.

    uv run python plugins/astgrep/benchmarks/check_rule_tests.py

Runs every snippet case of the test file through `ast-grep scan --inline-rules` and prints
DIFF for any case whose matched texts differ from what the test expects of tether; each edit
case (`EDIT_CASES`: fix objects, string transforms, rewriters) through `--update-all`, DIFF
when the file ast-grep writes is not the one the test expects.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
import test_rules as T

EXT = {"python": "py", "rust": "rs", "typescript": "ts", "go": "go", "javascript": "js"}


def astgrep_texts(binary: str, lang: str, config: dict[str, Any], source: str) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"a.{EXT[lang]}"
        path.write_text(source)
        inline = json.dumps({"id": "check", "language": lang, **config})
        out = subprocess.run(
            [binary, "scan", "--inline-rules", inline, "--json=stream", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
    found = [json.loads(line) for line in out.stdout.splitlines()]
    found.sort(key=lambda m: (m["range"]["byteOffset"]["start"], -m["range"]["byteOffset"]["end"]))
    return [m["text"] for m in found]


def astgrep_edit(binary: str, lang: str, config: dict[str, Any], source: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"a.{EXT[lang]}"
        path.write_text(source)
        inline = json.dumps({"id": "check", "language": lang, **config})
        subprocess.run(
            [binary, "scan", "--inline-rules", inline, "--update-all", str(path)],
            capture_output=True,
            check=False,
        )
        return path.read_text()


def main() -> int:
    binary = shutil.which("ast-grep")
    if binary is None:
        raise SystemExit("ast-grep not found: uv sync --package tether-astgrep --group bench")
    checks: list[tuple[str, str, dict[str, Any], str, list[str]]] = []
    for lang, feature, rule, expected in T.CASES:
        checks.append((f"{lang} {feature}", lang, {"rule": rule}, T.SOURCES[lang], expected))
    for lang, source, relation, rule, near, far in T.STOP_CASES:
        checks.append((f"{lang} {relation} neighbor", lang, {"rule": rule}, source, near))
        end = {**rule, relation: {**rule[relation], "stopBy": "end"}}
        checks.append((f"{lang} {relation} end", lang, {"rule": end}, source, far))
    for lang, source, rule, with_field, without in T.FIELD_CASES:
        relation = "inside" if "inside" in rule else "has"
        plain = {**rule, relation: {k: v for k, v in rule[relation].items() if k != "field"}}
        checks.append((f"{lang} field", lang, {"rule": rule}, source, with_field))
        checks.append((f"{lang} no field", lang, {"rule": plain}, source, without))
    bad = 0
    for name, lang, config, source, expected in checks:
        got = astgrep_texts(binary, lang, config, source)
        bad += got != expected
        print(
            ("ok  " if got == expected else "DIFF")
            + f" {name}"
            + ("" if got == expected else f": ast-grep {got}")
        )
    for lang, feature, source, config, expected_file in T.EDIT_CASES:
        got_file = astgrep_edit(binary, lang, config, source)
        bad += got_file != expected_file
        same = got_file == expected_file
        print(
            ("ok  " if same else "DIFF")
            + f" {lang} {feature} (edit)"
            + ("" if same else f": ast-grep wrote {got_file!r}")
        )
    total = len(checks) + len(T.EDIT_CASES)
    print(f"{total - bad} of {total} cases: ast-grep finds (or writes) what the test expects")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

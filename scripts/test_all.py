#!/usr/bin/env python3
"""The test command: every distribution's suite once, each in its own fresh environment, then the
cross-plugin tests with everything installed.

    python3 scripts/test_all.py [NAME ...]      # e.g. core lsp files; default: all

Each environment holds only that distribution, the core, and what its ``test`` extra declares
(the contrib helpers tether-files / tether-echo, pytest…), built with ``uv sync --package``.
Prints one summary line per environment and a closing "N passed, N failed" line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENVS = Path(os.environ.get("TETHER_TEST_ENVS", "/tmp/tether-test-envs"))
EXCLUDED = set(
    tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"].get(
        "exclude", []
    )
)
SUMMARY = re.compile(r"(\d+) (passed|failed|error|errors|skipped|xfailed|xpassed)")


def distributions() -> list[tuple[str, str, Path]]:
    """(short name, distribution, directory) for core, contrib/* and plugins/*."""
    dirs = [
        ROOT / "core",
        *sorted((ROOT / "contrib").glob("*/")),
        *sorted((ROOT / "plugins").glob("*/")),
    ]
    out = []
    for d in dirs:
        pyproject = d / "pyproject.toml"
        if not pyproject.is_file() or not (d / "tests").is_dir():
            continue
        meta = tomllib.loads(pyproject.read_text())["project"]
        short = "core" if d.name == "core" else d.name
        extras = meta.get("optional-dependencies", {})
        out.append((short, meta["name"], d, "test" in extras))
    return out


def run_suite(
    label: str, sync_args: list[str], test_paths: list[str]
) -> tuple[int, dict[str, int], float]:
    env_dir = ENVS / label
    shutil.rmtree(env_dir, ignore_errors=True)
    env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(env_dir), "UV_PYTHON_DOWNLOADS": "never"}
    env.pop("VIRTUAL_ENV", None)
    start = time.monotonic()
    sync = subprocess.run(
        ["uv", "sync", "--frozen", "--no-dev", "-q", *sync_args], cwd=ROOT, env=env
    )
    if sync.returncode != 0:
        return sync.returncode, {"error": 1}, time.monotonic() - start
    cmd = [
        "uv",
        "run",
        "--frozen",
        "--no-sync",
        "python",
        "-m",
        "pytest",
        *test_paths,
        "-q",
        "-p",
        "no:cacheprovider",
        "--import-mode=importlib",
        "-o",
        "console_output_style=classic",
    ]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    last = ""
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        if line.strip():
            last = line
    code = proc.wait()
    counts = {kind: int(n) for n, kind in SUMMARY.findall(last)}
    return code, counts, time.monotonic() - start


def main(argv: list[str]) -> int:
    wanted = set(argv)
    results = []
    for short, dist, directory, has_test_extra in distributions():
        if wanted and short not in wanted:
            continue
        print(f"\n=== {short} ({dist}) in its own environment ===", flush=True)
        extra = ["--extra", "test"] if has_test_extra else []
        rel = str(directory.relative_to(ROOT) / "tests")
        if str(directory.relative_to(ROOT)) in EXCLUDED:
            # not a workspace member (a test-only helper): the core's test extra brings it
            sync = ["--package", "tether", "--extra", "test"]
        else:
            sync = ["--package", dist, *extra]
        results.append((short, *run_suite(short, sync, [rel])))
    if (not wanted or "cross" in wanted) and any((ROOT / "tests").glob("test_*.py")):
        print("\n=== cross-plugin tests (everything installed) ===", flush=True)
        results.append(
            ("cross", *run_suite("cross", ["--all-packages", "--all-extras"], ["tests"]))
        )
    print("\n=== summary ===")
    passed = failed = 0
    bad = False
    for name, code, counts, seconds in results:
        p = counts.get("passed", 0)
        f = counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0)
        skipped = counts.get("skipped", 0)
        passed += p
        failed += f
        ok = code == 0 and p > 0
        bad |= not ok
        print(
            f"{name:<10} {'ok' if ok else 'FAILED':<7} {p} passed, {f} failed, {skipped} skipped  ({seconds:.0f} s, exit {code})"
        )
    print(f"{passed} passed, {failed} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

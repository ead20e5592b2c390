#!/usr/bin/env python3
"""Build every distribution of this checkout once (sdist, then the wheel built FROM that sdist)
and check what was built:

    python3 scripts/build_dists.py [--out DIR] [--twine]

- every file under a distribution's ``src/`` (tracked or not ignored by git) is in its wheel,
  and the wheel holds nothing else besides its ``.dist-info`` (a data file such as
  ``tether_eval/node_kernel.js`` dropped by the build backend is caught here);
- the wheel ships ``LICENSE`` and declares the entry points of its ``pyproject.toml``;
- the sdist holds the README, LICENSE, ``pyproject.toml``, the whole ``src/`` and ``tests/``;
- with ``--twine``: ``twine check --strict`` on every archive (needs twine: ``uv run``).

Prints one line per distribution and exits non-zero on any finding. ``scripts/test_all.py``
installs from the same directory (``TETHER_DISTS``).
"""

from __future__ import annotations

import argparse
import configparser
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOT_RELEASED = {"contrib/plugin-template"}  # copied out of the repository, never built here


def distribution_dirs() -> list[Path]:
    """Every released distribution: core, plugins/*, contrib/* (workspace members or not)."""
    dirs = [ROOT / "core", *sorted(ROOT.glob("plugins/*/")), *sorted(ROOT.glob("contrib/*/"))]
    return [
        d
        for d in dirs
        if (d / "pyproject.toml").is_file() and str(d.relative_to(ROOT)) not in NOT_RELEASED
    ]


def project(d: Path) -> dict:
    return tomllib.loads((d / "pyproject.toml").read_text())["project"]


def archive_stem(name: str, version: str) -> str:
    return f"{name.replace('-', '_')}-{version}"


def build(out: Path) -> None:
    """sdist and wheel of every distribution into ``out`` (emptied first)."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for d in distribution_dirs():
        subprocess.run(
            ["uv", "build", "-q", "--out-dir", str(out), str(d)],
            check=True,
            cwd=ROOT,
        )


def shipped_sources(d: Path) -> set[str]:
    """Files under ``d/src`` that a build must ship: tracked, or untracked and not ignored."""
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "src"],
        cwd=d,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return {
        str(Path(p).relative_to("src"))
        for p in out
        if (d / p).is_file() and "__pycache__" not in p and not p.endswith(".pyc")
    }


def check(out: Path) -> list[str]:
    problems: list[str] = []
    for d in distribution_dirs():
        problems += check_one(d, out)
    return problems


def check_one(d: Path, out: Path) -> list[str]:
    """What is wrong with the wheel and sdist of distribution ``d`` found in ``out``."""
    problems: list[str] = []
    meta = project(d)
    stem = archive_stem(meta["name"], meta["version"])
    wheels = list(out.glob(f"{stem}-*.whl"))
    sdist = out / f"{stem}.tar.gz"
    if len(wheels) != 1 or not sdist.is_file():
        return [f"{meta['name']}: expected one wheel and {sdist.name} in {out}"]
    with zipfile.ZipFile(wheels[0]) as zf:
        names = set(zf.namelist())
        info = f"{stem}.dist-info/"
        payload = {n for n in names if not n.startswith(info)}
        expected = shipped_sources(d)
        for missing in sorted(expected - payload):
            problems.append(f"{wheels[0].name}: missing {missing}")
        for extra in sorted(payload - expected):
            problems.append(f"{wheels[0].name}: ships {extra}, which is not a source file")
        if f"{info}licenses/LICENSE" not in names:
            problems.append(f"{wheels[0].name}: no {info}licenses/LICENSE")
        declared = meta.get("entry-points", {})
        scripts = meta.get("scripts", {})
        if declared or scripts:
            parser = configparser.ConfigParser(delimiters=("=",))
            parser.optionxform = str  # type: ignore[assignment,method-assign]
            parser.read_string(zf.read(f"{info}entry_points.txt").decode())
            shipped = {s: dict(parser[s]) for s in parser.sections()}
            wanted = dict(declared)
            if scripts:
                wanted["console_scripts"] = scripts
            for group, eps in wanted.items():
                if {k: v.strip() for k, v in shipped.get(group, {}).items()} != eps:
                    problems.append(f"{wheels[0].name}: entry points of [{group}] differ")
    with tarfile.open(sdist) as tf:
        members = {m.name.split("/", 1)[1] for m in tf.getmembers() if "/" in m.name}
    for needed in ("README.md", "LICENSE", "pyproject.toml", "PKG-INFO"):
        if needed not in members:
            problems.append(f"{sdist.name}: no {needed}")
    for src in sorted(shipped_sources(d)):
        if f"src/{src}" not in members:
            problems.append(f"{sdist.name}: missing src/{src}")
    if (d / "tests").is_dir() and not any(m.startswith("tests/") for m in members):
        problems.append(f"{sdist.name}: no tests/")
    print(f"{meta['name']:<16} {meta['version']:<8} {wheels[0].name}, {sdist.name}")
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--twine", action="store_true", help="also run twine check --strict")
    parser.add_argument("--no-build", action="store_true", help="only check what --out holds")
    ns = parser.parse_args(argv)
    if not ns.no_build:
        build(ns.out)
    problems = check(ns.out)
    if ns.twine:
        archives = sorted(str(p) for p in ns.out.iterdir() if p.name.endswith((".whl", ".tar.gz")))
        twine = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *archives])
        if twine.returncode != 0:
            problems.append("twine check --strict failed")
    for problem in problems:
        print("FAIL", problem)
    print(f"{len(distribution_dirs())} distributions built and checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

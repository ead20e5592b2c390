#!/usr/bin/env python3
"""The test command: every distribution's suite once, each in its own fresh environment installed
FROM ITS BUILT WHEEL and run from its unpacked sdist (outside the checkout), then the cross-plugin
tests with every wheel installed.

    python3 scripts/test_all.py [NAME ...]      # e.g. core lsp files cross; default: all
    python3 scripts/test_all.py --portable      # core + the kill/orphan attacks, psutil backend

- The archives come from ``TETHER_DISTS`` (a directory ``scripts/build_dists.py`` filled, as CI
  does once), else they are built into ``$TETHER_TEST_ENVS/dist``.
- Each environment gets the third-party packages that distribution and its ``test`` extra need,
  pinned in ``uv.lock`` (``uv sync --no-install-workspace --no-install-local``: no tether
  distribution, no editable install), then ``NAME[test]`` from the wheels with
  ``--no-index --find-links``: every tether distribution comes from a wheel of this checkout,
  never from an index (where unrelated projects hold ``tether-*`` names), and a requirement the
  wheel forgot to declare fails the install.
- A distribution's tests run from its unpacked sdist, so a test that needs a file the sdist
  does not ship fails here.

- ``--portable`` runs the core suite and the kill/orphan attack family (:data:`PORTABLE_CROSS`)
  again with ``TETHER_PORTABLE=1``: the psutil backend and no subreaper, as on macOS (see
  ``tether.processes.procinfo``), and astgrep's worker-pool tests, whose workers are spawned there. It reuses the environments an earlier run of this script left (the same
  wheels), so after the full run it costs only the tests.

Prints one summary line per environment and a closing "N passed, N failed" line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_dists import archive_stem, build, distribution_dirs, project

ROOT = Path(__file__).resolve().parent.parent
ENVS = Path(os.environ.get("TETHER_TEST_ENVS", "/tmp/tether-test-envs"))
#: the cross tests run again under the portable backend: every way a run's processes must die
PORTABLE_CROSS = [
    "tests/attacks/test_kill_attacks.py",
    "tests/attacks/test_hang_attacks.py",
    "tests/attacks/test_pid_ownership_attacks.py",
    # astgrep's worker pool, which spawns instead of forking there: same results, no orphan,
    # adopted and released, a stalled worker replaced
    "plugins/astgrep/tests/test_worker_start.py",
    "plugins/astgrep/tests/test_ownership.py",
    "plugins/astgrep/tests/test_scale.py::"
    "test_a_worker_that_stays_stopped_is_replaced_and_the_others_keep_their_cache",
]
_reuse_envs = False
SUMMARY = re.compile(r"(\d+) (passed|failed|error|errors|skipped|xfailed|xpassed)")
MEMBERS_EXCLUDED = set(
    tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"].get(
        "exclude", []
    )
)

# every installed tether distribution must come from a wheel, not from a directory
_ORIGIN = """
import importlib.metadata as m, json
bad = {}
for d in m.distributions():
    name = d.metadata["Name"]
    if name.startswith("tether"):
        url = json.loads(d.read_text("direct_url.json") or "{}")
        if "dir_info" in url:
            bad[name] = url
print(json.dumps(bad))
"""


def distributions() -> list[tuple[str, str, Path, bool]]:
    """(short name, distribution, directory, has a test extra) for those with tests."""
    out = []
    for d in distribution_dirs():
        if not (d / "tests").is_dir():
            continue
        meta = project(d)
        short = "core" if d.name == "core" else d.name
        out.append((short, meta["name"], d, "test" in meta.get("optional-dependencies", {})))
    return out


def _uv(args: list[str], extra_env: dict[str, str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    for var in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT"):
        env.pop(var, None)
    return subprocess.run(["uv", *args], cwd=ROOT, env={**env, **extra_env})


def make_env(label: str, sync_args: list[str], specs: list[str], dists: Path) -> Path | None:
    """A fresh venv: the third-party packages pinned in the lock (no tether distribution),
    then ``specs`` from the wheels only."""
    env_dir = ENVS / label
    python = str(env_dir / "bin" / "python")
    if _reuse_envs and Path(python).exists():
        print(f"(reusing {env_dir}, installed from the same wheels)", flush=True)
        return env_dir
    shutil.rmtree(env_dir, ignore_errors=True)
    sync = ["sync", "--frozen", "--no-dev", "-q", "--no-install-workspace", "--no-install-local"]
    # --no-cache: uv would reuse a cached wheel of the same file name from an earlier build
    install = [
        "pip",
        "install",
        "-q",
        "--no-cache",
        "--python",
        python,
        "--no-index",
        "--find-links",
    ]
    for step, env in (
        ([*sync, *sync_args], {"UV_PROJECT_ENVIRONMENT": str(env_dir)}),
        ([*install, str(dists), *specs], {}),
    ):
        if _uv(step, env).returncode != 0:
            return None
    origin = subprocess.run([python, "-c", _ORIGIN], capture_output=True, text=True)
    if origin.returncode != 0 or json.loads(origin.stdout) != {}:
        print(f"not installed from wheels: {origin.stdout}{origin.stderr}")
        return None
    return env_dir


def unpack_sdist(dists: Path, name: str, version: str) -> Path:
    """The distribution's sdist unpacked under ENVS: where its tests run."""
    stem = archive_stem(name, version)
    where = ENVS / f"src-{stem}"
    shutil.rmtree(where, ignore_errors=True)
    with tarfile.open(dists / f"{stem}.tar.gz") as tf:
        tf.extractall(where, filter="data")
    return where / stem


def run_tests(env_dir: Path, cwd: Path, test_paths: list[str]) -> tuple[int, dict[str, int]]:
    env = {
        **os.environ,
        "VIRTUAL_ENV": str(env_dir),
        "PATH": f"{env_dir / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "UV_PYTHON_DOWNLOADS": "never",
    }
    env.pop("UV_PROJECT_ENVIRONMENT", None)
    cmd = [
        str(env_dir / "bin" / "python"),
        "-m",
        "pytest",
        *test_paths,
        "-q",
        "-p",
        "no:cacheprovider",
        "--import-mode=importlib",
        # a test module may import a sibling (astgrep's test_agent_bugs uses test_match), as
        # it can under pytest's default import mode
        "-o",
        "pythonpath=tests",
        "-o",
        "console_output_style=classic",
    ]
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    last = ""
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        if line.strip():
            last = line
    code = proc.wait()
    return code, {kind: int(n) for n, kind in SUMMARY.findall(last)}


def main(argv: list[str]) -> int:
    global _reuse_envs
    portable = "--portable" in argv
    wanted = set(argv) - {"--portable"}
    cross_paths = ["tests"]
    if portable:
        os.environ["TETHER_PORTABLE"] = "1"
        _reuse_envs = True
        wanted = wanted or {"core", "cross"}
        cross_paths = PORTABLE_CROSS
        print("=== portable process backend (TETHER_PORTABLE=1: psutil, no subreaper) ===")
    given = os.environ.get("TETHER_DISTS")
    if given:
        dists = Path(given).resolve()
    else:
        dists = ENVS / "dist"
        print(f"=== building every sdist and wheel into {dists} ===", flush=True)
        build(dists)
        os.environ["TETHER_DISTS"] = str(dists)  # the cross tests install from them too
    results = []
    for short, dist, directory, has_test_extra in distributions():
        if wanted and short not in wanted:
            continue
        print(f"\n=== {short} ({dist}) from its wheel, tests from its sdist ===", flush=True)
        start = time.monotonic()
        version = project(directory)["version"]
        if str(directory.relative_to(ROOT)) in MEMBERS_EXCLUDED:
            # not a workspace member (a test-only helper): pinned with the core's test extra
            export = ["--package", "tether", "--extra", "test"]
        else:
            export = ["--package", dist, *(["--extra", "test"] if has_test_extra else [])]
        spec = f"{dist}[test]" if has_test_extra else dist
        env_dir = make_env(short, export, [spec], dists)
        if env_dir is None:
            results.append((short, 1, {"error": 1}, time.monotonic() - start))
            continue
        src = unpack_sdist(dists, dist, version)
        results.append((short, *run_tests(env_dir, src, ["tests"]), time.monotonic() - start))
    if (not wanted or "cross" in wanted) and any((ROOT / "tests").glob("test_*.py")):
        print("\n=== cross-plugin tests (every wheel installed) ===", flush=True)
        start = time.monotonic()
        specs = ["tether[all,test]"] + [
            f"{dist}[test]" if has_test else dist
            for _, dist, _, has_test in distributions()
            if dist != "tether"
        ]
        env_dir = make_env("cross", ["--all-packages", "--all-extras"], specs, dists)
        if env_dir is None:
            results.append(("cross", 1, {"error": 1}, time.monotonic() - start))
        else:
            results.append(
                ("cross", *run_tests(env_dir, ROOT, cross_paths), time.monotonic() - start)
            )
    return summary(results)


def summary(results: list[tuple[str, int, dict[str, int], float]]) -> int:
    """Print one line per suite and the totals; 1 when a suite failed or ran no test."""
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

#!/usr/bin/env python3
"""The plugin template, as a third party would use it: copied to a temporary directory outside
this checkout, built, installed in a fresh environment against the wheels built from this
checkout (``--no-index --find-links``: never an index, where an unrelated project may hold a
``tether-*`` name), and its tests run there.

    TETHER_DISTS=DIR python3 scripts/check_template.py   # DIR: from scripts/build_dists.py

Only third-party packages (pytest, pluggy, attrs…) come from the lock (``uv sync`` of the core's
test extra, no tether distribution); the template's own build backend comes from the usual
build isolation. Prints the test summary and exits with pytest's status.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "contrib" / "plugin-template"


def uv(*args: str, **env: str) -> None:
    base = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
    }
    subprocess.run(
        ["uv", *args], cwd=ROOT, check=True, env={**base, "UV_PYTHON_DOWNLOADS": "never", **env}
    )


def main() -> int:
    dists = Path(os.environ.get("TETHER_DISTS") or sys.exit("set TETHER_DISTS (build_dists.py)"))
    with tempfile.TemporaryDirectory(prefix="tether-template-") as tmp:
        work = Path(tmp)
        if ROOT in work.parents:
            sys.exit(f"{work} is inside the checkout")
        plugin = work / "tether-myplugin"
        shutil.copytree(TEMPLATE, plugin, ignore=shutil.ignore_patterns("__pycache__"))
        env = work / "venv"
        uv("build", "-q", "--wheel", "--out-dir", str(work / "dist"), str(plugin))
        uv(
            "sync",
            "--frozen",
            "--no-dev",
            "-q",
            "--package",
            "tether",
            "--extra",
            "test",
            "--no-install-workspace",
            "--no-install-local",
            UV_PROJECT_ENVIRONMENT=str(env),
        )
        uv(
            "pip",
            "install",
            "-q",
            "--no-cache",  # else uv may reuse a cached wheel of the same name from an earlier build
            "--python",
            str(env / "bin" / "python"),
            "--no-index",
            "--find-links",
            str(dists),
            "--find-links",
            str(work / "dist"),
            "tether-myplugin[test]",
        )
        print(f"=== plugin template, copied to {plugin}, installed from wheels ===", flush=True)
        return subprocess.run(
            [str(env / "bin" / "python"), "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider"],
            cwd=plugin,
            env={**os.environ, "PATH": f"{env / 'bin'}{os.pathsep}{os.environ['PATH']}"},
        ).returncode


if __name__ == "__main__":
    sys.exit(main())

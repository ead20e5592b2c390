"""The release rules every distribution of this checkout follows (see CHANGELOG.md and the root
README's "Releases" section): one version, a range on every tether distribution it needs, the
license shipped and declared, the classifiers, READMEs that render on the package index."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKSPACE = tomllib.loads((ROOT / "pyproject.toml").read_text())
NOT_DISTRIBUTIONS = {"contrib/plugin-template"}  # copied out of the repository, never released


def distribution_dirs() -> list[Path]:
    dirs = [ROOT / "core", *sorted(ROOT.glob("plugins/*/")), *sorted(ROOT.glob("contrib/*/"))]
    return [
        d
        for d in dirs
        if (d / "pyproject.toml").is_file() and str(d.relative_to(ROOT)) not in NOT_DISTRIBUTIONS
    ]


DISTS = {d.name if d.name != "core" else "core": d for d in distribution_dirs()}


def project(d: Path) -> dict:
    return tomllib.loads((d / "pyproject.toml").read_text())["project"]


def release_version() -> str:
    return project(ROOT / "core")["version"]


def tether_requirements(meta: dict) -> list[str]:
    reqs = list(meta.get("dependencies", []))
    for items in meta.get("optional-dependencies", {}).values():
        reqs += items
    return [r for r in reqs if re.match(r"tether([-\[<>=!~;\s]|$)", r)]


@pytest.mark.parametrize("name", sorted(DISTS))
def test_one_version_for_every_distribution(name):
    assert project(DISTS[name])["version"] == release_version()


@pytest.mark.parametrize("name", sorted(DISTS))
def test_every_tether_requirement_has_the_release_range(name):
    major, minor = release_version().split(".")[:2]
    wanted = f">={major}.{minor},<{major}.{int(minor) + 1}"
    meta = project(DISTS[name])
    for req in tether_requirements(meta):
        if re.match(rf"{re.escape(meta['name'])}\[", req):
            continue  # an extra of itself (tether[testing] in tether's own test extra)
        assert req.endswith(wanted), f"{name}: {req!r} does not end with {wanted!r}"


@pytest.mark.parametrize("name", sorted(DISTS))
def test_license_shipped_and_declared(name):
    d = DISTS[name]
    meta = project(d)
    assert meta["license"] == "MIT"
    assert meta["license-files"] == ["LICENSE"]
    assert (d / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()


@pytest.mark.parametrize("name", sorted(DISTS))
def test_classifiers_and_authors(name):
    meta = project(DISTS[name])
    classifiers = meta["classifiers"]
    for wanted in (
        "Operating System :: POSIX :: Linux",
        "Typing :: Typed",
        "Programming Language :: Python :: 3 :: Only",
        "Programming Language :: Python :: 3.11",
    ):
        assert wanted in classifiers, f"{name}: missing classifier {wanted!r}"
    assert meta["authors"] and meta["keywords"]
    package = next((DISTS[name] / "src").glob("*/py.typed"), None)
    assert package is not None, f"{name} says Typing :: Typed but ships no py.typed"
    assert "urls" not in meta, "the project has no public address yet: no URL is better than a fake"


@pytest.mark.parametrize("name", sorted(DISTS))
def test_readme_has_no_relative_links(name):
    """The README is the long description on the index, where a relative link goes nowhere."""
    readme = (DISTS[name] / project(DISTS[name])["readme"]).read_text()
    # code is not a link: `[$$$C]($$$P) { $$$B }` is a pattern
    prose = re.sub(r"```.*?```|`[^`\n]*`", "", readme, flags=re.S)
    links = re.findall(r"\]\(([^)]+)\)", prose)
    relative = [link for link in links if not re.match(r"(https?://|#|mailto:)", link)]
    assert not relative, f"{name}: relative links {relative}"


def test_the_bench_extras_are_not_published():
    for name, d in DISTS.items():
        assert "bench" not in project(d).get("optional-dependencies", {}), name


def test_test_only_distributions_are_not_workspace_members():
    exclude = WORKSPACE["tool"]["uv"]["workspace"]["exclude"]
    assert "contrib/echo" in exclude and "contrib/plugin-template" in exclude


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed")
def test_the_readme_main_command_installs_no_test_only_plugin(tmp_path):
    readme = (ROOT / "README.md").read_text()
    block = next(b for b in re.findall(r"```sh\n(.*?)```", readme, re.S) if "uv sync" in b)
    sync = next(part for part in block.split("&&") if "uv sync" in part)
    args = shlex.split(sync.strip())
    env_vars = {k: v for k, _, v in (a.partition("=") for a in args if "=" in a and a[0].isupper())}
    args = [a for a in args if not ("=" in a and a[0].isupper())]
    assert args[:2] == ["uv", "sync"]
    out = subprocess.run(
        [*args, "--frozen", "--dry-run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **os.environ,
            **env_vars,
            "UV_PROJECT_ENVIRONMENT": str(tmp_path / "env"),
        },
    )
    assert out.returncode == 0, out.stderr
    plan = out.stdout + out.stderr
    assert "tether-lsp" in plan and "basedpyright" in plan
    assert "tether-echo" not in plan


# imports a distribution makes without declaring them, each for a stated reason
UNDECLARED_ON_PURPOSE = {
    ("tether", "pytest"): "tether.testing is a pytest plugin: only pytest ever imports it",
    ("tether-eval", "uv"): "%pip falls back to the uv package only when it happens to be there",
}


def imported_top_level(src: Path) -> set[str]:
    import ast

    names: set[str] = set()
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@pytest.mark.parametrize("name", sorted(DISTS))
def test_every_direct_import_is_declared(name):
    import sys
    from importlib.metadata import packages_distributions

    meta = project(DISTS[name])
    declared = {
        canonical(re.match(r"[A-Za-z0-9._-]+", r).group(0))
        for r in [
            *meta.get("dependencies", []),
            *[r for extra in meta.get("optional-dependencies", {}).values() for r in extra],
        ]
    }
    # its own packages, and its own top-level modules (the core's stdlib-only attach client)
    own = {p.stem for p in (DISTS[name] / "src").iterdir() if p.is_dir() or p.suffix == ".py"}
    providers = packages_distributions()
    missing = []
    for module in sorted(imported_top_level(DISTS[name] / "src") - own):
        if module in sys.stdlib_module_names or module == "__future__":
            continue
        if (meta["name"], module) in UNDECLARED_ON_PURPOSE:
            continue
        dists = {canonical(d) for d in providers.get(module, [module])}
        if not dists & declared:
            missing.append(f"{module} (from {', '.join(sorted(dists))})")
    assert not missing, f"{meta['name']} imports but does not declare: {missing}"


def test_the_plugin_template_stands_alone():
    """Copied out of the repository it must build: a range on the core, no workspace source."""
    pyproject = tomllib.loads((ROOT / "contrib" / "plugin-template" / "pyproject.toml").read_text())
    meta = pyproject["project"]
    assert any(re.fullmatch(r"tether>=\d+\.\d+,<\d+\.\d+", r) for r in meta["dependencies"])
    assert "sources" not in pyproject.get("tool", {}).get("uv", {})
    assert list(meta["entry-points"]["tether"]) == ["myplugin"]


def ci_script_part(start: str, end: str) -> str:
    """The lines of ``.ci/run`` from the one starting with ``start`` up to the one before ``end``."""
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(start))
    last = next(i for i, line in enumerate(lines) if i > first and line.startswith(end))
    return "\n".join(lines[first:last]) + "\n"


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed")
def test_ci_installs_its_test_extras_outside_the_workspace_environment():
    """``.ci/run`` syncs every extra (the test ones bring tether-echo) into an environment of its
    own: after CI, ``uv run tether tools`` in the checkout still has no test-only tool."""
    prologue = ci_script_part("#!", 'step "uv"')
    script = prologue + "uv sync --frozen --all-packages --all-extras --dry-run 2>&1\n"
    env = {
        k: v for k, v in os.environ.items() if k not in ("UV_PROJECT_ENVIRONMENT", "VIRTUAL_ENV")
    }
    out = subprocess.run(
        ["bash", "-c", script, str(ROOT / ".ci" / "run")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    where = re.search(r"Would (?:use|create) project environment at: (\S+)", out.stdout)
    assert where is not None, out.stdout
    target = Path(where[1]) if Path(where[1]).is_absolute() else ROOT / where[1]
    assert target.resolve() != (ROOT / ".venv").resolve(), out.stdout
    assert "tether-echo" in out.stdout  # the test extras do go somewhere: CI's own environment


def test_ci_runs_the_shared_conformance_check_only_beside_one(tmp_path):
    """A clone without a sibling ``../shared/`` passes CI's conformance step, saying it skipped."""
    step = ci_script_part('step "conformance"', "step ")
    clone = tmp_path / "clone"
    clone.mkdir()
    out = subprocess.run(
        ["bash", "-c", "set -euo pipefail\nstep() { :; }\n" + step],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "skipped" in out.stdout and "conformance.py" in out.stdout

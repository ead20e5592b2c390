"""A project's own environment answers for its roots (issue 25, item 6): from click's
``examples/`` a definition landed in tether's own environment, another click version. On a
trusted workdir a root with its own ``.venv`` gives its servers that interpreter; on an untrusted
one the harness's stays (docs/threat-model.md).

The project here has a ``.venv`` (made by ``uv venv``) holding its own ``attrs``, a tiny local
package with a ``define`` of its own — tether's environment has the real one.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_testkit import Caller, need, open_lsp_run

from tether.testing import require_real
from tether_lsp import BUILTIN_SERVERS

#: (server, its binary): every built-in server with a setting for the project's interpreter
SERVERS = [(spec.id, spec.command[0]) for spec in BUILTIN_SERVERS if spec.project_python_settings]

LOCAL_ATTRS = '"""The project\'s own attrs (a stand-in)."""\n\n\ndef define(cls):\n    return cls\n'


def _project(tmp_path: Path, venv_dir: str, nested: bool) -> tuple[Path, str]:
    """A workdir with a ``venv_dir`` holding a local ``attrs``, and a project using it: the
    workdir's own, or (``nested``) ``examples/demo`` with a pyproject.toml of its own (its root)
    and no environment of its own, as click's examples; returns the workdir and the using file."""
    uv = shutil.which("uv")
    require_real(uv is not None, "uv (to make the project's own environment)")
    assert uv is not None
    workdir = tmp_path / "work"
    project = workdir / "examples" / "demo" if nested else workdir
    project.mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    (project / "use.py").write_text("import attrs\n\nattrs.define\n")
    (workdir / "pyproject.toml").write_text('[project]\nname = "top"\nversion = "0"\n')
    subprocess.run(
        [uv, "venv", "-q", "--python", sys.executable, str(workdir / venv_dir)], check=True
    )
    site = next((workdir / venv_dir / "lib").glob("python3*/site-packages"))
    (site / "attrs").mkdir()
    (site / "attrs" / "__init__.py").write_text(LOCAL_ATTRS)
    rel = "examples/demo/use.py" if nested else "use.py"
    return workdir, rel


@pytest.mark.parametrize(("server", "binary"), SERVERS)
@pytest.mark.parametrize(
    ("venv_dir", "nested"), [(".venv", False), ("venv", False), (".venv", True), ("venv", True)]
)
def test_a_trusted_projects_own_environment_answers(
    tmp_path: Path, server: str, binary: str, venv_dir: str, nested: bool
) -> None:
    need(binary)
    workdir, rel = _project(tmp_path, venv_dir, nested)
    lsp = {"servers": {"python": [server]}}
    with open_lsp_run(workdir, lsp, trust_workdir=True) as run:
        answer = Caller(run).ok(action="definition", file=rel, line=3, symbol="define")
    assert answer.splitlines()[1].startswith(f"{venv_dir}/lib/"), answer
    assert "attrs/__init__.py:4:" in answer, answer


@pytest.mark.parametrize(("server", "binary"), SERVERS)
def test_an_untrusted_project_keeps_the_harness_interpreter(
    tmp_path: Path, server: str, binary: str
) -> None:
    need(binary)
    workdir, rel = _project(tmp_path, ".venv", False)
    lsp = {"servers": {"python": [server]}}
    with open_lsp_run(workdir, lsp) as run:
        answer = Caller(run).ok(action="definition", file=rel, line=3, symbol="define")
    rows = answer.splitlines()[1:]
    assert rows and not any(row.startswith(".venv/") for row in rows), answer
    assert "attrs/__init__.py:4:" not in answer, answer

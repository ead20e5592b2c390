"""tether.testing is a pytest plugin a suite asks for (``-p tether.testing`` or
``pytest_plugins``): a suite that does not ask gets nothing of it, and one that asks keeps its
own behaviour."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def run_pytest(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, str(where)],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_suite_that_does_not_ask_gets_none_of_it(tmp_path: Path) -> None:
    (tmp_path / "test_theirs.py").write_text(
        textwrap.dedent(
            """
            import sys

            def test_no_tether_in_this_suite(request):
                assert not request.config.pluginmanager.has_plugin("tether.testing")
                assert "tether.testing" not in sys.modules
                assert "tether_pm" not in request.fixturenames
            """
        )
    )
    out = run_pytest(tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    fixtures = run_pytest(tmp_path, "--fixtures")
    assert "open_test_run" not in fixtures.stdout


@pytest.mark.parametrize("how", ["-p", "conftest"])
def test_a_suite_that_asks_gets_the_fixtures(tmp_path: Path, how: str) -> None:
    (tmp_path / "test_ours.py").write_text(
        "def test_kit(tether_pm, tether_workdir):\n    assert tether_workdir.is_dir()\n"
    )
    if how == "conftest":
        (tmp_path / "conftest.py").write_text('pytest_plugins = ["tether.testing"]\n')
    out = run_pytest(tmp_path, *(["-p", "tether.testing"] if how == "-p" else []))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed" in out.stdout


def test_anyios_module_scoped_backend_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "test_theirs.py").write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.fixture(scope="module")
            async def shared(anyio_backend):
                return anyio_backend

            @pytest.mark.anyio
            async def test_a_module_scoped_async_fixture(shared):
                assert shared == "asyncio"
            """
        )
    )
    out = run_pytest(tmp_path, "-p", "tether.testing")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed" in out.stdout

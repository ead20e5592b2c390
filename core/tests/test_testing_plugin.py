"""tether.testing is loaded by every pytest run where tether is installed: it must not change
the behaviour of anyone else's tests."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


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
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed" in out.stdout

"""Fixtures for the debug family's tests: workdirs holding real fixture programs, and runs with
only the core and this plugin (exec calls auto-approved)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest

import tether
import tether_debug.hooks
from tether.processes.managed import is_alive
from tether.testing import require_real

pytest_plugins = ["tether.testing"]  # tether's test kit: opt-in, never loaded on its own

FIXTURES = Path(__file__).parent / "fixtures"
AUTO = {"approval": {"read": "auto", "write": "auto", "exec": "auto"}}

RunFactory = Callable[..., AbstractAsyncContextManager[tether.Run]]


@pytest.fixture
def py_workdir(tether_workdir: Path) -> Path:
    """A Python project: the fixture scripts and a pyproject.toml root marker."""
    require_real(importlib.util.find_spec("debugpy") is not None, "debugpy (pip install debugpy)")
    for script in FIXTURES.glob("*.py"):
        shutil.copy(script, tether_workdir / script.name)
    (tether_workdir / "pyproject.toml").write_text('[project]\nname = "fixture"\nversion = "0"\n')
    return tether_workdir


@pytest.fixture
def c_workdir(tether_workdir: Path) -> Path:
    """A C project: prog.c compiled with -g, and a CMakeLists.txt root marker."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    require_real(compiler is not None, "a C compiler (apt-get install gcc)")
    adapter = (
        shutil.which("lldb-dap") or shutil.which("lldb-vscode") or shutil.which("lldb-vscode-14")
    )
    require_real(adapter is not None, "lldb's DAP adapter (apt-get install lldb-14)")
    shutil.copy(FIXTURES / "prog.c", tether_workdir / "prog.c")
    (tether_workdir / "CMakeLists.txt").write_text(
        "project(fixture C)\nadd_executable(prog prog.c)\n"
    )
    assert compiler is not None
    subprocess.run(
        [compiler, "-g", "-O0", "-o", "prog", "prog.c"], cwd=tether_workdir, check=True, timeout=60
    )
    return tether_workdir


@attrs.frozen
class GoEnv:
    env: dict[str, str]
    #: fixtures/go built once per test module with delve's flags (-N -l), for attach tests
    binary: Path


@pytest.fixture(scope="module")
def go_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GoEnv]:
    """Go and delve, with a build cache, GOPATH and flags of this test module's own and no
    network. The fixture program is built once here with delve's flags, which also warms the
    cache: every launch's build (dlv builds again) then only links."""
    require_real(shutil.which("go") is not None, "Go (apt-get install golang-go)")
    require_real(shutil.which("dlv") is not None, "delve (apt-get install delve)")
    root = tmp_path_factory.mktemp("go-env")
    env = {
        "GOCACHE": str(root / "cache"),
        "GOPATH": str(root / "gopath"),
        "GOFLAGS": "",
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
        "GO111MODULE": "on",
    }
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        source = root / "src"
        shutil.copytree(FIXTURES / "go", source)
        binary = root / "fixture"
        subprocess.run(
            ["go", "build", "-gcflags=all=-N -l", "-o", str(binary), "."],
            cwd=source,
            check=True,
            timeout=600,
        )
        yield GoEnv(env, binary)


@pytest.fixture
def go_workdir(tether_workdir: Path, go_env: GoEnv) -> Path:
    """A Go module (go.mod root marker) holding fixtures/go/main.go."""
    for name in ("go.mod", "main.go"):
        shutil.copy(FIXTURES / "go" / name, tether_workdir / name)
    return tether_workdir


@pytest.fixture
def debug_run(open_test_run: RunFactory) -> RunFactory:
    """``async with debug_run(workdir, debug={...}, plugins=[...]) as run``."""

    @asynccontextmanager
    async def factory(
        workdir: Path, *, debug: dict[str, Any] | None = None, **kwargs: Any
    ) -> AsyncIterator[tether.Run]:
        plugins = [tether_debug.hooks, *kwargs.pop("plugins", [])]
        config = {"core": AUTO, "debug": {"stop_timeout_s": 20.0, **(debug or {})}}
        async with open_test_run(
            workdir=workdir, plugins=plugins, entry_points=False, config=config, **kwargs
        ) as run:
            yield run

    return factory


class DebugCalls:
    """Helpers for calling the debug tool and looking at the processes it owns."""

    @staticmethod
    async def ok(run: tether.Run, **args: Any) -> str:
        """Call the debug tool; fail the test on an error result."""
        result = await run.call("debug", args)
        assert not result.is_error, f"{args} -> {result.text_content}"
        return result.text_content

    @staticmethod
    async def error(run: tether.Run, **args: Any) -> str:
        """Call the debug tool; fail the test unless the result is an error."""
        result = await run.call("debug", args)
        assert result.is_error, f"{args} should have failed, got: {result.text_content}"
        return result.text_content

    @staticmethod
    def number_after(text: str, marker: str) -> int:
        """The integer that follows ``marker`` in ``text`` (e.g. "frame_id ")."""
        tail = text.split(marker, 1)[1]
        digits = ""
        for char in tail:
            if not char.isdigit():
                break
            digits += char
        return int(digits)

    @staticmethod
    def session_pids(run: tether.Run) -> set[int]:
        """The adapter, the debuggee and every descendant of the current session."""
        pids: set[int] = run.resources["debug_supervisor"].session.session_pids()
        return pids

    @staticmethod
    def alive(pids: set[int]) -> set[int]:
        return {pid for pid in pids if is_alive(pid)}


@pytest.fixture
def dbg() -> type[DebugCalls]:
    return DebugCalls

"""Rust binaries through lldb: a crate built with cargo (no project file tether needs beyond
its Cargo.toml) is recognised as Rust, stops on a breakpoint in its source, shows its frames and
evaluates its locals."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from tether.testing import require_real

pytestmark = pytest.mark.anyio

FIXTURE = Path(__file__).parent / "fixtures" / "rust"


@pytest.fixture
async def rust_workdir(tether_workdir: Path) -> Path:
    """fixtures/rust built with cargo (offline, debug profile) inside the workdir."""
    cargo = shutil.which("cargo")
    require_real(cargo is not None, "cargo (apt-get install cargo, or rustup)")
    adapter = (
        shutil.which("lldb-dap") or shutil.which("lldb-vscode") or shutil.which("lldb-vscode-14")
    )
    require_real(adapter is not None, "lldb's DAP adapter (apt-get install lldb-14)")
    assert cargo is not None
    shutil.copytree(FIXTURE, tether_workdir, dirs_exist_ok=True)
    with anyio.fail_after(300):
        await anyio.run_process([cargo, "build", "--offline", "-q"], cwd=tether_workdir)
    return tether_workdir


async def test_a_cargo_built_binary_stops_in_its_rust_source(
    dbg, debug_run, rust_workdir: Path
) -> None:
    async with debug_run(rust_workdir) as run:
        adapters = await dbg.ok(run, op="adapters")
        assert "- rust [Rust binaries (cargo build; through lldb);" in adapters, adapters
        await dbg.ok(run, op="breakpoints", file="src/main.rs", lines=[2], symbol="result")
        text = await dbg.ok(run, op="launch", program="target/debug/fixture")
        assert "with rust" in text, text
        assert "at src/main.rs:2 in " in text and "square" in text, text
        assert "let result = x * x;" in text, text
        value = await dbg.ok(run, op="evaluate", expression="x")
        assert value.startswith("1"), value
        stack = await dbg.ok(run, op="stack")
        assert "main" in stack.split("square", 1)[1], stack  # square called from main
        done = await dbg.ok(run, op="continue")
        assert "at src/main.rs:2" in done, done
        value = await dbg.ok(run, op="evaluate", expression="x")
        assert value.startswith("2"), value

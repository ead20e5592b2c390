"""Rust binaries through lldb: a crate built with cargo (no project file tether needs beyond
its Cargo.toml) is recognised as Rust, stops on a breakpoint in its source, shows its frames and
evaluates its locals."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import anyio
import pytest

from tether.testing import require_real
from tether_debug.adapters import Lldb, Rust

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
        # every frame's name reads as Rust, std's included (lldb 14 leaves legacy symbols half
        # decoded: "std::rt::lang_start::_$u7b$$u7b$closure$u7d$$u7d$::h0f3c…")
        assert "std::rt::lang_start" in stack, stack
        assert not re.search(r"::h[0-9a-f]{16}\b|\$(LT|GT|RF|C|SP|BP|LP|RP|u[0-9a-f]+)\$", stack), (
            stack
        )
        done = await dbg.ok(run, op="continue")
        assert "at src/main.rs:2" in done, done
        value = await dbg.ok(run, op="evaluate", expression="x")
        assert value.startswith("2"), value


#: legacy Rust symbols as lldb 14 shows them, and as rustc-demangle's alternate form reads them
LEGACY = {
    "_$LT$byteorder..BigEndian$u20$as$u20$byteorder..ByteOrder$GT$::read_u16::h9cc2f5e2e5a7b3c1": (
        "<byteorder::BigEndian as byteorder::ByteOrder>::read_u16"
    ),
    "std::rt::lang_start::_$u7b$$u7b$closure$u7d$$u7d$::h0123456789abcdef": (
        "std::rt::lang_start::{{closure}}"
    ),
    "_$LT$$RF$T$u20$as$u20$core..fmt..Display$GT$::fmt::h0123456789abcdef": (
        "<&T as core::fmt::Display>::fmt"
    ),
    "_$LT$alloc..vec..Vec$LT$T$C$A$GT$$u20$as$u20$core..ops..drop..Drop$GT$::drop::h00000000000000ff": (
        "<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop"
    ),
    "core::ops::function::FnOnce::call_once::h0123456789abcdef": (
        "core::ops::function::FnOnce::call_once"
    ),
    "_$LT$$BP$const$u20$T$u20$as$u20$core..fmt..Pointer$GT$::fmt::h0123456789abcdef": (
        "<*const T as core::fmt::Pointer>::fmt"
    ),
    # not Rust: unchanged
    "main": "main",
    "square(int)": "square(int)",
    "std::vector<int>::push_back(int const&)": "std::vector<int>::push_back(int const&)",
    "$x": "$x",
}


@pytest.mark.parametrize("shown", list(LEGACY))
def test_lldb_frame_names_read_as_rust(shown: str) -> None:
    assert Lldb().frame_name(shown) == LEGACY[shown]
    assert Rust().frame_name(shown) == LEGACY[shown]

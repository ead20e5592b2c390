"""Attach by pid to a running Python program (debugpy injects its debug server with gdb), and
what the machine needs said when it cannot."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from tether.processes.managed import kill_tree
from tether.testing import require_real

pytestmark = pytest.mark.anyio


@contextlib.asynccontextmanager
async def _forever(workdir: Path) -> AsyncIterator[anyio.abc.Process]:
    """The fixture's endless Python program, its tree killed at the end."""
    program = await anyio.open_process(
        [sys.executable, str(workdir / "forever.py")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield program
    finally:
        kill_tree(program.pid)
        await program.aclose()


async def test_attach_to_a_python_process_by_pid(dbg, debug_run, py_workdir: Path) -> None:
    require_real(shutil.which("gdb") is not None, "gdb (apt-get install gdb)")
    async with _forever(py_workdir) as program:
        await anyio.sleep(0.5)  # past the interpreter's start-up
        async with debug_run(py_workdir) as run:
            text = await dbg.ok(run, op="attach", pid=program.pid)
            assert text.startswith(f"Attached to pid {program.pid} with debugpy."), text
            assert "\n  thread_id 1: MainThread" in text
            await dbg.ok(run, op="breakpoints", file="forever.py", lines=[5])
            stopped = await dbg.ok(run, op="continue")
            assert stopped.startswith("Stopped (breakpoint) at forever.py:5 in <module>"), stopped
            assert (await dbg.ok(run, op="evaluate", expression="count > 0")).startswith(
                "True (bool)"
            )
            done = await dbg.ok(run, op="terminate")
            assert done.startswith(f"Terminated the debugpy session of pid {program.pid}: detached")
        await anyio.sleep(0.3)
        assert program.returncode is None  # detached, not killed


async def test_attach_by_pid_without_gdb_says_what_the_machine_needs(
    dbg, debug_run, py_workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with _forever(py_workdir) as program:
        empty = tmp_path / "bin"
        empty.mkdir()
        monkeypatch.setenv("PATH", str(empty))  # debugpy's injector finds no gdb
        async with debug_run(py_workdir, debug={"start_timeout_s": 8.0}) as run:
            text = await dbg.error(run, op="attach", pid=program.pid)
            assert text.startswith("attach failed: "), text
            assert (
                text.endswith(
                    "debugpy injects its debug server into the process with gdb: it needs gdb on "
                    "PATH and permission to ptrace the process (the same user and "
                    "kernel.yama.ptrace_scope 0, or root / CAP_SYS_PTRACE); here: gdb: not on PATH "
                    "(apt-get install gdb)"
                )
                or "; /proc/sys/kernel/yama/ptrace_scope is " in text
            ), text
        assert program.returncode is None


# gdb 13 on a CPU with AMX cannot write a process's registers, and debugpy's injection through
# it left the Python program it attached to dead (errno 514). tether asks gdb to set a vector
# register of a process of its own first. The real broken gdb is a matter of the machine (this
# suite's CI installs a working one), so here one speaks its words: gdb's batch output.
BROKEN_GDB = """#!/bin/sh
echo "Program stopped."
echo "0x00007ffff7fe4b70 in _start () from /lib64/ld-linux-x86-64.so.2"
echo "Couldn't write extended state status: Bad address."
echo '$1 = 0'
"""


async def test_attach_by_pid_with_a_gdb_that_cannot_write_registers_is_refused_untouched(
    dbg, debug_run, py_workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with _forever(py_workdir) as program:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        gdb = bin_dir / "gdb"
        gdb.write_text(BROKEN_GDB)
        gdb.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
        async with debug_run(py_workdir) as run:
            started = time.monotonic()
            text = await dbg.error(run, op="attach", pid=program.pid)
            took = time.monotonic() - started
            assert text.startswith(
                f"attach by pid refused before pid {program.pid} was touched: the gdb on PATH "
                f"({gdb}) cannot write a process's registers on this machine"
            ), text
            assert "(Couldn't write extended state status: Bad address.)" in text
            assert "gdb 14 or newer" in text and "attach by port" in text
            assert took < 10, took  # not the adapter's 20 s wait for an injection that failed
            status = await dbg.ok(run, op="status")
            assert "no debug session" in status.lower(), status
        await anyio.sleep(0.3)
        assert program.returncode is None  # never attached, never harmed

"""Kernels inside bubblewrap: they work, reach the bridge, and cannot write outside the workdir."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

import tether
import tether_eval.hooks
import tether_files.hooks
from tether.processes.managed import descendants, is_alive
from tether.testing import AUTO_APPROVE, require_real
from tether_bwrap import BwrapConfig, BwrapEnclosure, BwrapPlugin

pytestmark = pytest.mark.anyio

AUTO = AUTO_APPROVE["core"]["approval"]


def bwrap_works() -> bool:
    if shutil.which("bwrap") is None:
        return False
    probe = ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"]
    return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0


@pytest.fixture(scope="module")
def needs_bwrap() -> None:
    """Only the tests that start a real enclosure ask for this; the others run without bwrap."""
    require_real(bwrap_works(), "a working bubblewrap (`bwrap --unshare-all`, Debian bubblewrap)")


def run_with_bwrap(workdir: Path, **eval_config: object):
    return tether.open_run(
        workdir,
        plugins=[tether_eval.hooks, tether_files.hooks, BwrapPlugin()],
        config={"core": {"approval": AUTO}, "eval": {"idle_budget_s": 20.0, **eval_config}},
        entry_points=False,
    )


async def cell(run: tether.Run, code: str, language: str = "python") -> tether.ToolResult:
    return await run.call(
        "eval",
        {"code": code, "description": "check what the sandbox allows here", "language": language},
    )


@pytest.mark.usefixtures("needs_bwrap")
async def test_python_cell_cannot_write_outside_the_workdir(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    venv_probe = Path(sys.prefix) / "tether-bwrap-escape.txt"
    async with run_with_bwrap(workdir) as run:
        result = await cell(
            run,
            "import pathlib\n"
            "def attempt(path):\n"
            "    try:\n"
            "        pathlib.Path(path).write_text('escaped')\n"
            "        return 'written'\n"
            "    except OSError as exc:\n"
            "        return type(exc).__name__\n"
            "print('workdir', attempt('inside.txt'))\n"
            f"print('venv', attempt({str(venv_probe)!r}))\n"
            "print('etc', attempt('/etc/tether-escape'))\n"
            f"print('sibling', attempt({str(outside / 'x.txt')!r}))\n"
            "print('tmp', attempt('/tmp/tether-escape.txt'))",
        )
        assert not result.is_error, result.text_content
        lines = dict(line.split(" ", 1) for line in result.text_content.splitlines())
        assert lines["workdir"] == "written"
        assert lines["venv"] == "OSError"  # read-only file system
        assert lines["etc"] == "OSError"
        # The host's /tmp is replaced by a private one: the sibling dir does not even exist.
        assert lines["sibling"] == "FileNotFoundError"
        assert lines["tmp"] == "written"
    assert (workdir / "inside.txt").read_text() == "escaped"
    assert not venv_probe.exists()
    assert not Path("/etc/tether-escape").exists()
    assert list(outside.iterdir()) == []
    assert not Path("/tmp/tether-escape.txt").exists()


@pytest.mark.usefixtures("needs_bwrap")
async def test_bridge_and_state_work_inside(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("from the host\n")
    async with run_with_bwrap(tmp_path) as run:
        read = await cell(run, "x = str(tool('read', {'path': 'data.txt'}))\n'from the host' in x")
        assert read.text_content.strip() == "True", read.text_content
        wrapper = run.resources["eval_interpreters"].live("python")
        argv = Path(f"/proc/{wrapper.pid}/cmdline").read_bytes().split(b"\0")
        assert Path(argv[0].decode()).name == "bwrap"
        net = await cell(run, "import socket\nsorted(n for _, n in socket.if_nameindex())")
        assert net.text_content.strip() == "['lo']"
        js = await cell(
            run, "const fs = require('fs'); fs.readFileSync('data.txt', 'utf8')", "javascript"
        )
        assert js.text_content.strip() == "'from the host\\n'"
        denied = await cell(
            run,
            "try { require('fs').writeFileSync('/etc/tether-escape', 'x'); 'written' } "
            "catch (e) { e.code }",
            "javascript",
        )
        assert denied.text_content.strip() == "'EROFS'"


@pytest.mark.usefixtures("needs_bwrap")
async def test_interrupt_and_close_inside_the_enclosure(tmp_path: Path) -> None:
    async with run_with_bwrap(tmp_path, idle_budget_s=1.0) as run:
        await cell(run, "let kept = 3", "javascript")
        looped = await cell(run, "while (true) {}", "javascript")
        assert looped.meta.get("interrupted") is True, looped.text_content
        assert (await cell(run, "kept", "javascript")).text_content.strip() == "3"
        await cell(run, "y = 7")
        py_loop = await cell(run, "while True:\n    pass")
        assert py_loop.meta.get("interrupted") is True
        assert (await cell(run, "y")).text_content.strip() == "7"
        interpreters = run.resources["eval_interpreters"]
        roots = [interpreters.live(lang).pid for lang in ("python", "javascript")]
        tree = set(roots).union(*(descendants(p) for p in roots))
        assert len(tree) > 2
    with anyio.fail_after(5):
        while any(is_alive(p) for p in tree):
            await anyio.sleep(0.05)


async def test_enabled_without_bwrap_refuses_to_run_on_the_host(tmp_path: Path) -> None:
    plugin = BwrapPlugin(BwrapConfig(enabled=True, program="/nonexistent/bwrap"))
    async with tether.open_run(
        tmp_path,
        plugins=[tether_eval.hooks, plugin],
        config={"core": {"approval": AUTO}},
        entry_points=False,
    ) as run:
        result = await cell(run, "1 + 1")
        assert result.is_error
        assert "'/nonexistent/bwrap' was not found" in result.text_content
        assert run.resources["eval_interpreters"].live("python") is None


@pytest.mark.usefixtures("needs_bwrap")
async def test_config_table_enables_the_entry_point_plugin(tmp_path: Path) -> None:
    import tether_bwrap.hooks

    async with tether.open_run(
        tmp_path,
        plugins=[tether_eval.hooks, tether_bwrap.hooks],
        config={"core": {"approval": AUTO}, "bwrap": {"enabled": True}},
        entry_points=False,
    ) as run:
        result = await cell(run, "open('/etc/x', 'w')")
        assert result.is_error and "Read-only file system" in result.text_content
    async with tether.open_run(
        tmp_path,
        plugins=[tether_eval.hooks, tether_bwrap.hooks],
        config={"core": {"approval": AUTO}},
        entry_points=False,
    ) as run:
        assert run.pm.hook.tether_eval_enclosure(run=run) is None


def test_wrap_binds_only_what_it_must(tmp_path: Path) -> None:
    # wrap() only builds the command line, so any executable stands in for bwrap; it never runs.
    program = tmp_path / "bin" / "bwrap"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\nexit 99\n")
    program.chmod(0o755)
    argv = BwrapEnclosure(BwrapConfig(program=str(program))).wrap(
        ["python", "-V"],
        cwd=tmp_path,
        env={},
        reachable=[tmp_path, Path("/tmp/tether-x")],
        readable=[Path("/tmp/venv")],
    )
    assert argv[0] == str(program)
    binds = [argv[i + 1] for i, a in enumerate(argv) if a == "--bind"]
    assert binds == [str(tmp_path.resolve()), "/tmp/tether-x"]
    # Read-only binds come after the private /tmp, or a venv under /tmp would vanish.
    assert argv.index("/tmp/venv") > argv.index("--tmpfs")
    assert argv[argv.index("/tmp/venv") - 1] == "--ro-bind-try"
    assert argv[argv.index("--") + 1 :] == ["python", "-V"]
    assert "--share-net" not in argv

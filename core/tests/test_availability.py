"""Availability helpers against real files and real processes: roots, resolution, probes."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from tether.processes.availability import (
    CommandProbe,
    ProbeResult,
    find_local_command,
    find_root,
    informative_lines,
    not_found,
    resolve_command,
)
from tether.processes.managed import is_alive

pytestmark = pytest.mark.anyio


def script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_root_marker_above_the_start_dir_is_found(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    (workdir / "pkg" / "src" / "deep").mkdir(parents=True)
    (workdir / "pkg" / "pyproject.toml").write_text("")
    start = workdir / "pkg" / "src" / "deep" / "mod.py"
    start.write_text("")
    assert find_root(start, ("pyproject.toml",), workdir) == workdir / "pkg"
    assert find_root(start.parent, ("setup.py", "pyproject.toml"), workdir) == workdir / "pkg"


def test_the_workdir_itself_can_be_the_root(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("")
    (tmp_path / "cmd").mkdir()
    assert find_root(tmp_path / "cmd", ("go.mod",), tmp_path) == tmp_path
    assert find_root(tmp_path, ("go.mod",), tmp_path) == tmp_path


def test_a_root_marker_above_the_workdir_is_not_used(tmp_path: Path) -> None:
    (tmp_path / "Cargo.toml").write_text("")
    workdir = tmp_path / "work"
    (workdir / "src").mkdir(parents=True)
    assert find_root(workdir / "src", ("Cargo.toml",), workdir) is None
    # a start outside the workdir is never searched, even when it holds a marker
    assert find_root(tmp_path, ("Cargo.toml",), workdir) is None


def test_a_project_local_bin_wins_over_path_only_when_trusted(tmp_path: Path, monkeypatch) -> None:
    on_path = script(tmp_path / "path" / "tool-xyz", "exit 0")
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert resolve_command("tool-xyz", [tmp_path / "proj"], trust_local=True) == str(on_path)
    venv = script(tmp_path / "proj" / "venv" / "bin" / "tool-xyz", "exit 0")
    assert resolve_command("tool-xyz", [tmp_path / "proj"], trust_local=True) == str(venv)
    dotvenv = script(tmp_path / "proj" / ".venv" / "bin" / "tool-xyz", "exit 0")
    assert resolve_command("tool-xyz", [tmp_path / "proj"], trust_local=True) == str(dotvenv)
    # roots in order: the first root's copy wins
    other = script(tmp_path / "other" / "node_modules" / ".bin" / "tool-xyz", "exit 0")
    assert resolve_command(
        "tool-xyz", [tmp_path / "other", tmp_path / "proj"], trust_local=True
    ) == str(other)
    assert find_local_command("tool-xyz", [tmp_path / "nowhere"]) is None
    # not trusted (the default): a planted copy in the workdir is never what runs
    assert resolve_command("tool-xyz", [tmp_path / "other", tmp_path / "proj"]) == str(on_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert resolve_command("tool-xyz", [tmp_path / "proj"]) is None


def test_a_local_file_that_is_not_executable_is_skipped(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    plain = tmp_path / ".venv" / "bin" / "tool-xyz"
    plain.parent.mkdir(parents=True)
    plain.write_text("#!/bin/sh\n")
    assert resolve_command("tool-xyz", [tmp_path], trust_local=True) is None


def test_a_path_with_a_separator_is_checked_not_searched(tmp_path: Path) -> None:
    tool = script(tmp_path / "bin" / "tool-xyz", "exit 0")
    assert resolve_command(str(tool), [tmp_path]) == str(tool)
    assert resolve_command(str(tmp_path / "bin" / "absent"), [tmp_path]) is None
    assert resolve_command(str(tmp_path / "bin"), [tmp_path]) is None  # a directory


def test_tethers_own_environment_is_the_last_resort(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    found = resolve_command(Path(sys.executable).name, [tmp_path])
    assert found is not None and Path(found).parent == Path(sys.executable).parent


def test_a_missing_binary_resolves_to_nothing_and_says_where_it_looked(tmp_path: Path) -> None:
    assert resolve_command("absent-binary-xyz", [tmp_path]) is None
    here = f"PATH or the interpreter's directory ({Path(sys.executable).parent})"
    assert not_found("absent-binary-xyz", trust_local=True) == (
        f"`absent-binary-xyz` not found in .venv/bin, venv/bin, node_modules/.bin, {here}"
    )
    assert not_found("absent-binary-xyz") == (
        f"`absent-binary-xyz` not found on {here} (the workdir's .venv/bin, venv/bin, "
        "node_modules/.bin are used only when the harness trusts it: --trust-workdir)"
    )


async def test_a_working_command_probes_ok_once(open_test_run, tether_workdir: Path) -> None:
    counter = tether_workdir / "runs.txt"
    tool = script(tether_workdir / "ok-tool", f"echo x >> {counter}\nexit 0")
    async with open_test_run(entry_points=False) as run:
        probe = CommandProbe(run)
        assert await probe([str(tool), "--version"]) == ProbeResult(True, str(tool))
        assert await probe([str(tool), "--version"]) == ProbeResult(True, str(tool))
        assert counter.read_text() == "x\n"  # cached per argv
        await probe([str(tool), "--help"])
        assert counter.read_text() == "x\nx\n"
        probe.clear()
        await probe([str(tool), "--version"])
        assert counter.read_text() == "x\nx\nx\n"


async def test_a_command_that_exits_1_is_unusable_with_its_stderr(
    open_test_run, tether_workdir: Path
) -> None:
    shim = script(
        tether_workdir / "shim",
        "echo \"error: Unknown binary 'shim' in official toolchain 'stable'.\" >&2\n"
        "echo '' >&2\necho 'Stack backtrace:' >&2\necho '   0: anyhow::kind::Adhoc::new' >&2\n"
        "echo '  15: <unknown>' >&2\nexit 1",
    )
    async with open_test_run(entry_points=False) as run:
        ok, detail = await CommandProbe(run)([str(shim), "--version"])
    assert not ok
    assert detail == (
        "`shim --version` exited with code 1: "
        "error: Unknown binary 'shim' in official toolchain 'stable'."
    )


async def test_without_an_error_line_the_last_stderr_line_is_the_reason(
    open_test_run, tether_workdir: Path
) -> None:
    broken = script(
        tether_workdir / "broken",
        "echo 'loading' >&2\necho 'broken: libfoo.so.3: cannot open shared object' >&2\nexit 127",
    )
    quiet = script(tether_workdir / "quiet", "exit 2")
    async with open_test_run(entry_points=False) as run:
        probe = CommandProbe(run)
        assert await probe([str(broken)]) == ProbeResult(
            False, "`broken` exited with code 127: broken: libfoo.so.3: cannot open shared object"
        )
        assert await probe([str(quiet)]) == ProbeResult(
            False, "`quiet` exited with code 2: (no stderr)"
        )


async def test_a_hanging_command_is_stopped_at_the_timeout(
    open_test_run, tether_workdir: Path
) -> None:
    pid_file = tether_workdir / "pid"
    hang = script(tether_workdir / "hang", f"echo $$ > {pid_file}\nexec sleep 30")
    async with open_test_run(entry_points=False) as run:
        result = await CommandProbe(run, timeout_s=0.5)([str(hang)])
        assert result == ProbeResult(False, "`hang` did not finish within 0.5 s")
        assert not is_alive(int(pid_file.read_text()))


async def test_a_missing_binary_cannot_start(open_test_run, tether_workdir: Path) -> None:
    async with open_test_run(entry_points=False) as run:
        ok, detail = await CommandProbe(run)([str(tether_workdir / "absent"), "--version"])
    assert not ok
    assert detail == "`absent --version` cannot start: No such file or directory"


def test_informative_lines_of_a_python_traceback() -> None:
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "<string>", line 1, in <module>\n'
        "ModuleNotFoundError: No module named 'debugpy'\n"
    )
    assert informative_lines(stderr) == ["ModuleNotFoundError: No module named 'debugpy'"]
    assert informative_lines("  \n") == []
    assert informative_lines("error: first\n  2: recursion_error\nerror: last\n") == [
        "error: first",
        "error: last",
    ]

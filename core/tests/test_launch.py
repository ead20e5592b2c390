"""The sanitised launch (tether.processes.launch): on a workdir the harness does not trust, the programs of
the core's table start so that configuration the checkout carries runs no code — through
`Run.spawn` and `Run.run_command` alike, since both are the one spawn path. Real git and rustup."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest

import tether
from tether.processes.launch import PROFILES, LaunchRefused, Untrusted, declared, profile_for

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def payload(path: Path, mark: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\ntouch {mark}\nexit 1\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def repo(workdir: Path) -> None:
    (workdir / "a.txt").write_text("a\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "i"]):
        subprocess.run(
            ["git", "-c", "user.email=a@b", "-c", "user.name=n", *args], cwd=workdir, check=True
        )


def git_config(workdir: Path, key: str, value: str) -> None:
    subprocess.run(["git", "config", key, value], cwd=workdir, check=True)


@pytest.mark.parametrize("trusted", [False, True])
async def test_git_with_an_fsmonitor_in_the_repository_config(
    tmp_path: Path, trusted: bool
) -> None:
    workdir = tmp_path / "w"
    workdir.mkdir()
    repo(workdir)
    mark = tmp_path / "RAN"
    fsmonitor = payload(tmp_path / "fsmonitor", mark)
    git_config(workdir, "core.fsmonitor", str(fsmonitor))
    async with tether.open_run(workdir, entry_points=False, trust_workdir=trusted) as run:
        if trusted:  # what the checkout configured is what runs: the harness said so
            done = await run.run_command(["git", "ls-files"], timeout_s=30)
            assert done.ok and mark.exists()
            return
        with pytest.raises(LaunchRefused, match=r"sets `core\.fsmonitor`.*--trust-workdir"):
            await run.run_command(["git", "ls-files"], timeout_s=30)
        with pytest.raises(LaunchRefused, match=r"core\.fsmonitor"):
            await run.spawn(["git", "status"], cwd=workdir, stdin=False)
    assert not mark.exists()


async def test_git_on_a_plain_repository_runs_with_its_switches_off(tmp_path: Path) -> None:
    workdir = tmp_path / "w"
    workdir.mkdir()
    repo(workdir)
    mark = tmp_path / "RAN"
    payload(workdir / ".git" / "hooks" / "post-checkout", mark)
    async with tether.open_run(workdir, entry_points=False) as run:
        listed = await run.run_command(["git", "ls-files"], timeout_s=30)
        assert listed.ok and listed.text() == "a.txt\n"
        assert listed.argv[1:3] == ("-c", "safe.bareRepository=explicit")
        switched = await run.run_command(["git", "checkout", "-q", "-b", "x"], timeout_s=30)
        assert switched.ok, switched.stderr
    assert not mark.exists()  # core.hooksPath=/dev/null: the planted hook never ran


@pytest.mark.skipif(shutil.which("rustup") is None, reason="needs rustup")
@pytest.mark.parametrize("trusted", [False, True])
async def test_a_rust_toolchain_file_cannot_choose_the_toolchain(
    tmp_path: Path, trusted: bool
) -> None:
    workdir = tmp_path / "w"
    mark = tmp_path / "RAN"
    payload(workdir / "tc" / "bin" / "rustc", mark)
    (workdir / "rust-toolchain.toml").write_text('[toolchain]\npath = "/proc/self/cwd/tc"\n')
    async with tether.open_run(workdir, entry_points=False, trust_workdir=trusted) as run:
        done = await run.run_command(["rustc", "--version"], timeout_s=60)
    if trusted:
        assert mark.exists() and not done.ok
    else:
        assert done.ok and done.text().startswith("rustc "), done.stderr
        assert not mark.exists()


def test_every_profile_says_what_it_closes() -> None:
    for profile in PROFILES:
        assert profile.risk and profile.closed_by, profile
        for program in profile.programs:
            assert profile_for(f"/some/bin/{program}") is profile


def test_a_declaration_that_nothing_closes_is_unavailable_and_says_how_to_allow() -> None:
    assert declared(None).refusal("x") == (
        "x is unavailable on an untrusted workdir: its spec declares nothing about what the "
        "workdir can make it run (`untrusted`); allow with --trust-workdir / "
        "open_run(trust_workdir=True)"
    )
    assert Untrusted().refusal("x") is None
    assert Untrusted(risk="r", closed_by="c").refusal("x") is None
    assert "unavailable" in (Untrusted(risk="r").refusal("x") or "")

"""The search's processes are the run's: git runs as its child, the forked workers are adopted by
its process owner (and released once reaped, so a reused pid is never killed)."""

from __future__ import annotations

import os
import shutil

import anyio
import pytest

from tether.processes.managed import is_alive

pytestmark = pytest.mark.anyio

WORKERS = {"workers": 2, "parallel_min_files": 10}


async def test_git_runs_as_a_child_of_the_run(astgrep_run, tether_workdir, tmp_path, monkeypatch):
    real = shutil.which("git")
    assert real is not None
    seen = tmp_path / "git-owners"
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "$TETHER_OWNER" >> {seen}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    await anyio.run_process([real, "init", "-q", str(tether_workdir)])
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    async with astgrep_run({"a.py": "f(1)\n", "b.py": "f(2)\n"}) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        assert not result.is_error, result.text_content
        assert result.meta["total"] == 2
        owners = seen.read_text().split()
        assert owners and all(o.startswith(f"{run.owner}/") for o in owners), owners


@pytest.mark.parametrize("where", ["no checkout", "checkout", "checkout above", "linked"])
async def test_git_is_asked_only_where_it_can_find_a_checkout(
    astgrep_run, tether_workdir, tmp_path, monkeypatch, where
):
    """Outside any checkout `git ls-files` only fails: the walk lists the files, and no git
    process is started (on an untrusted workdir, two per search). Inside one, found from the
    workdir, a directory above it, or through a symbolic link, git lists them."""
    real = shutil.which("git")
    assert real is not None
    seen = tmp_path / "git-calls"
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {seen}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    if where == "checkout":
        await anyio.run_process([real, "init", "-q", str(tether_workdir)])
    elif where in ("checkout above", "linked"):
        await anyio.run_process([real, "init", "-q", str(tether_workdir.parent)])
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    kw = {}
    if where == "linked":  # the run's workdir is a link: git finds the checkout all the same
        link = tmp_path.parent / f"{tmp_path.name}-link"
        link.symlink_to(tether_workdir)
        kw["workdir"] = link
    async with astgrep_run({"a.py": "f(1)\n", "b.py": "f(2)\n"}, **kw) as run:
        result = await run.call("ast_grep", {"pattern": "f($A)"})
        assert not result.is_error, result.text_content
        assert result.meta["total"] == 2
    calls = seen.read_text().splitlines() if seen.exists() else []
    if where == "no checkout":
        assert calls == []
    else:
        assert any("ls-files" in c for c in calls), calls


async def test_workers_are_adopted_while_they_run_and_released_once_reaped(
    astgrep_run, worker_start
):
    files = {f"m{i:02}.py": f"f({i})\n" for i in range(20)}
    async with astgrep_run(files, config={"astgrep": WORKERS}) as run:
        await run.call("ast_grep", {"pattern": "f($A)"})
        service = run.resources["astgrep_service"]
        pids = service.worker_pids
        assert len(pids) == 2 and all(is_alive(p) for p in pids)
        assert set(pids) <= run.process_owner.adopted
        await service.aclose()
        assert not set(pids) & run.process_owner.adopted  # reaped: not the close's to kill
        assert not any(is_alive(p) for p in pids)

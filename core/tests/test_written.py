"""Every result says which files its call wrote: from the core's writers, or declared."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

import tether
import tether_echo.hooks
import tether_files.hooks
from tether.testing import AUTO_APPROVE

pytestmark = pytest.mark.anyio


@attrs.frozen
class Args:
    target: str = tether.arg(description="where to write")


async def writes_by_hand(call, args):
    # not through tether.workdir.writing: the tool declares how its written paths are known
    (call.run.workdir / args.target).write_text("by hand")
    return "done"


class Provides:
    def __init__(self, *specs):
        self.specs = specs

    @tether.hookimpl
    def tether_tools(self, run):
        return list(self.specs)


async def test_written_paths_come_from_the_core_writers_and_from_declarations(tmp_path):
    declared = tether.ToolSpec(
        "by_hand", "write", Args, writes_by_hand, "Writes by hand.", writes="target"
    )
    undeclared = tether.ToolSpec("silent", "write", Args, writes_by_hand, "Writes silently.")
    plugins = [tether_echo.hooks, tether_files.hooks, Provides(declared, undeclared)]
    async with tether.open_run(
        tmp_path, entry_points=False, plugins=plugins, config=AUTO_APPROVE
    ) as run:
        workdir = run.workdir
        echo = await run.call("echo_write", {"path": "a.txt", "text": "x"})
        assert echo.written == (workdir / "a.txt",)
        patch = await run.call(
            "apply_patch",
            {
                "patch": "--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+b\n"
                "--- /dev/null\n+++ b/c/d.txt\n@@ -0,0 +1 @@\n+d\n"
            },
        )
        assert not patch.is_error, patch.text_content
        assert set(patch.written) == {workdir / "b.txt", workdir / "c" / "d.txt"}
        assert (await run.call("by_hand", {"target": "e.txt"})).written == (workdir / "e.txt",)
        assert (await run.call("silent", {"target": "f.txt"})).written == ()
        assert (await run.call("echo", {"message": "m"})).written == ()
        assert (await run.call("read", {"path": "a.txt"})).written == ()
    assert Path(tmp_path / "e.txt").read_text() == "by hand"


async def test_results_say_what_each_written_file_held_before(tmp_path):
    declared = tether.ToolSpec(
        "by_hand", "write", Args, writes_by_hand, "Writes by hand.", writes="target"
    )
    plugins = [tether_echo.hooks, tether_files.hooks, Provides(declared)]
    async with tether.open_run(
        tmp_path, entry_points=False, plugins=plugins, config=AUTO_APPROVE
    ) as run:
        workdir = run.workdir
        created = await run.call("echo_write", {"path": "a.txt", "text": "one"})
        assert created.before == {workdir / "a.txt": None}
        replaced = await run.call("echo_write", {"path": "a.txt", "text": "two"})
        assert replaced.before == {workdir / "a.txt": b"one"}
        patch = await run.call(
            "apply_patch",
            {
                "patch": "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-two\n\\ No newline at end of file\n"
                "+three\n--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+b\n"
            },
        )
        assert not patch.is_error, patch.text_content
        assert patch.before == {workdir / "a.txt": b"two", workdir / "b.txt": None}
        (workdir / "e.txt").write_text("before")
        by_hand = await run.call("by_hand", {"target": "e.txt"})
        # read by the core just before the handler ran
        assert by_hand.before == {workdir / "e.txt": b"before"}
        assert (await run.call("read", {"path": "a.txt"})).before == {}

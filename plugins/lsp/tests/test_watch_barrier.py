"""The root's watch (issue 25, item 4's cost): a query stats only the files inotify says changed,
and its barrier proves that every change another process finished before the query is among
them — the promise the per-query scan kept, at a fraction of its cost on a big tree.

A separate process (a real writer, not this one) changes files and exits; the very next call
must name each change, every round; what the watch cannot follow exactly (a directory removed or
moved) answers None so the caller scans, and the watch goes on.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from lsp_testkit import Caller, need, open_lsp_run

from tether_lsp.documents import skipped_dir
from tether_lsp.tools import RESOURCE
from tether_lsp.watch import TreeWatch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")

WRITER = """
import os, pathlib, sys
for spec in sys.argv[1:]:
    op, _, path = spec.partition(":")
    target = pathlib.Path(path)
    if op == "write":
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("x = 1\\n")
    elif op == "remove":
        target.unlink()
    elif op == "rmdir":
        import shutil
        shutil.rmtree(target)
    elif op == "move":
        source, _, dest = path.partition("=>")
        os.rename(source, dest)
"""


def _run(*specs: str) -> None:
    subprocess.run([sys.executable, "-c", WRITER, *specs], check=True)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for rel in ("a.py", "pkg/b.py", "pkg/deep/c.py", ".git/x.py", "node_modules/m/y.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    return tmp_path


def test_every_change_a_finished_process_made_is_seen_by_the_next_call(tree: Path) -> None:
    watch = TreeWatch(str(tree), skipped_dir)
    try:
        assert watch.changed() == set()
        for round_ in range(30):
            rel = ["a.py", "pkg/b.py", "pkg/deep/c.py"][round_ % 3]
            _run(f"write:{tree / rel}")
            assert str(tree / rel) in (watch.changed() or set()), (round_, rel)
        # a new directory with files made at once: its files were written before its watch
        _run(f"write:{tree / 'new/sub/d.py'}", f"write:{tree / 'new/e.py'}")
        seen = watch.changed() or set()
        assert {str(tree / "new/sub/d.py"), str(tree / "new/e.py")} <= seen, seen
        # ... and is watched from then on
        _run(f"write:{tree / 'new/sub/d.py'}")
        assert str(tree / "new/sub/d.py") in (watch.changed() or set())
        _run(f"remove:{tree / 'a.py'}")
        assert str(tree / "a.py") in (watch.changed() or set())
        # skipped directories are not watched
        _run(f"write:{tree / '.git/x.py'}", f"write:{tree / 'node_modules/m/y.py'}")
        assert watch.changed() == set()
    finally:
        watch.close()


@pytest.mark.parametrize("op", ["rmdir", "move"])
def test_a_directory_removed_or_moved_makes_the_caller_scan(tree: Path, op: str) -> None:
    watch = TreeWatch(str(tree), skipped_dir)
    try:
        spec = f"rmdir:{tree / 'pkg'}" if op == "rmdir" else f"move:{tree / 'pkg'}=>{tree / 'q'}"
        _run(spec)
        assert watch.changed() is None  # the caller scans the whole root
        # rebuilt on the new tree: later changes are seen again
        moved = tree / ("q/b.py" if op == "move" else "a.py")
        _run(f"write:{moved}")
        assert str(moved) in (watch.changed() or set())
    finally:
        watch.close()


def test_each_query_answers_for_the_text_another_process_just_wrote(tmp_path: Path) -> None:
    """Through a real basedpyright: a separate process inserts a line above a function, and the
    very next ``definition`` gives its new line, round after round — answered by the watch (the
    client has one), not by a scan."""
    need("basedpyright-langserver")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "w"\nversion = "0"\n')
    (tmp_path / "lib.py").write_text("def target():\n    return 1\n")
    (tmp_path / "use.py").write_text("from lib import target\n\ntarget()\n")
    with open_lsp_run(tmp_path, {"servers": {"python": ["basedpyright"]}}) as run:
        caller = Caller(run)
        first = caller.ok(action="definition", file="use.py", line=3, symbol="target")
        assert "lib.py:1:" in first, first
        supervisor = run.resource(RESOURCE)
        assert all(client.watch is not None for client in supervisor.clients)
        for round_ in range(1, 11):
            text = "# pad\n" * round_ + "def target():\n    return 1\n"
            subprocess.run(
                [sys.executable, "-c", INSERT, str(tmp_path / "lib.py"), text], check=True
            )
            answer = caller.ok(action="definition", file="use.py", line=3, symbol="target")
            assert f"lib.py:{round_ + 1}:" in answer, (round_, answer)


INSERT = "import pathlib, sys\npathlib.Path(sys.argv[1]).write_text(sys.argv[2])\n"


def test_a_watch_closed_while_a_query_holds_it_is_closed_after_and_never_read_again(
    tree: Path,
) -> None:
    watch = TreeWatch(str(tree), skipped_dir)
    watch._lock.acquire()  # a query in another thread, inside changed()
    watch.close()  # the event loop does not wait for it
    assert watch._fd >= 0
    watch._lock.release()
    assert watch.changed() is None  # closed now: the caller scans
    assert watch._fd < 0 and not Path(watch._barrier).exists()


@pytest.mark.parametrize("watched", [True, False], ids=["watch", "scan"])
def test_an_open_document_another_process_rewrote_is_answered_on_its_new_text(
    tmp_path: Path, watched: bool
) -> None:
    """The refresh before a query looks at the open documents in the same trip off the event
    loop as at the root's changed files: a rewrite of the open file alone (no file event) and,
    in the same round, of another file (events first, then the open ones again) are both seen
    by the next query — with the watch, and with the scan that stands in when there is none."""
    need("basedpyright-langserver")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "w"\nversion = "0"\n')
    (tmp_path / "lib.py").write_text("def target():\n    return 1\n")
    use = "from lib import target\n\ndef local():\n    return 1\n\nlocal()\ntarget()\n"
    (tmp_path / "use.py").write_text(use)
    with open_lsp_run(tmp_path, {"servers": {"python": ["basedpyright"]}}) as run:
        caller = Caller(run)
        first = caller.ok(action="definition", file="use.py", line=6, symbol="local")
        assert "use.py:3:" in first, first
        if not watched:
            for client in run.resource(RESOURCE).clients:
                client.close_watch()
        for pad in range(1, 5):
            padding = "# pad\n" * pad
            subprocess.run(
                [sys.executable, "-c", INSERT, str(tmp_path / "use.py"), padding + use], check=True
            )
            if pad % 2 == 0:  # another file too: the open one is looked at after its event
                lib = padding + "def target():\n    return 1\n"
                subprocess.run(
                    [sys.executable, "-c", INSERT, str(tmp_path / "lib.py"), lib], check=True
                )
                answer = caller.ok(
                    action="definition", file="use.py", line=pad + 7, symbol="target"
                )
                assert f"lib.py:{pad + 1}:" in answer, (pad, answer)
            answer = caller.ok(action="definition", file="use.py", line=pad + 6, symbol="local")
            assert f"use.py:{pad + 3}:" in answer, (pad, answer)


#: changes another process makes under a watched root, and whether :meth:`TreeWatch.quiet` may
#: still say nothing changed (only a skipped directory's)
QUIET_CASES = [
    ("write", "a.py", False),
    ("write", "pkg/deep/c.py", False),
    ("write", "pkg/new.py", False),
    ("remove", "pkg/b.py", False),
    ("write", "newdir/d.py", False),
    ("rmdir", "pkg/deep", False),
    ("write", ".git/x.py", True),
    ("write", "node_modules/m/y.py", True),
]


@pytest.mark.parametrize(("op", "rel", "quiet"), QUIET_CASES, ids=[c[1] for c in QUIET_CASES])
def test_quiet_says_nothing_changed_only_when_nothing_did_and_reads_no_change(
    tree: Path, op: str, rel: str, quiet: bool
) -> None:
    """The event loop's look (no wait, no directory read): True only when the barrier's event
    is all there is; a change is left queued, so the next :meth:`changed` still names it (or
    says to scan)."""
    watch = TreeWatch(str(tree), skipped_dir)
    try:
        assert watch.quiet() and watch.quiet()  # again and again: the barrier's event is read
        _run(f"{op}:{tree / rel}")
        assert watch.quiet() is quiet
        if not quiet:
            assert not watch.quiet()  # still queued: nothing was read
            found = watch.changed()
            assert found is None or str(tree / rel) in found, found
        assert watch.quiet()  # all read: quiet again
    finally:
        watch.close()


def test_quiet_that_reads_an_event_not_its_own_makes_the_next_call_scan(tree: Path) -> None:
    watch = TreeWatch(str(tree), skipped_dir)
    try:
        watch._barrier_wd = -2  # its own event no longer recognised: whatever it read is lost
        assert not watch.quiet()
        assert watch.changed() is None  # the caller scans; the watch is rebuilt
        assert watch.quiet()
    finally:
        watch.close()


#: how another process changes the open document ``use.py`` between two queries: each must be
#: seen by the next one, whether the root's watch sees it or not (a hard link elsewhere: only
#: the document's own lstat does)
OPEN_CHANGES = ["rewrite the same size", "through a hard link outside the workdir", "rename over"]

CHANGE = """
import os, pathlib, sys
how, path, text, link = sys.argv[1:5]
if how == "rename over":
    tmp = path + ".tmp"
    pathlib.Path(tmp).write_text(text)
    os.replace(tmp, path)
else:
    with open(link if how.startswith("through") else path, "r+") as f:  # the same inode
        f.write(text)
        f.truncate()
"""


def test_an_open_document_changed_by_another_process_is_seen_by_the_next_query_every_way(
    tmp_path: Path,
) -> None:
    """Queries on an unchanged disk refresh on the event loop (the watch quiet, every open
    document's lstat as it was synced); each way another process changes the open document
    makes the next query look again and answer on the new text — a change through a hard link
    outside the workdir too, which no inotify watch of the root sees."""
    need("basedpyright-langserver")
    workdir = tmp_path / "w"
    workdir.mkdir()
    (workdir / "pyproject.toml").write_text('[project]\nname = "w"\nversion = "0"\n')
    use = workdir / "use.py"
    use.write_text(_named("aaaa"))
    link = tmp_path / "elsewhere" / "link.py"
    link.parent.mkdir()
    link.hardlink_to(use)
    with open_lsp_run(workdir, {"servers": {"python": ["basedpyright"]}}) as run:
        caller = Caller(run)
        assert "aaaa" in caller.ok(action="hover", file="use.py", line=4, symbol="aaaa")
        for round_, how in enumerate(OPEN_CHANGES * 2):
            name = "bcde"[round_ % 4] * 4  # the same length: the same size
            subprocess.run(
                [sys.executable, "-c", CHANGE, how, str(use), _named(name), str(link)], check=True
            )
            if how == "rename over":  # the link is now another file: make it this one again
                link.unlink()
                link.hardlink_to(use)
            answer = caller.ok(action="hover", file="use.py", line=4, symbol=name)
            assert name in answer, (how, answer)


def _named(name: str) -> str:
    return f"def {name}() -> int:\n    return 1\n\n{name}()\n"

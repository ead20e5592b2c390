"""Write attacks: confinement re-checked at the moment of writing, a forged journal, and random
SIGKILLs during multi-file changes (``apply_patch`` of 300 files, an ``ast_edit`` + ``resolve``
of 40 files, a rename-sized change of 12 files through the core's apply), each followed by
recovery: every file all old or all new, no byte lost, no temp file or created directory left.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

import tether
from tether.workdir.journal import recover, state_dir

WRITE = {"core": {"approval": {"read": "auto", "write": "auto", "exec": "deny"}}}


def tree(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = f"-> {os.readlink(path)}"
            elif path.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = path.read_bytes()
    return out


def session(work: Path, *flags: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether.cli", "session", f"--workdir={work}", *flags],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert json.loads(proc.stdout.readline())["ready"] is True  # the session's first line
    return proc


def ask(proc: subprocess.Popen[str], n: int, tool: str, args: dict) -> dict:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"id": n, "tool": tool, "args": args}) + "\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


# --- confinement at the moment of writing -------------------------------------------------------


def test_resolve_after_its_directory_became_a_symlink_writes_nothing_outside(tmp_path, tally):
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "m.py").write_text("dispose(a)\n")
    proc = session(work, "--approve=write")
    try:
        staged = ask(proc, 1, "ast_edit", {"pattern": "dispose($X)", "rewrite": "$X.dispose()"})
        assert not staged["is_error"] and staged["meta"]["edit_id"] == "edit_1", staged
        shutil.copytree(work / "sub", outside)  # the same content, outside the workdir
        shutil.rmtree(work / "sub")
        (work / "sub").symlink_to(outside)
        before = tree(outside)
        reply = ask(proc, 2, "resolve", {"edit_id": "edit_1", "action": "accept"})
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(timeout=30)
    held = reply["is_error"] and tree(outside) == before
    tally.record("escapes", held=held)
    assert reply["is_error"] and "symlink" in reply["content"][0]["text"], reply
    assert tree(outside) == before
    assert not [n for n in tree(work) if ".tether-" in n]


def test_a_directory_flipping_to_a_symlink_during_writes_never_lets_one_out(tmp_path, tally):
    """A thread swaps sub/ for a symlink to an outside copy and back, as fast as it can, while
    write, edit and apply_patch write into sub/ again and again: none may land outside."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "f.txt").write_text("a\n")
    shutil.copytree(work / "sub", outside)
    stop = threading.Event()

    flips = 0

    def flip() -> None:
        nonlocal flips
        real, sub = work / "sub.real", work / "sub"
        while not stop.is_set():
            try:
                sub.rename(real)
                sub.symlink_to(outside)
                time.sleep(0.0005)
                sub.unlink()
                real.rename(sub)
                flips += 1
            except OSError:  # a write created sub/ afresh in the instant it was missing
                with contextlib.suppress(OSError):
                    if sub.is_symlink():
                        sub.unlink()
                    elif sub.is_dir() and real.is_dir():
                        shutil.rmtree(sub)
                    if real.is_dir() and not sub.exists():
                        real.rename(sub)
            time.sleep(0.0005)

    import tether_files.hooks as files_hooks

    async def attack_calls() -> int:
        async with tether.open_run(
            work, entry_points=False, plugins=[files_hooks], config=WRITE
        ) as run:
            flipper = threading.Thread(target=flip)
            flipper.start()
            n, deadline = 0, time.monotonic() + 120
            try:
                # at least 150 calls, and on until the flipper has flipped often enough
                # for the race to mean something: a loaded machine gives it fewer turns
                while n < 150 or (flips <= 50 and time.monotonic() < deadline):
                    kind = n % 3
                    if kind == 0:
                        await run.call("write", {"path": "sub/f.txt", "content": f"w{n}\n"})
                    elif kind == 1:
                        await run.call("write", {"path": "sub/new.txt", "content": f"n{n}\n"})
                    else:
                        patch = f"--- /dev/null\n+++ b/sub/p{n}.txt\n@@ -0,0 +1 @@\n+p\n"
                        await run.call("apply_patch", {"patch": patch})
                    n += 1
            finally:
                stop.set()
                flipper.join()
        return n

    tries = anyio.run(attack_calls)
    escaped = sorted(set(tree(outside)) - {"f.txt"}) + (
        ["f.txt changed"] if (outside / "f.txt").read_text() != "a\n" else []
    )
    tally.record("escapes", held=not escaped)
    assert tries >= 150 and flips > 50 and not escaped, (tries, flips, escaped)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_forged_journal_applies_nothing(tmp_path, tally):
    """Entries that climb out, pass a symlink, or do not match the files are refused by
    ``tether recover``; a journal planted in the workdir is never read."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (outside / "victim.txt").write_text("precious\n")
    (work / "link").symlink_to(outside)
    (work / "own.txt").write_text("mine\n")
    payload = b"owned\n"
    directory = state_dir(work.resolve())
    directory.mkdir(parents=True, mode=0o700)
    directory.parent.chmod(0o700)
    entries = [
        ("../outside/victim.txt", b"precious\n"),
        ("link/victim.txt", b"precious\n"),
        (str(outside / "victim.txt"), b"precious\n"),
        ("own.txt", b"not what it holds\n"),
    ]
    for n, (path, before) in enumerate(entries):
        change = f"forged{n}"
        (work / f".{change}.0.tether-tmp").write_bytes(payload)
        record = {"version": 1, "id": change, "root": str(work.resolve()), "dirs": []}
        record["entries"] = [{"path": path, "before": sha(before), "after": sha(payload)}]
        (directory / f"{change}.json").write_text(json.dumps(record))
        (directory / f"{change}.committed").touch()
    # inside the workdir, where a write tool could put it: never consulted
    (work / ".tether").mkdir()
    (work / ".tether" / "journal.json").write_text(json.dumps(record))
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli", "recover", f"--workdir={work}"],
        capture_output=True,
        text=True,
    )
    held = (
        done.returncode == 1
        and (outside / "victim.txt").read_text() == "precious\n"
        and (work / "own.txt").read_text() == "mine\n"
        and sorted(os.listdir(outside)) == ["victim.txt"]
    )
    tally.record("escapes", held=held)
    assert held, (done.stdout, done.stderr)
    assert done.stdout.count("left alone") == 4
    # the refused entries' planted files are not recovery's to touch; the one beside own.txt was
    assert ".forged3.0.tether-tmp" not in os.listdir(work)


# --- random kills during multi-file changes -----------------------------------------------------


def seed_patch_tree(work: Path) -> None:
    (work / "src").mkdir(parents=True)
    for i in range(300):
        (work / "src" / f"f{i}.txt").write_text(f"line one {i}\nold {i}\nline three\n")


def change_apply_patch(work: Path) -> None:
    """300 files changed and 20 created in 4 new directories, by one ``apply_patch``."""
    import tether_files.hooks as files_hooks

    patch = "".join(
        f"--- a/src/f{i}.txt\n+++ b/src/f{i}.txt\n@@ -1,3 +1,3 @@\n"
        f" line one {i}\n-old {i}\n+new {i}\n line three\n"
        for i in range(300)
    )
    patch += "".join(
        f"--- /dev/null\n+++ b/new/d{i % 4}/n{i}.txt\n@@ -0,0 +1 @@\n+fresh {i}\n"
        for i in range(20)
    )

    async def main(ready: Callable[[], None]) -> None:
        async with tether.open_run(
            work, entry_points=False, plugins=[files_hooks], config=WRITE
        ) as run:
            ready()
            result = await run.call("apply_patch", {"patch": patch})
            assert not result.is_error, result.text_content

    run_child(main)


def seed_resolve_tree(work: Path) -> None:
    work.mkdir(parents=True)
    for i in range(40):
        (work / f"m{i}.py").write_text(f"dispose(v{i})\nkeep({i})\n" * 5)


def change_resolve(work: Path) -> None:
    """An ``ast_edit`` over 40 files, accepted with ``resolve``."""
    import tether_astgrep.hooks as astgrep_hooks

    async def main(ready: Callable[[], None]) -> None:
        async with tether.open_run(
            work, entry_points=False, plugins=[astgrep_hooks], config=WRITE
        ) as run:
            staged = await run.call(
                "ast_edit", {"pattern": "dispose($X)", "rewrite": "$X.dispose()"}
            )
            assert not staged.is_error, staged.text_content
            ready()
            done = await run.call(
                "resolve", {"edit_id": staged.meta["edit_id"], "action": "accept"}
            )
            assert not done.is_error, done.text_content

    run_child(main)


def seed_rename_tree(work: Path) -> None:
    (work / "pkg").mkdir(parents=True)
    for i in range(12):
        (work / "pkg" / f"p{i}.py").write_text(f"def shape_{i}():\n    return shape({i})\n" * 20)


def change_rename_sized(work: Path) -> None:
    """What ``lsp_rename`` hands the core: one WorkspaceEdit over 12 files, through the same
    ``apply_changes`` (the server itself is not needed to kill the write)."""
    from tether.workdir.writing import FileChange, apply_changes

    changes = []
    for path in sorted((work / "pkg").glob("*.py")):
        text = path.read_bytes()
        changes.append(FileChange(path, text, text.replace(b"shape", b"figure")))
    READY()
    apply_changes(changes, root=work)


READY: Callable[[], None] = lambda: None  # noqa: E731 - set in the child


def run_child(main: Callable[[Callable[[], None]], Awaitable[None]]) -> None:
    anyio.run(main, READY)


def fork_change(work: Path, change: Callable[[Path], None]) -> tuple[int, int]:
    """Start ``change`` in a forked child; return its pid and the fd that says it is ready."""
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(ready_r)
            global READY
            READY = lambda: os.write(ready_w, b"go\n") and None  # noqa: E731
            change(work)
            code = 0
        finally:
            os._exit(code)
    os.close(ready_w)
    return pid, ready_r


def random_kills(tmp_path, tally, seed, change, kills: int) -> None:
    work = tmp_path / "work"
    seed(work)
    work = work.resolve()
    old = tree(work)
    # one uninterrupted change: the state it leads to, and how long its write takes
    pid, ready = fork_change(work, change)
    with os.fdopen(ready, "rb") as pipe:
        assert pipe.readline() == b"go\n"
        started = time.monotonic()
    assert os.waitpid(pid, 0)[1] == 0
    duration = time.monotonic() - started
    new = tree(work)
    assert new != old
    rng = random.Random(20261201)
    for attempt in range(kills):
        if tree(work) != old:
            shutil.rmtree(work)
            seed(work)
        pid, ready = fork_change(work, change)
        with os.fdopen(ready, "rb") as pipe:
            assert pipe.readline() == b"go\n"
        time.sleep(rng.uniform(0, duration))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        if attempt % 10 == 0:  # through the CLI now and then, else as the next run does
            cli = [sys.executable, "-m", "tether.cli", "recover", f"--workdir={work}"]
            report = subprocess.run(cli, check=True, capture_output=True, text=True).stdout
            mid = "nothing to recover" not in report
        else:
            mid = bool(recover(work))
        after = tree(work)
        temps = sum(".tether-" in name for name in after)
        whole = after in (old, new)
        lost = (
            0
            if whole
            else sum(len(v) for k, v in old.items() if after.get(k) not in (v, new.get(k)))
        )
        tally.record(
            "kills",
            held=whole and not temps,
            partial=int(not whole),
            bytes_lost=lost,
            temp_files=temps,
            mid_change=int(mid),
        )
        assert whole and not temps, (attempt, sorted(set(after) ^ set(old))[:10])
    assert not list(state_dir(work).parent.glob(state_dir(work).name))  # no journal left


@pytest.mark.parametrize(
    ("seed", "change", "kills"),
    [
        (seed_patch_tree, change_apply_patch, 50),
        (seed_resolve_tree, change_resolve, 10),
        (seed_rename_tree, change_rename_sized, 10),
    ],
    ids=["apply_patch-300-files", "resolve-40-files", "rename-sized-12-files"],
)
def test_random_kills_during_multi_file_changes(tmp_path, tally, seed, change, kills):
    random_kills(tmp_path, tally, seed, change, kills)

"""Read attacks (issue 22, item 2): a workdir file that is not what a reader expects — a FIFO, a
symlink to ``/dev/zero`` or another character device, a socket, a 3 GB sparse file, a path
longer than PATH_MAX, a directory swapped for a symlink to an outside directory while the calls
run — against every tool that reads workdir files, through the real CLI.

Generated: every variant × every tool (``read``, ``edit``, ``apply_patch``, ``lsp`` symbols /
hover / definition / references, ``lsp_rename``, ``ast_grep``, ``ast_edit``, ``resolve``), in one
``tether session`` per variant (one language server start), then ``tether call`` for the tools
whose process must exit. The promise, per call: an answer within its timeout plus a small slack;
a refusal that names the file and what it is (for the tools given the file); never a byte of the
outside file; memory bounded (the CLI's resident size sampled); and the process gone — ``tether
call`` exits, ``tether session`` exits after EOF within the run's close bound.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from attack_cli import TETHER

from tether.testing import require_real

CALL_TIMEOUT_S = 30.0
#: on top of the call's timeout: process start, a loaded machine
SLACK_S = 15.0
CLOSE_TIMEOUT_S = 10.0
MAX_RSS_BYTES = 700 * 1024 * 1024
SECRET = "OUTSIDE_SECRET_7f3a"
TARGET = "sub/x.py"
GOOD = "target(2)\n"


def _deep(work: Path) -> str:
    """A real file whose path is longer than PATH_MAX, made one directory at a time."""
    fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
    parts = []
    try:
        for _ in range(420):
            os.mkdir("abcdefghij", dir_fd=fd)
            nxt = os.open("abcdefghij", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
            parts.append("abcdefghij")
        out = os.open("x.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, GOOD.encode())
        os.close(out)
    finally:
        os.close(fd)
    return "/".join([*parts, "x.py"])


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _char_device(path: Path) -> None:
    path.symlink_to("/dev/urandom")


def _socket(path: Path) -> None:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()  # the socket file stays


def _sparse(path: Path) -> None:
    with open(path, "wb") as fh:
        fh.write(GOOD.encode())
        fh.truncate(3 * 1024**3)


#: variant -> (what replaces a file, None: the variant is no file; what a refusal of the file
#: given to a tool must say; what a write that finds it in place of a staged file must say)
VARIANTS: dict[str, tuple[Callable[[Path], None] | None, tuple[str, ...], tuple[str, ...]]] = {
    "fifo": (_fifo, ("x.py", "FIFO"), ("y.py", "FIFO")),
    "dev-zero-symlink": (_dev_zero, ("x.py", "/dev/zero"), ("y.py", "symlink")),
    "char-device-symlink": (_char_device, ("x.py", "/dev/urandom"), ("y.py", "symlink")),
    "socket": (_socket, ("x.py", "socket"), ("y.py", "socket")),
    "sparse-3GB": (_sparse, ("x.py", "3,221,225,472 bytes"), ("y.py", "3,221,225,472 bytes")),
    "overlong-path": (None, ("bytes long",), ()),
    "symlink-swap": (None, (), ()),
}


def _spoil(work: Path, variant: str) -> None:
    """Replace ``sub/y.py`` (staged by ast_edit, known to the language server) with the
    variant's hostile file, between the proposal and the write."""
    make = VARIANTS[variant][0]
    if make is not None:
        (work / "sub" / "y.py").unlink()
        make(work / "sub" / "y.py")


Request = tuple[str, str, dict[str, Any], str]


def _requests(path: str) -> list[Request]:
    """(label, tool, args, how the hostile file meets the tool) in the order they are sent:
    ``"direct"`` (it is the argument), ``"bystander"`` (it lies in the project the tool scans),
    ``"spoiled"`` (a staged file replaced by it before the write: see :func:`_spoil`)."""
    position = {"line": 1, "symbol": "target"}
    patch = f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-target(2)\n+renamed(2)\n"
    return [
        ("read", "read", {"path": path}, "direct"),
        ("edit", "edit", {"path": path, "old": "target", "new": "renamed"}, "direct"),
        ("apply_patch", "apply_patch", {"patch": patch}, "direct"),
        ("lsp symbols", "lsp", {"action": "symbols", "file": path}, "direct"),
        ("lsp hover", "lsp", {"action": "hover", "file": path, **position}, "direct"),
        ("lsp definition", "lsp", {"action": "definition", "file": path, **position}, "direct"),
        (
            "lsp references",
            "lsp",
            {"action": "references", "file": "a.py", **position},
            "bystander",
        ),
        ("ast_grep", "ast_grep", {"pattern": "target($A)"}, "bystander"),
        ("ast_edit", "ast_edit", {"pattern": "target($A)", "rewrite": "renamed($A)"}, "bystander"),
        ("resolve", "resolve", {"edit_id": "edit_1", "action": "accept"}, "spoiled"),
        (
            "lsp_rename",
            "lsp_rename",
            {"file": "a.py", "new_name": "renamed_again", **position},
            "spoiled",
        ),
    ]


def _workdir(tmp_path: Path, variant: str) -> tuple[Path, Path, str]:
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "x.py").write_text(f"target(3)  # {SECRET}\n")
    (work / "pyproject.toml").write_text('[project]\nname = "victim"\nversion = "0"\n')
    (work / "a.py").write_text("def target(n):\n    return n\n\n\ntarget(1)\n")
    (work / "sub" / "y.py").write_text("from a import target\n\ntarget(4)\n")
    make = VARIANTS[variant][0]
    if make is not None:
        make(work / TARGET)
        path = TARGET
    elif variant == "overlong-path":
        path = _deep(work)
    else:
        (work / TARGET).write_text(GOOD)
        path = TARGET
    return work, outside, path


class Flipper:
    """Flips ``work/sub`` between the real directory and a symlink to ``outside`` in a loop."""

    def __init__(self, work: Path, outside: Path) -> None:
        self.work, self.outside = work, outside
        self.stop = threading.Event()
        self.flips = 0
        self.error: OSError | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        sub, parked = self.work / "sub", self.work.parent / "parked"
        try:
            while not self.stop.is_set():
                os.rename(sub, parked)
                sub.symlink_to(self.outside)
                time.sleep(0.001)
                os.unlink(sub)
                os.rename(parked, sub)
                self.flips += 1
                time.sleep(0.001)
        except OSError as exc:  # the race must run for the whole test: say why it stopped
            self.error = exc

    def __enter__(self) -> Flipper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


#: past this the sampler kills the process: a runaway read must fail the test, not the machine
KILL_RSS_BYTES = 1536 * 1024 * 1024


class RssSampler:
    """The largest resident size of tether's own process (the CLI), sampled every 20 ms; a
    process past :data:`KILL_RSS_BYTES` is killed (``killed`` says so)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self.killed = False
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                status = Path(f"/proc/{self.pid}/status").read_text()
            except OSError:
                return
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    self.peak = max(self.peak, int(line.split()[1]) * 1024)
            if self.peak > KILL_RSS_BYTES and not self.killed:
                self.killed = True
                os.kill(self.pid, signal.SIGKILL)
            self.stop.wait(0.02)

    def __enter__(self) -> RssSampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "harness.toml"
    config.write_text(
        f"[core]\ncall_timeout_s = {CALL_TIMEOUT_S}\nclose_timeout_s = {CLOSE_TIMEOUT_S}\n"
    )
    return config


def _text(reply: dict[str, Any]) -> str:
    return "".join(part.get("text", "") for part in reply.get("content", []))


def _judge(reply: dict[str, Any] | None, elapsed: float, says: tuple[str, ...]) -> list[str]:
    """What broke in one answer (empty: the promise held)."""
    if reply is None:
        return [f"no answer within {CALL_TIMEOUT_S + SLACK_S:g} s"]
    problems = []
    text = _text(reply)
    if elapsed > CALL_TIMEOUT_S + SLACK_S:
        problems.append(f"answered after {elapsed:.1f} s")
    if SECRET in text:
        problems.append("returned the outside file's content")
    if "internal error" in text:
        problems.append(f"internal error: {text[:200]}")
    if says:
        if not reply.get("is_error"):
            problems.append(f"not refused: {text[:200]}")
        missing = [word for word in says if word not in text]
        if missing:
            problems.append(f"the refusal does not say {missing}: {text[:300]}")
    return problems


def _session_line(proc: subprocess.Popen[bytes], deadline: float) -> dict[str, Any] | None:
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buffer = b""
    while not buffer.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 1)
        if not chunk:
            return None
        buffer += chunk
    parsed: dict[str, Any] = json.loads(buffer)
    return parsed


def _run_session(
    work: Path,
    config: Path,
    requests: list[Request],
    before: Callable[[str], None] | None = None,
) -> tuple[dict[str, tuple[dict[str, Any] | None, float]], float | None, int, int]:
    """Each request in turn through one session; (answers by label, seconds to exit after EOF
    or None when it did not, peak RSS, the session's pid)."""
    proc = subprocess.Popen(
        [*TETHER, "session", f"--workdir={work}", f"--config={config}", "--approve=write"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    answers: dict[str, tuple[dict[str, Any] | None, float]] = {}
    exited: float | None = None
    try:
        with RssSampler(proc.pid) as rss:
            ready = _session_line(proc, time.monotonic() + 60)
            assert ready is not None and ready.get("ready") is True, ready
            assert proc.stdin is not None
            for n, (label, tool, args, _how) in enumerate(requests, 1):
                if before is not None:
                    before(label)
                started = time.monotonic()
                proc.stdin.write(json.dumps({"id": n, "tool": tool, "args": args}).encode() + b"\n")
                proc.stdin.flush()
                reply = _session_line(proc, started + CALL_TIMEOUT_S + SLACK_S)
                answers[label] = (reply, time.monotonic() - started)
                if reply is None:
                    break  # the session is stuck: every later request would be too
            proc.stdin.close()
            closing = time.monotonic()
            try:
                proc.wait(timeout=CALL_TIMEOUT_S + 2 * CLOSE_TIMEOUT_S + SLACK_S)
                exited = time.monotonic() - closing
            except subprocess.TimeoutExpired:
                exited = None
        return answers, exited, rss.peak, proc.pid
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _run_call(
    work: Path, config: Path, tool: str, args: dict[str, Any]
) -> tuple[dict[str, Any] | None, float, bool, int]:
    """``tether call``: (the result, seconds, whether the process exited in time, peak RSS)."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [
            *TETHER,
            "call",
            tool,
            json.dumps(args),
            f"--workdir={work}",
            f"--config={config}",
            "--approve=write",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    with RssSampler(proc.pid) as rss:
        try:
            out, _ = proc.communicate(timeout=CALL_TIMEOUT_S + 2 * CLOSE_TIMEOUT_S + SLACK_S)
            exited = True
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            exited = False
    elapsed = time.monotonic() - started
    try:
        result = json.loads(out)
    except ValueError:
        result = None
    return result, elapsed, exited, rss.peak


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_reading_tool_survives_a_hostile_file(tmp_path, tally, survivors, variant):
    require_real("basedpyright-langserver", "node")
    work, outside, path = _workdir(tmp_path, variant)
    config = _config(tmp_path)
    _make, says_direct, says_spoiled = VARIANTS[variant]
    expected = {"direct": says_direct, "bystander": (), "spoiled": ()}
    requests = _requests(path)

    def before(label: str) -> None:
        if label == "resolve":
            _spoil(work, variant)

    broken: dict[str, list[str]] = {}
    swap = Flipper(work, outside) if variant == "symlink-swap" else None
    try:
        if swap is not None:
            swap.__enter__()
        answers, exited, peak, pid = _run_session(work, config, requests, before)
        orphans = survivors(f"TETHER_OWNER={pid}.")
        print(f"{variant}: session exited {exited} s after EOF, peak RSS {peak >> 20} MB")
        for label, _tool, _args, how in requests:
            reply, elapsed = answers.get(label, (None, 0.0))
            says = says_spoiled if label == "resolve" else expected[how]
            problems = _judge(reply, elapsed, says)
            shown = _text(reply)[:160].replace("\n", " | ") if reply else "-"
            print(f"{variant} session {label}: {elapsed:.1f} s: {shown}")
            if peak > MAX_RSS_BYTES:
                problems.append(f"the session's RSS reached {peak // 2**20} MB")
            if exited is None:
                problems.append("tether session did not exit after EOF")
            if orphans:
                problems.append(f"{len(orphans)} processes of the session left")
            tally.record(f"reads: {variant}", held=not problems)
            if problems:
                broken[f"session {label}"] = problems
        # tether call: one process per call, which must end
        for label, tool, args, how in requests:
            if label not in ("read", "edit", "apply_patch", "lsp references", "ast_grep"):
                continue
            result, elapsed, done, call_peak = _run_call(work, config, tool, args)
            problems = _judge(result, elapsed, expected[how])
            print(f"{variant} call {label}: {elapsed:.1f} s, exited {done}, {call_peak >> 20} MB")
            if not done:
                problems.append("tether call did not exit")
            if call_peak > MAX_RSS_BYTES:
                problems.append(f"tether call's RSS reached {call_peak // 2**20} MB")
            tally.record(f"reads: {variant}", held=not problems)
            if problems:
                broken[f"call {label}"] = problems
    finally:
        if swap is not None:
            swap.__exit__()
            if (work.parent / "parked").exists():
                if (work / "sub").is_symlink():
                    os.unlink(work / "sub")
                os.rename(work.parent / "parked", work / "sub")
    assert swap is None or swap.error is None, f"the swap stopped: {swap.error}"
    assert (outside / "x.py").read_text() == f"target(3)  # {SECRET}\n", "the outside was written"
    assert not broken, json.dumps(broken, indent=1)


def test_the_symlink_swap_never_reads_outside_over_many_calls(tmp_path, tally):
    """The race itself, many times: ``read``, ``ast_grep`` and ``lsp symbols`` on a file whose
    directory a thread keeps swapping for a symlink to an outside directory. Every answer is
    the inside content or a refusal; none is the outside file."""
    require_real("basedpyright-langserver", "node")
    work, outside, path = _workdir(tmp_path, "symlink-swap")
    config = _config(tmp_path)
    asks = [
        ("read", {"path": path}),
        ("ast_grep", {"pattern": "target($A)", "path": "sub"}),
        ("lsp", {"action": "symbols", "file": path}),
    ]
    rounds = 40
    requests = [(f"{tool} {i}", tool, args, "direct") for i in range(rounds) for tool, args in asks]
    with Flipper(work, outside) as flipper:
        answers, exited, _peak, _pid = _run_session(work, config, requests)
    if (work.parent / "parked").exists():  # stopped while the directory was parked
        os.unlink(work / "sub")
        os.rename(work.parent / "parked", work / "sub")
    leaked = [label for label, (reply, _) in answers.items() if reply and SECRET in _text(reply)]
    unanswered = [label for label, (reply, _) in answers.items() if reply is None]
    refused = [label for label, (reply, _) in answers.items() if reply and reply.get("is_error")]
    assert flipper.error is None, f"the flipper stopped after {flipper.flips}: {flipper.error}"
    for label, _tool, _args, _how in requests:
        reply, _ = answers.get(label, (None, 0.0))
        held = reply is not None and SECRET not in _text(reply)
        tally.record("reads: symlink-swap race", held=held, leaked=not held and reply is not None)
    print(
        f"{len(answers)} answers over {flipper.flips} flips: {len(refused)} refused, "
        f"{len(leaked)} leaked the outside, {len(unanswered)} unanswered"
    )
    assert not leaked, leaked
    assert not unanswered and exited is not None

"""``tether call --attach`` without the library (``_tether_attach``): the installed ``tether``
command makes a call on a served run importing nothing of tether, answers exactly as the full
command line does, hands over to it whatever it does not read, and keeps the connection's rules
(a signal's stop cancels the call on the server). One real server for the module
(``python -m tether serve``), the real console script as the client."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from _tether_attach import AttachedCall

ENV_PLUGINS = {"TETHER_LOAD_PLUGINS": "echo,files"}
#: what the installed command runs (the console script of the ``tether`` distribution)
SCRIPT = shutil.which("tether", path=str(Path(sys.executable).parent))
#: the full command line, as it was before the entry point made calls on its own
FULL = "import sys\nfrom tether.cli import main\nsys.exit(main(sys.argv[1:]))"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    base = tmp_path_factory.mktemp("attach")
    runtime, workdir = base / "rt", base / "wd"
    runtime.mkdir(mode=0o700)
    workdir.mkdir()
    env = {**os.environ, **ENV_PLUGINS, "TETHER_RUNTIME_DIR": str(runtime)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether", "serve", "--workdir", str(workdir), "--approve", "exec"],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    ready = json.loads(proc.stdout.readline())
    yield env, workdir, Path(ready["socket"])
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)


def _script() -> str:
    if SCRIPT is None:
        if os.environ.get("TETHER_REQUIRE_REAL"):
            pytest.fail("the tether console script is not installed beside this interpreter")
        pytest.skip("the tether console script is not installed beside this interpreter")
    return SCRIPT


def run(
    env: dict[str, str], *argv: str, full: bool = False, importtime: bool = False
) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable]
    if importtime:
        command += ["-X", "importtime"]
    command += ["-c", FULL] if full else [_script()]
    return subprocess.run(
        [*command, *argv],
        capture_output=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def imported(stderr: bytes) -> set[str]:
    return set(re.findall(r"import time:\s*\d+ \|\s*\d+ \|\s*(\S+)", stderr.decode()))


@pytest.mark.parametrize(
    "form",
    [
        "--attach",
        "--attach SOCKET",
        "--attach=SOCKET",
        "--warm",
        "--attach --text",
        "--surface plan --attach",
    ],
)
def test_a_call_on_a_served_run_imports_nothing_of_tether(served, form):
    env, workdir, sock = served
    flags = form.replace("SOCKET", str(sock)).split(" ")
    out = run(
        env,
        "call",
        "echo",
        '{"message": "hi"}',
        "--workdir",
        str(workdir),
        *flags,
        importtime=True,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    if "--text" in flags:
        assert out.stdout == b"hi\n"
    else:
        assert json.loads(out.stdout)["content"][0]["text"] == "hi"
    modules = imported(out.stderr)
    assert "_tether_attach" in modules
    heavy = {m for m in modules if m.split(".")[0] in ("tether", "anyio", "attrs", "attr")}
    heavy |= {m for m in modules if m.startswith("tether_") or m in ("argparse", "asyncio")}
    # nor OpenSSL (hashlib loads it first: ~3 ms of a ~35 ms start) for the server's key, nor
    # json's module, which imports `re` (~4 ms): json's C half reads and writes the lines
    heavy |= {m for m in modules if m in ("hashlib", "_hashlib", "json", "re")}
    # nor the Python halves of socket and signal, which import enum and selectors (~4 ms):
    # the C halves connect, send, read and catch signals alike
    heavy |= {m for m in modules if m in ("socket", "signal", "enum", "selectors")}
    assert not heavy, sorted(heavy)


#: replies whose characters the two printers must write alike: non-ASCII, a terminal's controls
#: (C0, DEL, C1, bidi overrides), a lone surrogate, quotes and backslashes
MESSAGES = [
    'plain, quote " backslash \\ slash /',
    "caf\u00e9 \u4e2d\u6587 \U0001f600 bell\x07 esc\x1b[31m cr\r tab\t nl\n del\x7f c1\x85\x9b"
    " bidi \u202e\u2066 zw\u200d",
    "lone \ud800 surrogate",
]


@pytest.mark.parametrize("text", [False, True], ids=["json", "text"])
@pytest.mark.parametrize("message", MESSAGES, ids=range(len(MESSAGES)))
def test_the_reply_is_printed_as_the_full_command_line_prints_it(served, message, text):
    env, workdir, _ = served
    argv = ["call", "echo", json.dumps({"message": message}), "--workdir", str(workdir)]
    argv += ["--attach", *(["--text"] if text else [])]
    lean, full = run(env, *argv), run(env, *argv, full=True)
    assert (lean.returncode, lean.stdout) == (full.returncode, full.stdout), full.stderr
    assert lean.returncode == 0


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--attach", "--approve", "read"], "--approve: a connection cannot change"),
        (["--attach", "--no-such-flag"], "unrecognized arguments"),
        (["--attach", "--workdir", "/nonexistent-dir"], "is not a directory"),
        (["--attach=/nonexistent/x.sock"], "socket directory"),
        (["--attach", "--workdir", "{wd}", "--surface", "nope"], "unknown surface"),
    ],
    ids=["approve", "unknown-flag", "no-workdir", "no-socket", "bad-surface"],
)
def test_what_it_cannot_do_the_full_command_line_says(served, argv, expected):
    env, workdir, _ = served
    argv = [a.replace("{wd}", str(workdir)) for a in argv]
    lean = run(env, "call", "echo", '{"message": "x"}', *argv)
    full = run(env, "call", "echo", '{"message": "x"}', *argv, full=True)
    assert expected in lean.stderr.decode(), lean.stderr
    assert (lean.returncode, lean.stdout) == (full.returncode, full.stdout)
    assert lean.returncode == 2


@pytest.mark.parametrize("args", ['{"message": NaN}', "[1]", "{"], ids=["nan", "array", "bad"])
def test_arguments_that_are_not_a_json_object_are_refused_as_before(served, args):
    env, workdir, _ = served
    lean = run(env, "call", "echo", args, "--workdir", str(workdir), "--attach")
    full = run(env, "call", "echo", args, "--workdir", str(workdir), "--attach", full=True)
    assert (lean.returncode, lean.stdout, lean.stderr) == (
        full.returncode,
        full.stdout,
        full.stderr,
    )
    assert lean.returncode == 2 and b"ARGS_JSON" in lean.stderr


def test_a_signal_stops_the_call_and_the_server_cancels_it(served):
    """SIGTERM while the call runs: the command answers that it was stopped (exit 143); its
    connection's close cancels the call on the server, whose tool is free again at once."""
    env, workdir, sock = served
    started = workdir / "started"
    long_call = {"argv": ["sh", "-c", f"touch {started}; sleep 60"]}
    proc = subprocess.Popen(
        [_script(), "call", "echo_exec", json.dumps(long_call), "--attach", str(sock)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    deadline = time.monotonic() + 30
    while not started.exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, err
    reply = json.loads(out)
    assert reply["is_error"] and "received SIGTERM" in reply["content"][0]["text"]
    # echo_exec runs one call at a time: this one waits for nothing
    t0 = time.monotonic()
    after = run(env, "call", "echo_exec", '{"argv": ["echo", "free"]}', "--attach", str(sock))
    assert json.loads(after.stdout)["content"][0]["text"] == "free\n"
    assert time.monotonic() - t0 < 20


# --- the command line, read as the full parser reads it ------------------------------------------

VOCABULARY = [
    "echo",
    "lsp",
    '{"a": 1}',
    "{}",
    "x.sock",
    "-",
    "--",
    "--attach",
    "--attach=s.sock",
    "--warm",
    "--text",
    "--vibe",
    "--trust-workdir",
    "--workdir",
    "--workdir=wd",
    "--work",
    "--config",
    "--config=c.toml",
    "--surface",
    "--surface=plan",
    "plan",
    "--conversation",
    "c1",
    "--approve",
    "read",
    "--log-level",
    "info",
    "--text=1",
    "-h",
    "--version",
]
FIELDS = ("tool", "args", "attach", "warm", "text", "trust_workdir", "vibe", "conversation")


def _argparse(argv: list[str]) -> dict[str, object] | None:
    from tether.cli import _parser

    try:
        ns = _parser().parse_args(argv)
    except SystemExit:
        return None
    values = {name: getattr(ns, name) for name in FIELDS}
    values["workdir"] = ns.workdir
    values["config"] = str(ns.config) if ns.config is not None else None
    values["surface"] = ns.surface
    return values


def test_every_command_line_it_reads_is_read_as_the_full_parser_reads_it(capsys):
    """Generated command lines (a fixed seed): each one the lean reader takes, argparse takes
    too, with the same values; what it does not take goes to argparse unread."""
    rng = random.Random(32)
    taken = 0
    for _ in range(10000):
        argv = ["call", *rng.choices(VOCABULARY, k=rng.randint(1, 7))]
        call = AttachedCall.parse(argv)
        if call is None:
            continue
        taken += 1
        expected = _argparse(argv)
        assert expected is not None, (argv, capsys.readouterr().err)
        got = {name: getattr(call, name) for name in (*FIELDS, "workdir", "config", "surface")}
        assert got == expected, argv
    assert taken > 200  # the generator reaches the lean reader, not only the full one


#: documents the command reads (arguments, the server's lines): valid, malformed, not finite
DOCUMENTS = [
    "{}",
    ' {"a": [1, 2.5, -0.0, 1e999, "caf\\u00e9", "\\ud800", null, true, false, {"x": {}}]} \n',
    '{"b": 12345678901234567890123, "c": "\\u007f\\u202e"}',
    '"s"',
    "1",
    "NaN",
    '{"a": -Infinity}',
    "[1,2",
    "{",
    '{"a"',
    '{"a":}',
    "[1,]",
    '"unterminated',
    '"bad \\x escape"',
    '"a control \x01"',
    '{"a":1} x',
    "\ufeff{}",
    "",
    "   ",
    "[" * 5000 + "]" * 5000,
]


@pytest.mark.parametrize("finite", [False, True], ids=["json", "finite"])
@pytest.mark.parametrize("document", DOCUMENTS, ids=range(len(DOCUMENTS)))
def test_its_json_reads_as_json_loads(document: str, finite: bool) -> None:
    """The command reads JSON with json's C half alone (json's module imports `re`): the same
    values, and a ValueError (or RecursionError) where json.loads raises one."""
    import _tether_attach

    def refuse(name: str) -> Any:
        raise ValueError(name)

    def outcome(read: Any) -> tuple[str, str]:
        try:
            return "value", repr(read())
        except RecursionError:
            return "error", "RecursionError"
        except ValueError:
            return "error", "ValueError"

    expected = outcome(lambda: json.loads(document, parse_constant=refuse if finite else None))
    assert outcome(lambda: _tether_attach.loads(document, finite=finite)) == expected
    assert outcome(lambda: _tether_attach.loads(document.encode("utf-8", "surrogatepass"))) == (
        outcome(lambda: json.loads(document.encode("utf-8", "surrogatepass")))
    )


VALUES: list[Any] = [
    {},
    {"a": [1, 2.5, -0.0, "caf\u00e9 \x7f \ud800 \u202e", None, True, {"x": []}], "b": 10**30},
    "a string\n",
    [1e300, float("inf"), float("nan")],
    {"id": 1, "tool": "t", "args": {"k": "v"}},
    ["/x", None, False, True],
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_its_json_writes_as_json_dumps(value: Any) -> None:
    import _tether_attach

    assert _tether_attach.dumps(value) == json.dumps(value)
    try:
        expected = json.dumps(value, allow_nan=False)
    except ValueError:
        with pytest.raises(ValueError):
            _tether_attach.dumps(value, allow_nan=False)
    else:
        assert _tether_attach.dumps(value, allow_nan=False) == expected


@pytest.mark.parametrize("says", [b"", b'{"ready": tr', b'{"ready": true}'], ids=repr)
def test_a_server_that_never_finishes_its_attach_line_is_given_up_on(tmp_path, monkeypatch, says):
    """A socket whose server accepts, then says nothing, half a line, or its ready line without
    the newline: the client gives up after its attach timeout (nothing sent but the attach
    line; the full command line takes over) instead of waiting for ever."""
    import _socket
    import threading

    import _tether_attach

    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    path = str(runtime / "s.sock")
    listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(1)
    held: list[Any] = []

    def accept() -> None:
        fd, _ = listener._accept()  # type: ignore[attr-defined]  # _socket's accept
        held.append(_socket.socket(fileno=fd))
        held[-1].sendall(says)

    threading.Thread(target=accept, daemon=True).start()
    monkeypatch.setattr(_tether_attach, "ATTACH_TIMEOUT_S", 0.5)
    call = AttachedCall.parse(["call", "echo", "{}", "--attach", path])
    assert call is not None
    started = time.monotonic()
    assert _tether_attach._connect(path, call) is None
    assert 0.4 < time.monotonic() - started < 5
    for sock in held:
        sock.close()
    listener.close()

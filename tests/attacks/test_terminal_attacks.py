"""Terminal attacks: the person's terminal shows only what tether drew.

Every place that writes to the person's terminal (``tether call`` on a pseudo-terminal: the
``ask_user`` card's question, context, option labels and descriptions, an approval card's
arguments, the workdir configuration's warnings, the CLI's own messages, the JSON result, the
plugin trace) is fed every class of control character; the bytes that reach the terminal must
hold none of them raw (a line feed is the only control allowed), and the payload must still be
shown, as its escape. The pty's output post-processing is off, so a CR the terminal receives
is one tether wrote.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import termios
import time
import unicodedata
from pathlib import Path
from typing import Any

import pytest

# every control class: (name, the payload)
CONTROLS = {
    "BEL": "\x07",
    "BS": "\x08",
    "CR": "\r",
    "CSI cursor up + erase line": "\x1b[2A\x1b[2K",
    "OSC window title": "\x1b]0;pwned\x07",
    "DCS": "\x1bPq#0\x1b\\",
    "C1 CSI": "\x9b2J",
    "DEL": "\x7f",
    "RLO bidi override": "\u202e",
    "bidi isolate": "\u2066",
    "RTL mark": "\u200f",
    "Arabic letter mark": "\u061c",
    "zero-width space": "\u200b",
    "line separator": "\u2028",
}


def raw_controls(output: str) -> list[str]:
    """Characters a terminal acts on (or hides), independently of tether's own rule: C0
    (but the line feed), DEL, C1, every format character (bidi, zero-width), line and
    paragraph separators."""
    return sorted(
        {
            f"U+{ord(c):04X}"
            for c in output
            if c != "\n" and unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp"}
        }
    )


def on_terminal(argv: list[str], workdir: Path, typed: str = "", timeout: float = 60) -> str:
    """Run ``tether`` with stdin, stdout and stderr on one pseudo-terminal; type ``typed`` once
    a ``> `` prompt shows; return everything the terminal received."""
    master, slave = pty.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # no \n -> \r\n: every CR seen was written by tether
    attrs[3] &= ~termios.ECHO  # the typed reply is ours, not the program's
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    env = {**os.environ, "PYTHONUTF8": "1", "TETHER_LOAD_PLUGINS": "ask,echo,files"}
    env.pop("TETHER_TRACE_PLUGINS", None)
    if "--trace" in argv:
        argv = [a for a in argv if a != "--trace"]
        env["TETHER_TRACE_PLUGINS"] = "1"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether.cli", *argv, "--workdir", str(workdir)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    out = b""
    sent = False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the last writer closed: EIO
                    break
                if not chunk:
                    break
                out += chunk
            if typed and not sent and out.rstrip().endswith(b">"):
                os.write(master, typed.encode())
                sent = True
            if proc.poll() is not None and not ready:
                break
        else:
            raise AssertionError(f"tether did not finish within {timeout} s: {out!r}")
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    return out.decode("utf-8", "replace")


def _ask(payload: str, where: str) -> dict[str, Any]:
    question: dict[str, Any] = {
        "question": "Which database?",
        "context": "Migrations differ.",
        "options": [{"label": "postgres", "description": "production"}, {"label": "sqlite"}],
    }
    if where == "question":
        question["question"] = f"Which database?{payload}approve"
    elif where == "context":
        question["context"] = f"Migrations{payload}differ."
    elif where == "option label":
        question["options"][0]["label"] = f"post{payload}gres"
    else:
        question["options"][0]["description"] = f"prod{payload}uction"
    return question


def place_argv(place: str, payload: str, workdir: Path) -> tuple[list[str], str]:
    """The command line that makes ``place`` write ``payload`` to the terminal, and the reply
    the person types (a skip, a deny)."""
    if place.startswith("ask_user "):
        return [
            "call",
            "ask_user",
            json.dumps(_ask(payload, place.removeprefix("ask_user "))),
        ], "0\n"
    if place == "approval card":
        args = {"path": f"notes{payload}.txt", "content": f"line{payload}one\n"}
        return ["call", "write", json.dumps(args)], "2\n"
    if place == "config warning":
        key = json.dumps(f"timeout{payload}_s")  # a TOML basic string holds the controls
        (workdir / "tether.toml").write_text(f"[core]\n{key} = 1\n")
        return ["call", "echo", json.dumps({"message": "hi"})], ""
    if place == "CLI usage error":
        return ["call", "echo", json.dumps({"message": "hi"}), "--surface", f"plan{payload}"], ""
    if place == "JSON result":
        return ["call", "echo", json.dumps({"message": f"say{payload}this"})], ""
    if place == "plugin trace":
        return ["call", "echo", json.dumps({"message": f"say{payload}this"}), "--trace"], ""
    raise AssertionError(place)


PLACES = [
    "ask_user question",
    "ask_user context",
    "ask_user option label",
    "ask_user option description",
    "approval card",
    "config warning",
    "CLI usage error",
    "JSON result",
    "plugin trace",
]


#: one payload holding every class, each between letters (a sequence's terminator included)
EVERY_CLASS = "a".join(CONTROLS.values())


@pytest.mark.parametrize("place", PLACES)
def test_the_terminal_shows_only_what_tether_drew(tmp_path: Path, place: str, tally: Any) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    argv, typed = place_argv(place, EVERY_CLASS, workdir)
    output = on_terminal(argv, workdir, typed)
    raw = raw_controls(output)
    for payload in CONTROLS.values():  # one row per control class
        held = not set(raw_controls(payload)) & set(raw)
        tally.record(f"terminal: {place}", held=held, raw=int(not held))
    assert not raw, f"{place}: raw {raw} reached the terminal: {output!r}"
    # the payload was shown as its escapes, not dropped: the place did write it
    assert "\\u202e" in output.lower() or "\\u202E" in output, output

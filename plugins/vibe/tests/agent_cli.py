#!/usr/bin/env python3
"""A test agent CLI: does what its brief says, one directive per line, in order.

The brief is argv[1] when given, else stdin. Directives (other lines are ignored):
  say: TEXT            print TEXT on stdout (a progress line)
  stderr: TEXT         print TEXT on stderr
  sleep: SECONDS       sleep
  write: PATH=TEXT     write TEXT to PATH (relative to the working directory)
  commit: MESSAGE      git add -A && git commit in the working directory
  grandchildren: FILE  start a child that starts a grandchild (one escaping into its own
                       session), all sleeping; write their pids to FILE, one per line
  daemon: FILE         double-fork a daemon (own session, reparented away at once, still
                       holding stdout) that sleeps; write its pid to FILE
  stream-json: TEXT    print claude-style stream-json events ending in a result event TEXT
  stream-error: TEXT   same, with a result event that reports an error
  exit: CODE           exit with CODE once the directives have run (the last one wins)
  pidfile: FILE        write this process's pid to FILE
  lines: N             print N numbered lines ("line 1" …)
  long: N              print one line of N "x" characters
  pidlog: FILE         append this process's pid to FILE
  busy: SECONDS        print a line every 50 ms for SECONDS
  busy-stderr: SECONDS the same on stderr only
  busy-events: SECONDS the same as stream-json tool-result events (not shown in the tail)
  hang                 sleep forever without printing anything
  hang-unless-go       hang, unless some line of the brief is exactly "go"
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

SLEEPER = "# vibe-test-process\nimport time\nwhile True: time.sleep(1)"
PARENT = """# vibe-test-process
import subprocess, sys, time
a = subprocess.Popen([sys.executable, "-c", sys.argv[1]])
b = subprocess.Popen([sys.executable, "-c", sys.argv[1]], start_new_session=True)
print(a.pid, b.pid, flush=True)
while True: time.sleep(1)
"""


def stream_events(text: str, *, error: bool) -> None:
    events = [
        {"type": "system", "subtype": "init", "session_id": "s1"},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "working on it"}]}},
        {
            "type": "assistant",
            "message": {"content": [{"type": "tool_use", "name": "Bash", "input": {}}]},
        },
        {
            "type": "result",
            "subtype": "error_during_execution" if error else "success",
            "is_error": error,
            "result": text,
        },
    ]
    for event in events:
        print(json.dumps(event), flush=True)


def spawn_grandchildren(pid_file: str) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", PARENT, SLEEPER], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    grand = child.stdout.readline().split()
    write_atomically(pid_file, "\n".join([str(os.getpid()), str(child.pid), *grand]) + "\n")


def start_daemon(pid_file: str) -> None:
    child = os.fork()
    if child == 0:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        write_atomically(pid_file, f"{os.getpid()}\n")
        while True:
            time.sleep(1)
    os.waitpid(child, 0)
    while not os.path.exists(pid_file):
        time.sleep(0.01)


def write_atomically(path: str, text: str) -> None:
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def main() -> int:
    brief = sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read()
    code = 0
    lines = [raw.strip() for raw in brief.splitlines()]
    for raw in lines:
        line = raw.strip()
        key, _, value = line.partition(":")
        value = value.strip()
        if key == "say":
            print(value, flush=True)
        elif key == "stderr":
            print(value, file=sys.stderr, flush=True)
        elif key == "sleep":
            time.sleep(float(value))
        elif key == "write":
            path, _, text = value.partition("=")
            with open(path, "w") as f:
                f.write(text)
        elif key == "commit":
            subprocess.run(["git", "add", "-A"], check=True)
            subprocess.run(
                [
                    "git",
                    "-c",
                    "user.name=w",
                    "-c",
                    "user.email=w@example.invalid",
                    "commit",
                    "-q",
                    "-m",
                    value,
                ],
                check=True,
            )
        elif key == "grandchildren":
            spawn_grandchildren(value)
        elif key == "daemon":
            start_daemon(value)
        elif key == "stream-json":
            stream_events(value, error=False)
        elif key == "stream-error":
            stream_events(value, error=True)
        elif key == "exit":
            code = int(value)
        elif key == "pidfile":
            write_atomically(value, f"{os.getpid()}\n")
        elif key == "lines":
            for i in range(1, int(value) + 1):
                print(f"line {i}", flush=True)
        elif key == "long":
            print("x" * int(value), flush=True)
        elif key == "pidlog":
            with open(value, "a") as f:
                f.write(f"{os.getpid()}\n")
        elif key in ("busy", "busy-stderr", "busy-events"):
            deadline = time.monotonic() + float(value)
            stream = sys.stderr if key == "busy-stderr" else sys.stdout
            text = "still busy"
            if key == "busy-events":
                text = json.dumps(
                    {"type": "user", "message": {"content": [{"type": "tool_result"}]}}
                )
            while time.monotonic() < deadline:
                print(text, file=stream, flush=True)
                time.sleep(0.05)
        elif line == "hang" or (line == "hang-unless-go" and "go" not in lines):
            while True:
                time.sleep(1)
    return code


if __name__ == "__main__":
    sys.exit(main())

"""A tiny debug adapter speaking real DAP over stdio, for the client's edge cases.

While answering ``launch`` it sends the client a ``runInTerminal`` reverse request and an event
no client knows, then goes on as a one-thread program stopped on entry. ``evaluate`` of
``reverse_response`` returns the client's answer to the reverse request as JSON; ``continue``
ends the program with exit code 0 (a program named ``*lossy`` runs on instead, and ignores its
first ``pause``). ``evaluate`` of ``huge_output`` first sends an output event of 2 MB, then a
short one. A program file reading ``systemProcessId=<N>`` makes the adapter report process N as
the debuggee it launched (a ``process`` event), whoever N really is. ``--version`` only exits 0
(tether's availability probe).
"""

from __future__ import annotations

import json
import sys
from typing import Any

STDIN = sys.stdin.buffer
STDOUT = sys.stdout.buffer
_seq = 0


def read() -> dict[str, Any] | None:
    length = None
    while True:
        line = STDIN.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    assert length is not None, "a header block without Content-Length"
    message: dict[str, Any] = json.loads(STDIN.read(length))
    return message


def write(message: dict[str, Any]) -> None:
    global _seq
    _seq += 1
    body = json.dumps({"seq": _seq, **message}).encode()
    STDOUT.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    STDOUT.flush()


def respond(request: dict[str, Any], body: dict[str, Any] | None = None, **extra: Any) -> None:
    write(
        {
            "type": "response",
            "request_seq": request["seq"],
            "command": request["command"],
            "success": True,
            "body": body or {},
            **extra,
        }
    )


def event(name: str, body: dict[str, Any] | None = None) -> None:
    write({"type": "event", "event": name, "body": body or {}})


def reverse_request() -> dict[str, Any]:
    """Send ``runInTerminal`` and return the client's response to it."""
    write(
        {
            "type": "request",
            "command": "runInTerminal",
            "arguments": {"kind": "integrated", "cwd": ".", "args": ["prog"]},
        }
    )
    sent = _seq
    while True:
        message = read()
        if message is None:
            sys.exit("the client closed the stream instead of answering runInTerminal")
        if message.get("type") == "response" and message.get("request_seq") == sent:
            return message
        sys.exit(f"expected the runInTerminal response first, got {message!r}")


def claimed_pid(program: str) -> int | None:
    try:
        with open(program) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    name, _, value = text.partition("=")
    return int(value) if name == "systemProcessId" and value.isdigit() else None


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        print("fake-dap-adapter 1")
        return
    answer: dict[str, Any] | None = None
    program = "prog"
    pauses = 0
    while (request := read()) is not None:
        command = request.get("command")
        if command == "initialize":
            respond(request, {"supportsConfigurationDoneRequest": True})
        elif command == "launch":
            program = request.get("arguments", {}).get("program", program)
            answer = reverse_request()
            event("tetherFakeUnknownEvent", {"anything": [1, 2, 3]})
            claimed = claimed_pid(program)
            if claimed is not None:
                body = {"name": program, "systemProcessId": claimed, "startMethod": "launch"}
                event("process", body)
            event("initialized")
            respond(request)
        elif command in ("setBreakpoints", "setExceptionBreakpoints"):
            respond(request, {"breakpoints": []})
        elif command == "configurationDone":
            respond(request)
            event("stopped", {"reason": "entry", "threadId": 1})
        elif command == "threads":
            respond(request, {"threads": [{"id": 1, "name": "main"}]})
        elif command == "stackTrace":
            source = {"name": "prog", "path": program}
            frame = {"id": 1, "name": "main", "line": 1, "column": 1, "source": source}
            # the runtime that called it: a file outside every workdir
            runtime = {"name": "runtime.py", "path": "/usr/lib/fake-runtime/runtime.py"}
            caller = {"id": 2, "name": "start", "line": 10, "column": 1, "source": runtime}
            respond(request, {"stackFrames": [frame, caller], "totalFrames": 2})
        elif command == "evaluate":
            expression = request.get("arguments", {}).get("expression")
            if expression == "reverse_response":
                respond(request, {"result": json.dumps(answer), "variablesReference": 0})
            elif expression == "huge_output":
                event("output", {"category": "stdout", "output": "h" * 2_000_000})
                event("output", {"category": "stdout", "output": "after the huge one\n"})
                respond(request, {"result": "done", "variablesReference": 0})
            else:
                write(
                    {
                        "type": "response",
                        "request_seq": request["seq"],
                        "command": command,
                        "success": False,
                        "message": f"unknown expression {expression!r}",
                    }
                )
        elif command == "continue" and program.endswith("lossy"):
            respond(request, {"allThreadsContinued": True})
            event("continued", {"threadId": 1})
        elif command == "continue":
            respond(request, {"allThreadsContinued": True})
            event("exited", {"exitCode": 0})
            event("terminated")
        elif command == "pause":
            # like lldb-vscode when the pause lands before its resume took effect: the first
            # pause is answered with success and stops nothing
            pauses += 1
            respond(request)
            if pauses > 1:
                event("stopped", {"reason": "pause", "threadId": 1})
        elif command == "disconnect":
            respond(request)
            return
        else:
            write(
                {
                    "type": "response",
                    "request_seq": request["seq"],
                    "command": command,
                    "success": False,
                    "message": f"the fake adapter does not do {command!r}",
                }
            )


if __name__ == "__main__":
    main()

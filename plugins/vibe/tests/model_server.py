"""A scripted model server on loopback, so the real agent CLIs run offline in the tests.

It speaks the two wire protocols the bundled runners' CLIs use — Anthropic's Messages API
(``POST /v1/messages``, streamed as server-sent events; Claude Code) and OpenAI's Responses API
(``POST /v1/responses``, streamed; Codex) — and plays one script: the brief's directive
``EDIT <relative path> <text>`` makes the model call the CLI's own edit tool (Claude Code's
``Write``, Codex's ``apply_patch``) to create that file with that text in its working
directory; once the tool's result comes back, it answers ``DONE <relative path>``. Any other
request (a title, a summary, a quota probe) gets a short text answer. Every request is kept in
``requests`` for the test to inspect.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EDIT = re.compile(r"EDIT (\S+) (.+)")
CWD = re.compile(r"(?:Working directory|<cwd>|cwd)\s*[:=]?\s*(/[^\s<]+)")


def _text_of(value: Any) -> str:
    """Every string inside a JSON value, joined (where a brief or a cwd may be said)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text_of(v) for v in value)
    if isinstance(value, dict):
        return "\n".join(_text_of(v) for v in value.values())
    return ""


class Script:
    """What the model does with one request, whatever the protocol."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def decide(
        self, body: dict[str, Any], has_tool_result: bool, tools: list[str]
    ) -> tuple[str, Any]:
        """("tool", (path, text, cwd)) or ("text", answer)."""
        with self.lock:
            self.requests.append(body)
        everything = _text_of(body)
        edit = EDIT.search(everything)
        if edit is None or not tools:
            return "text", "ok"
        path, text = edit[1], edit[2].strip()
        if has_tool_result:
            return "text", f"DONE {path}"
        cwd = CWD.search(everything)
        return "tool", (path, text, cwd[1] if cwd else None)


def _sse(handler: BaseHTTPRequestHandler, events: list[tuple[str | None, dict[str, Any]]]) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.end_headers()
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        handler.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
        handler.wfile.flush()


# ---------------------------------------------------------------------------------------------
# Anthropic Messages (Claude Code)


def _anthropic(script: Script, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    content = last.get("content") if isinstance(last, dict) else None
    has_result = isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )
    tools = [t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]
    kind, what = script.decide(body, has_result, tools if "Write" in tools else [])
    model = body.get("model", "scripted")
    message = {
        "id": f"msg_{uuid.uuid4().hex[:12]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    events: list[tuple[str | None, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": message})
    ]
    if kind == "tool":
        path, text, cwd = what
        file_path = f"{cwd}/{path}" if cwd else path
        block = {
            "type": "tool_use",
            "id": f"toolu_{uuid.uuid4().hex[:12]}",
            "name": "Write",
            "input": {},
        }
        delta = json.dumps({"file_path": file_path, "content": text})
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": block},
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": delta},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]
        stop = "tool_use"
    else:
        events += [
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": what},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]
        stop = "end_turn"
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    if body.get("stream"):
        _sse(handler, events)
        return
    # a non-streamed request: the same message in one piece
    final = dict(message, stop_reason=stop)
    if kind == "tool":
        final["content"] = [dict(events[1][1]["content_block"], input=json.loads(delta))]
    else:
        final["content"] = [{"type": "text", "text": what}]
    data = json.dumps(final).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


# ---------------------------------------------------------------------------------------------
# OpenAI Responses (Codex)


def _patch(path: str, text: str) -> str:
    return f"*** Begin Patch\n*** Add File: {path}\n+{text}\n*** End Patch\n"


def _openai(script: Script, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
    items = body.get("input") or []
    last = items[-1] if items else {}
    has_result = isinstance(last, dict) and last.get("type") in (
        "function_call_output",
        "custom_tool_call_output",
    )
    tools = [
        t.get("name") or t.get("type") or "" for t in body.get("tools") or [] if isinstance(t, dict)
    ]
    kind, what = script.decide(body, has_result, tools)
    response_id = f"resp_{uuid.uuid4().hex[:12]}"
    if kind == "tool":
        path, text, _ = what
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        if "apply_patch" in tools and any(
            t.get("type") == "custom" and t.get("name") == "apply_patch"
            for t in body.get("tools") or []
            if isinstance(t, dict)
        ):
            item: dict[str, Any] = {
                "type": "custom_tool_call",
                "id": f"ctc_{call_id}",
                "call_id": call_id,
                "name": "apply_patch",
                "input": _patch(path, text),
                "status": "completed",
            }
        elif "apply_patch" in tools:
            item = {
                "type": "function_call",
                "id": f"fc_{call_id}",
                "call_id": call_id,
                "name": "apply_patch",
                "arguments": json.dumps({"input": _patch(path, text)}),
                "status": "completed",
            }
        else:  # codex's shell recognises an apply_patch command as its own edit tool
            name = next(n for n in ("exec_command", "shell_command", "shell") if n in tools)
            heredoc = f"apply_patch <<'EOF'\n{_patch(path, text)}EOF\n"
            args: dict[str, Any] = (
                {"cmd": heredoc}
                if name == "exec_command"
                else {"command": heredoc}
                if name == "shell_command"
                else {"command": ["apply_patch", _patch(path, text)]}
            )
            item = {
                "type": "function_call",
                "id": f"fc_{call_id}",
                "call_id": call_id,
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
    else:
        item = {
            "type": "message",
            "id": f"msg_{uuid.uuid4().hex[:12]}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": what, "annotations": []}],
        }
    base = {"id": response_id, "object": "response", "model": body.get("model", "scripted")}
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    events: list[tuple[str | None, dict[str, Any]]] = [
        (
            "response.created",
            {"type": "response.created", "response": {**base, "status": "in_progress"}},
        ),
        (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        ),
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        (
            "response.completed",
            {
                "type": "response.completed",
                "response": {**base, "status": "completed", "output": [item], "usage": usage},
            },
        ),
    ]
    _sse(handler, events)


class _Handler(BaseHTTPRequestHandler):
    script: Script
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:  # model lists and the like: empty, but well-formed
        data = json.dumps({"data": [], "models": [], "object": "list"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        self.close_connection = True
        if self.path.split("?")[0].endswith("/messages"):
            _anthropic(self.script, self, body)
        elif self.path.split("?")[0].endswith("/responses"):
            _openai(self.script, self, body)
        else:
            self.do_GET()


@contextmanager
def model_server() -> Iterator[tuple[str, Script]]:
    """``(base_url, script)`` of a scripted model server on 127.0.0.1, for the block's length."""
    script = Script()
    handler = type("Handler", (_Handler,), {"script": script})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", script
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

"""A small language server speaking real LSP over stdio, scripted to misbehave.

hover never answers (the client must time out and cancel), references exits mid-request,
definition answers. ``argv[1] == "hang-init"`` never answers initialize; ``"indexing"`` starts
a progress that never ends and finds no definition. Every line holding "BAD" gets an error
diagnostic, pushed after each didOpen/didChange. Every message it
receives is appended to ``$FAKE_LSP_LOG`` (one method name a line).
"""

from __future__ import annotations

import os
import sys

import anyio
from anyio.streams.file import FileReadStream, FileWriteStream

from tether.framing import FramedReader, FramedWriter

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
LOG = os.environ.get("FAKE_LSP_LOG")
STDIN = open(0, "rb", buffering=0)
STDOUT = open(1, "wb", buffering=0)


def log(line: str) -> None:
    if LOG:
        with open(LOG, "a") as fh:
            fh.write(line + "\n")


async def main() -> None:
    # unbuffered: a buffered read(65536) would wait for 64 KiB instead of one message
    reader = FramedReader(FileReadStream(STDIN))
    writer = FramedWriter(FileWriteStream(STDOUT))
    while True:
        try:
            message = await reader.read()
        except anyio.EndOfStream:
            return
        method, request_id = message.get("method"), message.get("id")
        log(
            f"{method} {message.get('params', {}).get('id', '') if method == '$/cancelRequest' else ''}".strip()
        )
        if method == "initialize":
            if MODE == "hang-init":
                continue
            capabilities = {
                "textDocumentSync": 1,
                "hoverProvider": True,
                "definitionProvider": True,
                "referencesProvider": True,
            }
            await writer.write(
                {"jsonrpc": "2.0", "id": request_id, "result": {"capabilities": capabilities}}
            )
        elif method in ("textDocument/didOpen", "textDocument/didChange"):
            params = message["params"]
            document = params["textDocument"]
            text = document.get("text") or params["contentChanges"][-1]["text"]
            diagnostics = [
                {
                    "range": {
                        "start": {"line": n, "character": 0},
                        "end": {"line": n, "character": 3},
                    },
                    "severity": 1,
                    "code": "X1",
                    "message": "bad line",
                    "source": "fake",
                }
                for n, line in enumerate(text.splitlines())
                if "BAD" in line
            ]
            await writer.write(
                {
                    "jsonrpc": "2.0",
                    "method": "textDocument/publishDiagnostics",
                    "params": {
                        "uri": document["uri"],
                        "version": document["version"],
                        "diagnostics": diagnostics,
                    },
                }
            )
        elif method == "textDocument/references":
            os._exit(3)
        elif method == "initialized" and MODE == "indexing":
            begin = {"kind": "begin", "title": "indexing", "message": "0/40 files"}
            await writer.write(
                {
                    "jsonrpc": "2.0",
                    "method": "$/progress",
                    "params": {"token": "idx", "value": begin},
                }
            )
        elif method == "textDocument/definition" and MODE == "indexing":
            await writer.write({"jsonrpc": "2.0", "id": request_id, "result": []})
        elif method == "textDocument/definition":
            uri = message["params"]["textDocument"]["uri"]
            location = {
                "uri": uri,
                "range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 9}},
            }
            await writer.write({"jsonrpc": "2.0", "id": request_id, "result": [location]})
        elif method == "shutdown":
            await writer.write({"jsonrpc": "2.0", "id": request_id, "result": None})
        elif method == "exit":
            return
        # hover and everything else: never answered


anyio.run(main)

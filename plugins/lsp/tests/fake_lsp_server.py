"""A small language server speaking real LSP over stdio, scripted to misbehave.

    fake_lsp_server.py MODE [LOG]

hover never answers (the client must time out and cancel), references exits mid-request,
definition answers. MODE ``hang-init`` never answers initialize; ``indexing`` starts a progress
that never ends and finds no definition; ``checking`` starts a progress "3 files to analyze"
that never ends (checking, which changes no answer) and answers as usual; ``silent`` never publishes diagnostics; ``many``
answers references (312), workspace and document symbols (250) and code actions (60) with more
than the caps let through. Every line holding "BAD" gets an error diagnostic, pushed after each
didOpen/didChange, and a quick fix when code actions are asked for it. MODE ``slow`` answers
hover after SLOW_S seconds (a first answer that takes longer than the client's timeout) and
pushes its diagnostics SLOW_S seconds after each change; ``slow=S`` does so after S seconds,
each hover answer naming its request's id, and logs each didOpen/didChange with its text's length. Every message it receives is appended
to LOG (one method name a line; a hover with its id). MODE ``spin`` computes a hover for SPIN_S
seconds, burning CPU and reading nothing meanwhile (a busy single-threaded server). MODE
``huge`` answers hover with HUGE_BYTES of contents (over a client's lowered message limit).
MODE ``garbage`` answers hover with bytes that are not a framed message, ``not-object`` with a
framed JSON array instead of an object. MODE ``malformed`` answers every query with a reply
that breaks the protocol in one field (:data:`MALFORMED`; its diagnostics lack a message).
Every mode's replies carry what real servers add: unknown fields and ``null`` optional fields.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import anyio
import anyio.abc
from anyio.streams.file import FileReadStream, FileWriteStream

from tether.wire.framing import FramedReader, FramedWriter

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
LOG = sys.argv[2] if len(sys.argv) > 2 else None
MANY_REFERENCES = 312
MANY_SYMBOLS = 250
MANY_ACTIONS = 60
SLOW_S = 6.0
#: ``slow=S``: ``slow`` with SLOW_S = S, its hover answers naming their request's id
NAMED = MODE.startswith("slow=")
if NAMED:
    MODE, SLOW_S = "slow", float(MODE.removeprefix("slow="))
SPIN_S = 8.0
HUGE_BYTES = 2_000_000
STDIN = open(0, "rb", buffering=0)
STDOUT = open(1, "wb", buffering=0)


#: method -> (a reply that breaks LSP in one field, given the document's uri)
MALFORMED: dict[str, Any] = {
    "textDocument/definition": lambda uri: [
        {"uri": uri, "range": {"start": {"line": "one", "character": 0}, "end": span(0)["end"]}}
    ],
    "textDocument/references": lambda uri: [{"uri": uri, "range": span(0)}, {"uri": uri}],
    "textDocument/hover": lambda uri: {"contents": 42},
    "workspace/symbol": lambda uri: [
        {"name": "alpha", "kind": "function", "location": {"uri": uri, "range": span(0)}}
    ],
    "textDocument/documentSymbol": lambda uri: [{"name": "alpha", "kind": 12, "range": span(0)}],
    "textDocument/codeAction": lambda uri: [{"kind": "quickfix"}],
    "textDocument/rename": lambda uri: {"changes": {uri: [{"range": span(0), "newText": None}]}},
}


def log(line: str) -> None:
    if LOG:
        with open(LOG, "a") as fh:
            fh.write(line + "\n")


def span(line: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 5}}


def symbols(uri: str, workspace: bool) -> list[dict[str, Any]]:
    if workspace:  # SymbolInformation
        return [
            {"name": f"sym{n}", "kind": 12, "location": {"uri": uri, "range": span(n)}}
            for n in range(MANY_SYMBOLS)
        ]
    return [  # DocumentSymbol
        {"name": f"sym{n}", "kind": 12, "range": span(n), "selectionRange": span(n)}
        for n in range(MANY_SYMBOLS)
    ]


def code_actions(params: dict[str, Any]) -> list[dict[str, Any]]:
    if MODE == "many":
        return [{"title": f"action {n}", "kind": "refactor"} for n in range(MANY_ACTIONS)]
    return [
        {
            "title": f"fix: {d['message']}",
            "kind": "quickfix",
            "diagnostics": [d],
            # a CodeAction may carry a Command, as clangd's tweaks do
            "command": {"title": "fix", "command": "fake.fix", "arguments": [d["range"]]},
        }
        for d in params["context"]["diagnostics"]
    ]


async def later(delay: float, writer: FramedWriter, message: dict[str, Any]) -> None:
    await anyio.sleep(delay)
    await writer.write(message)


def hover_answer(request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
    line = params["position"]["line"]
    value = f"slow hover of line {line + 1}" + (f" (request {request_id})" if NAMED else "")
    return {"jsonrpc": "2.0", "id": request_id, "result": {"contents": value}}


async def main() -> None:
    async with anyio.create_task_group() as group:
        await serve(group)
        group.cancel_scope.cancel()


async def serve(group: anyio.abc.TaskGroup) -> None:
    # unbuffered: a buffered read(65536) would wait for 64 KiB instead of one message
    reader = FramedReader(FileReadStream(STDIN))
    writer = FramedWriter(FileWriteStream(STDOUT))
    root_uri = ""
    while True:
        try:
            message = await reader.read()
        except anyio.EndOfStream:
            return
        method, request_id = message.get("method"), message.get("id")
        shown = message.get("params", {}).get("id", "") if method == "$/cancelRequest" else ""
        if method == "textDocument/hover":
            shown = request_id
        elif NAMED and method in ("textDocument/didOpen", "textDocument/didChange"):
            params = message["params"]
            shown = len(
                params.get("textDocument", {}).get("text") or params["contentChanges"][-1]["text"]
            )
        log(f"{method} {shown}".strip())
        if method == "initialize":
            if MODE == "hang-init":
                continue
            root_uri = message["params"].get("rootUri") or ""
            capabilities = {
                "textDocumentSync": 1,
                "hoverProvider": True,
                "definitionProvider": True,
                "referencesProvider": True,
                "codeActionProvider": True,
            }
            if MODE in ("many", "malformed"):
                capabilities["documentSymbolProvider"] = True
                capabilities["workspaceSymbolProvider"] = True
            if MODE == "malformed":
                capabilities["renameProvider"] = True
            # what real servers add: their own fields, null where a field is optional
            capabilities["experimental"] = {"fakeExtension": True}
            capabilities["completionProvider"] = None
            # pylsp 1.15's notebook selector, which lsprotocol's converter cannot structure
            capabilities["notebookDocumentSync"] = {
                "notebookSelector": [{"cells": [{"language": "python"}]}]
            }
            await writer.write(
                {"jsonrpc": "2.0", "id": request_id, "result": {"capabilities": capabilities}}
            )
        elif method in ("textDocument/didOpen", "textDocument/didChange") and MODE != "silent":
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
                    "relatedInformation": None,
                    "tags": None,
                    "fakeRank": 3,
                }
                for n, line in enumerate(text.splitlines())
                if "BAD" in line
            ]
            publish = {
                "jsonrpc": "2.0",
                "method": "textDocument/publishDiagnostics",
                "params": {
                    "uri": document["uri"],
                    "version": document["version"],
                    "diagnostics": diagnostics,
                },
            }
            if MODE == "malformed":
                for diagnostic in diagnostics:
                    del diagnostic["message"]
            if MODE == "slow":
                group.start_soon(later, SLOW_S, writer, publish)
            else:
                await writer.write(publish)
        elif MODE == "malformed" and method in MALFORMED:
            params = message["params"]
            uri = params["textDocument"]["uri"] if "textDocument" in params else root_uri
            result = MALFORMED[method](uri)
            await writer.write({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "textDocument/hover" and MODE == "spin":
            # busy, not hung: burns CPU (and reads nothing) for SPIN_S, then answers
            until = time.monotonic() + SPIN_S
            while time.monotonic() < until:
                sum(range(10_000))
            await writer.write(hover_answer(request_id, message["params"]))
        elif method == "textDocument/hover" and MODE == "huge":
            contents = "h" * HUGE_BYTES
            await writer.write(
                {"jsonrpc": "2.0", "id": request_id, "result": {"contents": contents}}
            )
        elif method == "textDocument/hover" and MODE == "garbage":
            STDOUT.write(b"this is not LSP\r\n\r\n")
        elif method == "textDocument/hover" and MODE == "not-object":
            await writer.write([1, 2])
        elif method == "textDocument/hover" and MODE == "slow":
            group.start_soon(later, SLOW_S, writer, hover_answer(request_id, message["params"]))
        elif method == "textDocument/references" and MODE == "many":
            uri = message["params"]["textDocument"]["uri"]
            found = [{"uri": uri, "range": span(n)} for n in range(MANY_REFERENCES)]
            await writer.write({"jsonrpc": "2.0", "id": request_id, "result": found})
        elif method == "textDocument/references":
            os._exit(3)
        elif method == "workspace/symbol":
            uri = f"{root_uri}/many.fake"
            result = symbols(uri, workspace=True)
            await writer.write({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "textDocument/documentSymbol":
            result = symbols(message["params"]["textDocument"]["uri"], workspace=False)
            await writer.write({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "textDocument/codeAction":
            result = code_actions(message["params"])
            await writer.write({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "initialized" and MODE == "indexing":
            begin = {"kind": "begin", "title": "indexing", "message": "0/40 files"}
            await writer.write(
                {
                    "jsonrpc": "2.0",
                    "method": "$/progress",
                    "params": {"token": "idx", "value": begin},
                }
            )
        elif method == "initialized" and MODE == "checking":
            # the pyright family's background checking: it changes no navigation answer
            begin = {"kind": "begin", "title": "", "message": "3 files to analyze"}
            await writer.write(
                {
                    "jsonrpc": "2.0",
                    "method": "$/progress",
                    "params": {"token": "chk", "value": begin},
                }
            )
        elif method == "textDocument/definition" and MODE == "indexing":
            await writer.write({"jsonrpc": "2.0", "id": request_id, "result": []})
        elif method == "textDocument/definition":
            uri = message["params"]["textDocument"]["uri"]
            location = {
                "uri": uri,
                "range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 9}},
                "fakeScore": 0.5,
            }
            await writer.write({"jsonrpc": "2.0", "id": request_id, "result": [location]})
        elif request_id is not None and str(method).startswith("$/"):
            error = {"code": -32601, "message": f"{method} not handled"}
            await writer.write({"jsonrpc": "2.0", "id": request_id, "error": error})
        elif method == "shutdown":
            await writer.write({"jsonrpc": "2.0", "id": request_id, "result": None})
        elif method == "exit":
            return
        # hover and everything else: never answered


anyio.run(main)

"""Pulled diagnostics for typescript-language-server, which only pushes them, in passes.

It publishes a file's diagnostics after each of tsserver's passes (syntax, then semantic, then
suggestions), without a ``version``: the first publish after a change may hold the syntax pass
alone — an empty list while the type error is still being computed. No publish says it is the
last, so tether asks tsserver itself, through the server's ``typescript.tsserverRequest``
command, for the three passes of the file's current text and converts them as the server does.
"""

from __future__ import annotations

from typing import Any

import anyio
from lsprotocol import types

from tether_lsp.documents import OpenDocument
from tether_lsp.rpc import RequestTimedOut

COMMAND = "typescript.tsserverRequest"
PASSES = ("syntacticDiagnosticsSync", "semanticDiagnosticsSync", "suggestionDiagnosticsSync")
#: tsserver's category -> LSP severity (as typescript-language-server maps it)
_SEVERITY = {"error": 1, "warning": 2, "suggestion": 4}


def _position(location: dict[str, Any]) -> types.Position:
    # tsserver counts lines and UTF-16 offsets from 1
    return types.Position(line=int(location["line"]) - 1, character=int(location["offset"]) - 1)


def to_lsp(diagnostic: dict[str, Any]) -> types.Diagnostic:
    """One tsserver diagnostic (tsserver's protocol, not LSP's) as the LSP diagnostic
    typescript-language-server publishes."""
    tags = [types.DiagnosticTag.Unnecessary] if diagnostic.get("reportsUnnecessary") else []
    tags += [types.DiagnosticTag.Deprecated] if diagnostic.get("reportsDeprecated") else []
    code = diagnostic.get("code")
    return types.Diagnostic(
        range=types.Range(start=_position(diagnostic["start"]), end=_position(diagnostic["end"])),
        message=str(diagnostic.get("text", "")),
        severity=types.DiagnosticSeverity(_SEVERITY.get(str(diagnostic.get("category")), 1)),
        code=code if isinstance(code, int | str) else None,
        source=str(diagnostic.get("source") or "typescript"),
        tags=tags or None,
    )


async def pull(client: Any, doc: OpenDocument, timeout_s: float) -> list[types.Diagnostic] | None:
    """The diagnostics of ``doc``'s current text, all three passes (None: not in time)."""
    items: list[types.Diagnostic] = []
    deadline = anyio.current_time() + timeout_s
    for command in PASSES:
        # the document in the params ties a request kept past its timeout to this text: a
        # change cancels it (the server reads only `command` and `arguments`)
        params = {
            "command": COMMAND,
            "arguments": [command, {"file": str(doc.path)}],
            "textDocument": {"uri": doc.uri, "version": doc.version},
        }
        left = deadline - anyio.current_time()
        if left <= 0:
            return None
        try:
            result = await client.request("workspace/executeCommand", params, timeout_s=left)
        except RequestTimedOut:
            return None
        body = result.get("body") if isinstance(result, dict) else None
        items += [to_lsp(d) for d in body or [] if isinstance(d, dict) and "start" in d]
    return items

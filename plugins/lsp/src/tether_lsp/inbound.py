"""What a language server sends the client unasked: its requests (configuration, capability
registrations, workspace folders) and its notifications (diagnostics, log lines, progress)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
from lsprotocol import types

from tether_lsp import protocol
from tether_lsp.documents import Published, path_to_uri
from tether_lsp.protocol import MalformedReply
from tether_lsp.rpc import InvalidParams, MethodNotFound

if TYPE_CHECKING:
    from tether_lsp.client import LspClient


@attrs.define
class Progress:
    """One work-done progress of the server, as it last reported it (its own words)."""

    title: str
    message: str | None = None
    percentage: int | None = None

    def describe(self) -> str:
        """``indexing: 12/121 (9%)`` (clangd), ``440 files to analyze`` (the pyright family,
        whose title is empty), ``Initializing JS/TS language features…`` (tsserver)."""
        text = self.title
        if self.message:
            text = f"{text}: {self.message}" if text else self.message
        if self.percentage is not None:
            text += f" ({self.percentage}%)"
        return text or "working"


#: the server's requests answered with an empty result (beside those :func:`answer` answers
#: with something)
_ACCEPTED = frozenset(
    {
        "window/workDoneProgress/create",
        "client/unregisterCapability",
        "window/showMessageRequest",
        "workspace/semanticTokens/refresh",
        "workspace/inlayHint/refresh",
        "workspace/codeLens/refresh",
    }
)

#: the pyright family's log line once it knows the project's files (its total, which its
#: "N files to analyze" progress does not repeat)
_FOUND_FILES = re.compile(r"Found (\d+) source files?")


def _percent(value: float | None) -> int | None:
    return None if value is None else max(0, min(100, round(value)))


def lookup_section(settings: Mapping[str, Any], section: str | None) -> Any:
    """The part of nested ``settings`` named by a dotted ``section`` (None when absent)."""
    if not section:
        return dict(settings)
    node: Any = settings
    for part in section.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def answer(client: LspClient, method: str, params: Any) -> Any:
    """The result for a request of the server; :class:`MethodNotFound` for the others,
    :class:`InvalidParams` (naming the field) for one whose params do not fit the protocol."""
    try:
        return _answer(client, method, params)
    except MalformedReply as exc:
        raise InvalidParams(str(exc)) from None


def _answer(client: LspClient, method: str, params: Any) -> Any:
    server = client.spec.id
    if method == "workspace/configuration":
        asked = protocol.structure(server, method, params, types.ConfigurationParams)
        client.configured = True
        return [lookup_section(client.settings, item.section) for item in asked.items]
    if method == "client/registerCapability":
        registered = protocol.structure(server, method, params, types.RegistrationParams)
        client.registered.update(item.method for item in registered.registrations)
    elif method == "workspace/diagnostic/refresh":
        client.settled += 1
    elif method == "workspace/workspaceFolders":
        folder = types.WorkspaceFolder(uri=path_to_uri(client.root), name=client.root.name)
        return protocol.to_wire([folder])
    elif method == "workspace/applyEdit":
        refused = types.ApplyWorkspaceEditResult(
            applied=False, failure_reason="tether applies edits itself"
        )
        return protocol.to_wire(refused)
    elif method not in _ACCEPTED:
        raise MethodNotFound(method)
    return None


def on_notification(client: LspClient, method: str, params: dict[str, Any]) -> None:
    """Take a notification of the server onto ``client``'s state. One that does not fit the
    protocol is dropped (nobody asked for it; a publish's diagnostics are checked when read)."""
    try:
        _on_notification(client, method, params)
    except MalformedReply:
        return


def _on_notification(client: LspClient, method: str, params: dict[str, Any]) -> None:
    server = client.spec.id
    if method == "textDocument/publishDiagnostics":
        uri, version, raw = protocol.publish_envelope(server, params)
        client.published[uri] = Published(
            client.next_publish_seq(), version, raw=raw, server=server
        )
    elif method == "window/logMessage":
        text = protocol.structure(server, method, params, types.LogMessageParams).message
        if client.files_known or not re.search(client.spec.ready_log or "", text):
            return
        client.files_known = True
        found = _FOUND_FILES.search(text)
        if found:
            count = int(found[1])
            client.files_found = f"{count:,} source file{'s' if count != 1 else ''} found"
    elif method == "$/progress":
        progress = protocol.structure(server, method, params, types.ProgressParams)
        value = protocol.progress_value(server, progress.value)
        if value is not None:
            on_progress(client, str(progress.token), value)


def on_progress(
    client: LspClient,
    token: str,
    value: types.WorkDoneProgressBegin | types.WorkDoneProgressReport | types.WorkDoneProgressEnd,
) -> None:
    """Take a ``$/progress`` value onto ``client.progress``; tell its listener."""
    if isinstance(value, types.WorkDoneProgressBegin):
        message = value.message or None
        client.progress[token] = Progress(value.title, message, _percent(value.percentage))
    elif isinstance(value, types.WorkDoneProgressReport) and token in client.progress:
        current = client.progress[token]
        # a report that leaves out the message or percentage keeps the previous one (LSP)
        if value.message:
            current.message = value.message
        if value.percentage is not None:
            current.percentage = _percent(value.percentage)
    elif isinstance(value, types.WorkDoneProgressEnd):
        if client.progress.pop(token, None) is None:
            return
        client.settled += 1
    else:
        return
    if client.progress:
        client.progress_events += 1
        client.last_busy = client.busy_with()
    if client.on_progress is not None:
        client.on_progress(client)

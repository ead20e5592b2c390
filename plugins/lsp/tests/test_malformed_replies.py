"""A server's reply that breaks the protocol is one clear error naming the server, the method
and the field — for every kind of answer tether reads (structured at the boundary,
:mod:`tether_lsp.protocol`), while the replies real servers send with extra fields and
``null`` optional fields are read as usual.

The server is a real process speaking LSP (tests/fake_lsp_server.py, mode ``malformed``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsp_testkit import Caller, open_lsp_run
from test_supervision import LIMITS, ThirdParty

#: (the call, what the error names: the method and the field, in LSP's spelling)
CASES: dict[str, tuple[dict[str, Any], str]] = {
    "definition": (
        {"action": "definition", "file": "main.fake", "line": 1, "symbol": "alpha"},
        "textDocument/definition reply: invalid value for type, expected int @ "
        "result.range.start.line",
    ),
    "references": (
        {"action": "references", "file": "main.fake", "line": 1, "symbol": "alpha"},
        "textDocument/references reply: required field missing @ result[1].range",
    ),
    "hover": (
        {"action": "hover", "file": "main.fake", "line": 1, "symbol": "alpha"},
        "textDocument/hover reply: invalid value for type, expected MarkupContent or "
        "MarkedString @ result.contents",
    ),
    "workspace symbols": (
        {"action": "symbols", "query": "alpha"},
        "workspace/symbol reply: invalid value for type, expected SymbolKind @ result.kind",
    ),
    "document symbols": (
        {"action": "symbols", "file": "main.fake"},
        "textDocument/documentSymbol reply: required field missing @ result.selectionRange",
    ),
    "code actions": (
        {"action": "code_actions", "file": "main.fake", "line": 1, "symbol": "alpha"},
        "textDocument/codeAction reply: required field missing @ result[0].title",
    ),
    "diagnostics": (
        {"action": "diagnostics", "file": "bad.fake"},
        "textDocument/publishDiagnostics reply: required field missing @ "
        "params.diagnostics[0].message",
    ),
}


@pytest.fixture(scope="module")
def malformed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Caller]:
    workdir = tmp_path_factory.mktemp("malformed")
    (workdir / "fake.toml").write_text("")
    (workdir / "main.fake").write_text("def alpha\nalpha alpha\n")
    (workdir / "bad.fake").write_text("BAD\n")
    with open_lsp_run(workdir, LIMITS, plugins=[ThirdParty(workdir, "malformed")]) as run:
        yield Caller(run)


@pytest.mark.parametrize("case", list(CASES))
def test_a_malformed_reply_is_one_error_naming_server_method_and_field(
    malformed: Caller, case: str
) -> None:
    args, named = CASES[case]
    text = malformed.err(**args)
    assert f"fake sent a malformed {named}" in text, text


def test_a_malformed_rename_writes_nothing_and_names_the_field(malformed: Caller) -> None:
    workdir = Path(malformed.run.run.workdir)
    before = (workdir / "main.fake").read_text()
    text = malformed.err("lsp_rename", file="main.fake", line=1, symbol="alpha", new_name="beta")
    assert "fake sent a malformed textDocument/rename reply: required field missing @ " in text
    assert text.endswith("[0].newText"), text
    assert (workdir / "main.fake").read_text() == before


def test_the_server_still_answers_after_malformed_replies(malformed: Caller) -> None:
    # a malformed answer fails that call only: the connection and the server go on
    malformed.err(action="hover", file="main.fake", line=1, symbol="alpha")
    assert "fake for . (pid" in malformed.ok(action="status")


def test_a_capability_that_does_not_structure_is_left_out_not_fatal(malformed: Caller) -> None:
    # pylsp's notebookDocumentSync meets a gap in lsprotocol's hooks: the server still runs,
    # without that capability; its other capabilities (and its extra fields) are read
    malformed.err(action="hover", file="main.fake", line=1, symbol="alpha")
    supervisor = malformed.run.run.resources["lsp_supervisor"]
    (client,) = [client for client in supervisor.clients if client.spec.id == "fake"]
    assert client.capabilities_dropped == ["notebookDocumentSync"]
    assert client.capabilities.hover_provider is True
    assert client.capabilities.experimental == {"fakeExtension": True}

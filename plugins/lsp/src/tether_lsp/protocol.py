"""The boundary between a language server's JSON and the typed messages the rest of tether_lsp
reads: requests are built from lsprotocol's attrs classes and unstructured here; replies and
notifications are structured here by lsprotocol's converter (cattrs), so a misspelled field is
an attribute error in our code, not a silent ``None``, and a reply that does not fit the
protocol is one :class:`MalformedReply` naming the server, the method and the field.

Real servers deviate from the specification in small ways, and the converter takes them as
they come (each deviation repaired here, nowhere else): extra and nonstandard fields are
ignored; a ``null`` where a list is required reads as the empty list (``diagnostics: null``,
``edits: null``); a ``null`` optional field reads as absent.
"""

from __future__ import annotations

import functools
import re
from typing import Any, TypeVar, Union

import cattrs
from lsprotocol import types
from lsprotocol.converters import get_converter

import tether

T = TypeVar("T")


class MalformedReply(tether.ToolError):
    """A server's reply or notification that does not fit the protocol: which server, which
    method, which field, and what was expected there."""

    def __init__(self, server: str, method: str, problems: list[str]) -> None:
        self.server = server
        self.method = method
        self.problems = problems
        shown = "; ".join(problems[:3]) + (
            f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
        )
        super().__init__(f"{server} sent a malformed {method} reply: {shown}")


@functools.cache
def converter() -> cattrs.Converter:
    """lsprotocol's converter (its hooks for the protocol's unions and enums), with strings and
    integers taken as they are: cattrs' own hooks convert (``str(None)`` is ``"None"``, a
    rename's ``newText: null`` would write it), LSP's JSON has no such conversions."""
    conv = get_converter()
    conv.register_structure_hook(str, _exact_str)
    conv.register_structure_hook(int, _exact_int)
    conv.register_structure_hook(Union[types.Command, types.CodeAction], _command_or_action)  # noqa: UP007
    return conv


def _command_or_action(value: Any, _: type) -> types.Command | types.CodeAction:
    """A code action answer's item. lsprotocol (2025.0.0) takes any item with a ``command``
    for a Command, but a CodeAction may carry one too (clangd's tweaks: ``{title, kind,
    command: {title, command, arguments}}``): a Command's ``command`` is its string."""
    if isinstance(value, dict) and isinstance(value.get("command"), str):
        return converter().structure(value, types.Command)
    return converter().structure(value, types.CodeAction)


def _exact_str(value: Any, kind: type) -> Any:
    """A string as it is (for a str enum, its member)."""
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    return value if kind is str else kind(value)


def _exact_int(value: Any, kind: type) -> Any:
    """An integer as it is (for an int enum, its member; for a bool, a JSON boolean)."""
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"expected a boolean, got {type(value).__name__}")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ValueError(f"expected an integer, got {value!r}"[:80])
    return int(value) if kind is int else kind(int(value))


#: fields that are lists in the protocol and that servers send as ``null`` (read as empty)
_NULL_LISTS = ("diagnostics", "items", "edits", "children", "fromRanges", "relatedDocuments")


def _repair(value: Any) -> Any:
    """``value`` with the deviations of real servers repaired (see the module's docstring):
    ``null`` lists as empty, ``null`` optional fields dropped — recursively, in place."""
    if isinstance(value, dict):
        for key in [key for key, item in value.items() if item is None]:
            if key in _NULL_LISTS:
                value[key] = []
            elif key not in ("result", "data"):
                del value[key]
        for item in value.values():
            if isinstance(item, dict | list):
                _repair(item)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict | list):
                _repair(item)
    return value


def _lsp_name(match: re.Match[str]) -> str:
    """lsprotocol's attribute name as the protocol spells the field (``new_text``: ``newText``,
    ``from_``: ``from``)."""
    head, *rest = match.group(0).rstrip("_").split("_")
    return head + "".join(part.capitalize() for part in rest)


_FAILURES = (cattrs.BaseValidationError, ValueError, TypeError, KeyError, AttributeError)


def _problems(exc: Exception, prefix: str) -> list[str]:
    if not isinstance(exc, cattrs.BaseValidationError):
        return [f"{type(exc).__name__}: {exc} @ {prefix}"]
    problems = []
    for line in cattrs.transform_error(exc):
        text, _, where = line.rpartition(" @ ")
        where = where.replace("$.result", prefix, 1).replace("$", prefix, 1)
        # the path's attribute names, not its dictionary keys (quoted) or indices
        where = re.sub(r"(?<=\.)[a-z_]+", _lsp_name, where)
        problems.append(f"{text} @ {where}")
    return problems


def structure(server: str, method: str, value: Any, kind: type[T], *, field: str = "params") -> T:
    """``value`` (a server's JSON) as ``kind``; :class:`MalformedReply` naming ``server``,
    ``method`` and the field (``params.diagnostics[3].range``) when it does not fit."""
    try:
        return converter().structure(value, kind)
    except _FAILURES:
        pass
    # the rare reply with a deviation: repaired (a walk of the whole reply), then tried again
    try:
        return converter().structure(_repair(value), kind)
    except _FAILURES as exc:
        raise MalformedReply(server, method, _problems(exc, field)) from None


def result(server: str, method: str, value: Any) -> Any:
    """The result of a request of ``method``, structured as lsprotocol's response type for it
    (e.g. ``textDocument/definition``: ``Location | list[Location] | list[LocationLink] |
    None``)."""
    if value is None:
        return None  # no answer, even where LSP wants one (a pull of diagnostics)
    response_type: type = types.METHOD_TO_TYPES[method][1]  # type: ignore[assignment]
    message = {"jsonrpc": "2.0", "id": 0, "result": value}
    answer: Any = structure(server, method, message, response_type, field="result").result
    if method == "textDocument/hover" and not _is_hover_contents(answer.contents):
        # lsprotocol's hook for this union passes any value through
        problem = "invalid value for type, expected MarkupContent or MarkedString @ result.contents"
        raise MalformedReply(server, method, [problem])
    return answer


def _is_hover_contents(contents: Any) -> bool:
    marked = (str, types.MarkedStringWithLanguage)
    if isinstance(contents, list | tuple):
        return all(isinstance(part, marked) for part in contents)
    return isinstance(contents, (*marked, types.MarkupContent))


def initialize_result(server: str, value: Any) -> tuple[types.InitializeResult, list[str]]:
    """The ``initialize`` reply, and the names of the capabilities left out: a capability
    that does not structure (pylsp's ``notebookDocumentSync`` meets a gap in lsprotocol's
    hooks) is dropped, as if not offered, rather than refusing a server over a feature tether
    may never use. A reply that is not an object, or whose ``capabilities`` is not one, is
    malformed."""
    method = "initialize"
    value = {"capabilities": {}} if value is None else value
    try:
        return structure(server, method, value, types.InitializeResult, field="result"), []
    except MalformedReply:
        capabilities = value.get("capabilities") if isinstance(value, dict) else None
        if not isinstance(capabilities, dict):
            raise
    dropped = []
    for name, capability in list(capabilities.items()):
        try:
            structure(server, method, {name: capability}, types.ServerCapabilities)
        except MalformedReply:
            dropped.append(name)
    kept = {name: item for name, item in capabilities.items() if name not in dropped}
    reply = {**value, "capabilities": kept}
    return structure(server, method, reply, types.InitializeResult, field="result"), dropped


def to_wire(value: Any) -> Any:
    """A typed request's params (an lsprotocol attrs object) as JSON for the wire."""
    return converter().unstructure(value)


def structure_each(
    server: str, method: str, values: list[Any], kind: type[T], *, field: str
) -> list[T]:
    """``values`` (the list at ``field``) as a list of ``kind``, in one call of the converter;
    the first item that does not fit raises, with its index."""
    return structure(server, method, values, list[kind], field=field)  # type: ignore[valid-type]


def publish_envelope(server: str, params: Any) -> tuple[str, int | None, list[Any]]:
    """A ``textDocument/publishDiagnostics``'s (uri, version, diagnostics as sent): the
    diagnostics are structured when read (:class:`tether_lsp.documents.Published`)."""
    method = "textDocument/publishDiagnostics"
    if not isinstance(params, dict):
        raise MalformedReply(server, method, ["expected an object @ params"])
    uri, version, raw = params.get("uri"), params.get("version"), params.get("diagnostics")
    if not isinstance(uri, str):
        raise MalformedReply(server, method, ["expected a string @ params.uri"])
    if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
        raise MalformedReply(server, method, ["expected an integer or null @ params.version"])
    if raw is not None and not isinstance(raw, list):
        raise MalformedReply(server, method, ["expected a list @ params.diagnostics"])
    return uri, version, raw or []


_PROGRESS_KINDS: dict[str, type] = {
    "begin": types.WorkDoneProgressBegin,
    "report": types.WorkDoneProgressReport,
    "end": types.WorkDoneProgressEnd,
}


def progress_value(
    server: str, value: Any
) -> types.WorkDoneProgressBegin | types.WorkDoneProgressReport | types.WorkDoneProgressEnd | None:
    """A ``$/progress`` value as work-done progress (begin, report or end); None for another
    kind of progress (partial results, which tether never asks for). A fractional percentage
    (clangd sends none, others do) is rounded, as LSP's ``uinteger`` is meant."""
    kind = value.get("kind") if isinstance(value, dict) else None
    if kind not in _PROGRESS_KINDS:
        return None
    if kind == "begin" and not isinstance(value.get("title"), str):
        value = {**value, "title": ""}  # the pyright family's title is empty; some omit it
    percentage = value.get("percentage")
    if isinstance(percentage, float):
        value = {**value, "percentage": round(percentage)}
    elif percentage is not None and not isinstance(percentage, int):
        value = {key: item for key, item in value.items() if key != "percentage"}
    return structure(server, "$/progress", value, _PROGRESS_KINDS[kind], field="params.value")

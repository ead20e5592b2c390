"""Compact text for the model: ``path:line:col`` plus the source line, hover as markdown."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from tether.text import show_path, truncate
from tether.workdir.paths import OUTSIDE
from tether.workdir.reading import Reader, UnreadableFile, off_loop, read_outside
from tether_lsp.client import LspClient
from tether_lsp.documents import uri_to_path
from tether_lsp.positions import from_lsp_character, split_lines

SYMBOL_KINDS = {
    1: "file", 2: "module", 3: "namespace", 4: "package", 5: "class", 6: "method",
    7: "property", 8: "field", 9: "constructor", 10: "enum", 11: "interface", 12: "function",
    13: "variable", 14: "constant", 15: "string", 16: "number", 17: "boolean", 18: "array",
    19: "object", 20: "key", 21: "null", 22: "enum member", 23: "struct", 24: "event",
    25: "operator", 26: "type parameter",
}  # fmt: skip
SEVERITIES = {1: "error", 2: "warning", 3: "info", 4: "hint"}
#: the largest file a result's source lines are read from
MAX_SOURCE_BYTES = 8 * 1024 * 1024


@attrs.frozen
class Place:
    path: Path | None
    uri: str
    line: int  # 0-based
    character: int  # LSP units


class SourceLines:
    """The lines of files that results point into: :meth:`load` reads them (once per call, off
    the event loop, through the core's reader); :meth:`lines` only looks them up."""

    def __init__(self, client: LspClient) -> None:
        self._client = client
        self._cache: dict[str, list[str]] = {}

    async def load(self, uris: Iterable[str]) -> None:
        """Read the files of ``uris`` that are not open documents: workdir files without
        following a symlink, a library's file outside it as a regular file only; a file that
        cannot be read that way shows no source line."""
        wanted = {
            uri: path
            for uri in uris
            if uri not in self._cache
            and uri not in self._client.documents
            and (path := uri_to_path(uri)) is not None
        }
        if not wanted:
            return
        workdir = self._client.run.workdir

        def read_all(reader: Reader) -> dict[str, str]:
            texts: dict[str, str] = {}
            for uri, path in wanted.items():
                try:
                    if path.is_relative_to(workdir):
                        data = reader.read(path, field="uri", max_bytes=MAX_SOURCE_BYTES)
                    else:
                        data = read_outside(path, field="uri", max_bytes=MAX_SOURCE_BYTES)
                except UnreadableFile:
                    data = b""
                texts[uri] = data.decode("utf-8", errors="replace")
            return texts

        for uri, text in (await off_loop(workdir, read_all)).items():
            self._cache[uri] = split_lines(text)

    def lines(self, place: Place) -> list[str]:
        if place.uri not in self._cache:
            doc = self._client.documents.get(place.uri)
            # a file :meth:`load` was not given shows no source line (it is never read here)
            self._cache[place.uri] = split_lines(doc.text if doc is not None else "")
        return self._cache[place.uri]

    def describe(self, place: Place, workdir: Path) -> str:
        lines = self.lines(place)
        text = lines[place.line] if place.line < len(lines) else ""
        column = from_lsp_character(text, place.character, self._client.encoding) + 1
        where = f"{display_path(place, workdir)}:{place.line + 1}:{column}"
        if place.path is not None and not place.path.is_relative_to(workdir):
            where += OUTSIDE
        source = truncate(text.strip(), 160)
        return f"{where}: {source}" if source else where


def display_path(place: Place, workdir: Path) -> str:
    """The place's file as shown: relative to the workdir, or absolute (then its location is
    marked as outside it: a library's definition is not the checkout's code); control
    characters escaped."""
    if place.path is None:
        return show_path(place.uri)
    try:
        return show_path(place.path.relative_to(workdir))
    except ValueError:
        return show_path(place.path)


def environment_of(path: Path) -> str:
    """Where a file outside the workdir lives, for the model: the Python environment (the
    directory holding ``pyvenv.cfg``, or the interpreter prefix holding ``lib/pythonX.Y``),
    the package under ``node_modules``, or the directory itself."""
    for parent in path.parents:
        if (parent / "pyvenv.cfg").is_file():
            return f"the Python environment {parent}"
    for parent in path.parents:
        if parent.name == "node_modules":
            return f"the node packages in {parent}"
        if parent.name.startswith("python") and parent.parent.name in ("lib", "lib64"):
            return f"the Python installation {parent.parent.parent}"
    return str(path.parent)


def outside_note(found: list[Place], workdir: Path) -> str | None:
    """``(N of these are outside the workdir: in …)`` when an answer leaves the workdir, so a
    definition in another copy of a library is not taken for the project's own."""
    outside = [
        place.path
        for place in found
        if place.path is not None and workdir not in place.path.parents
    ]
    if not outside:
        return None
    where = sorted({environment_of(path) for path in outside})
    count = "it is" if len(found) == 1 else f"{len(outside)} of these are"
    return f"({count} outside the workdir: in {'; '.join(where)})"


def places(result: Any) -> list[Place]:
    """Location | Location[] | LocationLink[] | null -> sorted unique places."""
    if result is None:
        return []
    items = result if isinstance(result, list) else [result]
    found: dict[tuple[str, int, int], Place] = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        uri = item.get("targetUri") or item.get("uri")
        rng = item.get("targetSelectionRange") or item.get("range") or item.get("targetRange")
        if not uri or not rng:
            continue
        start = rng["start"]
        found.setdefault(
            (uri, start["line"], start["character"]),
            Place(uri_to_path(uri), uri, start["line"], start["character"]),
        )
    return [found[key] for key in sorted(found)]


def hover_text(result: Any) -> str:
    if not result:
        return ""
    contents = result.get("contents") if isinstance(result, dict) else result
    parts = contents if isinstance(contents, list) else [contents]
    out: list[str] = []
    for part in parts:
        if isinstance(part, str):  # a MarkedString: markdown
            out.append(markdown_text(part))
        elif isinstance(part, dict) and "language" in part:
            out.append(f"```{part['language']}\n{part.get('value', '')}\n```")
        elif isinstance(part, dict) and part.get("kind") == "plaintext":
            out.append(str(part.get("value", "")))
        elif isinstance(part, dict):
            out.append(markdown_text(str(part.get("value", ""))))
    return "\n\n".join(chunk for chunk in out if chunk.strip()).strip()


#: a CommonMark backslash escape (of ASCII punctuation), an HTML entity, a hard line break
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")
_ENTITY = re.compile(r"&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_HARD_BREAK = re.compile(r"(?: {2,}|\\)$", re.MULTILINE)
_CODE = re.compile(r"(^```.*?^```[ \t]*$|`[^`\n]+`)", re.MULTILINE | re.DOTALL)


def markdown_text(markdown: str) -> str:
    """A server's markdown as the text it stands for: the escapes servers add for markdown
    (``\\*args``, ``&nbsp;`` as indentation, ``&lt;``, a hard break's trailing spaces) read as
    their characters; code (fenced blocks, inline spans), where markdown keeps them literal, as
    it is."""
    out = []
    for index, chunk in enumerate(_CODE.split(markdown)):
        if index % 2:
            out.append(chunk)
            continue
        chunk = _HARD_BREAK.sub("", chunk)
        chunk = _ESCAPED.sub(r"\1", chunk)
        out.append(_ENTITY.sub(lambda m: html.unescape(m.group(0)).replace("\xa0", " "), chunk))
    return "".join(out)


def diagnostic_line(diagnostic: dict[str, Any], where: str, line_text: str, encoding: str) -> str:
    start = diagnostic.get("range", {}).get("start", {"line": 0, "character": 0})
    column = from_lsp_character(line_text, start.get("character", 0), encoding) + 1
    severity = SEVERITIES.get(diagnostic.get("severity") or 1, "error")
    code = diagnostic.get("code")
    code_text = f" [{code}]" if code not in (None, "") else ""
    message = str(diagnostic.get("message", "")).strip().replace("\n", " ")
    source = diagnostic.get("source")
    source_text = f" ({source})" if source else ""
    return (
        f"{where}:{start.get('line', 0) + 1}:{column} {severity}{code_text}: {message}{source_text}"
    )


def format_diagnostics(
    diagnostics: list[dict[str, Any]], rel: str, text: str, encoding: str
) -> list[str]:
    lines = split_lines(text)
    out = []
    for diagnostic in sorted(diagnostics, key=diagnostic_order):
        line = diagnostic.get("range", {}).get("start", {}).get("line", 0)
        out.append(
            diagnostic_line(diagnostic, rel, lines[line] if line < len(lines) else "", encoding)
        )
    return out


def diagnostic_order(diagnostic: dict[str, Any]) -> tuple[int, int, int]:
    start = diagnostic.get("range", {}).get("start", {})
    return (start.get("line", 0), start.get("character", 0), diagnostic.get("severity") or 1)


def symbol_rows(result: Any) -> list[tuple[int, str, str, Place | None, str]]:
    """(depth, kind, name, place, container) for document or workspace symbols."""
    rows: list[tuple[int, str, str, Place | None, str]] = []

    def walk(items: list[Any], depth: int, parent: str) -> None:
        for item in items:
            if not isinstance(item, dict):
                continue
            kind = SYMBOL_KINDS.get(item.get("kind", 0), "symbol")
            name = str(item.get("name", "?"))
            place: Place | None = None
            if "location" in item:
                loc = item["location"]
                start = (loc.get("range") or {}).get("start", {"line": 0, "character": 0})
                place = Place(
                    uri_to_path(loc["uri"]), loc["uri"], start["line"], start["character"]
                )
            elif "selectionRange" in item:
                start = item["selectionRange"]["start"]
                place = Place(None, "", start["line"], start["character"])
            rows.append((depth, kind, name, place, str(item.get("containerName") or parent)))
            walk(item.get("children") or [], depth + 1, name)

    walk(result if isinstance(result, list) else [], 0, "")
    return rows

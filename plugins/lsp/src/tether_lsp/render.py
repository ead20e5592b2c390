"""Compact text for the model: ``path:line:col`` plus the source line, hover as markdown."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs
from lsprotocol import types

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


Locations = types.Location | Sequence[types.Location | types.LocationLink] | None


def location_ranges(result: Locations) -> list[tuple[str, types.Range]]:
    """(uri, range) of each Location / LocationLink of a navigation answer: a link's target
    selection range (the name, not the whole declaration)."""
    if result is None:
        return []
    items = [result] if isinstance(result, types.Location) else result
    return [
        (item.target_uri, item.target_selection_range)
        if isinstance(item, types.LocationLink)
        else (item.uri, item.range)
        for item in items
    ]


def places(result: Locations) -> list[Place]:
    """Location | Location[] | LocationLink[] | null -> sorted unique places."""
    found: dict[tuple[str, int, int], Place] = {}
    for uri, rng in location_ranges(result):
        start = rng.start
        found.setdefault(
            (uri, start.line, start.character),
            Place(uri_to_path(uri), uri, start.line, start.character),
        )
    return [found[key] for key in sorted(found)]


def hover_text(result: types.Hover | None) -> str:
    if result is None:
        return ""
    contents = result.contents
    parts: Sequence[str | types.MarkedStringWithLanguage | types.MarkupContent] = (
        contents if isinstance(contents, Sequence) and not isinstance(contents, str) else [contents]
    )
    out: list[str] = []
    for part in parts:
        if isinstance(part, str):  # a MarkedString: markdown
            out.append(markdown_text(part))
        elif isinstance(part, types.MarkedStringWithLanguage):
            out.append(f"```{part.language}\n{part.value}\n```")
        elif part.kind == types.MarkupKind.PlainText:
            out.append(part.value)
        else:
            out.append(markdown_text(part.value))
    return "\n\n".join(chunk for chunk in out if chunk.strip()).strip()


#: a CommonMark backslash escape (of ASCII punctuation), an HTML entity, a hard line break
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")
_ENTITY = re.compile(r"&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_HARD_BREAK = re.compile(r"(?: {2,}|\\)$", re.MULTILINE)
_CODE = re.compile(r"(^```.*?^```[ \t]*$|`[^`\n]+`)", re.MULTILINE | re.DOTALL)


def _may_break(chunk: str) -> bool:
    """``chunk`` may hold a hard break (two spaces or a backslash before a line's end): the
    regex looks only then (it is slow on indented text; these are substring searches)."""
    return "  \n" in chunk or "\\\n" in chunk or chunk.endswith("  ") or chunk.endswith("\\")


def markdown_text(markdown: str) -> str:
    """A server's markdown as the text it stands for: the escapes servers add for markdown
    (``\\*args``, ``&nbsp;`` as indentation, ``&lt;``, a hard break's trailing spaces) read as
    their characters; code (fenced blocks, inline spans), where markdown keeps them literal, as
    it is."""
    out = []
    # each rule runs only where its first character is (every hover's text passes here)
    chunks = _CODE.split(markdown) if "`" in markdown else [markdown]
    for index, chunk in enumerate(chunks):
        if index % 2:
            out.append(chunk)
            continue
        if _may_break(chunk):
            chunk = _HARD_BREAK.sub("", chunk)
        if "\\" in chunk:
            chunk = _ESCAPED.sub(r"\1", chunk)
        if "&" in chunk:
            chunk = _ENTITY.sub(lambda m: html.unescape(m.group(0)).replace("\xa0", " "), chunk)
        out.append(chunk)
    return "".join(out)


def diagnostic_line(diagnostic: types.Diagnostic, where: str, line_text: str, encoding: str) -> str:
    start = diagnostic.range.start
    column = from_lsp_character(line_text, start.character, encoding) + 1
    severity = SEVERITIES.get(diagnostic.severity or 1, "error")
    code = diagnostic.code
    code_text = f" [{code}]" if code not in (None, "") else ""
    message = diagnostic.message.strip().replace("\n", " ")
    source = diagnostic.source
    source_text = f" ({source})" if source else ""
    return f"{where}:{start.line + 1}:{column} {severity}{code_text}: {message}{source_text}"


def format_diagnostics(
    diagnostics: list[types.Diagnostic], rel: str, text: str, encoding: str
) -> list[str]:
    lines = split_lines(text)
    out = []
    for diagnostic in sorted(diagnostics, key=diagnostic_order):
        line = diagnostic.range.start.line
        out.append(
            diagnostic_line(diagnostic, rel, lines[line] if line < len(lines) else "", encoding)
        )
    return out


def diagnostic_order(diagnostic: types.Diagnostic) -> tuple[int, int, int]:
    start = diagnostic.range.start
    return (start.line, start.character, int(diagnostic.severity or 1))


Symbol = types.SymbolInformation | types.WorkspaceSymbol | types.DocumentSymbol


def symbol_rows(result: Sequence[Symbol] | None) -> list[tuple[int, str, str, Place | None, str]]:
    """(depth, kind, name, place, container) for document or workspace symbols."""
    rows: list[tuple[int, str, str, Place | None, str]] = []

    def walk(items: Sequence[Symbol], depth: int, parent: str) -> None:
        for item in items:
            kind = SYMBOL_KINDS.get(int(item.kind), "symbol")
            place: Place | None = None
            container = parent
            if isinstance(item, types.DocumentSymbol):
                start = item.selection_range.start
                place = Place(None, "", start.line, start.character)
            else:
                loc = item.location
                # a WorkspaceSymbol may carry its file alone (resolved on request)
                rng = getattr(loc, "range", None)
                line, character = (rng.start.line, rng.start.character) if rng else (0, 0)
                place = Place(uri_to_path(loc.uri), loc.uri, line, character)
                container = item.container_name or parent
            rows.append((depth, kind, item.name, place, container))
            if isinstance(item, types.DocumentSymbol):
                walk(item.children or [], depth + 1, item.name)

    walk(result or [], 0, "")
    return rows

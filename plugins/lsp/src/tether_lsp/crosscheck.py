"""What a server's answer left out: the old identifier as a whole token elsewhere in the workdir.

A server answers for its own project; when that project excludes files (pyright's ``include``,
a file outside the server's root) references and renames are partial and nothing says so. The
workdir's files of the server's language are searched for the identifier as a whole token, and
each occurrence no returned range covers is reported, with why the server did not see it.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

import tether
from tether import regex as linear
from tether.workdir.paths import relative
from tether.workdir.reading import Reader, UnreadableFile, off_loop
from tether_lsp import coverage
from tether_lsp.client import LspClient
from tether_lsp.coverage import NameIndex, possessive
from tether_lsp.documents import uri_to_path
from tether_lsp.positions import from_lsp_character, split_lines
from tether_lsp.servers import ServerSpec

if TYPE_CHECKING:
    from lsprotocol import types

SCAN_BYTES = 2_000_000
FILES_SHOWN = 20
LINES_SHOWN = 12


@attrs.frozen
class Uncovered:
    """Occurrences of the identifier in one file that the server's answer does not cover."""

    path: Path
    lines: tuple[int, ...]  # 1-based
    #: why the server did not see them: outside its project (reason) or None
    outside: str | None
    #: the server's answer touches this file elsewhere
    touched: bool


def token_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")


async def covered_spans(client: LspClient, ranges: Iterable[tuple[str, types.Range]]) -> Spans:
    """(uri, LSP range) pairs -> path -> line -> [(start, end)] in code points (the files are
    read off the event loop, through the core's reader)."""
    opened = {uri: doc.text for uri, doc in client.documents.items()}
    pairs = list(ranges)
    return await off_loop(
        client.run.workdir, lambda reader: _covered_spans(reader, client, opened, pairs)
    )


def _read_text(reader: Reader, path: Path) -> str:
    """A workdir file's text for the cross-check; one that cannot be read (outside the workdir,
    a FIFO, too large) is searched as empty."""
    try:
        return reader.read(path, field="uri", max_bytes=SCAN_BYTES).decode("utf-8", "replace")
    except UnreadableFile:
        return ""


def _covered_spans(
    reader: Reader,
    client: LspClient,
    opened: dict[str, str],
    ranges: list[tuple[str, types.Range]],
) -> Spans:
    spans: Spans = {}
    texts: dict[Path, list[str]] = {}
    for uri, rng in ranges:
        path = uri_to_path(uri)
        if path is None:
            continue
        if path not in texts:
            text = opened.get(uri)
            texts[path] = split_lines(text if text is not None else _read_text(reader, path))
        lines = texts[path]
        start, end = rng.start, rng.end
        line = start.line
        line_text = lines[line] if line < len(lines) else ""
        first = from_lsp_character(line_text, start.character, client.encoding)
        last = first
        if end.line == line:
            last = from_lsp_character(line_text, end.character, client.encoding)
        else:
            last = len(line_text)
        spans.setdefault(path.resolve(), {}).setdefault(line, []).append((first, max(last, first)))
    return spans


Spans = dict[Path, dict[int, list[tuple[int, int]]]]


@attrs.frozen
class Unseen:
    """A whole-word search's occurrences no span covers (``found``), and the files it could
    not search, with why (``unsearched``)."""

    found: list[Uncovered]
    unsearched: dict[Path, str]
    searched: int


async def uncovered(
    client: LspClient, index: NameIndex, name: str, spans: Spans, *, budget_s: float | None = None
) -> Unseen:
    """Whole-token occurrences of ``name`` in the workdir's files of the server's language that
    no span covers, per file, from the run's :class:`~tether_lsp.coverage.NameIndex` (only the
    files that may hold the name are read). Every file is read off the event loop through the
    core's reader: a FIFO, a device, a symlink or a file over the index's cap is named
    unsearched, never opened."""
    opened = {uri: doc.text for uri, doc in client.documents.items()}
    budget = coverage.SEARCH_BUDGET_S if budget_s is None else budget_s
    return await off_loop(
        index.workdir,
        lambda reader: _uncovered(reader, client, opened, index, name, spans, budget),
    )


def _uncovered(
    reader: Reader,
    client: LspClient,
    opened: dict[str, str],
    index: NameIndex,
    name: str,
    spans: Spans,
    budget_s: float,
) -> Unseen:
    pattern = token_pattern(name)
    result = index.search(reader, name, client.spec.extensions, budget_s)
    found: list[Uncovered] = []
    documents = {path for uri in opened if (path := uri_to_path(uri)) is not None}
    for path in sorted(set(result.lines) | documents):
        text = opened.get(path.as_uri())
        if text is None:
            if path not in result.lines:
                continue
            text = _read_text(reader, path)
        if name not in text:
            continue
        own = spans.get(path.resolve(), {})
        lines: list[int] = []
        for line_index, line_text in enumerate(split_lines(text)):
            for match in pattern.finditer(line_text):
                if not any(a <= match.start() < max(b, a + 1) for a, b in own.get(line_index, [])):
                    lines.append(line_index + 1)
                    break
        if lines:
            outside = outside_project(client, path, reader)
            found.append(Uncovered(path, tuple(lines), outside, bool(own)))
    return Unseen(found, result.unsearched, result.searched)


def outside_project(client: LspClient, path: Path, reader: Reader) -> str | None:
    """Why ``path`` is not in the server's project, when tether can tell; else None."""
    return outside_of(client.spec, client.root, path, reader)


def outside_of(spec: ServerSpec, root: Path, path: Path, reader: Reader) -> str | None:
    """Why ``path`` is not in the project of ``spec`` at ``root``, when tether can tell."""
    try:
        rel = path.resolve().relative_to(root.resolve())
    except ValueError:
        return f"outside {possessive(spec.id)} root ({root.name or root})"
    if spec.project_config == "pyright":
        return pyright_exclusion(root, rel.as_posix(), spec.id, reader)
    if spec.project_config == "tsconfig":
        return tsconfig_exclusion(root, path.resolve(), spec.id, reader)
    if spec.project_config == "compile_commands":
        return compile_commands_exclusion(root, path.resolve(), spec.id, reader)
    if spec.project_config == "go":
        return go_build_exclusion(rel, path, spec.id, reader)
    return None


#: the C family's translation units (a header is built as part of the sources including it)
_SOURCES = frozenset({".c", ".cc", ".cpp", ".cxx", ".c++", ".m", ".mm"})
_databases: dict[tuple[Path, int, int], frozenset[Path]] = {}


def compile_commands_exclusion(root: Path, path: Path, server: str, reader: Reader) -> str | None:
    """A source file missing from the root's ``compile_commands.json``: clangd's index (its
    references and renames) never reads it. Headers are not judged (the sources including
    them bring them in)."""
    database = root / "compile_commands.json"
    if path.suffix not in _SOURCES:
        return None
    try:
        info = database.stat()
    except OSError:
        return None
    key = (database, info.st_mtime_ns, info.st_size)
    files = _databases.get(key)
    if files is None:
        try:
            entries = json.loads(reader.read(database, max_bytes=64 * SCAN_BYTES))
        except (UnreadableFile, ValueError):
            return None
        found: set[Path] = set()
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get("file"), str):
                base = Path(str(entry.get("directory") or root))
                found.add(Path(os.path.normpath(base / entry["file"])))
        files = _databases[key] = frozenset(found)
    if path in files or Path(os.path.normpath(path)) in files:
        return None
    return f"outside {possessive(server)} project (not in compile_commands.json)"


_GO_BUILD = re.compile(r"^//go:build\s+(.+)$", re.M)
_GO_PLATFORMS = frozenset(
    "aix android darwin dragonfly freebsd illumos ios js linux netbsd openbsd plan9 solaris "
    "wasip1 windows 386 amd64 arm arm64 loong64 mips mips64 mips64le mipsle ppc64 ppc64le "
    "riscv64 s390x wasm".split()
)


def _go_tags() -> frozenset[str]:
    import platform
    import sys

    arch = {"x86_64": "amd64", "aarch64": "arm64", "i686": "386"}.get(platform.machine(), "")
    goos = "linux" if sys.platform.startswith("linux") else sys.platform
    tags = {goos, arch, "gc", "cgo"}
    if goos != "windows":
        tags.add("unix")
    return frozenset(tags | {f"go1.{n}" for n in range(1, 40)})


def go_build_exclusion(rel: Path, path: Path, server: str, reader: Reader) -> str | None:
    """A Go file the go tool leaves out of the build gopls loads: under ``testdata`` or a
    directory starting with ``_`` or ``.``, named so, for another platform, or excluded by its
    ``//go:build`` line."""
    who = possessive(server)
    for part in rel.parts[:-1]:
        if part == "testdata" or part.startswith(("_", ".")):
            return f"outside {who} build (under {part}/, which the go tool ignores)"
    if path.name.startswith(("_", ".")):
        return f"outside {who} build (a file named {path.name} is ignored by the go tool)"
    tags = _go_tags()
    parts = path.stem.removesuffix("_test").split("_")[1:]
    for part in parts[-2:]:
        if part in _GO_PLATFORMS and part not in tags:
            return f"outside {who} build (for {part} only, by its name)"
    try:
        head = reader.read(path, max_bytes=SCAN_BYTES)[:4096].decode("utf-8", "replace")
    except UnreadableFile:
        return None
    head = head.split("\npackage ", 1)[0]
    match = _GO_BUILD.search(head)
    if match is None:
        return None
    expression = match[1].strip()
    try:
        if _go_constraint(expression, tags):
            return None
    except ValueError:
        return None  # not understood: not judged
    return f"outside {who} build (`//go:build {expression}`)"


_GO_TOKEN = re.compile(r"\s*(\(|\)|!|&&|\|\||[\w.]+)")


def _go_constraint(expression: str, tags: frozenset[str]) -> bool:
    """A ``//go:build`` expression's value with ``tags`` set (ValueError: not one)."""
    tokens: list[str] = []
    index = 0
    while index < len(expression):
        match = _GO_TOKEN.match(expression, index)
        if match is None:
            if expression[index:].strip():
                raise ValueError(expression)
            break
        tokens.append(match[1])
        index = match.end()
    position = 0

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def take() -> str:
        nonlocal position
        if position >= len(tokens):
            raise ValueError(expression)
        position += 1
        return tokens[position - 1]

    def either() -> bool:
        value = both()
        while peek() == "||":
            take()
            value = both() or value
        return value

    def both() -> bool:
        value = unary()
        while peek() == "&&":
            take()
            value = unary() and value
        return value

    def unary() -> bool:
        token = take()
        if token == "!":
            return not unary()
        if token == "(":
            value = either()
            if take() != ")":
                raise ValueError(expression)
            return value
        if token in (")", "&&", "||"):
            raise ValueError(expression)
        return token in tags

    value = either()
    if position != len(tokens):
        raise ValueError(expression)
    return value


_JSON_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.S)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def _tsconfig(path: Path, reader: Reader) -> dict[str, Any] | None:
    """A tsconfig.json, whose JSON may carry comments and trailing commas; None: unreadable."""
    try:
        text = reader.read_text(path, max_bytes=SCAN_BYTES)
    except (UnreadableFile, tether.ToolError):
        return None
    text = _JSON_COMMENT.sub(lambda m: m[0] if m[0].startswith('"') else "", text)
    try:
        data = json.loads(_TRAILING_COMMA.sub(r"\1", text))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def tsconfig_exclusion(root: Path, path: Path, server: str, reader: Reader) -> str | None:
    """The nearest tsconfig.json above ``path`` (up to the root) leaves it out of its project
    (``files``/``include``/``exclude``): why. tsserver gives a file the project of the nearest
    tsconfig.json; a file no tsconfig includes is in an inferred project of its own, where
    imports mapped for a test runner (``swr/_internal``) do not resolve."""
    directory = path.parent
    root = root.resolve()
    while True:
        config_path = directory / "tsconfig.json"
        if config_path.is_file():
            break
        if directory == root or root not in directory.parents:
            return None
        directory = directory.parent
    return tsconfig_leaves_out(config_path, path, root, server, reader)


def tsconfig_leaves_out(
    config_path: Path, path: Path, root: Path, server: str, reader: Reader
) -> str | None:
    """``config_path`` (a tsconfig.json) leaves ``path`` out of its project: why."""
    config = _tsconfig(config_path, reader)
    if config is None:
        return None
    rel = path.relative_to(config_path.parent).as_posix()
    shown = config_path.relative_to(root).as_posix()
    files = [p for p in config.get("files") or [] if isinstance(p, str)]
    if any(Path(p).as_posix().removeprefix("./") == rel for p in files):
        return None
    include = config.get("include")
    if include is None:
        include = [] if files else ["**/*"]
    include = [p for p in include if isinstance(p, str)]
    if not any(_glob_regex(p).match(rel) for p in include):
        return f"outside {server}'s project (`include` of {shown})"
    exclude = [p for p in config.get("exclude") or [] if isinstance(p, str)]
    if any(_glob_regex(p).match(rel) for p in exclude):
        return f"outside {server}'s project (`exclude` of {shown})"
    return None


def leaves_out_nested(
    spec_id: str, project_config: str | None, outer: Path, nested: Path, suffix: str, reader: Reader
) -> str | None:
    """Whether the project at ``outer`` leaves the files of ``nested`` (a root inside it) out,
    and why: then a checker run at ``outer`` does not cover them."""
    probe = nested / f"__tether_probe__{suffix}"
    if project_config == "tsconfig":
        return tsconfig_leaves_out(outer / "tsconfig.json", probe, outer, spec_id, reader)
    if project_config == "pyright":
        return pyright_exclusion(outer, probe.relative_to(outer).as_posix(), spec_id, reader)
    return None


def _glob_regex(pattern: str) -> linear.Regex[str]:
    """A pyrightconfig `include`/`exclude` glob as a regex for the linear engine (the globs are
    the checkout's: `**a**a**a…` would backtrack for ever in Python's `re`)."""
    pattern = pattern.strip().removeprefix("./").rstrip("/")
    out = ""
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out += "(?:.*/)?"
            index += 3
        elif pattern.startswith("**", index):
            out += ".*"
            index += 2
        elif pattern[index] == "*":
            out += "[^/]*"
            index += 1
        elif pattern[index] == "?":
            out += "[^/]"
            index += 1
        else:
            out += re.escape(pattern[index])
            index += 1
    # a directory entry covers everything below it
    return linear.compile(rf"^{out}(?:/.*)?$")


def _pyright_config(root: Path, server: str, reader: Reader) -> tuple[dict[str, Any], str] | None:
    config = root / "pyrightconfig.json"
    if config.is_file():
        try:
            data = json.loads(reader.read(config, max_bytes=SCAN_BYTES))
        except (UnreadableFile, ValueError):
            return None
        return (data, "pyrightconfig.json") if isinstance(data, dict) else None
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            tool = tomllib.loads(reader.read_text(pyproject, max_bytes=SCAN_BYTES)).get("tool", {})
        except (tether.ToolError, tomllib.TOMLDecodeError):
            return None
        for section in (server, "basedpyright", "pyright"):
            if isinstance(tool.get(section), dict):
                return tool[section], "pyproject.toml"
    return None


def pyright_exclusion(root: Path, rel: str, server: str, reader: Reader) -> str | None:
    """The pyright family's ``include`` / ``exclude`` keep ``rel`` out of the project: why."""
    found = _pyright_config(root, server, reader)
    if found is None:
        return None
    config, where = found
    include = [p for p in config.get("include") or [] if isinstance(p, str)]
    if include and not any(_glob_regex(p).match(rel) for p in include):
        return f"outside {server}'s project (`include` in {where})"
    exclude = [p for p in config.get("exclude") or [] if isinstance(p, str)]
    if any(_glob_regex(p).match(rel) for p in exclude):
        return f"outside {server}'s project (`exclude` in {where})"
    return None


def _lines(found: Uncovered) -> str:
    shown = ", ".join(str(n) for n in found.lines[:LINES_SHOWN])
    more = len(found.lines) - LINES_SHOWN
    return shown + (f" and {more} more lines" if more > 0 else "")


def describe(
    found: list[Uncovered], name: str, server: str, workdir: Path, *, suffix: str = ""
) -> list[str]:
    """One line per file group: outside the project (with its reason), files the server's
    answer did not touch, and leftovers in files it did."""
    groups: dict[str, list[Uncovered]] = {}
    for item in found:
        if item.outside is not None:
            why = item.outside
        elif item.touched:
            why = (
                f"in a renamed file, where {server} did not rename it (a comment, a string or "
                "another symbol of that name)"
            )
        else:
            why = (
                f"in files {server}'s answer does not touch (another symbol of that name, a "
                "comment or a string — or a file the server does not see)"
            )
        groups.setdefault(why, []).append(item)
    rows = []
    for why, items in groups.items():
        where = "; ".join(
            f"{relative(workdir, item.path)}:{_lines(item)}" for item in items[:FILES_SHOWN]
        )
        if len(items) > FILES_SHOWN:
            where += f"; and {len(items) - FILES_SHOWN} more files"
        rows.append(f"also found `{name}` in {where} — {why}{suffix}")
    return rows

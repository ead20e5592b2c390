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
from typing import Any

import attrs

from tether.paths import relative
from tether_lsp.client import LspClient
from tether_lsp.documents import uri_to_path
from tether_lsp.positions import from_lsp_character, split_lines
from tether_lsp.supervisor import SKIP_DIRS

SCAN_FILES = 20_000
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


def covered_spans(client: LspClient, ranges: Iterable[tuple[str, dict[str, Any]]]) -> Spans:
    """(uri, LSP range) pairs -> path -> line -> [(start, end)] in code points."""
    spans: Spans = {}
    texts: dict[Path, list[str]] = {}
    for uri, rng in ranges:
        path = uri_to_path(uri)
        if path is None:
            continue
        if path not in texts:
            doc = client.documents.get(uri)
            try:
                text = doc.text if doc is not None else path.read_text(errors="replace")
            except OSError:
                text = ""
            texts[path] = split_lines(text)
        lines = texts[path]
        start, end = rng.get("start", {}), rng.get("end", rng.get("start", {}))
        line = int(start.get("line", 0))
        line_text = lines[line] if line < len(lines) else ""
        first = from_lsp_character(line_text, int(start.get("character", 0)), client.encoding)
        last = first
        if int(end.get("line", line)) == line:
            last = from_lsp_character(line_text, int(end.get("character", 0)), client.encoding)
        else:
            last = len(line_text)
        spans.setdefault(path.resolve(), {}).setdefault(line, []).append((first, max(last, first)))
    return spans


Spans = dict[Path, dict[int, list[tuple[int, int]]]]


def _source_files(workdir: Path, suffixes: frozenset[str]) -> Iterable[Path]:
    seen = 0
    for directory, dirnames, filenames in os.walk(workdir):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if os.path.splitext(name)[1] in suffixes:
                seen += 1
                if seen > SCAN_FILES:
                    return
                yield Path(directory) / name


def uncovered(client: LspClient, workdir: Path, name: str, spans: Spans) -> list[Uncovered]:
    """Whole-token occurrences of ``name`` in the workdir's files of the server's language that
    no span covers, per file."""
    pattern = token_pattern(name)
    found: list[Uncovered] = []
    for path in _source_files(workdir, frozenset(client.spec.extensions)):
        try:
            if path.stat().st_size > SCAN_BYTES:
                continue
            doc = client.documents.get(path.as_uri())
            text = doc.text if doc is not None else path.read_text(errors="replace")
        except OSError:
            continue
        if name not in text:
            continue
        own = spans.get(path.resolve(), {})
        lines: list[int] = []
        for index, line_text in enumerate(split_lines(text)):
            for match in pattern.finditer(line_text):
                if not any(a <= match.start() < max(b, a + 1) for a, b in own.get(index, [])):
                    lines.append(index + 1)
                    break
        if lines:
            outside = outside_project(client, path)
            found.append(Uncovered(path, tuple(lines), outside, bool(own)))
    return found


def outside_project(client: LspClient, path: Path) -> str | None:
    """Why ``path`` is not in the server's project, when tether can tell; else None."""
    root = client.root
    try:
        rel = path.resolve().relative_to(root.resolve())
    except ValueError:
        return f"outside {client.spec.id}'s root ({root.name or root})"
    if client.spec.project_config == "pyright":
        return pyright_exclusion(root, rel.as_posix(), client.spec.id)
    return None


def _glob_regex(pattern: str) -> re.Pattern[str]:
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
    return re.compile(rf"^{out}(?:/.*)?$")


def _pyright_config(root: Path, server: str) -> tuple[dict[str, Any], str] | None:
    config = root / "pyrightconfig.json"
    if config.is_file():
        try:
            data = json.loads(config.read_text())
        except (OSError, ValueError):
            return None
        return (data, "pyrightconfig.json") if isinstance(data, dict) else None
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            tool = tomllib.loads(pyproject.read_text()).get("tool", {})
        except (OSError, tomllib.TOMLDecodeError):
            return None
        for section in (server, "basedpyright", "pyright"):
            if isinstance(tool.get(section), dict):
                return tool[section], "pyproject.toml"
    return None


def pyright_exclusion(root: Path, rel: str, server: str) -> str | None:
    """The pyright family's ``include`` / ``exclude`` keep ``rel`` out of the project: why."""
    found = _pyright_config(root, server)
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

"""A strict unified-diff applier: exact context, every hunk or nothing."""

from __future__ import annotations

import re

import attrs

from tether import ToolError

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@attrs.frozen
class FilePatch:
    old_path: str | None  # None: the file is created
    new_path: str | None  # None: the file is deleted
    hunks: tuple[
        tuple[int, tuple[str, ...]], ...
    ]  # (old start line, lines with their ' '/'-'/'+' prefix)


def _strip_prefix(name: str) -> str | None:
    name = name.split("\t", 1)[0].strip()
    if name == "/dev/null":
        return None
    if name.startswith(("a/", "b/")):
        return name[2:]
    return name


def parse_patch(text: str) -> list[FilePatch]:
    """Parse a unified diff; raise ToolError naming the line that does not fit."""
    lines = text.splitlines()
    patches: list[FilePatch] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("--- "):
            i += 1
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
            raise ToolError(f"patch: line {i + 1}: '---' is not followed by a '+++' line")
        old, new = _strip_prefix(line[4:]), _strip_prefix(lines[i + 1][4:])
        if old is None and new is None:
            raise ToolError(f"patch: line {i + 1}: both sides are /dev/null")
        i += 2
        hunks = []
        while i < len(lines) and lines[i].startswith("@@"):
            match = _HUNK.match(lines[i])
            if not match:
                raise ToolError(f"patch: line {i + 1}: malformed hunk header {lines[i]!r}")
            old_len = int(match.group(2) or "1")
            new_len = int(match.group(4) or "1")
            start = int(match.group(1))
            i += 1
            body: list[str] = []
            seen_old = seen_new = 0
            while i < len(lines) and (seen_old < old_len or seen_new < new_len):
                body_line = lines[i]
                if body_line.startswith("\\"):
                    i += 1
                    continue
                tag = body_line[:1] or " "
                if tag not in " -+":
                    raise ToolError(
                        f"patch: line {i + 1}: expected ' ', '-' or '+' in a hunk, got {body_line!r}"
                    )
                if tag in " -":
                    seen_old += 1
                if tag in " +":
                    seen_new += 1
                body.append(tag + body_line[1:])
                i += 1
            if seen_old != old_len or seen_new != new_len:
                raise ToolError(
                    f"patch: hunk at line {start} of {old or new}: the header counts do not match its lines"
                )
            while i < len(lines) and lines[i].startswith("\\"):
                i += 1
            hunks.append((start, tuple(body)))
        if not hunks:
            raise ToolError(f"patch: {new or old}: no hunk")
        patches.append(FilePatch(old, new, tuple(hunks)))
    if not patches:
        raise ToolError(
            "patch: no file header ('--- a/…' / '+++ b/…') found: expected a unified diff"
        )
    return patches


def apply_hunks(original: str, patch: FilePatch, name: str) -> str:
    """Apply every hunk of ``patch`` to ``original``; exact context or ToolError."""
    had_newline = original.endswith("\n") or original == ""
    lines = original.splitlines()
    out: list[str] = []
    cursor = 0
    for start, body in patch.hunks:
        old = [b[1:] for b in body if b[0] in " -"]
        new = [b[1:] for b in body if b[0] in " +"]
        at = max(start - 1, 0) if old else start  # a pure insertion after line `start`
        if lines[at : at + len(old)] != old:
            found = _search(lines, old, at, cursor)
            if found is None:
                raise ToolError(
                    f"patch: {name}: hunk at line {start} does not match the file's content"
                )
            at = found
        if at < cursor:
            raise ToolError(f"patch: {name}: hunk at line {start} overlaps the previous one")
        out.extend(lines[cursor:at])
        out.extend(new)
        cursor = at + len(old)
    out.extend(lines[cursor:])
    text = "\n".join(out)
    if out and had_newline:
        text += "\n"
    return text


def _search(lines: list[str], old: list[str], near: int, floor: int) -> int | None:
    """The closest exact occurrence of ``old`` at or after ``floor`` (hunk line numbers drift)."""
    if not old:
        return None
    candidates = [
        i for i in range(floor, len(lines) - len(old) + 1) if lines[i : i + len(old)] == old
    ]
    if not candidates:
        return None
    return min(candidates, key=lambda i: abs(i - near))

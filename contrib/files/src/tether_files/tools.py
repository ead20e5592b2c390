"""The reference host tools: read, write, edit, apply_patch."""

from __future__ import annotations

from collections.abc import Callable

import attrs

import tether
from tether.fsutil import FileChange, apply_changes, atomic_write
from tether.text import truncate
from tether_files.patch import apply_hunks, parse_patch

MAX_READ_LINES = 2000
MAX_LINE_CHARS = 2000


@attrs.frozen
class ReadArgs:
    path: str = tether.arg(description="File to read, relative to the workdir")
    offset: int | None = tether.arg(None, description="First line to return (1-based)", minimum=1)
    limit: int | None = tether.arg(
        None, description=f"How many lines (default {MAX_READ_LINES})", minimum=1
    )


@attrs.frozen
class WriteArgs:
    path: str = tether.arg(
        description="File to write, relative to the workdir (created if missing)"
    )
    content: str = tether.arg(description="The whole new content of the file")


@attrs.frozen
class EditArgs:
    path: str = tether.arg(description="File to edit, relative to the workdir")
    old: str = tether.arg(
        description="Exact text to replace; it must occur exactly once", min_length=1
    )
    new: str = tether.arg(description="Replacement text")


@attrs.frozen
class PatchArgs:
    patch: str = tether.arg(
        description="A unified diff over one or more files, applied all-or-nothing"
    )


def _read_text(path: object, field: str, shown: str) -> str:
    try:
        return path.read_text(encoding="utf-8")  # type: ignore[attr-defined]
    except FileNotFoundError:
        raise tether.ArgumentError(field, f"no such file {shown!r}") from None
    except IsADirectoryError:
        raise tether.ArgumentError(field, f"{shown!r} is a directory") from None
    except UnicodeDecodeError:
        raise tether.ToolError(f"{shown!r} is not UTF-8 text") from None


def _write_all(write: Callable[[], None]) -> None:
    """Run ``write`` (all or nothing, confined to the workdir when written, missing directories
    created); a failure of the file system is an error result, with nothing written."""
    try:
        write()
    except OSError as exc:
        raise tether.ToolError(f"nothing was written: {exc}") from None


async def read(call: tether.CallContext, args: ReadArgs) -> str:
    path = call.run.confine(args.path, "path")
    text = _read_text(path, "path", args.path)
    lines = text.splitlines(keepends=True)
    start = (args.offset or 1) - 1
    limit = args.limit or MAX_READ_LINES
    if start >= len(lines) and lines:
        raise tether.ArgumentError(
            "offset", f"the file has {len(lines)} lines, offset {args.offset} is past its end"
        )
    chosen = lines[start : start + limit]
    body = "".join(
        truncate(line, MAX_LINE_CHARS) if len(line) > MAX_LINE_CHARS else line for line in chosen
    )
    if start + limit < len(lines):
        body += f"\n[lines {start + 1}-{start + len(chosen)} of {len(lines)} shown; use offset to read on]"
    return body


async def write(call: tether.CallContext, args: WriteArgs) -> tether.ToolResult:
    path = call.run.confine(args.path, "path")
    if path.is_dir():
        raise tether.ArgumentError("path", f"{args.path!r} is a directory")
    existed = path.exists()
    _write_all(lambda: atomic_write(path, args.content, root=call.run.workdir))
    verb = "overwrote" if existed else "created"
    return tether.ToolResult.text(
        f"{verb} {args.path} ({len(args.content.encode())} bytes)", paths=[str(path)]
    )


async def edit(call: tether.CallContext, args: EditArgs) -> tether.ToolResult:
    path = call.run.confine(args.path, "path")
    text = _read_text(path, "path", args.path)
    count = text.count(args.old)
    if count == 0:
        raise tether.ArgumentError("old", f"not found in {args.path}")
    if count > 1:
        raise tether.ArgumentError(
            "old", f"occurs {count} times in {args.path}; include more context so it occurs once"
        )
    new = text.replace(args.old, args.new, 1).encode()
    _write_all(lambda: apply_changes([FileChange(path, text.encode(), new)], root=call.run.workdir))
    line = text[: text.index(args.old)].count("\n") + 1
    return tether.ToolResult.text(f"edited {args.path} at line {line}", paths=[str(path)])


async def apply_patch(call: tether.CallContext, args: PatchArgs) -> tether.ToolResult:
    changes: list[FileChange] = []
    summary: list[str] = []
    for file_patch in parse_patch(args.patch):
        if file_patch.new_path is None:
            raise tether.ToolError(
                f"patch: deleting files is not supported ({file_patch.old_path})"
            )
        target = call.run.confine(file_patch.new_path, "patch")
        if file_patch.old_path is None:
            if target.exists():
                raise tether.ToolError(
                    f"patch: {file_patch.new_path} already exists but the patch creates it"
                )
            original_bytes = None
            original = ""
        else:
            source = call.run.confine(file_patch.old_path, "patch")
            if source != target:
                raise tether.ToolError("patch: renaming files is not supported")
            original = _read_text(target, "patch", file_patch.new_path)
            original_bytes = original.encode()
        new_text = apply_hunks(original, file_patch, file_patch.new_path)
        changes.append(FileChange(target, original_bytes, new_text.encode()))
        summary.append(file_patch.new_path)
    if len({c.path for c in changes}) != len(changes):
        raise tether.ToolError("patch: a file appears twice; merge its hunks into one section")
    _write_all(lambda: apply_changes(changes, root=call.run.workdir))
    return tether.ToolResult.text(
        f"patched {len(changes)} file(s): {', '.join(summary)}",
        paths=[str(c.path) for c in changes],
    )


def file_tools() -> list[tether.ToolSpec]:
    """The four tool specs, for a plugin hook or ``run.register_host_tool``."""
    return [
        tether.ToolSpec(
            "read",
            tether.Tier.READ,
            ReadArgs,
            read,
            "Read a text file of the workdir (line window).",
        ),
        tether.ToolSpec(
            "write", tether.Tier.WRITE, WriteArgs, write, "Create or overwrite a file (atomic)."
        ),
        tether.ToolSpec(
            "edit",
            tether.Tier.WRITE,
            EditArgs,
            edit,
            "Replace one exact occurrence of a string in a file.",
        ),
        tether.ToolSpec(
            "apply_patch",
            tether.Tier.WRITE,
            PatchArgs,
            apply_patch,
            "Apply a unified diff to one or more files, all or nothing.",
        ),
    ]

"""The reference host tools: read, write, edit, apply_patch."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

import tether
from tether.text import truncate
from tether.workdir import reading
from tether.workdir.writing import CurrentContent, FileChange, Plan, apply_changes_async

MAX_READ_LINES = 2000
MAX_LINE_CHARS = 2000
#: bytes of file text one ``read`` returns at most, whatever ``limit`` says (the rest: ``offset``)
MAX_READ_BYTES = 256_000
#: the largest file ``read`` opens (it keeps only its window; the rest is counted, not kept)
MAX_FILE_BYTES = 256 * 1024 * 1024


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


async def _write_all(call: tether.CallContext, plan: Plan) -> None:
    """Write what ``plan`` computes from the files as they are under the workdir's write lock
    (all or nothing, confined to the workdir when written, missing directories created); a
    failure of the file system is an error result, with nothing written."""
    try:
        await apply_changes_async(plan, root=call.run.workdir)
    except OSError as exc:
        raise tether.ToolError(f"nothing was written: {exc}") from None


def _text_of(current: CurrentContent, path: Path, field: str, shown: str) -> tuple[bytes, str]:
    """The bytes and text of an existing UTF-8 file, read under the write lock."""
    data = current(path)
    if data is None:
        raise tether.ArgumentError(field, f"no such file {shown!r}")
    try:
        return data, data.decode("utf-8")
    except UnicodeDecodeError:
        raise tether.ToolError(f"{shown!r} is not UTF-8 text") from None


#: bytes of one line kept while reading it (enough for MAX_LINE_CHARS characters of UTF-8)
_LINE_HEAD = 4 * MAX_LINE_CHARS


class _Window:
    """Lines ``start``… (0-based) of a file, at most ``limit`` of them and
    :data:`MAX_READ_BYTES` in all, with the file's line count. Fed chunk by chunk: memory stays
    bounded on a huge file, even one without newlines."""

    def __init__(self, shown: str, start: int, limit: int) -> None:
        self.shown, self.start, self.limit = shown, start, limit
        self.lines: list[str] = []
        self.size = 0
        self.capped = False  # the byte cap cut the window
        self.count = 0  # complete lines seen
        self.head = b""  # the current line's first bytes
        self.cut = 0  # bytes of the current line beyond head

    @property
    def full(self) -> bool:
        return self.capped or len(self.lines) >= self.limit

    def feed(self, data: bytes) -> None:
        if self.full or self.count + data.count(b"\n") < self.start:
            self.count += data.count(b"\n")  # only counting: nothing of this chunk is shown
            tail = data[data.rfind(b"\n") + 1 :] if b"\n" in data else data
            self._grow(b"" if b"\n" in data else self.head, tail)
            return
        *done, rest = data.split(b"\n")
        for piece in done:
            self._grow(self.head, piece)
            self._end_line(b"\n")
        self._grow(self.head, rest)

    def finish(self) -> None:
        if self.head or self.cut:
            self._end_line(b"")

    def _grow(self, head: bytes, more: bytes) -> None:
        room = _LINE_HEAD - len(head)
        self.head = head + more[:room]
        self.cut = (self.cut if head else 0) + max(0, len(more) - room)

    def _end_line(self, newline: bytes) -> None:
        if self.start <= self.count and not self.full:
            self._take(self.head, self.cut, newline)
        self.count += 1
        self.head, self.cut = b"", 0

    def _take(self, head: bytes, cut: int, newline: bytes) -> None:
        try:
            line = head.decode("utf-8", errors="strict" if not cut else "ignore")
        except UnicodeDecodeError:
            raise tether.ToolError(f"{self.shown!r} is not UTF-8 text") from None
        if cut:
            line = f"{line[:MAX_LINE_CHARS]}… ({cut:,}+ more bytes)"
        elif len(line) > MAX_LINE_CHARS:
            line = truncate(line, MAX_LINE_CHARS)
        line += newline.decode()
        if self.lines and self.size + len(line.encode()) > MAX_READ_BYTES:
            self.capped = True
            return
        self.lines.append(line)
        self.size += len(line.encode())


def _read_window(reader: reading.Reader, path: Path, shown: str, start: int, limit: int) -> _Window:
    window = _Window(shown, start, limit)
    for chunk in reader.chunks(path, field="path", shown=shown, max_bytes=MAX_FILE_BYTES):
        window.feed(chunk)
    window.finish()
    return window


async def read(call: tether.CallContext, args: ReadArgs) -> str:
    path = call.run.confine(args.path, "path")
    start = (args.offset or 1) - 1
    limit = args.limit or MAX_READ_LINES
    # the core's reader, in a worker thread: a huge file never stalls the run's other calls;
    # on the call's timeout the call returns at once and the thread stops at its next chunk
    window = await reading.off_loop(
        call.run.workdir, lambda reader: _read_window(reader, path, args.path, start, limit)
    )
    chosen, total, capped = window.lines, window.count, window.capped
    if start >= total and start > 0:
        raise tether.ArgumentError(
            "offset", f"the file has {total} lines, offset {args.offset} is past its end"
        )
    body = "".join(chosen)
    last = start + len(chosen)
    if last < total:
        why = f" (the {MAX_READ_BYTES // 1000} KB cap of one read)" if capped else ""
        body += (
            f"\n[lines {start + 1:,}–{last:,} of {total:,} shown{why}; "
            f"use offset={last + 1} to read on]"
        )
    return body


def _read_on(call: tether.CallContext, cut: tether.Cut) -> dict[str, int]:
    """The result budget kept the window's first lines: read on from the first one not shown."""
    return {"offset": (call.args.offset or 1) + cut.items_kept()}


def write_plan(call: tether.CallContext, args: WriteArgs) -> Plan:
    """What ``write`` writes, as a plan of the files as they are (also its approval card's)."""
    if args.path.endswith(("/", os.sep)):
        raise tether.ArgumentError(
            "path", f"{args.path!r} ends with a slash: it names a directory, not a file"
        )
    path = call.run.confine(args.path, "path")
    if path.is_dir():
        raise tether.ArgumentError("path", f"{args.path!r} is a directory")
    return lambda current: [FileChange(path, current(path), args.content.encode())]


async def write(call: tether.CallContext, args: WriteArgs) -> tether.ToolResult:
    plan = write_plan(call, args)
    existed = False

    def planned(current: CurrentContent) -> Sequence[FileChange]:
        nonlocal existed
        changes = plan(current)
        existed = changes[0].expected is not None
        return changes

    await _write_all(call, planned)
    path = call.run.confine(args.path, "path")
    verb = "overwrote" if existed else "created"
    return tether.ToolResult.text(
        f"{verb} {args.path} ({len(args.content.encode())} bytes)", paths=[str(path)]
    )


def edit_plan(call: tether.CallContext, args: EditArgs) -> Plan:
    """What ``edit`` writes, as a plan of the files as they are (also its approval card's)."""
    path = call.run.confine(args.path, "path")

    def plan(current: CurrentContent) -> list[FileChange]:
        # under the write lock: the edit applies to the file as it is, whoever wrote it last
        data, text = _text_of(current, path, "path", args.path)
        count = text.count(args.old)
        if count == 0:
            raise tether.ArgumentError("old", f"not found in {args.path}")
        if count > 1:
            raise tether.ArgumentError(
                "old",
                f"occurs {count} times in {args.path}; include more context so it occurs once",
            )
        return [FileChange(path, data, text.replace(args.old, args.new, 1).encode())]

    return plan


async def edit(call: tether.CallContext, args: EditArgs) -> tether.ToolResult:
    plan = edit_plan(call, args)
    line = 0

    def planned(current: CurrentContent) -> Sequence[FileChange]:
        nonlocal line
        changes = plan(current)
        text = (changes[0].expected or b"").decode("utf-8")
        line = text[: text.index(args.old)].count("\n") + 1
        return changes

    await _write_all(call, planned)
    path = call.run.confine(args.path, "path")
    return tether.ToolResult.text(f"edited {args.path} at line {line}", paths=[str(path)])


def patch_plan(call: tether.CallContext, args: PatchArgs) -> tuple[Plan, list[tuple[Any, Path]]]:
    """What ``apply_patch`` writes, as a plan of the files as they are, and its targets."""
    from tether_files.patch import apply_hunks, parse_patch  # the parser: paid by a patch

    targets = []
    for file_patch in parse_patch(args.patch):
        if file_patch.new_path is None:
            raise tether.ToolError(
                f"patch: deleting files is not supported ({file_patch.old_path})"
            )
        target = call.run.confine(file_patch.new_path, "patch")
        if file_patch.old_path is not None:
            source = call.run.confine(file_patch.old_path, "patch")
            if source != target:
                raise tether.ToolError("patch: renaming files is not supported")
        targets.append((file_patch, target))
    if len({target for _, target in targets}) != len(targets):
        raise tether.ToolError("patch: a file appears twice; merge its hunks into one section")

    def plan(current: CurrentContent) -> list[FileChange]:
        # under the write lock: the hunks apply to the files as they are
        changes = []
        for file_patch, target in targets:
            shown = file_patch.new_path or ""
            if file_patch.old_path is None:
                if current(target) is not None:
                    raise tether.ToolError(
                        f"patch: {shown} already exists but the patch creates it"
                    )
                original_bytes, original = None, ""
            else:
                original_bytes, original = _text_of(current, target, "patch", shown)
            new_text = apply_hunks(original, file_patch, shown)
            changes.append(FileChange(target, original_bytes, new_text.encode()))
        return changes

    return plan, targets


async def apply_patch(call: tether.CallContext, args: PatchArgs) -> tether.ToolResult:
    plan, targets = patch_plan(call, args)
    await _write_all(call, plan)
    return tether.ToolResult.text(
        f"patched {len(targets)} file(s): {', '.join(fp.new_path or '' for fp, _ in targets)}",
        paths=[str(target) for _, target in targets],
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
            continuation=tether.Continuation(next=_read_on),
        ),
        # each write's approval card shows its diff: the same plan, on the files as they are
        tether.ToolSpec(
            "write",
            tether.Tier.WRITE,
            WriteArgs,
            write,
            "Create or overwrite a file (atomic).",
            describe_change=write_plan,
        ),
        tether.ToolSpec(
            "edit",
            tether.Tier.WRITE,
            EditArgs,
            edit,
            "Replace one exact occurrence of a string in a file.",
            describe_change=edit_plan,
        ),
        tether.ToolSpec(
            "apply_patch",
            tether.Tier.WRITE,
            PatchArgs,
            apply_patch,
            "Apply a unified diff to one or more files, all or nothing.",
            describe_change=lambda call, args: patch_plan(call, args)[0],
        ),
    ]

"""Diagnostics before a change is written: a family that stages edits (``ast_edit``, a rename
with ``preview: true``) offers a :class:`StagedChange`; every family that checks code answers
``tether_preview_diagnostics`` with what the change would introduce. Nothing is written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from tether.tools import CallContext


@attrs.frozen
class StagedFile:
    """One file of a staged change."""

    #: absolute, inside the run's workdir
    path: Path
    #: what the file holds now, the baseline (None: the change creates it)
    current: bytes | None
    #: what the change would write
    proposed: bytes


@attrs.frozen
class StagedChange:
    """A change not written yet: every file it would write, with its current and proposed text."""

    files: tuple[StagedFile, ...]
    #: who staged it, for the answer's wording (``"ast_edit edit_3"``, ``"lsp_rename"``)
    origin: str = ""


#: what a preview says when no installed plugin answers ``tether_preview_diagnostics``
NO_PREVIEWER = (
    "(no diagnostics preview: no installed plugin checks staged changes; tether-lsp does, "
    "with the project's language servers)"
)


def nobody_checked(plugins: list[str]) -> str:
    """What a preview says when the plugins that preview diagnostics all passed on it."""
    names = ", ".join(repr(name) for name in plugins)
    return f"(no diagnostics preview: none of the plugins that preview diagnostics ({names}) checks these files)"


#: lines of diff an approval card shows at most (the rest is counted), and characters per line
CARD_DIFF_LINES = 200
CARD_LINE_CHARS = 300


def render_change(change: StagedChange, workdir: Path) -> str:
    """A staged change as an approval card shows it: a unified diff per file, every line made
    visible (controls, bidi and hidden spaces as escapes, :func:`tether.approval.visible`),
    bounded to :data:`CARD_DIFF_LINES` lines of :data:`CARD_LINE_CHARS` characters, saying how
    many were cut. A file that is not UTF-8 text is named with its sizes."""
    import difflib

    from tether.approval import visible
    from tether.text import show_path, shown_note, truncate

    lines: list[str] = []
    for staged in change.files:
        try:
            name = show_path(staged.path.relative_to(workdir).as_posix())
        except ValueError:
            name = show_path(staged.path)
        try:
            old = (staged.current or b"").decode("utf-8").splitlines()
            new = staged.proposed.decode("utf-8").splitlines()
        except UnicodeDecodeError:
            size = "new" if staged.current is None else f"{len(staged.current)} bytes"
            lines.append(f"{name}: not UTF-8 text ({size} → {len(staged.proposed)} bytes)")
            continue
        before = "/dev/null" if staged.current is None else f"a/{name}"
        diff = list(difflib.unified_diff(old, new, before, f"b/{name}", lineterm="", n=2))
        lines += diff or [f"{name}: unchanged"]
    shown = [truncate(visible(line), CARD_LINE_CHARS) for line in lines[:CARD_DIFF_LINES]]
    note = shown_note(CARD_DIFF_LINES, len(lines), "diff lines")
    return "\n".join([*shown, *([f"[{note}]"] if note else [])])


async def describe_call(call: CallContext) -> str:
    """What ``call`` will change, for its approval card, from its tool's
    ``ToolSpec.describe_change`` (empty when the tool has none). A plan is run on the files as
    they are now, reading nothing outside the workdir; a failure is said, never raised: the
    person still decides."""
    import inspect

    import anyio

    from tether.errors import ToolError

    describe = call.spec.describe_change
    if describe is None:
        return ""
    try:
        with anyio.fail_after(call.run.core.post_process_timeout_s):
            value = describe(call, call.args)
            if inspect.isawaitable(value):
                value = await value
            if callable(value):
                value = await _run_plan(call, value)
    except ToolError as exc:
        return f"(nothing: the call would fail: {exc})"
    except TimeoutError:
        return "(not known: working out the change took too long)"
    except Exception as exc:  # a bug in the tool's describe_change: the card says so
        return f"(not known: describing the change failed: {type(exc).__name__}: {exc})"
    if value is None:
        return ""
    if isinstance(value, StagedChange):
        return render_change(value, call.run.workdir)
    from tether.approval import visible

    return visible(str(value))


async def _run_plan(call: CallContext, plan: Callable[..., Any]) -> StagedChange:
    from tether.workdir.reading import UnreadableFile, off_loop

    def work(reader: Any) -> StagedChange:
        def current(path: Path) -> bytes | None:
            try:
                return bytes(reader.read(path, field="path"))
            except UnreadableFile as exc:
                if exc.reason == "missing":
                    return None
                raise

        changes = plan(current)
        return StagedChange(
            tuple(StagedFile(Path(c.path), c.expected, c.new) for c in changes),
            origin=call.tool,
        )

    return await off_loop(call.run.workdir, work)


__all__ = [
    "NO_PREVIEWER",
    "StagedChange",
    "StagedFile",
    "describe_call",
    "nobody_checked",
    "render_change",
]

"""Diagnostics before a change is written: a family that stages edits (``ast_edit``, a rename
with ``preview: true``) offers a :class:`StagedChange`; every family that checks code answers
``tether_preview_diagnostics`` with what the change would introduce. Nothing is written."""

from __future__ import annotations

from pathlib import Path

import attrs


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


__all__ = ["NO_PREVIEWER", "StagedChange", "StagedFile", "nobody_checked"]

"""A staged ast_edit asks the core for a diagnostics preview (``Run.preview_diagnostics``): with
no plugin that checks code installed it says so plainly, and any family answering the core's
``tether_preview_diagnostics`` is heard — tether-astgrep imports none of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tether

pytestmark = pytest.mark.anyio


async def test_without_a_checking_family_the_preview_says_there_is_none(astgrep_run: Any) -> None:
    async with astgrep_run({"a.py": "print(1)\n"}) as run:
        staged = await run.call("ast_edit", {"pattern": "print($X)", "rewrite": "log($X)"})
    assert not staged.is_error, staged.text_content
    assert (
        "\n(no diagnostics preview: no installed plugin checks staged changes; tether-lsp does, "
        "with the project's language servers)\n--- a/a.py" in staged.text_content
    ), staged.text_content
    assert staged.meta["diagnostics_preview"] == {"preview_by": []}


class Checker:
    """A third-party family that checks code: it sees exactly what ast_edit staged."""

    def __init__(self) -> None:
        self.seen: list[tether.StagedChange] = []

    @tether.hookimpl
    def tether_preview_diagnostics(
        self, run: tether.Run, change: tether.StagedChange
    ) -> tether.ResultNote:
        self.seen.append(change)
        return tether.ResultNote("a.py:1: would call an undefined `log`", meta={"checked": 1})


async def test_any_family_answering_the_core_hook_previews_a_staged_edit(
    astgrep_run: Any, tether_workdir: Path
) -> None:
    checker = Checker()
    async with astgrep_run({"a.py": "print(1)\n"}, plugins=[checker]) as run:
        staged = await run.call("ast_edit", {"pattern": "print($X)", "rewrite": "log($X)"})
        assert not staged.is_error, staged.text_content
        assert (tether_workdir / "a.py").read_text() == "print(1)\n"
    (change,) = checker.seen
    assert change.origin == f"ast_edit {staged.meta['edit_id']}"
    assert change.files == (tether.StagedFile(tether_workdir / "a.py", b"print(1)\n", b"log(1)\n"),)
    assert "\na.py:1: would call an undefined `log`\n--- a/a.py" in staged.text_content
    assert staged.meta["diagnostics_preview"]["checked"] == 1


async def test_diagnostics_false_skips_the_preview_and_says_so(
    astgrep_run: Any, tether_workdir: Path
) -> None:
    """A big edit on a big project can skip the servers' seconds per file; the answer says it
    was skipped, never that nothing would be introduced."""
    checker = Checker()
    async with astgrep_run({"a.py": "print(1)\n"}, plugins=[checker]) as run:
        staged = await run.call(
            "ast_edit", {"pattern": "print($X)", "rewrite": "log($X)", "diagnostics": False}
        )
    assert not staged.is_error, staged.text_content
    assert checker.seen == []
    assert (
        "\n(no diagnostics preview: the call set diagnostics=false)\n--- a/a.py"
        in staged.text_content
    ), staged.text_content

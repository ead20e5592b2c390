"""A file the core's reader refuses (gone, a FIFO, a directory) is refused by name by a query,
with the same words whether its server is still to start (the file is looked at before any
start) or answers already (its sync looks at the file, which was open and is no longer
readable). basedpyright; one run for every kind."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import anyio
from lsp_testkit import WRITE_AUTO, copy_project, need

import tether

TEXT = "def answer() -> int:\n    return 42\n"


def _gone(path: Path) -> None:
    path.unlink()


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


#: each way a file stops being one the reader reads
KINDS: dict[str, Callable[[Path], None]] = {"gone": _gone, "fifo": _fifo, "directory": _directory}


def _hover(file: str) -> dict[str, object]:
    return {"action": "hover", "file": file, "line": 1, "symbol": "answer"}


def test_a_refused_file_is_refused_alike_before_and_after_its_server_started(tmp_path: Path):
    need("basedpyright-langserver")
    workdir = copy_project("pyproj", tmp_path)

    async def refusal(run: tether.Run, kind: str, when: str) -> str:
        file = f"pkg/{when}_{kind}.py"
        (workdir / file).write_text(TEXT)
        if when == "warm":  # open in the running server, answered once
            for _ in range(120):
                answered = await run.call("lsp", _hover(file))
                if not answered.is_error and "int" in answered.text_content:
                    break
                await anyio.sleep(0.5)
            else:
                raise AssertionError(f"no hover on {file}: {answered.text_content}")
        KINDS[kind](workdir / file)
        result = await run.call("lsp", _hover(file))
        assert result.is_error, (kind, when, result.text_content)
        return result.text_content.replace(f"{when}_{kind}", "NAME")

    async def main() -> None:
        async with tether.open_run(
            workdir, conversation_id="c", config={"core": WRITE_AUTO}
        ) as run:
            cold = {kind: await refusal(run, kind, "cold") for kind in KINDS}
            # refused before any server started
            assert run.resources["lsp_supervisor"].clients == [], cold
            warm = {kind: await refusal(run, kind, "warm") for kind in KINDS}
        assert warm == cold
        assert "an existing file, pkg/NAME.py is not one" in cold["gone"], cold["gone"]
        assert "FIFO" in cold["fifo"], cold["fifo"]

    try:
        anyio.run(main)
    finally:
        for kind in KINDS:  # a FIFO left behind would hang a later copy of the tree
            for when in ("cold", "warm"):
                leftover = workdir / f"pkg/{when}_{kind}.py"
                if leftover.is_dir() and not leftover.is_symlink():
                    shutil.rmtree(leftover)
                elif leftover.exists() or leftover.is_symlink():
                    leftover.unlink()

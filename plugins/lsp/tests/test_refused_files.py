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

    async def refusals(run: tether.Run, when: str) -> dict[str, str]:
        files = {kind: f"pkg/{when}_{kind}.py" for kind in KINDS}
        for file in files.values():
            (workdir / file).write_text(TEXT)
        if when == "warm":  # each open in the running server, answered once
            for file in files.values():
                for _ in range(120):
                    answered = await run.call("lsp", _hover(file))
                    if not answered.is_error and "int" in answered.text_content:
                        break
                    await anyio.sleep(0.5)
                else:
                    raise AssertionError(f"no hover on {file}: {answered.text_content}")
        for kind, file in files.items():  # all changed together: one refresh sees them all
            KINDS[kind](workdir / file)
        said = {}
        for kind, file in files.items():
            result = await run.call("lsp", _hover(file))
            assert result.is_error, (kind, when, result.text_content)
            said[kind] = result.text_content.replace(f"{when}_{kind}", "NAME")
        return said

    async def main() -> None:
        async with tether.open_run(
            workdir, conversation_id="c", config={"core": WRITE_AUTO}
        ) as run:
            cold = await refusals(run, "cold")
            # refused before any server started
            assert run.resources["lsp_supervisor"].clients == [], cold
            warm = await refusals(run, "warm")
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

"""Queries that come together (several connections of one served run) share the look at the
disk that each must be answered after: N concurrent hovers cost two refreshes, not N one after
the other under the client's lock; and a query that comes after a change on disk still sees it,
whatever was in flight. Real servers, one per language."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from lsp_testkit import WRITE_AUTO, copy_project, need

import tether

#: (server binary, project, file asked about, line, symbol, the declaring file, its docstring)
CASES = [
    (
        "basedpyright-langserver",
        "pyproj",
        "pkg/use.py",
        3,
        "make_square",
        "pkg/shapes.py",
        "Build a square of the given side.",
    ),
    (
        "typescript-language-server",
        "tsproj",
        "src/main.ts",
        3,
        "makeGreeter",
        "src/greet.ts",
        None,
    ),
]
CONCURRENT = 8


def _hover(file: str, line: int, symbol: str) -> dict[str, Any]:
    return {"action": "hover", "file": file, "line": line, "symbol": symbol}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_concurrent_queries_share_refreshes_and_see_a_later_change(case, tmp_path: Path):
    binary, project, file, line, symbol, declaring, doc = case
    need(binary)
    workdir = copy_project(project, tmp_path)
    hover = _hover(file, line, symbol)

    async def main() -> None:
        async with tether.open_run(
            workdir, conversation_id="c", config={"core": WRITE_AUTO}
        ) as run:
            for _ in range(120):  # the server's first answer (its start, its index)
                first = await run.call("lsp", hover)
                if not first.is_error and symbol in first.text_content:
                    break
                await anyio.sleep(0.5)
            [client] = run.resources["lsp_supervisor"].clients
            refreshes = 0
            refresh = client.sync._refresh_files

            async def counted(resent: list[Any]) -> bool:
                nonlocal refreshes
                refreshes += 1
                return await refresh(resent)

            client.sync._refresh_files = counted
            replies: list[Any] = []

            async def ask() -> None:
                replies.append(await run.call("lsp", hover, surface="plan"))

            async with anyio.create_task_group() as tg:
                for _ in range(CONCURRENT):
                    tg.start_soon(ask)
            assert all(not r.is_error and symbol in r.text_content for r in replies), replies
            assert refreshes <= 2, f"{CONCURRENT} concurrent queries made {refreshes} refreshes"

            # a change on disk made while queries are in flight: a query that comes after it
            # is answered on the new text, not on a refresh another query began before it
            if doc is None:
                return
            target = workdir / declaring
            async with anyio.create_task_group() as tg:
                for _ in range(CONCURRENT):
                    tg.start_soon(ask)
                await anyio.sleep(0.05)
                target.write_text(target.read_text().replace(doc, "Changed while asked."))
                after = await run.call("lsp", hover)
            assert "Changed while asked." in after.text_content, after.text_content

    anyio.run(main)

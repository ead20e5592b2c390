"""Queries that come together (several connections of one served run) share the look at the
disk that each must be answered after: N concurrent hovers cost two refreshes, not N one after
the other under the client's lock; on a disk that did not change, none makes a trip off the event
loop or takes the lock at all; and a query that comes after a change on disk still sees it,
whatever was in flight. Real servers, one per language."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from lsp_testkit import WRITE_AUTO, copy_project, need

import tether
import tether_lsp.sync

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

            # on a disk that did not change, a query's refresh is made on the event loop: no
            # trip to a thread, no documents' lock, so concurrent queries never queue on it
            trips = 0
            run_sync = anyio.to_thread.run_sync

            async def counted_trip(*args: Any, **kw: Any) -> Any:
                nonlocal trips
                trips += 1
                return await run_sync(*args, **kw)

            replies.clear()
            anyio.to_thread.run_sync = counted_trip  # type: ignore[assignment]
            try:
                async with anyio.create_task_group() as tg:
                    for _ in range(CONCURRENT):
                        tg.start_soon(ask)
            finally:
                anyio.to_thread.run_sync = run_sync  # type: ignore[assignment]
            assert all(not r.is_error and symbol in r.text_content for r in replies), replies
            assert trips == 0, (
                f"{CONCURRENT} queries on an unchanged disk made {trips} thread trips"
            )
            assert not client.sync.lock.locked()

            # past QUICK_LOOK_MAX_DOCUMENTS open documents the look is not made on the loop:
            # the refresh goes to a thread again, and the answers are the same
            trips = 0
            replies.clear()
            cap = tether_lsp.sync.QUICK_LOOK_MAX_DOCUMENTS
            tether_lsp.sync.QUICK_LOOK_MAX_DOCUMENTS = 0
            anyio.to_thread.run_sync = counted_trip  # type: ignore[assignment]
            try:
                async with anyio.create_task_group() as tg:
                    for _ in range(CONCURRENT):
                        tg.start_soon(ask)
            finally:
                anyio.to_thread.run_sync = run_sync  # type: ignore[assignment]
                tether_lsp.sync.QUICK_LOOK_MAX_DOCUMENTS = cap
            assert all(not r.is_error and symbol in r.text_content for r in replies), replies
            assert trips >= 1, "past the cap, a query's look stayed on the event loop"

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


ONLY = {
    "basedpyright-langserver": ("python", "basedpyright"),
    "typescript-language-server": ("typescript", "typescript-language-server"),
}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_query_made_while_its_server_starts_waits_for_the_start(case, tmp_path: Path):
    """A served run warms its servers in the background; a query that comes while one is
    between its spawn and the end of its start (initialize, its files scanned, its watch on) is
    handed the server only when the start is over: never a server not yet initialized, whose
    capabilities are not known yet (the action "not supported") and whose files were not yet
    scanned (every file "changed by another process", a stale note on every answer after)."""
    binary, project, file, line, symbol, _, _ = case
    need(binary)
    workdir = copy_project(project, tmp_path)
    language, server = ONLY[binary]  # no other server of the language answers meanwhile

    async def main() -> None:
        config = {"core": WRITE_AUTO, "lsp": {"servers": {language: [server]}}}
        async with tether.open_run(workdir, conversation_id="c", config=config) as run:
            run.warm()
            supervisor = run.resources["lsp_supervisor"]
            with anyio.fail_after(60):
                while not any(client.alive for client in supervisor.clients):
                    await anyio.sleep(0.002)
            [client] = supervisor.clients
            assert client.capabilities.hover_provider is None  # not initialized yet
            result = await run.call("lsp", _hover(file, line, symbol))
            assert not result.is_error, result.text_content
            assert "another process changed" not in result.text_content, result.text_content
            assert client.sync.snapshot, "the start's scan, not a refresh against nothing"
            assert not client.unconfirmed

    anyio.run(main)

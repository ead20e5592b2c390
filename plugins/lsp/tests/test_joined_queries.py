"""Identical queries asked together (several agents of one served run asking the same thing)
cost the server one request: a query identical to one in flight waits for that one's answer —
unless anything was sent to the server since it was sent (a document changed), and the request
is cancelled only when the last of its callers gives up on it.

The server is a real process speaking LSP (fake_lsp_server.py, mode ``slow=S``: each hover
answered S seconds after it was asked, naming its request's id; every message it gets logged).
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from lsp_testkit import WRITE_AUTO, fake_server

import tether
from tether_lsp import ServerSpec

pytestmark = pytest.mark.anyio

#: the fake server writes its log outside the workdir, which confinement would deny
FAKE = True


class Slow:
    def __init__(self, log: Path, delay_s: float) -> None:
        self.log, self.delay_s = log, delay_s

    @tether.hookimpl
    def tether_lsp_servers(self) -> list[ServerSpec]:
        return [fake_server(f"slow={self.delay_s}", self.log)]


def hover(line: int) -> dict[str, Any]:
    return {"action": "hover", "file": "main.fake", "line": line, "symbol": "alpha#1"}


def answered_by(text: str) -> int:
    """The id of the server's request a hover answer came from."""
    assert "(request " in text, text
    return int(text.rsplit("(request ", 1)[1].split(")")[0])


def log_lines(log: Path) -> list[str]:
    return log.read_text().splitlines()


def hovers_sent(log: Path) -> list[int]:
    return [
        int(line.split()[1]) for line in log_lines(log) if line.startswith("textDocument/hover")
    ]


def open_slow_run(workdir: Path, log: Path, delay_s: float, timeout_s: float = 10.0) -> Any:
    (workdir / "fake.toml").write_text("")
    (workdir / "main.fake").write_text("alpha one\nalpha two\n")
    config = {"core": WRITE_AUTO, "lsp": {"request_timeout_s": timeout_s}}
    return tether.open_run(workdir, config=config, plugins=[Slow(log, delay_s)])


async def ask_together(run: Any, asks: list[dict[str, Any]]) -> list[str]:
    texts: list[str] = [""] * len(asks)

    async def ask(i: int) -> None:
        result = await run.call("lsp", asks[i], surface="plan")
        assert not result.is_error, result.text_content
        texts[i] = result.text_content

    async with anyio.create_task_group() as tg:
        for i in range(len(asks)):
            tg.start_soon(ask, i)
    return texts


async def test_identical_queries_asked_together_cost_the_server_one_request(tmp_path: Path):
    workdir, log = tmp_path / "w", tmp_path / "log.txt"
    workdir.mkdir()
    async with open_slow_run(workdir, log, 0.5) as run:
        await ask_together(run, [hover(1)])  # the server's start
        before = len(hovers_sent(log))
        texts = await ask_together(run, [hover(1)] * 8)
        sent = hovers_sent(log)[before:]
        assert len(sent) == 1, f"8 identical hovers asked together sent {sent}"
        assert {answered_by(text) for text in texts} == set(sent)
        assert all(text.startswith("slow hover of line 1") for text in texts), texts

        # different queries are never joined: two positions, two requests
        before = len(hovers_sent(log))
        texts = await ask_together(run, [hover(1), hover(2)] * 4)
        sent = hovers_sent(log)[before:]
        assert len(sent) == 2, sent
        for ask, text in zip([1, 2] * 4, texts, strict=True):
            assert text.startswith(f"slow hover of line {ask} "), text


async def test_a_caller_that_leaves_leaves_the_request_to_the_others(tmp_path: Path):
    """A caller cancelled (its client gone) while others wait for the same request: the
    request is not cancelled, the others get its answer; when the last caller leaves too,
    the next identical query is a request of its own."""
    workdir, log = tmp_path / "w", tmp_path / "log.txt"
    workdir.mkdir()
    async with open_slow_run(workdir, log, 0.6) as run:
        await ask_together(run, [hover(1)])
        before = len(hovers_sent(log))
        answers: list[str] = []

        async def stays() -> None:
            answers.append((await run.call("lsp", hover(1))).text_content)

        async with anyio.create_task_group() as tg:
            with anyio.CancelScope() as leaving:
                tg.start_soon(stays)
                tg.start_soon(run.call, "lsp", hover(1))
                await anyio.sleep(0.2)
                leaving.cancel()
            # the scope only covered the wait above: cancel the leaver itself
        assert len(answers) == 1 and answers[0].startswith("slow hover of line 1"), answers
        assert len(hovers_sent(log)) - before == 1

        # the leaver leaves first, the stayer after it: one request, answered to the stayer
        before = len(hovers_sent(log))
        async with anyio.create_task_group() as outer:
            outer.start_soon(stays)
            async with anyio.create_task_group() as leaver:
                leaver.start_soon(run.call, "lsp", hover(1))
                await anyio.sleep(0.2)
                leaver.cancel_scope.cancel()
        assert len(answers) == 2 and answers[1].startswith("slow hover of line 1"), answers
        assert len(hovers_sent(log)) - before == 1
        assert not any(line.startswith("$/cancelRequest") for line in log_lines(log))


@pytest.mark.parametrize("seed", range(6))
async def test_a_query_asked_after_a_change_is_never_answered_by_one_asked_before(
    tmp_path: Path, seed: int
):
    """Generated: callers of one query at random moments, the file changed on disk (or by the
    ``write`` tool) at random moments between them. Every caller's answer comes from a request
    the server got after it was told of the text the caller found on disk when it began (or a
    newer one) — never from one it joined from before — and callers with nothing between them
    share a request."""
    rng = random.Random(seed)
    workdir, log = tmp_path / "w", tmp_path / "log.txt"
    workdir.mkdir()
    async with open_slow_run(workdir, log, 0.3) as run:
        await ask_together(run, [hover(1)])
        #: the texts' lengths (each text's is its own), oldest first, and when each was made
        texts = [len((workdir / "main.fake").read_text())]
        made = [0.0]
        asked: list[tuple[float, int]] = []  # (when the caller began, the request answering it)

        async def caller(at: float) -> None:
            await anyio.sleep(at)
            began = time.monotonic()
            result = await run.call("lsp", hover(1), surface="plan")
            assert not result.is_error, result.text_content
            asked.append((began, answered_by(result.text_content)))

        async def changes(at: list[float]) -> None:
            # one after another: a `write` call returns after its diagnostics, and a change
            # on disk meanwhile would make the order they were made in differ from the
            # order they reached the disk in
            started = time.monotonic()
            for n, moment in enumerate(at, 1):
                await anyio.sleep(max(0.0, started + moment - time.monotonic()))
                text = f"alpha one\nalpha two {'x' * n}\n"
                if rng.random() < 0.5:
                    (workdir / "main.fake").write_text(text)
                else:
                    done = await run.call("write", {"path": "main.fake", "content": text})
                    assert not done.is_error, done.text_content
                texts.append(len(text))
                made.append(time.monotonic())  # on disk by now (a caller before: older text)

        async with anyio.create_task_group() as tg:
            for _ in range(12):
                tg.start_soon(caller, rng.uniform(0, 1.2))
            tg.start_soon(changes, sorted(rng.uniform(0, 1.2) for _ in range(3)))

        # the text the server held when each hover was sent: the last one it was told of
        held: dict[int, int] = {}
        current = -1
        for line in log_lines(log):
            method, _, value = line.partition(" ")
            if method in ("textDocument/didOpen", "textDocument/didChange"):
                current = int(value)
            elif method == "textDocument/hover":
                held[int(value)] = current
        for began, request in asked:
            found = max(i for i, at in enumerate(made) if at < began)  # the text on disk
            told = texts.index(held[request])
            assert told >= found, (
                f"a caller that began on text {found} was answered by request {request}, "
                f"sent while the server held text {told}"
            )
        assert len({request for _, request in asked}) < len(asked), "nothing was shared"

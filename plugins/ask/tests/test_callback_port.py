"""Every outcome of `ask_user` and of the approval gate through the callback port, in process."""

from __future__ import annotations

import re
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

import tether
import tether_ask.hooks
import tether_echo.hooks
from tether.testing import check_plugin_contract
from tether_ask import Answer, CallbackPort, Card

pytestmark = pytest.mark.anyio

DB_QUESTION = {
    "question": "Which database should the service use?",
    "context": "The migration scripts differ per database.",
    "options": [
        {"label": "postgres", "description": "production default"},
        {"label": "sqlite"},
    ],
}


class Harness:
    """A harness's own plugin, wiring whatever resources a test gives it."""

    def __init__(self, **resources: Any) -> None:
        self.resources = resources

    @tether.hookimpl
    def tether_resources(self, run: tether.Run) -> dict[str, Any]:
        return self.resources


class Person:
    """Answers cards from a script, and records every card it was shown."""

    def __init__(self, *replies: Answer | Callable[[Card], Awaitable[Answer]]) -> None:
        self.replies = list(replies)
        self.cards: list[Card] = []

    async def __call__(self, card: Card) -> Answer:
        self.cards.append(card)
        reply = self.replies.pop(0)
        return reply if isinstance(reply, Answer) else await reply(card)


RunFactory = Callable[..., AbstractAsyncContextManager[tether.Run]]


@pytest.fixture
def ask_run(open_test_run: RunFactory) -> Callable[..., AbstractAsyncContextManager[tether.Run]]:
    """A run holding only this plugin, tether-echo and a harness with the given resources."""

    @asynccontextmanager
    async def factory(
        config: dict[str, Any] | None = None, **resources: Any
    ) -> AsyncIterator[tether.Run]:
        plugins = [Harness(**resources), tether_ask.hooks, tether_echo.hooks]
        async with open_test_run(plugins=plugins, config=config, entry_points=False) as run:
            yield run

    return factory


async def never_answers(card: Card) -> Answer:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


async def test_answered_single_choice(ask_run: Any) -> None:
    person = Person(Answer(choices=("sqlite",)))
    async with ask_run(question_port=CallbackPort(person)) as run:
        result = await run.call("ask_user", DB_QUESTION, call_id="c7")
    assert not result.is_error
    assert result.text_content == 'outcome: answered\nchoices: ["sqlite"]'
    assert result.meta["outcome"] == "answered"
    assert result.meta["choices"] == ["sqlite"]
    assert result.meta["text"] is None
    (card,) = person.cards
    assert card.kind == "question"
    assert card.call_id == "c7"
    assert card.id == "1"
    assert card.context == "The migration scripts differ per database."
    assert card.labels == ("postgres", "sqlite")
    assert card.options[0].description == "production default"


async def test_answered_multi_select_with_text(ask_run: Any) -> None:
    person = Person(Answer(choices=("ham", "cheese"), text="  and extra basil "))
    args = {
        "question": "Which toppings?",
        "options": [{"label": "cheese"}, {"label": "ham"}, {"label": "olives"}],
        "multi_select": True,
        "allow_free_text": True,
    }
    async with ask_run(question_port=CallbackPort(person)) as run:
        result = await run.call("ask_user", args)
    assert not result.is_error
    assert result.text_content == (
        'outcome: answered\nchoices: ["ham", "cheese"]\ntext: "and extra basil"'
    )
    assert result.meta["choices"] == ["ham", "cheese"]
    assert result.meta["text"] == "and extra basil"
    assert person.cards[0].multi_select and person.cards[0].allow_free_text


async def test_answered_free_text_only(ask_run: Any) -> None:
    person = Person(Answer(text="feature/login"))
    async with ask_run(question_port=CallbackPort(person)) as run:
        result = await run.call("ask_user", {"question": "Which branch?", "allow_free_text": True})
    assert result.text_content == 'outcome: answered\ntext: "feature/login"'
    assert person.cards[0].options == ()


async def test_skipped_is_a_success_that_says_proceed(ask_run: Any) -> None:
    async with ask_run(question_port=CallbackPort(Person(Answer.skip()))) as run:
        result = await run.call("ask_user", DB_QUESTION)
    assert not result.is_error
    assert result.meta["outcome"] == "skipped"
    assert result.text_content.startswith("outcome: skipped\nThe person skipped this question.")
    assert "Proceed on a stated assumption" in result.text_content
    assert "do not ask this question again" in result.text_content


async def test_timed_out_is_an_error_with_the_same_instruction(ask_run: Any) -> None:
    async with ask_run(question_port=CallbackPort(never_answers, timeout_s=0.3)) as run:
        start = time.monotonic()
        result = await run.call("ask_user", DB_QUESTION)
        elapsed = time.monotonic() - start
    assert result.is_error
    assert result.meta["outcome"] == "timed_out"
    assert result.text_content.startswith("outcome: timed_out\nNo answer within 0.3 s.")
    assert "Proceed on a stated assumption" in result.text_content
    assert 0.3 <= elapsed < 2


async def test_the_card_carries_the_configured_timeout(ask_run: Any) -> None:
    person = Person(Answer(choices=("postgres",)), Answer(choices=("postgres",)))
    port = CallbackPort(person)
    async with ask_run(config={"ask": {"timeout_s": 42}}, question_port=port) as run:
        await run.call("ask_user", DB_QUESTION)
    async with ask_run(
        config={"ask": {"timeout_s": 42, "port_timeout_s": {"callback": 7}}}, question_port=port
    ) as run:
        await run.call("ask_user", DB_QUESTION)
    assert [card.timeout_s for card in person.cards] == [42, 7]
    assert [card.id for card in person.cards] == ["1", "2"]


async def test_no_person_fails_at_once(ask_run: Any) -> None:
    async def offline(card: Card) -> Answer:
        raise tether.NoPerson("no person attached: the operator is offline")

    async with ask_run(question_port=CallbackPort(offline)) as run:
        start = time.monotonic()
        result = await run.call("ask_user", DB_QUESTION)
        assert time.monotonic() - start < 1
    assert result.is_error
    assert result.meta["outcome"] == "no_person"
    assert result.text_content.startswith(
        "outcome: no_person\nno person attached: the operator is offline."
    )
    assert "do not ask again" in result.text_content


class DetachedPort:
    """A harness port whose person went away: `ask` must never be reached."""

    name = "pager"
    timeout_s = None
    person_attached = False
    why_no_person = "the pager has no operator on call"

    async def ask(self, card: Card) -> Answer:
        raise AssertionError("ask() called on a port with no person attached")


async def test_no_person_on_a_harness_port_fails_at_once(ask_run: Any) -> None:
    async with ask_run(question_port=DetachedPort()) as run:
        start = time.monotonic()
        result = await run.call("ask_user", DB_QUESTION)
        approval = await run.call("echo_write", {"path": "a.txt", "text": "x"})
        assert time.monotonic() - start < 1
        assert not (run.workdir / "a.txt").exists()
    assert result.meta["outcome"] == "no_person"
    assert "the pager has no operator on call" in result.text_content
    assert approval.is_error
    assert "no person attached" in approval.text_content
    assert "the pager has no operator on call" in approval.text_content


async def test_an_answer_that_does_not_fit_fails_cleanly(ask_run: Any) -> None:
    person = Person(Answer(choices=("mysql",)), Answer())
    async with ask_run(question_port=CallbackPort(person)) as run:
        wrong = await run.call("ask_user", DB_QUESTION)
        empty = await run.call("ask_user", DB_QUESTION)
    assert wrong.is_error and wrong.meta["outcome"] == "invalid_answer"
    assert 'choices: "mysql" is not an option of this card' in wrong.text_content
    assert empty.is_error and "answer is empty" in empty.text_content


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"question": "Proceed?"},
            "options: at least one option is required when allow_free_text is false",
        ),
        (
            {
                "question": "Proceed?",
                "options": [{"label": "yes"}, {"label": "no"}, {"label": " yes "}],
            },
            'options[2].label: duplicate of options[0].label "yes"',
        ),
        (
            {"question": "Proceed?", "options": [{"label": "yes"}, {"label": "  "}]},
            "options[1].label: must not be empty",
        ),
        (
            {"question": "Name it", "allow_free_text": True, "multi_select": True},
            "multi_select: needs options to select from (none given)",
        ),
        ({"question": "   ", "allow_free_text": True}, "question: must not be empty"),
        ({"question": "Pick", "options": [{"label": str(i)} for i in range(21)]}, "options"),
        ({"question": "Pick", "options": "yes,no"}, "options"),
        ({"question": "Pick", "options": [{"label": "a", "colour": "red"}]}, "colour"),
    ],
)
async def test_bad_arguments_name_the_field_and_show_no_card(
    ask_run: Any, args: dict[str, Any], message: str
) -> None:
    person = Person()
    async with ask_run(question_port=CallbackPort(person)) as run:
        result = await run.call("ask_user", args)
    assert result.is_error
    assert message in result.text_content
    assert person.cards == []


async def test_two_concurrent_questions_get_distinct_cards_and_their_own_answers(
    ask_run: Any,
) -> None:
    shown: dict[str, Card] = {}
    answers: dict[str, tuple[anyio.Event, list[Answer]]] = {}

    async def person(card: Card) -> Answer:
        event, slot = answers.setdefault(card.call_id or "", (anyio.Event(), []))
        shown[card.call_id or ""] = card
        await event.wait()
        return slot[0]

    results: dict[str, tether.ToolResult] = {}
    async with ask_run(question_port=CallbackPort(person)) as run:

        async def ask(call_id: str, question: dict[str, Any]) -> None:
            results[call_id] = await run.call("ask_user", question, call_id=call_id)

        colours = {"question": "Colour?", "options": [{"label": "red"}, {"label": "blue"}]}
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "db", DB_QUESTION)
            tg.start_soon(ask, "colour", colours)
            with anyio.fail_after(5):
                while len(shown) < 2:
                    await anyio.sleep(0.01)
            # answer the second question first
            for call_id, label in (("colour", "blue"), ("db", "postgres")):
                event, slot = answers[call_id]
                slot.append(Answer(choices=(label,)))
                event.set()
    assert shown["db"].id != shown["colour"].id
    assert results["db"].meta["choices"] == ["postgres"]
    assert results["colour"].meta["choices"] == ["blue"]


def approval_person(*labels: str) -> Person:
    return Person(
        *(Answer.skip() if label == "skip" else Answer(choices=(label,)) for label in labels)
    )


async def test_approval_card_allow_once(ask_run: Any) -> None:
    person = approval_person("allow", "allow")
    async with ask_run(question_port=CallbackPort(person)) as run:
        first = await run.call("echo_write", {"path": "a.txt", "text": "one"}, call_id="w1")
        second = await run.call("echo_write", {"path": "a.txt", "text": "two"}, call_id="w2")
        assert (run.workdir / "a.txt").read_text() == "two"
    assert not first.is_error and not second.is_error
    assert len(person.cards) == 2  # allowed once: the next call asks again
    card = person.cards[0]
    assert card.kind == "approval"
    assert card.call_id == "w1"
    assert card.question == "May I run echo_write (write tier)?"
    # the arguments, then what the write will change (the core's describe_change rendering)
    assert card.context.startswith('path: "a.txt"\ntext: "one"\n── what it will change ──\n')
    assert card.context.endswith("\n+one"), card.context
    assert card.arguments == {"path": "a.txt", "text": "one"}
    assert card.labels == ("allow", "deny", "allow for this run")
    assert not card.allow_free_text and not card.multi_select


async def test_approval_card_deny(ask_run: Any) -> None:
    async with ask_run(question_port=CallbackPort(approval_person("deny", "skip"))) as run:
        denied = await run.call("echo_write", {"path": "a.txt", "text": "one"})
        skipped = await run.call("echo_write", {"path": "a.txt", "text": "two"})
        assert not (run.workdir / "a.txt").exists()
    assert denied.is_error and "the person denied this call" in denied.text_content
    assert skipped.is_error and "the person denied this call" in skipped.text_content


async def test_approval_card_allow_for_the_run_skips_the_next_card(ask_run: Any) -> None:
    person = approval_person("allow for this run")
    async with ask_run(question_port=CallbackPort(person)) as run:
        for text in ("one", "two", "three"):
            result = await run.call("echo_write", {"path": "a.txt", "text": text})
            assert not result.is_error, result.text_content
        assert (run.workdir / "a.txt").read_text() == "three"
        # the exec tier is a different tool: it still asks (and the script has no answer left)
        person.replies.append(Answer(choices=("deny",)))
        refused = await run.call("echo_exec", {"argv": ["true"]})
    assert len(person.cards) == 2
    assert person.cards[1].question == "May I run echo_exec (exec tier)?"
    assert refused.is_error


async def test_approval_times_out_closed(ask_run: Any) -> None:
    async with ask_run(question_port=CallbackPort(never_answers, timeout_s=0.2)) as run:
        result = await run.call("echo_write", {"path": "a.txt", "text": "x"})
        assert not (run.workdir / "a.txt").exists()
    assert result.is_error and "timed out" in result.text_content


async def test_registration_needs_a_port_and_a_destination(open_test_run: RunFactory) -> None:
    person = Person()
    plugins = [tether_ask.hooks, tether_echo.hooks]
    async with open_test_run(plugins=plugins, entry_points=False) as run:
        assert "ask_user" not in run.tools
        assert "approver" not in run.resources
        refused = await run.call("echo_write", {"path": "a.txt", "text": "x"})
        assert "no approver attached" in refused.text_content
    async with open_test_run(
        plugins=[Harness(question_port=CallbackPort(person)), *plugins],
        entry_points=False,
        conversation_id=None,
    ) as run:
        assert "ask_user" not in run.tools  # no conversation to show the card in
    async with open_test_run(
        plugins=[Harness(question_port=CallbackPort(person)), *plugins], entry_points=False
    ) as run:
        assert run.tools["ask_user"].tier is tether.Tier.READ
        assert "ask_user" in [s["name"] for s in run.schemas(surface="plan")]


async def test_a_harness_approver_is_kept(ask_run: Any) -> None:
    class AlwaysDeny:
        async def approve(self, request: tether.ApprovalRequest) -> tether.Decision:
            return tether.Decision.DENY

    person = Person()
    harness_approver = AlwaysDeny()
    async with ask_run(question_port=CallbackPort(person), approver=harness_approver) as run:
        assert run.resources["approver"] is harness_approver
        result = await run.call("echo_write", {"path": "a.txt", "text": "x"})
    assert result.is_error and person.cards == []


async def test_callback_from_configuration(
    ask_run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "my_harness_ui.py"
    module.write_text(
        textwrap.dedent(
            """
            from tether_ask import Answer

            async def show_card(card):
                return Answer(choices=(card.options[-1].label,))
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_harness_ui", raising=False)
    async with ask_run(config={"ask": {"callback": "my_harness_ui:show_card"}}) as run:
        result = await run.call("ask_user", DB_QUESTION)
    assert result.meta["choices"] == ["sqlite"]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"callback": "no_such_module_xyz:fn"},
            "ask.callback: cannot import 'no_such_module_xyz:fn'",
        ),
        ({"callback": "just_a_name"}, 'ask.callback: expected "package.module:function"'),
        ({"timeot_s": 5}, "ask.timeot_s"),
        ({"timeout_s": -1}, "ask.timeout_s: expected a positive number of seconds, got -1"),
        (
            {"port_timeout_s": {"terminal": 0}},
            "ask.port_timeout_s.terminal: expected a positive number",
        ),
    ],
)
async def test_bad_configuration_is_named(
    ask_run: Any, config: dict[str, Any], message: str
) -> None:
    with pytest.raises(tether.ConfigError, match=re.escape(message)):
        async with ask_run(config={"ask": config}):
            pass


async def test_configured_callback_and_harness_port_conflict(ask_run: Any) -> None:
    with pytest.raises(
        tether.ConfigError, match=r"ask\.callback: the run already has a question_port"
    ):
        async with ask_run(
            config={"ask": {"callback": "tether_ask:Answer"}}, question_port=CallbackPort(Person())
        ):
            pass


async def test_plugin_contract(ask_run: Any) -> None:
    async with ask_run(question_port=CallbackPort(Person())) as run:
        assert "ask_user" in await check_plugin_contract(run, ["ask_user"])


class KioskPort:
    """A harness's own port (no CallbackPort): answers every card with its first option."""

    name = "kiosk"
    timeout_s = 5.0
    person_attached = True

    def __init__(self) -> None:
        self.cards: list[Card] = []

    async def ask(self, card: Card) -> Answer:
        self.cards.append(card)
        return Answer(choices=(card.options[0].label,))


async def test_a_harness_port_of_its_own(ask_run: Any) -> None:
    port = KioskPort()
    async with ask_run(question_port=port) as run:
        assert run.resources["question_port"] is port
        asked = await run.call("ask_user", DB_QUESTION)
        approved = await run.call("echo_write", {"path": "a.txt", "text": "x"})
        assert (run.workdir / "a.txt").read_text() == "x"
    assert asked.meta["choices"] == ["postgres"]
    assert not approved.is_error
    assert [card.kind for card in port.cards] == ["question", "approval"]
    assert [card.timeout_s for card in port.cards] == [5.0, 5.0]


async def test_a_question_port_that_is_not_a_port_is_refused(ask_run: Any) -> None:
    with pytest.raises(
        tether.ConfigError, match=r"question_port: expected a tether\.person\.QuestionPort"
    ):
        async with ask_run(question_port=object()):
            pass


async def test_a_port_with_a_bad_timeout_is_refused_when_the_run_opens(ask_run: Any) -> None:
    with pytest.raises(
        tether.ConfigError, match="callback port timeout_s: expected a positive number of seconds"
    ):
        async with ask_run(question_port=CallbackPort(Person(), timeout_s=0)):
            pass


async def test_an_answer_larger_than_the_budget_is_cut_with_a_notice(ask_run: Any) -> None:
    """The core's result budget over ask_user: the answer is cut, the notice says so and how to
    go on (a narrower question), and the harness still has the whole answer in meta."""
    long_answer = "a very long answer " * 200
    person = Person(Answer(text=long_answer), Answer(text="the short part"))
    config = {"core": {"result_budget": {"tools": {"ask_user": 1000}}}}
    async with ask_run(question_port=CallbackPort(person), config=config) as run:
        question = {"question": "Describe it all?", "allow_free_text": True}
        result = await run.call("ask_user", question)
        assert not result.is_error
        texts = [block.text for block in result.content]
        assert sum(len(t) for t in texts) <= 1000
        assert texts[0].startswith('outcome: answered\ntext: "a very long answer')
        assert texts[-1].startswith("[tether cut this result to its budget:")
        assert "one cut mid-way" in texts[-1] and "ask the person a narrower question" in texts[-1]
        assert result.meta["text"] == long_answer.strip()
        narrower = await run.call("ask_user", {"question": "Which part?", "allow_free_text": True})
        assert narrower.text_content == 'outcome: answered\ntext: "the short part"'

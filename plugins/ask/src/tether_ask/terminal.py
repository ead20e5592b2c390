"""The terminal port: a numbered card printed on a TTY, answered by typing a line.

A line of numbers picks options (several, separated by spaces or commas, on a multi-select
card), `0` skips, anything else is free text when the card accepts it. A reply that does not fit
the card is explained and asked again.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import termios

import anyio
import attrs

import tether
from tether.person import TerminalIO
from tether.terminal import for_terminal
from tether_ask.cards import Answer, Card, check_answer

_NUMBERS = re.compile(r"\d+(?:[\s,]+\d+)*")
_RULE = "─" * 60
#: width a context line is wrapped at (never cut: the rest follows on ``↪`` lines)
WRAP_COLUMNS = 100


Terminal = TerminalIO  # the `terminal` resource `tether call` wires (tether.person)


def render_card(card: Card, number: str) -> str:
    """The card as the person sees it on a terminal. Every piece of it the model or the
    checkout wrote goes through :func:`tether.terminal.for_terminal`: a control character, an
    escape sequence or a bidi override is shown as its escape, never acted on; the question and
    the context keep their line breaks, each later line indented so that it cannot pose as a
    line of the card's own frame; a label or a description is one line."""
    title = "approval" if card.kind == "approval" else "question"
    question = for_terminal(card.question, newlines=True).split("\n")
    lines = [_RULE, f"{title} {number}", question[0], *(f"  {line}" for line in question[1:])]
    context = for_terminal(card.context, newlines=True)
    if card.kind == "approval" and card.context:
        # the call's arguments, every one whole (made visible by the core's render_args)
        lines.append("  arguments, whole:")
        lines += [wrapped for line in context.split("\n") for wrapped in _wrap(line, "    ")]
    elif card.context:
        lines += [f"  ({line})" if line else "" for line in context.split("\n")]
    for index, option in enumerate(card.options, start=1):
        label = for_terminal(option.label)
        described = f" — {for_terminal(option.description)}" if option.description else ""
        lines.append(f"  {index}. {label}{described}")
    lines.append(_instructions(card))
    return "\n".join(lines) + "\n"


def _wrap(line: str, indent: str) -> list[str]:
    """``line`` in pieces of at most :data:`WRAP_COLUMNS` characters; none is dropped."""
    first, rest = WRAP_COLUMNS - len(indent), WRAP_COLUMNS - len(indent) - 2
    pieces = [line[:first]] + [line[i : i + rest] for i in range(first, len(line), rest)]
    return [indent + pieces[0], *(f"{indent}↪ {piece}" for piece in pieces[1:])]


def _instructions(card: Card) -> str:
    count = len(card.options)
    parts = []
    if count:
        pick = "1" if count == 1 else f"1-{count}"
        if card.multi_select:
            parts.append(f"type the numbers of your choices ({pick}, separated by spaces)")
        else:
            parts.append(f"type a number ({pick})")
    if card.allow_free_text:
        parts.append("type your answer" if not count else "or type your own answer")
    parts.append("0 skips")
    return "Reply: " + ", ".join(parts) + f"  [waits {card.timeout_s:g} s]"


def parse_reply(card: Card, line: str) -> Answer | str:
    """The answer a typed line gives to `card`, or why it does not answer it."""
    reply = line.strip()
    if reply == "0":
        return Answer.skip()
    if not reply:
        return "empty reply: " + _instructions(card)[len("Reply: ") :]
    if card.options and _NUMBERS.fullmatch(reply):
        numbers = [int(n) for n in re.split(r"[\s,]+", reply)]
        for number in numbers:
            if not 1 <= number <= len(card.options):
                return f"{number} is not an option: choose 1-{len(card.options)}, or 0 to skip"
        if len(numbers) > 1 and not card.multi_select:
            return f"{len(numbers)} numbers given but this card takes one"
        chosen = [card.options[n - 1].label for n in dict.fromkeys(numbers)]
        return Answer(choices=tuple(chosen))
    if not card.allow_free_text:
        return f"{reply!r} is not a number: this card takes no free text; choose 1-{len(card.options)}, or 0 to skip"
    answer = Answer(text=reply)
    return check_answer(card, answer) or answer


class TerminalPort:
    """A port that prints cards on the `tether call` terminal and reads the typed reply.

    Cards are shown one at a time (the terminal has one person); a second question waits for
    the first, within its own timeout.
    """

    name = "terminal"

    def __init__(self, terminal: Terminal, *, timeout_s: float | None = None) -> None:
        self._terminal = terminal
        self.timeout_s = timeout_s
        self._one_card_at_a_time = anyio.Lock()
        self._numbers = itertools.count(1)
        self._unread = b""

    @property
    def person_attached(self) -> bool:
        return bool(self._terminal.interactive)

    @property
    def why_no_person(self) -> str:
        return "stdin is not a terminal"

    async def ask(self, card: Card) -> Answer:
        if not self.person_attached:
            raise tether.NoPerson(f"no person attached: {self.why_no_person}")
        async with self._one_card_at_a_time:
            number = str(next(self._numbers))
            self._discard_typeahead()
            self._write(render_card(card, number))
            try:
                while True:
                    self._write("> ")
                    reply = parse_reply(card, await self._read_line())
                    if isinstance(reply, Answer):
                        return attrs.evolve(reply, card=number)
                    self._write(f"  {reply}\n")
            except anyio.get_cancelled_exc_class():
                # timed out (or the run is closing): tell the person this card no longer counts
                self._write(f"\n  {card.kind} {number} closed without an answer\n")
                raise

    def _write(self, text: str) -> None:
        out = self._terminal.stdout
        # the card's fields are already safe; a reply echoed back in an error is not
        out.write(for_terminal(text, newlines=True))
        out.flush()

    def _discard_typeahead(self) -> None:
        # Keys pressed before the card was shown must not answer it.
        self._unread = b""
        with contextlib.suppress(OSError, termios.error, ValueError):
            termios.tcflush(self._terminal.stdin.fileno(), termios.TCIFLUSH)

    async def _read_line(self) -> str:
        fd = self._terminal.stdin.fileno()
        while b"\n" not in self._unread:
            await anyio.wait_readable(fd)
            try:
                chunk = os.read(fd, 4096)
            except BlockingIOError:
                continue
            if not chunk:
                raise tether.NoPerson("no person attached: the terminal closed (end of input)")
            self._unread += chunk
        line, _, self._unread = self._unread.partition(b"\n")
        return line.decode(errors="replace")

"""tether.regex (RE2 for expressions tether does not trust) and tether.killable (a thread the
caller's cancellation ends)."""

from __future__ import annotations

import pickle
import random
import re
import threading
import time

import anyio
import pytest

from tether import regex as linear
from tether.killable import Killed, run_killable


def catastrophic() -> list[tuple[str, str]]:
    """(pattern, subject) pairs on which Python's `re` backtracks exponentially."""
    a = "a" * 64
    return [
        (r"^(a|aa)+$", a + "!"),
        (r"^(a+)+$", a + "!"),
        (r"^(a*)*b$", a),
        (r"^(\w+\s?)+$", a + "!"),
        (r"^(.*a){16}$", a + "!"),
    ]


@pytest.mark.parametrize(("pattern", "subject"), catastrophic())
def test_a_catastrophic_pattern_runs_in_linear_time(pattern: str, subject: str) -> None:
    compiled = linear.compile(pattern)
    start = time.perf_counter()
    assert compiled.search(subject * 1000) is None  # 65 KB
    assert time.perf_counter() - start < 2.0


@pytest.mark.parametrize(
    ("pattern", "named"),
    [
        (r"(a)\1", "backreferences"),
        (r"(?P<x>a)\k<x>", "backreferences"),
        (r"(?=a)a", "lookahead"),
        (r"(?!a)b", "lookahead"),
        (r"(?<=a)b", "lookbehind"),
        (r"(?<!a)b", "lookbehind"),
        (r"(", "invalid regular expression"),
        (r"((((a{100}){100}){100}){100})", "invalid regular expression"),
    ],
)
def test_what_the_linear_engine_cannot_run_is_refused_with_the_reason(
    pattern: str, named: str
) -> None:
    with pytest.raises(linear.RegexError, match=re.escape(named)):
        linear.compile(pattern)


@pytest.mark.parametrize("pattern", [r"^_[a-z]", r"é+$", r"^a.b$", r"\d{2}", r"(?i)SELF"])
def test_matches_answers_as_re_on_the_decoded_text(pattern: str) -> None:
    compiled, exact = linear.compile(pattern), re.compile(pattern)
    rng = random.Random(3)
    pieces = [b"_", b"a", b"b", b"self", "é".encode(), b"\xff", b"1", b"2", b" "]
    for _ in range(2000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
        expected = exact.search(data.decode("utf-8", "replace")) is not None
        assert compiled.matches(data) == expected, data
        assert compiled.matches(data) == expected, data  # remembered


def test_dollar_is_the_end_of_the_text_as_in_ast_grep() -> None:
    # Python's `$` also matches before a final newline; Rust's (ast-grep's) and RE2's do not
    assert not linear.compile("a$").matches(b"a\n")
    assert linear.compile("a$").matches(b"a")


def test_a_compiled_expression_pickles_by_its_pattern() -> None:
    compiled = pickle.loads(pickle.dumps(linear.compile(rb"a\s*b")))
    assert compiled.search(b"xa \t b") is not None and compiled == linear.compile(rb"a\s*b")


def test_bytes_match_any_byte_not_only_utf8() -> None:
    assert linear.compile(rb"#[^\n]*x").search(b"# \xff\xfe x") is not None


BACKTRACKING = [
    rb"#[^\n]*+",
    rb"//[^\n]*+|/\*(?:[^*]|\*(?!/))*+\*/",
    rb"<!--(?:[^-]|-(?!->))*+-->",
    rb"#[^\n]*+|=begin\b(?:[^\n]|\n(?!=end\b))*+\n=end\b[^\n]*+",
    rb"[\]*+]++(?<=x)a?+\*+",
]


@pytest.mark.parametrize("comment", BACKTRACKING)
def test_the_superset_of_a_backtracking_pattern_keeps_every_match(comment: bytes) -> None:
    chain = rb"a(?:[\s,;\\]|" + comment + rb")*b"
    exact, wider = re.compile(chain), linear.compile(linear.superset(chain))
    alphabet = b"ab /*#\n-<>!=end\\\xff;,]x+"
    rng = random.Random(7)
    for _ in range(3000):
        s = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        if exact.search(s):
            assert wider.search(s), s


def test_a_killable_thread_stops_when_its_caller_is_cancelled() -> None:
    progress = [0]
    stopped = threading.Event()

    def spin() -> None:
        try:
            while True:
                progress[0] += 1
        except Killed:
            stopped.set()
            raise

    async def main() -> None:
        with anyio.move_on_after(0.3):
            await run_killable(spin)
        assert await anyio.to_thread.run_sync(stopped.wait, 5.0)
        seen = progress[0]
        await anyio.sleep(0.2)
        assert progress[0] == seen
        assert await run_killable(lambda: 42) == 42  # the next one runs

    anyio.run(main)

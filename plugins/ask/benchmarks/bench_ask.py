"""What a question costs beyond the person's own time, side by side with what a harness would
write instead. Not a test; run by hand:

    uv run python plugins/ask/benchmarks/bench_ask.py [--rounds N]

1. In process: `run.call("ask_user")` through a `CallbackPort` (validation, card, answer checks,
   the whole call pipeline) vs. awaiting the same answering function directly.
2. Over stdio: one `ask_user` round trip through `tether session --interactive` (request → card
   line → answer line → reply) vs. the same two-line exchange with a bare Python JSON-lines echo
   process (the floor of any stdio protocol).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

import tether
import tether_ask.hooks
from tether_ask import Answer, CallbackPort, Card, Option

QUESTION = {
    "question": "Which database?",
    "options": [{"label": "postgres"}, {"label": "sqlite"}],
}
TETHER = str(Path(sys.executable).with_name("tether"))

RAW_ECHO = r"""
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" in message:
        sys.stdout.write(json.dumps({"card": "card_1", "question": "q"}) + "\n")
    else:
        sys.stdout.write(json.dumps({"id": 1, "is_error": False, "content": []}) + "\n")
    sys.stdout.flush()
"""


def median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


async def in_process(rounds: int) -> tuple[float, float]:
    async def person(card: Card) -> Answer:
        return Answer(choices=(card.options[1].label,))

    class Harness:
        @tether.hookimpl
        def tether_resources(self, run: tether.Run) -> dict[str, Any]:
            return {"question_port": CallbackPort(person)}

    card = Card(
        kind="question", question="Which database?", options=(Option("postgres"), Option("sqlite"))
    )
    direct = []
    for _ in range(rounds):
        start = time.perf_counter()
        await person(card)
        direct.append(time.perf_counter() - start)
    through = []
    with tempfile.TemporaryDirectory() as workdir:
        async with tether.open_run(
            workdir,
            conversation_id="bench",
            plugins=[Harness(), tether_ask.hooks],
            entry_points=False,
        ) as run:
            for _ in range(rounds):
                start = time.perf_counter()
                result = await run.call("ask_user", QUESTION)
                through.append(time.perf_counter() - start)
                assert result.meta["choices"] == ["sqlite"], result
    return median_us(direct), median_us(through)


def over_stdio(rounds: int) -> tuple[float, float]:
    def exchange(proc: subprocess.Popen[str], request: dict[str, Any]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        card = json.loads(proc.stdout.readline())
        proc.stdin.write(json.dumps({"card": card["card"], "choices": ["sqlite"]}) + "\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert "id" in reply, reply

    def measure(argv: list[str], request_of: Any) -> float:
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        try:
            exchange(proc, request_of(0))  # warm up
            samples = []
            for index in range(1, rounds + 1):
                start = time.perf_counter()
                exchange(proc, request_of(index))
                samples.append(time.perf_counter() - start)
            return median_us(samples)
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=30)

    raw = measure([sys.executable, "-c", RAW_ECHO], lambda i: {"id": i})
    with tempfile.TemporaryDirectory() as workdir:
        session = measure(
            [TETHER, "session", "--interactive", "--workdir", workdir],
            lambda i: {"id": i, "tool": "ask_user", "args": QUESTION},
        )
    return raw, session


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=300)
    rounds = parser.parse_args().rounds
    direct, through = anyio.run(in_process, rounds)
    print(f"in process, median of {rounds}:")
    print(f"  callback awaited directly        {direct:9.1f} µs")
    print(f"  ask_user via CallbackPort        {through:9.1f} µs   ratio {through / direct:7.1f}x")
    raw, session = over_stdio(rounds)
    print(f"over stdio (request, card, answer, reply), median of {rounds}:")
    print(f"  bare JSON-lines echo process     {raw:9.1f} µs")
    print(f"  tether session --interactive     {session:9.1f} µs   ratio {session / raw:7.1f}x")


if __name__ == "__main__":
    main()

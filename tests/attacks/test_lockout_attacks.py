"""Lock-out attacks: "tighten only" must not mean "lock out".

- every value a workdir file may lower (found from the configuration classes' own field
  metadata, every family's table) × tiny values: below its floor the harness's value stands,
  and the file's value is reported as ignored;
- the attacks end to end: ``[core] call_timeout_s = 1e-9`` and the write that fixes the file
  still runs; ``[ask] timeout_s = 1e-9`` and an approval card still waits for the person;
- every list of names an answer echoes from input is bounded: thousands of long checkpoint
  names, utils, rewriters, worker ids, card labels.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from attack_cli import TETHER

import tether
from tether.config import CoreConfig, workdir_floor, workdir_may_set
from tether_ask.config import AskConfig
from tether_astgrep.config import AstgrepConfig
from tether_debug.config import DebugConfig
from tether_eval.config import EvalConfig
from tether_lsp.config import LspConfig
from tether_vibe.config import VibeConfig

TABLES: dict[str, type] = {
    "core": CoreConfig,
    "lsp": LspConfig,
    "astgrep": AstgrepConfig,
    "debug": DebugConfig,
    "eval": EvalConfig,
    "ask": AskConfig,
    "vibe": VibeConfig,
}
TINY = [1e-9, 0.001]


def lowerable() -> list[tuple[str, str, Any, float]]:
    """(table, key, field, floor) of every key a workdir may lower, from the field metadata."""
    found = []
    for table, cls in TABLES.items():
        hints = typing.get_type_hints(cls)
        for field in attrs.fields(cls):
            if field.metadata.get("tether_workdir") != "set" or attrs.has(hints[field.name]):
                continue
            floor = workdir_floor(field)
            assert floor is not None, f"[{table}] {field.name} may be lowered and has no floor"
            found.append((table, field.name, field, floor))
    return found


LOWERABLE = lowerable()


def tiny_values(floor: float) -> list[float]:
    """Values under the floor (a floor of 0: lowering it never locks anything out)."""
    return sorted(v for v in {*TINY, floor / 2} if 0 < v < floor)


CASES = [
    pytest.param(table, key, value, floor, id=f"{table}.{key}={value:g}")
    for table, key, _, floor in LOWERABLE
    for value in tiny_values(floor)
]


@pytest.mark.parametrize(("table", "key", "value", "floor"), CASES)
def test_a_workdir_cannot_lower_a_value_below_its_floor(
    tmp_path: Path, table: str, key: str, value: float, floor: float, tally: Any
) -> None:
    cls = TABLES[table]
    default = attrs.fields_dict(cls)[key].default
    default = default.factory() if isinstance(default, attrs.Factory) else default  # type: ignore[arg-type]
    if isinstance(default, dict):  # a table of values (per port): the harness sets one entry
        harness, local = {table: {key: {"terminal": 600}}}, {table: {key: {"terminal": value}}}
    else:
        harness, local = {}, {table: {key: value}}

    async def main() -> tuple[Any, list[str]]:
        async with tether.open_run(
            tmp_path, config=harness, workdir_config=local, entry_points=False
        ) as run:
            loaded = run.core if table == "core" else run.config(table, cls)
            return getattr(loaded, key), run.config_notes

    got, notes = anyio.run(main)
    got_value = got["terminal"] if isinstance(got, dict) else got
    held = got_value >= floor and any(f"{table}.{key}" in note for note in notes)
    tally.record("lock-out: floors", held=held)
    assert got_value >= floor, f"[{table}] {key} = {value} was taken: {got_value}"
    assert any(f"{table}.{key}" in note and "ignored" in note for note in notes), notes


def test_a_value_a_workdir_may_lower_must_declare_its_floor() -> None:
    """The mechanism fails a configuration class that forgets the floor, at definition."""
    with pytest.raises(TypeError, match="floor= is required"):

        @attrs.frozen
        class Forgetful:
            timeout_s: float = workdir_may_set(5.0, above=0)


def cli(tmp_path: Path, *args: str, stdin: str = "") -> Any:
    import subprocess

    return subprocess.run(
        [*TETHER, *args], input=stdin, capture_output=True, text=True, timeout=120
    )


def test_a_tiny_call_timeout_does_not_stop_the_write_that_fixes_it(tmp_path: Path, tally: Any):
    (tmp_path / "tether.toml").write_text("[core]\ncall_timeout_s = 1e-9\n")
    args = {"path": "tether.toml", "content": "[core]\n"}
    out = cli(
        tmp_path, "call", "write", json.dumps(args), f"--workdir={tmp_path}", "--approve=write"
    )
    result = json.loads(out.stdout)
    tally.record("lock-out: end to end", held=not result["is_error"])
    assert not result["is_error"], result
    assert (tmp_path / "tether.toml").read_text() == "[core]\n"
    assert "call_timeout_s: ignored 1e-09" in out.stderr


def test_a_tiny_ask_timeout_does_not_expire_every_approval(tmp_path: Path, tally: Any):
    from attack_cli import Session

    (tmp_path / "tether.toml").write_text("[ask]\ntimeout_s = 1e-9\n")
    session = Session(tmp_path, "--interactive")
    try:
        session.send({"id": 1, "tool": "write", "args": {"path": "a.txt", "content": "x"}})
        card = session.line()
        assert card.get("kind") == "approval", card
        tally.record("lock-out: end to end", held=card["timeout_s"] >= 30)
        assert card["timeout_s"] >= 30, card
        session.send({"card": card["card"], "choices": ["allow"]})
        reply = session.line()
        assert not reply["is_error"], reply
    finally:
        session.close()
    assert (tmp_path / "a.txt").read_text() == "x"


LONG = "n" * 5000


def test_an_unknown_checkpoint_lists_the_known_ones_bounded(tmp_path: Path, tally: Any) -> None:
    """Thousands of long checkpoint names, then ``since: "nope"``: the answer stays small."""
    from tether_lsp.checkpoints import CHECKPOINTS_CAP, Checkpoints

    checkpoints = Checkpoints()

    class Ledger:
        def seen(self) -> dict[Path, Any]:
            return {}

    class Supervisor:
        workdir = tmp_path
        ledger = Ledger()

    async def main() -> tuple[str, str]:
        marked = ""
        for index in range(300):
            # the longest name the checkpoint action takes (its ``name`` argument's bound)
            marked = await checkpoints.mark(Supervisor(), f"{index:03}{'n' * 197}")  # type: ignore[arg-type]
        try:
            checkpoints.get("nope" + LONG)
        except tether.ArgumentError as exc:
            return marked, str(exc)
        raise AssertionError("an unknown checkpoint was found")

    marked, error = anyio.run(main)
    held = len(error) < 4000 and len(marked) < 4000
    tally.record("lock-out: bounded echoes", held=held, chars=len(error))
    assert len(error) < 4000, len(error)
    assert "and 80 more" in error, error[-300:]
    assert f"keeps {CHECKPOINTS_CAP} checkpoints" in marked
    assert len(marked) < 4000


def test_echoed_names_are_bounded_everywhere(tmp_path: Path, tally: Any) -> None:
    """Utils and rewriters of a rule, an unknown worker id, a card's labels: each answer that
    lists names back stays bounded, whatever the input holds."""
    from tether.person import Answer, Card, Option, check_answer

    card = Card(
        kind="question", question="q", options=tuple(Option(f"{i}{LONG}") for i in range(500))
    )
    problem = check_answer(card, Answer(choices=("nope" + LONG,)))
    assert problem is not None
    tally.record("lock-out: bounded echoes", held=len(problem) < 4000, chars=len(problem))
    assert len(problem) < 4000, len(problem)

    utils = {f"u{i}{'x' * 1000}": {"kind": "identifier"} for i in range(60)}
    rule = {"rule": {"matches": "nope"}, "utils": utils, "language": "python"}
    (tmp_path / "a.py").write_text("x = 1\n")
    out = cli(tmp_path, "call", "ast_grep", json.dumps({"rule": rule}), f"--workdir={tmp_path}")
    text = json.loads(out.stdout)["content"][0]["text"] if out.stdout else out.stderr
    tally.record("lock-out: bounded echoes", held=len(text) < 4000, chars=len(text))
    assert len(text) < 4000, len(text)

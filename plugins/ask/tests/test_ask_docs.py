"""The README documents exactly what the code has: config keys and ask_user's arguments."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import attrs

import tether
from tether_ask.config import AskConfig
from tether_ask.tools import AskUserArgs, Outcome

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def table_keys(header: str) -> set[str]:
    """The first-column names of the Markdown table whose header row starts with `header`."""
    table = README.split(header, 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"^\| `(\w+)` \|", table, flags=re.MULTILINE))


def test_config_table_matches_ask_config() -> None:
    assert table_keys("| key |") == {f.name for f in attrs.fields(AskConfig)}


def test_argument_table_matches_the_schema() -> None:
    schema = tether.object_schema(AskUserArgs)
    assert table_keys("| argument |") == set(schema["properties"])


def test_outcome_table_names_every_outcome() -> None:
    assert table_keys("| outcome |") == set(get_args(Outcome))

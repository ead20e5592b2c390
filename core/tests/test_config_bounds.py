"""Configuration tables get the same bounds as arguments, and errors name the whole key path."""

from __future__ import annotations

import attrs
import pytest

import tether
from tether.args import structure_config
from tether.config import config_field, workdir_may_set


@attrs.frozen
class Server:
    command: tuple[str, ...] = config_field(min_length=1)
    timeout_s: float = config_field(5.0, above=0)


@attrs.frozen
class Table:
    request_timeout_s: float = workdir_may_set(10.0, floor=1, above=0)
    retries: int = workdir_may_set(2, floor=0, minimum=0, maximum=5)
    servers: dict[str, Server] = attrs.field(factory=dict)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"request_timeout_s": -5}, "lsp.request_timeout_s: expected a number above 0, got -5"),
        ({"retries": 9}, "lsp.retries: expected at most 5, got 9"),
        (
            {"servers": {"python": {"command": []}}},
            "lsp.servers.python.command: expected length at least 1, got 0",
        ),
        (
            {"servers": {"python": {"command": ["x"], "timeout_s": 0}}},
            "lsp.servers.python.timeout_s: expected a number above 0, got 0",
        ),
        (
            {"servers": {"python": {"comand": ["x"]}}},
            "lsp.servers.python.comand: unknown key (not in this table)",
        ),
        ({"servers": {"python": {"command": "x"}}}, "lsp.servers.python.command: expected a list"),
        ({"request_timout_s": 1}, "lsp.request_timout_s: unknown key (not in this table)"),
    ],
)
def test_bad_values_name_the_key_path(raw, message):
    with pytest.raises(tether.ConfigError) as caught:
        structure_config(raw, Table, "lsp")
    assert message in str(caught.value), str(caught.value)


def test_good_values_load():
    table = structure_config({"servers": {"py": {"command": ["pyls"]}}, "retries": 0}, Table, "lsp")
    assert table.servers["py"] == Server(("pyls",)) and table.retries == 0


def test_an_empty_table_is_the_defaults_and_still_checked():
    """An empty table takes a shortcut past the converter: same value, same errors."""
    assert structure_config({}, Table, "lsp") == Table()

    @attrs.frozen
    class Required:
        command: tuple[str, ...] = config_field()

    with pytest.raises(tether.ConfigError, match=r"t\.command: required"):
        structure_config({}, Required, "t")

    @attrs.frozen
    class BadDefault:
        retries: int = workdir_may_set(9, floor=1, maximum=5)

    with pytest.raises(tether.ConfigError, match=r"t\.retries: expected at most 5, got 9"):
        structure_config({}, BadDefault, "t")

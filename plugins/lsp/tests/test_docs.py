"""The README cannot drift from the code: every config key and spec field is documented."""

from __future__ import annotations

from pathlib import Path

import attrs

from tether_lsp import BUILTIN_SERVERS, LspConfig, ServerSpec

README = (Path(__file__).parent.parent / "README.md").read_text()


def test_every_config_key_is_in_the_readme_table() -> None:
    for field in attrs.fields(LspConfig):
        assert f"| `{field.name}` |" in README, field.name


def test_every_server_spec_field_is_documented() -> None:
    for field in attrs.fields(ServerSpec):
        assert f"`{field.name}`" in README, field.name


def test_every_builtin_server_is_listed() -> None:
    listed = README.split("Built-in servers:", 1)[1].split("\n\n", 1)[0]
    for spec in BUILTIN_SERVERS:
        assert spec.id in listed, spec.id

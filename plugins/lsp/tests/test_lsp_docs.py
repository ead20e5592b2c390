"""The README and the docs pages beside it cannot drift from the code: every config key and spec
field is documented."""

from __future__ import annotations

from pathlib import Path

import attrs

from tether_lsp import BUILTIN_SERVERS, LspConfig, ServerSpec

README = (Path(__file__).parent.parent / "README.md").read_text()
#: the README with its reference pages (`docs/servers.md` lists every ServerSpec field)
DOCS = "\n".join(
    [README, *(p.read_text() for p in sorted((Path(__file__).parent.parent / "docs").glob("*.md")))]
)


def test_every_config_key_is_in_the_readme_table() -> None:
    for field in attrs.fields(LspConfig):
        assert f"| `{field.name}` |" in README, field.name


def test_every_server_spec_field_is_documented() -> None:
    for field in attrs.fields(ServerSpec):
        assert f"`{field.name}`" in DOCS, field.name


def test_every_builtin_server_is_listed() -> None:
    listed = README.split("Built-in servers:", 1)[1].split("\n\n", 1)[0]
    for spec in BUILTIN_SERVERS:
        assert spec.id in listed, spec.id


def test_every_config_default_in_the_readme_is_the_code_s() -> None:
    # the README once said checker_timeout_s was 300 while the code used 100
    table = README.split("## Configuration (`[lsp]`)", 1)[1].split("\n\n## ", 1)[0]
    rows = {
        cells[1].strip("` "): cells[2].strip("` ")
        for cells in (line.split("|") for line in table.splitlines() if line.startswith("| `"))
    }
    for field in attrs.fields(LspConfig):
        default = field.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory()
        expected = "—" if default is None else repr(default).replace("'", "")
        assert rows[field.name] == expected, (field.name, rows[field.name], expected)

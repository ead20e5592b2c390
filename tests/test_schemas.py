"""Every installed tool's JSON Schema and the core's converter agree (the kit's property test,
run here over every family at once)."""

from __future__ import annotations

import pytest

import tether
from tether.testing import check_schema_agreement
from tether_ask import CallbackPort


class QuestionPort:
    @tether.hookimpl
    def tether_resources(self, run):
        async def nobody(card):
            raise tether.NoPerson("a schema test")

        return {"question_port": CallbackPort(nobody)}


def every_tool() -> list[tether.ToolSpec]:
    import anyio

    async def collect():
        async with tether.open_run(
            ".", conversation_id="schemas", vibe=True, plugins=[QuestionPort()]
        ) as run:
            return list(run.tools.values())

    return anyio.run(collect)


TOOLS = every_tool()


def test_all_families_are_covered():
    names = {t.name for t in TOOLS}
    assert {
        "lsp",
        "lsp_rename",
        "ast_grep",
        "ast_edit",
        "resolve",
        "debug",
        "eval",
        "ask_user",
        "vibe_spawn",
        "read",
    } <= names


@pytest.mark.parametrize("spec", TOOLS, ids=lambda s: s.name)
def test_every_schema_and_converter_agree(spec):
    check_schema_agreement(spec, examples=80)

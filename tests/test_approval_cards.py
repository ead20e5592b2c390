"""Every write's approval card shows what it will change: the diff of each file, bounded and
visible, from the tool's ``ToolSpec.describe_change`` — for every write tool installed."""

from __future__ import annotations

import shutil
import unicodedata
from pathlib import Path
from typing import Any

import pytest

import tether
from tether.person import CHANGE_HEADING
from tether.preview import CARD_DIFF_LINES
from tether.testing import require_real
from tether_ask import Answer, CallbackPort

pytestmark = pytest.mark.anyio

ASK_WRITES = {"core": {"approval": {"read": "auto", "write": "ask", "exec": "auto"}}}


class Person:
    """A harness whose UI records each card and answers it from a script."""

    def __init__(self, answer: str = "allow") -> None:
        self.answer = answer
        self.cards: list[Any] = []

    async def show(self, card: Any) -> Answer:
        self.cards.append(card)
        return Answer(choices=(self.answer,))

    @tether.hookimpl
    def tether_resources(self, run: Any) -> dict[str, Any]:
        return {"question_port": CallbackPort(self.show, timeout_s=10)}


def change_of(card: Any) -> str:
    assert CHANGE_HEADING in card.context, card.context
    return card.context.split(CHANGE_HEADING, 1)[1]


async def test_every_write_tool_says_what_it_will_change(tmp_path: Path) -> None:
    """The contract: a write-tier tool without ``describe_change`` shows its person only its
    arguments (``resolve`` showed an edit id)."""
    async with tether.open_run(tmp_path, conversation_id="c", vibe=True) as run:
        writes = [spec for spec in run.tools.values() if spec.tier is tether.Tier.WRITE]
        assert {"write", "edit", "apply_patch", "resolve", "lsp_rename"} <= {s.name for s in writes}
        silent = [spec.name for spec in writes if spec.describe_change is None]
    assert not silent, f"write tools whose card shows no change: {silent}"


CASES = {
    "write": ({"path": "a.py", "content": "x = 2\ny = 3\n"}, ["-x = 1", "+x = 2", "+y = 3"]),
    "write (new file)": ({"path": "new.py", "content": "z = 9\n"}, ["--- /dev/null", "+z = 9"]),
    "edit": ({"path": "a.py", "old": "x = 1", "new": "x = 42"}, ["-x = 1", "+x = 42"]),
    "apply_patch": (
        {"patch": "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 7\n"},
        ["-x = 1", "+x = 7"],
    ),
    "echo_write": ({"path": "a.py", "text": "w = 0\n"}, ["-x = 1", "+w = 0"]),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_a_write_card_shows_the_diff(tmp_path: Path, case: str) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    args, expected = CASES[case]
    tool = case.split(" ")[0]
    person = Person("deny")
    async with tether.open_run(
        tmp_path, conversation_id="c", plugins=[person], config=ASK_WRITES
    ) as run:
        result = await run.call(tool, args)
    assert result.is_error and "denied" in result.text_content  # nothing written
    assert (tmp_path / "a.py").read_text() == "x = 1\n"
    change = change_of(person.cards[0])
    for line in expected:
        assert line in change.splitlines(), (line, change)


async def test_resolve_shows_the_staged_diff_not_only_the_edit_id(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\nprint(x)\n")
    person = Person("deny")
    config = {"core": {"approval": {"read": "auto", "write": "ask", "exec": "auto"}}}
    config["core"]["approval"]["tools"] = {"ast_edit": "auto"}  # type: ignore[index]
    async with tether.open_run(
        tmp_path, conversation_id="c", plugins=[person], config=config
    ) as run:
        staged = await run.call(
            "ast_edit", {"pattern": "print($A)", "rewrite": "log($A)", "language": "python"}
        )
        assert not staged.is_error, staged.text_content
        edit_id = staged.meta["edit_id"]
        await run.call("resolve", {"edit_id": edit_id, "action": "accept"})
    change = change_of(person.cards[-1])
    assert "-print(x)" in change.splitlines() and "+log(x)" in change.splitlines(), change


async def test_a_card_bounds_a_huge_change_and_shows_its_controls(tmp_path: Path) -> None:
    person = Person("deny")
    content = "".join(f"line {i}\x1b[2K\u202e\n" for i in range(5000)) + "z" * 10_000 + "\n"
    async with tether.open_run(
        tmp_path, conversation_id="c", plugins=[person], config=ASK_WRITES
    ) as run:
        await run.call("write", {"path": "big.txt", "content": content})
    change = change_of(person.cards[0])
    assert f"[{CARD_DIFF_LINES} of " in change and "diff lines shown]" in change
    assert len(change) < 100_000, len(change)
    raw = [c for c in change if c != "\n" and unicodedata.category(c) in {"Cc", "Cf"}]
    assert not raw, raw[:5]
    assert "\\x1b[2K\\u202e" in change
    # the MCP bridge's elicitation shows the same change, as safely
    from tether_mcp_bridge.cards import card_message

    card = person.cards[0]
    message = card_message(card.to_json(), card.arguments)
    assert CHANGE_HEADING in message and f"[{CARD_DIFF_LINES} of " in message
    assert not [c for c in message if c != "\n" and unicodedata.category(c) in {"Cc", "Cf"}]


async def test_lsp_rename_shows_the_servers_edit(tmp_path: Path) -> None:
    require_real(shutil.which("basedpyright-langserver") is not None, "basedpyright-langserver")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    (tmp_path / "mod.py").write_text("def square(n: int) -> int:\n    return n * n\n")
    (tmp_path / "use.py").write_text("from mod import square\n\nprint(square(3))\n")
    person = Person("deny")
    async with tether.open_run(
        tmp_path, conversation_id="c", plugins=[person], config=ASK_WRITES
    ) as run:
        result = await run.call(
            "lsp_rename", {"file": "mod.py", "line": 1, "symbol": "square", "new_name": "sq"}
        )
    assert result.is_error and "denied" in result.text_content
    change = change_of(person.cards[0])
    assert "+def sq(n: int) -> int:" in change.splitlines(), change
    assert "+print(sq(3))" in change.splitlines(), change
    assert (tmp_path / "mod.py").read_text().startswith("def square")

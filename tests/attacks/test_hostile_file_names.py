"""File names written by the checkout reach the model only escaped (issue 22, section 5): a
newline, a carriage return, ESC or a bidirectional override in a name cannot break a result's
lines, fake a line of output or send terminal sequences. One core function,
``tether.text.show_path``, used wherever a path is rendered; checked here through real tools:
ast_grep (every name × a search and a staged edit) and lsp (a definition in a hostile file)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import tether
from tether.text import show_path
from tether.workdir.paths import relative

#: (id, the hostile part of a name, how it must read)
NAMES = [
    ("newline", "a\nFAKE.py:1:1: injected", "a\\nFAKE.py:1:1: injected"),
    ("carriage return", "b\rc", "b\\rc"),
    ("ESC", "e\x1b[31mred", "e\\x1b[31mred"),
    ("bell and DEL", "f\x07\x7f", "f\\x07\\x7f"),
    ("C1 control", "g\x9bh", "g\\x9bh"),
    ("right-to-left override", "i\u202ecod.py", "i\\u202ecod.py"),
    ("tab", "j\tk", "j\\tk"),
]


@pytest.mark.parametrize(
    ("hostile", "shown"), [(n, s) for _, n, s in NAMES], ids=[i for i, _, _ in NAMES]
)
def test_show_path_escapes_every_control_character(hostile: str, shown: str) -> None:
    assert show_path(hostile) == shown
    assert show_path(Path("dir") / hostile) == f"dir/{shown}"
    assert relative("/w", f"/w/{hostile}") == shown
    assert show_path("plain/ü/名前.py") == "plain/ü/名前.py"  # printable text is untouched


def _no_raw_controls(text: str) -> bool:
    return not any(ch in text for ch in "\r\x1b\x07\x7f\x9b\u202e\t")


@pytest.mark.parametrize(
    ("hostile", "shown"), [(n, s) for _, n, s in NAMES], ids=[i for i, _, _ in NAMES]
)
def test_ast_grep_shows_a_hostile_name_escaped(
    tally, tmp_path: Path, hostile: str, shown: str
) -> None:
    name = f"{hostile}.py" if not hostile.endswith(".py") else hostile
    (tmp_path / name).write_text("def target():\n    return 1\n")

    async def main() -> tuple[str, str]:
        async with tether.open_run(
            tmp_path, config={"core": {"approval": {"write": "auto"}}}, entry_points=True
        ) as run:
            found = await run.call(
                "ast_grep", {"pattern": "def target(): $$$BODY", "language": "python"}
            )
            staged = await run.call(
                "ast_edit",
                {"pattern": "return 1", "rewrite": "return 2", "language": "python"},
            )
            return found.text_content, staged.text_content

    found, staged = anyio.run(main)
    lines = found.splitlines()
    held = (
        any(line.startswith(show_path(name) + ":1:") for line in lines)
        and not any(line.startswith("FAKE.py") for line in lines)
        and _no_raw_controls(found)
        and _no_raw_controls(staged)
        and show_path(name) in staged
    )
    tally.record("file-names", held=held)
    assert held, (found, staged)

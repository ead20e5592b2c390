"""docs/writing-a-plugin.md stays true to the template and to the family it extends."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "writing-a-plugin.md").read_text()
PACKAGE = ROOT / "contrib" / "plugin-template" / "src" / "tether_myplugin"
#: the template's hooks and tools, which the page's first two blocks show
SOURCES = "\n".join((PACKAGE / f"{name}.py").read_text() for name in ("hooks", "tools"))
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE, re.S)


def normalized(code: str) -> str:
    """The code without comments and blank lines, to compare a page excerpt with its source."""
    lines = [re.sub(r"\s+#.*$", "", line).rstrip() for line in code.splitlines()]
    return "\n".join(line for line in lines if line.strip() and not line.strip().startswith("#"))


def test_every_python_block_parses():
    assert len(BLOCKS) >= 4
    for block in BLOCKS:
        ast.parse(block)


def test_the_tool_and_post_processor_are_the_templates():
    source = normalized(SOURCES)
    for block in BLOCKS[:2]:
        for chunk in normalized(block).split("\n\n\n"):
            # the signature lines may be shortened on the page; the bodies must match
            for line in chunk.splitlines():
                if not line.startswith(("def ", "async def ", "@")):
                    assert line in source, f"not in the template's hooks.py/tools.py: {line!r}"


def test_the_language_server_example_builds_a_server_spec():
    from tether_lsp import ServerSpec

    block = next(b for b in BLOCKS if "tether_lsp_servers" in b)
    namespace: dict = {}
    exec(compile(block, "writing-a-plugin.md", "exec"), namespace)
    specs = namespace["tether_lsp_servers"]()
    assert all(isinstance(s, ServerSpec) for s in specs) and specs[0].install

"""The pages the documentation tests read (every doc and README) and what a reader copies from
them (inline code, code blocks); shared by ``test_docs.py`` and ``test_docs_drift.py``."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    [
        *ROOT.glob("docs/*.md"),
        ROOT / "README.md",
        ROOT / "core" / "README.md",
        *ROOT.glob("plugins/*/README.md"),
        *ROOT.glob("plugins/*/docs/*.md"),
        *ROOT.glob("contrib/*/README.md"),
    ]
)
#: the plugin template is not installed in any environment (a copy is): its names resolve
#: against its sources
TEMPLATE_SRC = ROOT / "contrib" / "plugin-template" / "src"
#: a dotted token that is a file name, not a Python name (`tether.toml`)
FILE_SUFFIXES = {"toml", "md", "py", "json", "txt", "log", "cfg", "lock"}

CODE = re.compile(r"```[a-z]*\n(.*?)```|`([^`\n]+)`", re.S)
HOOK = re.compile(r"\btether_[a-z0-9_]+\b(?!=)")  # not a keyword argument (`tether_command=`)
DOTTED = re.compile(r"\btether(?:_[a-z0-9]+)?(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_][\w.]*)?")
#: a tool call as pages write it: `run.call("lsp", {...})`, a session request
#: `{"id": 7, "tool": "lsp", "args": {...}}`, `tether call lsp '{...}'`
CALL = re.compile(
    r"""(?:\.call\(\s*"|"tool":\s*"|tether\ call\ )([a-z_]+)"?\s*,?\s*(?:"args":\s*)?'?(\{[^}]*\})?"""
)
SELECTOR = re.compile(r'"(action|op)":\s*"([a-z_]+)"')
#: `lsp status`, `debug adapters`: a tool with an action selector, then a word
TOOL_ACTION = re.compile(r"^([a-z_]+) ([a-z_]+)\b")


def page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def code_of(page: Path) -> Iterator[str]:
    for m in CODE.finditer(page.read_text()):
        yield m.group(1) or m.group(2)


def resolve(name: str) -> object:
    """The object a dotted name (``tether.testing.require_real``, ``pkg.module:attr``) names."""
    if str(TEMPLATE_SRC) not in sys.path:
        sys.path.append(str(TEMPLATE_SRC))
    module, _, attr = name.partition(":")
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in [*parts[i:], *(attr.split(".") if attr else [])]:
            obj = getattr(obj, part)
        return obj
    raise ImportError(f"no module of {name!r} can be imported")

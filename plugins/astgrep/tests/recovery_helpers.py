"""What the error-recovery tests share: one file searched the way the `ast_grep` tool
searches it, and the checks that a generated variant really needs a re-read."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.testing import require_real
from tether_astgrep.engine import FileResult, ProcessState, Task
from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.pattern import compile_pattern


def usable(registry: GrammarRegistry, language: str) -> None:
    """Skip (fail under TETHER_REQUIRE_REAL) when `language`'s grammar is not installed."""
    grammar = registry.get(language)
    assert grammar is not None
    missing = grammar.missing()
    if missing:
        require_real(missing)
        pytest.skip(missing)


def plain_parse_fails(registry: GrammarRegistry, language: str, code: str) -> bool:
    grammar = registry.get(language)
    assert grammar is not None
    return bool(grammar.parser().parse(code.encode()).root_node.has_error)


def search(
    state: ProcessState, tmp_path: Path, language: str, pattern: str, code: str
) -> FileResult:
    """One file searched the way the `ast_grep` tool searches it (the engine, fresh)."""
    grammar = state.registry.get(language)
    assert grammar is not None
    name = f"f{abs(hash((pattern, code)))}{grammar.extensions[0]}"
    (tmp_path / name).write_text(code)
    compiled = compile_pattern(pattern, grammar)
    [result] = state.run(Task("search", compiled, None, 2_000_000), str(tmp_path), [name])
    return result

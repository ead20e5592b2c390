"""What the model is told (issue 36 §6): the `language` argument lists the grammars installed in
this run, a third-party one included; `max_results` is capped and an answer says how to get the
next page; `lazy_language` is exported."""

from __future__ import annotations

import json
from typing import Any

import pytest

import tether
import tether_astgrep
from tether_astgrep import Grammar, Scaffold, lazy_language
from tether_astgrep.languages import optional_grammars
from tether_astgrep.tools import MAX_RESULTS_CAP


class _Toml:
    """A grammar plugin as the README shows one (here Python's grammar under another id)."""

    @tether.hookimpl
    def tether_astgrep_grammars(self) -> list[Grammar]:
        return [
            Grammar(
                id="pyish",
                extensions=(".pyish",),
                language=lazy_language("tree_sitter_python"),
                scaffolds=(Scaffold("statement", "", ""),),
            ),
            Grammar(
                id="notinstalled",
                extensions=(".nope",),
                language=lazy_language("tree_sitter_no_such_grammar_here"),
                scaffolds=(Scaffold("statement", "", ""),),
            ),
        ]


def _language_doc(run: tether.Run, tool: str) -> str:
    schema = next(s for s in run.schemas() if s["name"] == tool)
    return str(json.dumps(schema["input_schema"]["properties"]["language"]))


@pytest.mark.anyio
async def test_the_language_argument_lists_the_installed_grammars(astgrep_run: Any) -> None:
    async with astgrep_run({"a.pyish": "f(1)\n"}, plugins=[_Toml()]) as run:
        for tool in ("ast_grep", "ast_edit"):
            doc = _language_doc(run, tool)
            assert "pyish" in doc and "python" in doc, doc
            assert "notinstalled" not in doc, doc
            for grammar in optional_grammars():
                assert (grammar.id in doc) == (grammar.missing() is None), grammar.id
        result = await run.call("ast_grep", {"pattern": "f($X)", "language": "pyish"})
        assert not result.is_error, result.text_content
        assert result.meta["total"] == 1


@pytest.mark.anyio
async def test_max_results_is_capped_and_the_answer_says_how_to_page(astgrep_run: Any) -> None:
    files = {"a.py": "".join(f"f({i})\n" for i in range(30))}
    async with astgrep_run(files) as run:
        too_many = await run.call(
            "ast_grep", {"pattern": "f($X)", "max_results": MAX_RESULTS_CAP + 1}
        )
        assert too_many.is_error and "max_results" in too_many.text_content
        first = await run.call("ast_grep", {"pattern": "f($X)", "max_results": 10})
        assert "10 of 30 shown; the next page: offset 10" in first.text_content
        second = await run.call("ast_grep", {"pattern": "f($X)", "max_results": 10, "offset": 10})
        assert "matches 11-20 of 30 shown; the next page: offset 20" in second.text_content
        assert [m["line"] for m in second.meta["matches"]] == list(range(11, 21))
        last = await run.call("ast_grep", {"pattern": "f($X)", "max_results": 10, "offset": 20})
        assert "next page" not in last.text_content


def test_lazy_language_is_exported() -> None:
    assert "lazy_language" in tether_astgrep.__all__
    assert tether_astgrep.lazy_language("tree_sitter_python")() is not None

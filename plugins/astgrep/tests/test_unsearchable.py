"""Code a grammar cannot parse is said, not hidden: a search names how many files and lines
were not searchable, in every language, so "N matches" is never taken for all of them."""

from __future__ import annotations

from typing import Any

import pytest

from tether_astgrep.grammars import all_grammars

GRAMMARS = {g.id: g for g in all_grammars() if g.missing() is None}
GARBAGE = ")))}}}]]] @@@ ((( ;\n"
# Where that garbage is no error: HTML reads it as text, YAML as a scalar, PHP outside `<?php`.
PREFIX = {"php": "<?php\n"}
OWN_GARBAGE = {"html": '<a <b </c ="\n', "yaml": ": : : - [ {\n"}


@pytest.mark.anyio
@pytest.mark.parametrize("language", sorted(GRAMMARS))
async def test_a_region_the_grammar_cannot_parse_is_counted(
    astgrep_run: Any, language: str
) -> None:
    grammar = GRAMMARS[language]
    broken = PREFIX.get(language, "") + "\n" * 3 + OWN_GARBAGE.get(language, GARBAGE) * 2
    files = {f"a{grammar.extensions[0]}": broken, f"b{grammar.extensions[0]}": ""}
    async with astgrep_run(files) as run:
        result = await run.call("ast_grep", {"pattern": "$X", "language": language})
        assert not result.is_error, result.text_content
        assert result.meta["unsearchable"]["files"] == 1, result.text_content
        assert result.meta["unsearchable"]["lines"] >= 1
        assert result.meta["unsearchable"]["paths"][0]["path"] == next(iter(files))
        assert f"warning: 1 file with code the {language} grammar could not parse" in (
            result.text_content
        )
        assert "not searchable" in result.text_content


@pytest.mark.anyio
async def test_the_first_few_files_are_named_and_the_rest_counted(astgrep_run: Any) -> None:
    files = {f"m{i}.py": "x = 1\n" + "def (:\n" * (i + 1) for i in range(7)}
    async with astgrep_run(files) as run:
        result = await run.call("ast_grep", {"pattern": "x = $V"})
        meta = result.meta["unsearchable"]
        assert meta["files"] == 7
        assert [p["path"] for p in meta["paths"]] == ["m6.py", "m5.py", "m4.py", "m3.py", "m2.py"]
        assert "and 2 more" in result.text_content


@pytest.mark.anyio
async def test_an_edit_says_what_it_could_not_search(astgrep_run: Any) -> None:
    async with astgrep_run({"a.py": "f(1)\ndef (:\n"}) as run:
        staged = await run.call("ast_edit", {"pattern": "f($X)", "rewrite": "g($X)"})
        assert not staged.is_error, staged.text_content
        assert staged.meta["unsearchable"]["files"] == 1
        assert "not searchable" in staged.text_content

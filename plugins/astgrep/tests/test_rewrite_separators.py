"""A separator next to an empty `$$$` in a rewrite template goes with it (issue 36 §4), for every
list of every grammar's sample (arguments, parameters, elements, type arguments)."""

from __future__ import annotations

import pytest
from metamorphic import lists
from test_metamorphic import SAMPLES

from tether.testing import require_real
from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.matcher import Matcher
from tether_astgrep.pattern import PatternError, compile_pattern
from tether_astgrep.rewrite import render
from tether_astgrep.testing import captures


def _emptied(lang: str, registry: GrammarRegistry) -> list[tuple[str, str, str, int]]:
    """(code with one list emptied, pattern with `$$$A` for the list, one item's text, where the
    pattern's text starts in the code)."""
    grammar = registry.get(lang)
    assert grammar is not None
    source = SAMPLES[lang].encode()
    parser = grammar.parser()
    out = []
    for node, items, separator in lists(parser.parse(source).root_node, grammar):
        if separator != b", " or node.parent is None:
            continue
        a, b = items[0].start_byte, items[-1].end_byte
        item = source[a : items[0].end_byte].decode()
        code = source[:a] + source[b:]
        if parser.parse(code).root_node.has_error:
            continue
        # the pattern: the node holding the list, with `$$$A` for its items
        holder = node if node.parent.parent is None else node.parent
        s, e = holder.start_byte, holder.end_byte - (b - a)
        text = code[s:e].decode()
        hole = a - s
        pattern = text[:hole] + "$$$A" + text[hole:]
        out.append((code.decode(), pattern, item, s))
    return out


@pytest.mark.parametrize("lang", sorted(SAMPLES))
def test_an_empty_run_takes_its_separator_along(registry: GrammarRegistry, lang: str) -> None:
    grammar = registry.get(lang)
    assert grammar is not None
    if grammar.missing():
        require_real(False, grammar.missing() or "")
    cases = _emptied(lang, registry)
    checked = 0
    for code, pattern, item, at in cases:
        try:
            compiled = compile_pattern(pattern, grammar)
        except PatternError:
            continue
        source = code.encode()
        tree = grammar.parser().parse(source)
        matches = [
            m
            for m in Matcher(compiled, grammar).find(tree, source)
            if m.captures.get("A") == (-1, -1) and m.start_byte == at
        ]
        if not matches:
            continue
        match = matches[0]
        for template in (
            pattern.replace("$$$A", f"{item}, $$$A"),
            pattern.replace("$$$A", f"$$$A, {item}"),
        ):
            new = render(template, match, source, tree, grammar)
            end = at + len(pattern.replace("$$$A", "").encode())
            rewritten = source[:at] + new + source[end:]
            checked += 1
            assert not grammar.parser().parse(rewritten).root_node.has_error, (template, new)
            assert new == pattern.replace("$$$A", item).encode(), (template, new)
    # every sample with comma lists has at least one that can be emptied and rewritten
    assert checked or lang in ("html", "bash", "css", "haskell", "yaml", "json"), (lang, cases)


def test_lua_pcall_to_xpcall(registry: GrammarRegistry) -> None:
    grammar = registry.get("lua")
    assert grammar is not None
    if grammar.missing():
        require_real(False, grammar.missing() or "")
    source = b"pcall(f)\npcall(g, 1, 2)\n"
    tree = grammar.parser().parse(source)
    compiled = compile_pattern("pcall($F, $$$A)", grammar)
    out = [
        render("xpcall($F, debug.traceback, $$$A)", m, source, tree, grammar)
        for m in Matcher(compiled, grammar).find(tree, source)
    ]
    assert out == [b"xpcall(f, debug.traceback)", b"xpcall(g, debug.traceback, 1, 2)"]
    assert captures(registry, "lua", "pcall($F, $$$A)", "pcall(f)") == [{"F": "f", "A": ""}]

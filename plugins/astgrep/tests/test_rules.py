"""ast-grep's rule language: each rule feature on small snippets in several languages, the
rule path in errors, `fix`/`transform` through ast_edit, and `dump`.

Expected matches were checked against `ast-grep scan --inline-rules` 0.51.1 on the same
snippets (see benchmarks/compare_rules.py for the side-by-side on real repositories).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tether_astgrep.grammars import GrammarRegistry
from tether_astgrep.rewrite import apply_matches
from tether_astgrep.rules import RuleError, RuleMatcher, compile_rule

PY = """\
def outer(items, key=None):
    for item in items:
        print(item)
        log(item, level=2)
    if key is None:
        print("none")
    return len(items)


class Box:
    def __init__(self, value):
        self.value = value
        self._size = len(value)
"""

RS = """\
fn new_thing(a: i32, b: i32, c: i32) -> i32 {
    let x = a.unwrap();
    let y = b;
    helper(x);
    bail!("no");
    x + y
}

impl Thing {
    fn run(&self) {
        println!("{}", self.x);
    }
}
"""

TS = """\
const f = async (u: string) => {
  const r = await fetch(u);
  if (r.ok) { return r; }
  if (!r.ok) { throw new Error('x'); } else { log(r); }
  return null;
};
class A {
  size = 3;
  go() { this.run(1, 2, 3); }
}
"""

SOURCES = {"python": PY, "rust": RS, "typescript": TS}


def texts(
    registry: GrammarRegistry, language: str, rule: dict[str, Any], source: str | None = None
) -> list[str]:
    grammar = registry.get(language)
    assert grammar is not None
    code = (source if source is not None else SOURCES[language]).encode()
    tree = grammar.parser().parse(code)
    found = RuleMatcher(compile_rule(rule, grammar), grammar).find(tree, code)
    return [code[m.start_byte : m.end_byte].decode() for m in found]


END = {"stopBy": "end"}

# (language, feature, rule, expected matched texts); each checked against ast-grep 0.51.1
CASES: list[tuple[str, str, dict[str, Any], list[str]]] = [
    ("python", "pattern", {"pattern": "print($A)"}, ["print(item)", 'print("none")']),
    ("python", "kind", {"kind": "return_statement"}, ["return len(items)"]),
    ("python", "regex", {"kind": "identifier", "regex": "^_[a-z]"}, ["_size"]),
    (
        "python",
        "inside end",
        {"pattern": "print($A)", "inside": {"kind": "for_statement", **END}},
        ["print(item)"],
    ),
    (
        "python",
        "inside neighbor",
        {"kind": "call", "inside": {"kind": "return_statement"}},
        ["len(items)"],
    ),
    (
        "python",
        "inside field",
        {"kind": "identifier", "inside": {"kind": "call", "field": "function"}},
        ["print", "log", "print", "len", "len"],
    ),
    (
        "python",
        "has field",
        {"kind": "function_definition", "has": {"field": "name", "regex": "^__"}},
        ["def __init__(self, value):\n        self.value = value\n        self._size = len(value)"],
    ),
    (
        "python",
        "has end + stopBy rule",
        {
            "kind": "function_definition",
            "has": {"kind": "keyword_argument", "stopBy": {"kind": "for_statement"}},
        },
        [],
    ),
    (
        "python",
        "follows",
        {"kind": "expression_statement", "follows": {"kind": "expression_statement"}},
        ["log(item, level=2)", "self._size = len(value)"],
    ),
    (
        "python",
        "precedes end",
        {"kind": "for_statement", "precedes": {"kind": "return_statement", **END}},
        ["for item in items:\n        print(item)\n        log(item, level=2)"],
    ),
    (
        "python",
        "all + not",
        {
            "all": [{"kind": "call"}, {"not": {"pattern": "print($$$A)"}}],
            "inside": {"kind": "block", **END},
        },
        ["log(item, level=2)", "len(items)", "len(value)"],
    ),
    (
        "python",
        "any",
        {"any": [{"pattern": "len($X)"}, {"pattern": "log($$$A)"}]},
        ["log(item, level=2)", "len(items)", "len(value)"],
    ),
    (
        "python",
        "nthChild",
        {"kind": "identifier", "nthChild": 2, "inside": {"kind": "parameters"}},
        ["value"],
    ),
    (
        "python",
        "range (character columns)",
        {
            "kind": "identifier",
            "range": {"start": {"line": 12, "column": 21}, "end": {"line": 12, "column": 24}},
        },
        ["len"],
    ),
    ("rust", "kind", {"kind": "macro_invocation"}, ['bail!("no")', 'println!("{}", self.x)']),
    ("rust", "pattern", {"pattern": "$X.unwrap()"}, ["a.unwrap()"]),
    (
        "rust",
        "inside end",
        {"kind": "macro_invocation", "inside": {"kind": "impl_item", **END}},
        ['println!("{}", self.x)'],
    ),
    (
        "rust",
        "has field",
        {"kind": "function_item", "has": {"field": "name", "regex": "^new"}},
        [RS.split("\n\nimpl")[0]],
    ),
    (
        "rust",
        "precedes",
        {"kind": "let_declaration", "precedes": {"kind": "let_declaration"}},
        ["let x = a.unwrap();"],
    ),
    ("rust", "nthChild An+B", {"kind": "parameter", "nthChild": "2n+1"}, ["a: i32", "c: i32"]),
    (
        "rust",
        "nthChild reverse",
        {"kind": "parameter", "nthChild": {"position": 1, "reverse": True}},
        ["c: i32"],
    ),
    (
        "rust",
        "pattern object",
        {"pattern": {"context": "impl $T { fn $F(&self) { $$$B } }", "selector": "function_item"}},
        ['fn run(&self) {\n        println!("{}", self.x);\n    }'],
    ),
    ("typescript", "kind", {"kind": "await_expression"}, ["await fetch(u)"]),
    (
        "typescript",
        "has end",
        {"kind": "arrow_function", "has": {"kind": "await_expression", **END}},
        [TS.split(";\nclass")[0].removeprefix("const f = ")],
    ),
    (
        "typescript",
        "not has",
        {"kind": "if_statement", "not": {"has": {"kind": "else_clause"}}},
        ["if (r.ok) { return r; }"],
    ),
    (
        "typescript",
        "follows end",
        {"kind": "return_statement", "follows": {"kind": "lexical_declaration", **END}},
        ["return null;"],
    ),
    (
        "typescript",
        "pattern object",
        {"pattern": {"context": "class A { $F = $V }", "selector": "public_field_definition"}},
        ["size = 3"],
    ),
    (
        "typescript",
        "has field regex",
        {"kind": "call_expression", "has": {"field": "function", "regex": "^this\\."}},
        ["this.run(1, 2, 3)"],
    ),
]


@pytest.mark.parametrize(
    ("language", "rule", "expected"),
    [pytest.param(lang, rule, exp, id=f"{lang}-{feat}") for lang, feat, rule, exp in CASES],
)
def test_rule_feature(registry, language, rule, expected) -> None:
    assert texts(registry, language, rule) == expected


# (language, source, relation, its rule, matches with stopBy neighbor, with stopBy end)
STOP_CASES: list[tuple[str, str, str, dict[str, Any], list[str], list[str]]] = [
    (
        "python",
        "print(len(a))\n",
        "inside",
        {"kind": "call", "inside": {"kind": "expression_statement"}},
        ["print(len(a))"],
        ["print(len(a))", "len(a)"],
    ),
    (
        "python",
        "x\nprint(a)\n",
        "has",
        {"kind": "expression_statement", "has": {"kind": "identifier"}},
        ["x"],
        ["x", "print(a)"],
    ),
    (
        "typescript",
        "a();\nlet b = 1;\nc();\n",
        "follows",
        {"kind": "expression_statement", "follows": {"kind": "expression_statement"}},
        [],
        ["c();"],
    ),
    (
        "rust",
        "fn f() {\n    a();\n    let b = 1;\n    c();\n}\n",
        "precedes",
        {"kind": "expression_statement", "precedes": {"kind": "expression_statement"}},
        [],
        ["a();"],
    ),
]


@pytest.mark.parametrize(
    ("language", "source", "relation", "rule", "neighbor", "end"),
    STOP_CASES,
    ids=[f"{c[0]}-{c[2]}" for c in STOP_CASES],
)
def test_stop_by_neighbor_looks_one_step_and_end_all_the_way(
    registry, language, source, relation, rule, neighbor, end
) -> None:
    assert texts(registry, language, rule, source) == neighbor
    far = {**rule, relation: {**rule[relation], "stopBy": "end"}}
    assert texts(registry, language, far, source) == end


# (language, source, rule with a field, matches with it, matches without it)
FIELD_CASES: list[tuple[str, str, dict[str, Any], list[str], list[str]]] = [
    (
        "python",
        "a = b\n",
        {"kind": "identifier", "inside": {"kind": "assignment", "field": "right"}},
        ["b"],
        ["a", "b"],
    ),
    (
        "rust",
        "fn f() { let a = b; }\n",
        {"kind": "identifier", "inside": {"kind": "let_declaration", "field": "value"}},
        ["b"],
        ["a", "b"],
    ),
    (
        "typescript",
        "x = y;\nx.z = w;\n",
        {"kind": "assignment_expression", "has": {"kind": "identifier", "field": "left"}},
        ["x = y"],
        ["x = y", "x.z = w"],
    ),
]


@pytest.mark.parametrize(
    ("language", "source", "rule", "with_field", "without"),
    FIELD_CASES,
    ids=[c[0] for c in FIELD_CASES],
)
def test_field_limits_a_relation_to_that_child(
    registry, language, source, rule, with_field, without
) -> None:
    assert texts(registry, language, rule, source) == with_field
    relation = "inside" if "inside" in rule else "has"
    plain = {**rule, relation: {k: v for k, v in rule[relation].items() if k != "field"}}
    assert texts(registry, language, plain, source) == without


@pytest.mark.parametrize("language", ["python", "rust", "typescript"])
def test_matches_uses_the_named_utility_rule(registry, language) -> None:
    kind = {"python": "call", "rust": "call_expression", "typescript": "call_expression"}[language]
    config = {
        "utils": {"is_call": {"kind": kind}},
        "rule": {
            "kind": "identifier",
            "inside": {"matches": "is_call", **END},
            "regex": "^len$|^helper$|^fetch$",
        },
    }
    expected = {"python": ["len", "len"], "rust": ["helper"], "typescript": ["fetch"]}[language]
    assert texts(registry, language, config) == expected


@pytest.mark.parametrize(
    ("language", "pattern", "regex", "expected"),
    [
        ("python", "$F($$$A)", "^(len|log)$", ["log(item, level=2)", "len(items)", "len(value)"]),
        ("rust", "$M!($$$A)", "^bail$", ['bail!("no")']),
        ("typescript", "$F($$$A)", "^fetch$", ["fetch(u)"]),
    ],
)
def test_constraints_filter_captures(registry, language, pattern, regex, expected) -> None:
    name = "M" if "$M" in pattern else "F"
    config = {"rule": {"pattern": pattern}, "constraints": {name: {"regex": regex}}}
    assert texts(registry, language, config) == expected


def test_a_utility_may_recurse_through_a_relation(registry) -> None:
    config = {
        "utils": {
            "nested_call": {
                "kind": "call",
                "has": {"stopBy": "end", "any": [{"pattern": "g($A)"}, {"matches": "nested_call"}]},
            }
        },
        "rule": {"matches": "nested_call"},
    }
    assert texts(registry, "python", config, "f(h(g(1)))\nf(1)\n") == ["f(h(g(1)))", "h(g(1))"]


def test_a_metavariable_bound_twice_in_a_rule_must_capture_the_same_code(registry) -> None:
    source = "a = b\nc = c\n"
    rule = {"all": [{"pattern": "$X = $Y"}, {"has": {"field": "right", "pattern": "$X"}}]}
    assert texts(registry, "python", rule, source) == ["c = c"]


@pytest.mark.parametrize(
    ("language", "rule", "message"),
    [
        (
            "rust",
            {"all": [{"kind": "function_item"}, {"kind": "fn_item"}]},
            'rule.all[1].kind: unknown kind "fn_item" for rust; did you mean function_item',
        ),
        (
            "python",
            {"kind": "call", "inside": {"pattern": "def ("}},
            "rule.inside.pattern: not parseable as python",
        ),
        (
            "typescript",
            {"kind": "call_expression", "has": {"kind": "identifier", "field": "fn"}},
            "rule.has.field: unknown field 'fn' for typescript",
        ),
        (
            "python",
            {"kind": "call", "insde": {"kind": "block"}},
            "rule.insde: unknown key; did you mean inside?",
        ),
        ("python", {"regex": "^x"}, "rule: needs a positive part"),
        (
            "python",
            {"kind": "call", "range": {"start": {"line": 1}}},
            "rule.range: expected {start",
        ),
        ("python", {"kind": "call", "regex": "("}, "rule.regex: invalid regular expression"),
        (
            "python",
            {"kind": "call", "matches": "nope"},
            "rule.matches: unknown utility rule 'nope'",
        ),
        (
            "python",
            {"kind": "call", "follows": {"kind": "call", "field": "x"}},
            "rule.follows.field: only inside and has",
        ),
        ("python", {"kind": "call", "nthChild": "x+1"}, "rule.nthChild: expected a number or An+B"),
        (
            "python",
            {"rule": {"pattern": "f($A)"}, "constraints": {"B": {"kind": "call"}}},
            "rule.constraints.B: $B is not a metavariable",
        ),
        ("python", {"rule": {"kind": "call"}, "fix": "x"}, "rule.fix: only ast_edit rewrites"),
        (
            "python",
            {
                "rule": {"matches": "a"},
                "utils": {
                    "a": {"any": [{"kind": "call"}, {"matches": "b"}]},
                    "b": {"not": {"matches": "a"}},
                },
            },
            "rule.utils.a: matches itself on the same node (a -> b -> a)",
        ),
    ],
)
def test_rule_errors_name_the_rule_path(registry, language, rule, message) -> None:
    grammar = registry.get(language)
    with pytest.raises(RuleError) as info:
        compile_rule(rule, grammar)
    assert message in str(info.value)


def test_prefilter_keeps_only_literals_every_match_needs(registry) -> None:
    grammar = registry.get("python")
    both = compile_rule({"pattern": "print($A)", "inside": {"pattern": "helper($$$B)"}}, grammar)
    assert {b"print", b"helper"} <= set(both.literals)
    either = compile_rule({"any": [{"pattern": "print($A)"}, {"pattern": "helper($A)"}]}, grammar)
    assert b"print" not in either.literals and b"helper" not in either.literals
    negated = compile_rule({"kind": "call", "not": {"pattern": "print($A)"}}, grammar)
    assert negated.literals == ()


def test_a_file_without_a_needed_literal_is_never_parsed(registry, tmp_path: Path) -> None:
    from tether_astgrep.engine import ProcessState, Task

    (tmp_path / "a.py").write_text(PY)
    (tmp_path / "c.py").write_text("x = 1\n")
    grammar = registry.get("python")
    for rule, found, parsed in [
        ({"pattern": "print($A)", "inside": {"kind": "for_statement", "stopBy": "end"}}, 1, 1),
        ({"kind": "call", "inside": {"kind": "for_statement", "stopBy": "end"}}, 2, 2),
    ]:
        state = ProcessState(registry, 1 << 30)  # caches every file it parses
        task = Task("search", compile_rule(rule, grammar), None, 1_000_000)
        results = state.run(task, str(tmp_path), ["a.py", "c.py"])
        assert [r.count for r in results] == [found, 0]
        assert len(state.cache) == parsed  # a kind-only rule parses every file


# -- through the tools -------------------------------------------------------------------


@pytest.mark.anyio
async def test_ast_grep_rule_reports_per_file(
    astgrep_run,
) -> None:
    files = {"a.py": PY, "b.py": "print(1)\n", "c.py": "x = 1\n"}
    async with astgrep_run(files) as run:
        rule = {"pattern": "print($A)", "inside": {"kind": "for_statement", "stopBy": "end"}}
        result = await run.call("ast_grep", {"rule": rule})
        assert not result.is_error, result.text_content
        text = result.text_content
        assert text.startswith("1 match in 1 file (3 python files searched)")
        assert "interpreted as: rule (pattern, inside)" in text
        assert "a.py:3:9: print(item)" in text and "$A = item" in text


RULE_AS_OBJECT = {"pattern": "print($A)", "inside": {"kind": "for_statement", "stopBy": "end"}}
RULE_AS_YAML = "pattern: print($A)\ninside:\n  kind: for_statement\n  stopBy: end\n"


@pytest.mark.anyio
@pytest.mark.parametrize("tool", ["ast_grep", "ast_edit"])
@pytest.mark.parametrize(
    "rule",
    [RULE_AS_OBJECT, RULE_AS_YAML, __import__("json").dumps(RULE_AS_OBJECT)],
    ids=["object", "yaml", "json"],
)
async def test_a_rule_is_an_object_or_its_yaml_or_json_text(astgrep_run, tool, rule) -> None:
    """A client whose schema dialect has no free-form object (Gemini's) sends the rule as text."""
    async with astgrep_run({"a.py": PY}) as run:
        args = {"rule": rule} if tool == "ast_grep" else {"rule": rule, "rewrite": "show($A)"}
        result = await run.call(tool, args)
        assert not result.is_error, result.text_content
        expected = "a.py:3:9: print(item)" if tool == "ast_grep" else "+        show(item)"
        assert expected in result.text_content and "1 " in result.text_content


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("pattern: [print(", "rule: not valid YAML or JSON at line 1"),
        (
            "- kind: call",
            "rule: expected a rule object (a mapping, as YAML or JSON text), got list",
        ),
        ("", "rule: expected a rule object (a mapping, as YAML or JSON text), got nothing"),
    ],
)
async def test_a_rule_text_that_is_no_mapping_names_the_field(astgrep_run, text, message) -> None:
    async with astgrep_run({"a.py": PY}) as run:
        result = await run.call("ast_grep", {"rule": text})
        assert result.is_error and message in result.text_content, result.text_content


@pytest.mark.anyio
async def test_pattern_and_rule_are_exclusive(astgrep_run) -> None:
    async with astgrep_run({"a.py": PY}) as run:
        both = await run.call("ast_grep", {"pattern": "f($A)", "rule": {"kind": "call"}})
        assert both.is_error
        assert "rule: takes exactly one of pattern" in both.text_content
        assert "both were given" in both.text_content
        neither = await run.call("ast_grep", {"language": "python"})
        assert neither.is_error and "pattern: takes exactly one" in neither.text_content
        bad = await run.call("ast_grep", {"rule": {"all": [{"kind": "fn_def"}]}})
        assert bad.is_error
        assert bad.text_content.startswith('rule.all[0].kind: unknown kind "fn_def" for python')


@pytest.mark.anyio
async def test_ast_edit_with_a_rule_fix_and_transform(astgrep_run, tether_workdir: Path) -> None:
    source = "def f():\n    getUserName(1)\n    other(2)\n"
    async with astgrep_run({"a.py": source}) as run:
        config = {
            "rule": {
                "pattern": "$F($A)",
                "inside": {"kind": "function_definition", "stopBy": "end"},
            },
            "constraints": {"F": {"regex": "^get"}},
            "transform": {
                "NAME": {"convert": {"source": "$F", "toCase": "snakeCase"}},
                "SHORT": {"substring": {"source": "$NAME", "startChar": 4}},
                "DOUBLE": {"replace": {"source": "$A", "replace": "(\\d)", "by": "$1$1"}},
            },
            "fix": "$SHORT($DOUBLE)",
        }
        staged = await run.call("ast_edit", {"rule": config})
        assert not staged.is_error, staged.text_content
        assert staged.meta["replacements"] == 1
        done = await run.call("resolve", {"edit_id": staged.meta["edit_id"], "action": "accept"})
        assert not done.is_error, done.text_content
        assert (
            tether_workdir / "a.py"
        ).read_text() == "def f():\n    user_name(11)\n    other(2)\n"


@pytest.mark.anyio
async def test_ast_edit_rule_with_rewrite_argument(astgrep_run, tether_workdir: Path) -> None:
    async with astgrep_run({"a.rs": RS}) as run:
        rule = {"pattern": "$X.unwrap()", "not": {"inside": {"kind": "impl_item", "stopBy": "end"}}}
        staged = await run.call("ast_edit", {"rule": rule, "rewrite": "$X?"})
        assert not staged.is_error, staged.text_content
        assert "let x = a?;" in staged.text_content
        missing = await run.call("ast_edit", {"rule": rule})
        assert (
            missing.is_error and "rewrite: required (or a fix in the rule)" in missing.text_content
        )
        both = await run.call("ast_edit", {"rule": {"rule": rule, "fix": "a"}, "rewrite": "b"})
        assert both.is_error and "rewrite: give the rewrite or the rule's fix" in both.text_content


@pytest.mark.anyio
async def test_dump_shows_the_reading_and_the_syntax_tree(astgrep_run) -> None:
    async with astgrep_run({"a.rs": RS}) as run:
        result = await run.call(
            "ast_grep", {"pattern": "$X.unwrap()", "dump": True, "language": "rust"}
        )
        assert not result.is_error, result.text_content
        text = result.text_content
        assert text.startswith("reading 1 (used by a search): ")
        assert "call_expression" in text and "field_identifier 'unwrap'" in text
        assert "$X" in text
        assert "the snippet parsed as a whole rust file" in text
        assert "function: field_expression" in text  # fields are named
        assert result.meta["readings"][0]["context"]
        refused = await run.call("ast_grep", {"pattern": "fn (", "dump": True, "language": "rust"})
        assert not refused.is_error
        assert refused.text_content.startswith("as a pattern: refused: ")
        assert "(has ERROR/MISSING nodes)" in refused.text_content


@pytest.mark.anyio
async def test_rule_searches_in_the_workers_and_their_warm_cache(astgrep_run) -> None:
    files = {f"m{i}.py": f"for x in y:\n    f({i})\nf({i})\n" for i in range(30)}
    files["other.py"] = "g(1)\n"  # no match
    config = {"astgrep": {"workers": 2, "parallel_min_files": 10}}
    rule = {"pattern": "f($A)", "inside": {"kind": "for_statement", "stopBy": "end"}}
    async with astgrep_run(files, config=config) as run:
        first = await run.call("ast_grep", {"rule": rule, "max_results": 5})
        assert not first.is_error, first.text_content
        assert first.meta["total"] == 30 and first.meta["shown"] == 5
        assert first.meta["files_total"] == 31
        service = run.resources["astgrep_service"]
        assert len(service.worker_pids) == 2
        # the second search of the run caches; the third finds every tree parsed
        for _ in range(2):
            again = await run.call("ast_grep", {"rule": {"kind": "call"}, "max_results": 100})
            assert again.meta["total"] == 61
        stats = await service.cache_stats()
        assert sum(s["hits"] for s in stats) >= 31


def test_range_columns_count_characters_as_ast_grep_does(registry) -> None:
    # ast-grep 0.51.1 finds `y` at column 9 (its byte column is 10: `é` is two bytes)
    where = {"start": {"line": 0, "column": 9}, "end": {"line": 0, "column": 10}}
    rule = {"kind": "identifier", "range": where}
    assert texts(registry, "python", rule, "print(é, y)\n") == ["y"]


# -- fix object, string-form transforms, rewriters (ast_edit) --------------------------------

# (language, feature, source, rule config, the file after the edit); each expected file is
# what `ast-grep scan --inline-rules … --update-all` 0.51.1 writes (benchmarks/check_rule_tests.py)
EDIT_CASES: list[tuple[str, str, str, dict[str, Any], str]] = [
    (
        "python",
        "fix expandStart",
        "xs = [a, b, c]\n",
        {
            "rule": {"kind": "identifier", "regex": "^c$", "inside": {"kind": "list"}},
            "fix": {"template": "", "expandStart": {"regex": ","}},
        },
        "xs = [a, b]\n",
    ),
    (
        "python",
        "fix expandEnd stopBy end",
        "f(a, b, c)\n",
        {
            "rule": {"kind": "identifier", "regex": "^b$", "inside": {"kind": "argument_list"}},
            "fix": {"template": "", "expandEnd": {"regex": ",", "stopBy": "end"}},
        },
        "f(a,  c)\n",
    ),
    (
        "rust",
        "fix expandEnd",
        "struct S {\n    a: i32,\n    b: i32,\n    c: i32,\n}\n",
        {
            "rule": {"kind": "field_declaration", "has": {"field": "name", "regex": "^b$"}},
            "fix": {"template": "d: u8,", "expandEnd": {"regex": ","}},
        },
        "struct S {\n    a: i32,\n    d: u8,\n    c: i32,\n}\n",
    ),
    (
        "typescript",
        "fix expandEnd",
        "var a = { b: 123, c: 4 }\n",
        {
            "rule": {"kind": "pair", "has": {"field": "key", "regex": "^b$"}},
            "fix": {"template": "", "expandEnd": {"regex": ","}},
        },
        "var a = {  c: 4 }\n",
    ),
    (
        "python",
        "transform string form",
        "x = _foo\ny = _bar_baz\n",
        {
            "rule": {"pattern": "$X = $V"},
            "transform": {
                "S": "substring($U, startChar=1, endChar=-1)",
                "U": "convert($N, toCase=upperCase)",
                "N": "replace($V, replace='^_', by='')",
            },
            "fix": "$X = $S",
        },
        "x = O\ny = AR_BA\n",
    ),
    (
        "rust",
        "transform string form",
        "fn f() {\n    let user_name = get_it();\n}\n",
        {
            "rule": {"pattern": "let $N = $V;"},
            "transform": {
                "C": "convert($N, toCase=camelCase, separatedBy=[underscore])",
                "R": "replace($V, replace='get_(\\w+)', by='fetch_$1')",
            },
            "fix": "let $C = $R;",
        },
        "fn f() {\n    let userName = fetch_it();\n}\n",
    ),
    (
        "typescript",
        "transform string form",
        "const x = 'a,b';\n",
        {
            "rule": {"pattern": "const $X = $V"},
            "transform": {"Q": "replace($V, replace=',', by=\", \")"},
            "fix": "const $X = $Q",
        },
        "const x = 'a, b'\n",
    ),
    (
        "typescript",
        "rewrite",
        "log(t(1, 2, 3))\n",
        {
            "rule": {"pattern": "log($A)"},
            "rewriters": [{"id": "num", "rule": {"kind": "number"}, "fix": "810"}],
            "transform": {"B": {"rewrite": {"source": "$A", "rewriters": ["num"]}}},
            "fix": "log($B)",
        },
        "log(t(810, 810, 810))\n",
    ),
    (
        "typescript",
        "rewrite joinBy (string form)",
        "log(t(1, 2, 3))\n",
        {
            "rule": {"pattern": "log($A)"},
            "rewriters": [{"id": "num", "rule": {"kind": "number"}, "fix": "810"}],
            "transform": {"B": "rewrite($A, rewriters=[num], joinBy=' + ')"},
            "fix": "log($B)",
        },
        "log(810 + 810 + 810)\n",
    ),
    (
        "typescript",
        "rewrite first rewriter wins",
        "log(t(1, 2, 3))\n",
        {
            "rule": {"pattern": "log($A)"},
            "rewriters": [
                {"id": "two", "rule": {"regex": "^2$"}, "fix": "1919"},
                {"id": "num", "rule": {"kind": "number"}, "fix": "810"},
            ],
            "transform": {"B": {"rewrite": {"source": "$A", "rewriters": ["two", "num"]}}},
            "fix": "log($B)",
        },
        "log(t(810, 1919, 810))\n",
    ),
    (
        "typescript",
        "rewrite recursive",
        "x = [1, [2, [3, [4]]]]\n",
        {
            "rule": {"pattern": "x = $A"},
            "rewriters": [
                {
                    "id": "flat",
                    "rule": {"pattern": "[$$$C]"},
                    "transform": {"D": {"rewrite": {"source": "$$$C", "rewriters": ["flat"]}}},
                    "fix": "$D",
                }
            ],
            "transform": {"B": {"rewrite": {"source": "$A", "rewriters": ["flat"]}}},
            "fix": "x = $B",
        },
        "x = 1, 2, 3, 4\n",
    ),
    (
        "typescript",
        "rewrite inherits the rule's captures",
        "f([1, 2]); f([1, 1]);\n",
        {
            "rule": {"pattern": "f([$A, $C])"},
            "rewriters": [{"id": "same", "rule": {"pattern": "$C"}, "fix": "123"}],
            "transform": {"B": {"rewrite": {"source": "$A", "rewriters": ["same"]}}},
            "fix": "g($B)",
        },
        "g(1); g(123);\n",
    ),
    (
        "python",
        "rewrite joinBy over $$$",
        "def f():\n    print(a, b)\n",
        {
            "rule": {"pattern": "print($$$A)"},
            "rewriters": [
                {"id": "each", "rule": {"pattern": "$X", "kind": "identifier"}, "fix": "log($X)"}
            ],
            "transform": {
                "B": {"rewrite": {"source": "$$$A", "rewriters": ["each"], "joinBy": "\n"}}
            },
            "fix": "$B",
        },
        "def f():\n    log(a)\n    log(b)\n",
    ),
    (
        "rust",
        "rewrite with utils",
        "fn f() {\n    run(g(1), h(2), g(3));\n}\n",
        {
            "rule": {"pattern": "run($$$A)"},
            "rewriters": [
                {
                    "id": "gh",
                    "utils": {"is_g": {"pattern": "g($X)"}},
                    "rule": {"matches": "is_g"},
                    "fix": "k($X)",
                }
            ],
            "transform": {"B": "rewrite($$$A, rewriters=[gh])"},
            "fix": "run($B)",
        },
        "fn f() {\n    run(k(1), h(2), k(3));\n}\n",
    ),
    (
        "typescript",
        "transform convert snakeCase keeps # and $",
        "class A {\n  m() {\n    this.#fooBar();\n    this.XMLHttpGet();\n    this.a_b$c();\n  }\n}\n",
        {
            "rule": {"pattern": "this.$M($$$A)"},
            "transform": {"N": "convert($M, toCase=snakeCase)"},
            "fix": "this.$N($$$A)",
        },
        "class A {\n  m() {\n    this.#foo_bar();\n    this.xml_http_get();\n    this.a_b$c();\n  }\n}\n",
    ),
    (
        "typescript",
        "transform convert pascalCase keeps # and $",
        "class A {\n  m() {\n    this.#fooBar();\n    this.XMLHttpGet();\n    this.a_b$c();\n  }\n}\n",
        {
            "rule": {"pattern": "this.$M($$$A)"},
            "transform": {"N": "convert($M, toCase=pascalCase)"},
            "fix": "this.$N($$$A)",
        },
        "class A {\n  m() {\n    this.#fooBar();\n    this.XMLHttpGet();\n    this.AB$c();\n  }\n}\n",
    ),
    (
        "python",
        "fix expandStart overlapping an earlier edit: skipped",
        "f(a, b)\n",
        {
            "rule": {"kind": "identifier", "inside": {"kind": "argument_list"}},
            "fix": {"template": "X", "expandStart": {"regex": "^a$", "stopBy": "end"}},
        },
        "f(X, b)\n",
    ),
    (
        "python",
        "transform of a multi-line capture lands re-indented",
        "def f():\n    if x:\n        y = [\n            1,\n            2,\n        ]\n",
        {
            "rule": {"pattern": "$Y = $V"},
            "transform": {"B": {"substring": {"source": "$V"}}},
            "fix": "z = foo(\n    $B)",
        },
        "def f():\n    if x:\n        z = foo(\n            [\n                1,\n"
        "                2,\n            ])\n",
    ),
    (
        "go",
        "fix expandEnd",
        "package main\n\nfunc f() {\n\tg(a, b, c)\n}\n",
        {
            "rule": {"kind": "identifier", "regex": "^b$", "inside": {"kind": "argument_list"}},
            "fix": {"template": "", "expandEnd": {"regex": ","}},
        },
        "package main\n\nfunc f() {\n\tg(a,  c)\n}\n",
    ),
    (
        "go",
        "rewrite (string form)",
        "package main\n\nfunc f() {\n\th(1, x, 2)\n}\n",
        {
            "rule": {"pattern": "h($$$A)"},
            "rewriters": [{"id": "zero", "rule": {"kind": "int_literal"}, "fix": "0"}],
            "transform": {"B": "rewrite($$$A, rewriters=[zero])"},
            "fix": "h($B)",
        },
        "package main\n\nfunc f() {\n\th(0, x, 0)\n}\n",
    ),
    (
        "javascript",
        "rewrite joinBy",
        "const xs = [a, b];\n",
        {
            "rule": {"pattern": "[$$$E]"},
            "rewriters": [
                {"id": "wrap", "rule": {"kind": "identifier", "pattern": "$X"}, "fix": "f($X)"}
            ],
            "transform": {
                "R": {"rewrite": {"source": "$$$E", "rewriters": ["wrap"], "joinBy": " | "}}
            },
            "fix": "[$R]",
        },
        "const xs = [f(a) | f(b)];\n",
    ),
    (
        "javascript",
        "fix expandStart",
        "call(a, b);\n",
        {
            "rule": {"kind": "identifier", "regex": "^b$", "inside": {"kind": "arguments"}},
            "fix": {"template": "", "expandStart": {"regex": ","}},
        },
        "call(a);\n",
    ),
]


def edited(registry: GrammarRegistry, language: str, config: dict[str, Any], source: str) -> str:
    grammar = registry.get(language)
    assert grammar is not None
    compiled = compile_rule(config, grammar, edit=True)
    assert compiled.fix is not None
    code = source.encode()
    tree = grammar.parser().parse(code)
    found = RuleMatcher(compiled, grammar).find(tree, code)
    return apply_matches(compiled.fix, found, code, tree, grammar).new.decode()


@pytest.mark.parametrize(
    ("language", "source", "config", "expected"),
    [
        pytest.param(lang, src, cfg, exp, id=f"{lang}-{feat}")
        for lang, feat, src, cfg, exp in EDIT_CASES
    ],
)
def test_rule_edit_feature(registry, language, source, config, expected) -> None:
    assert edited(registry, language, config, source) == expected


def test_a_rewrite_landing_indented_keeps_its_lines_relative(registry) -> None:
    """A multi-line transform is de-indented from where it was and indented where it lands."""
    source = "def f():\n    if x:\n        y = [\n            1,\n            2,\n        ]\n"
    config = {
        "rule": {"pattern": "$Y = $V"},
        "rewriters": [{"id": "n", "rule": {"kind": "integer"}, "fix": "N"}],
        "transform": {"B": {"rewrite": {"source": "$V", "rewriters": ["n"]}}},
        "fix": "z = foo(\n    $B)",
    }
    assert edited(registry, "python", config, source) == (
        "def f():\n    if x:\n        z = foo(\n            [\n                N,\n"
        "                N,\n            ])\n"
    )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"rule": {"pattern": "$X = $V"}, "transform": {"N": "replace $V"}, "fix": "$N"},
            "rule.transform.N: expected `op($SOURCE, key=value, …)`",
        ),
        (
            {"rule": {"pattern": "$X = $V"}, "transform": {"N": "upper($V, a=1)"}, "fix": "$N"},
            "rule.transform.N: unknown transformation 'upper'; known: substring, replace, "
            "convert, rewrite",
        ),
        (
            {"rule": {"pattern": "$X = $V"}, "transform": {"N": "substring($V, startChar=x)"}},
            "rule.transform.N.startChar: expected an integer, got 'x'",
        ),
        (
            {"rule": {"pattern": "$X = $V"}, "transform": {"N": "replace($V, by='')"}},
            "rule.transform.N.replace: expected a regular expression string",
        ),
        (
            {"rule": {"pattern": "$X = $V"}, "transform": {"N": "replace($Q, replace=a, by=b)"}},
            "rule.transform.N.source: expected a captured metavariable",
        ),
        (
            {
                "rule": {"pattern": "$X = $V"},
                "transform": {"A": "substring($B)", "B": {"substring": {"source": "$A"}}},
            },
            "rule.transform.A: depends on itself ($A -> $B -> $A)",
        ),
        (
            {"rule": {"pattern": "$X = $V"}, "transform": {"X": "substring($V)"}},
            "rule.transform.X: $X is already a metavariable of the rule",
        ),
        (
            {"rule": {"pattern": "$X = $V"}, "transform": {"B": "rewrite($V, rewriters=[nope])"}},
            "rule.transform.B.rewriters: unknown rewriter 'nope' (rewriters: none are defined)",
        ),
        (
            {
                "rule": {"pattern": "$X = $V"},
                "rewriters": [{"id": "r", "rule": {"kind": "integer"}}],
            },
            "rule.rewriters[r].fix: required",
        ),
        (
            {
                "rule": {"pattern": "$X = $V"},
                "rewriters": [{"id": "r", "rule": {"kind": "integer"}, "fix": "$Z"}],
            },
            "rule.rewriters[r].fix: uses $Z, which neither this rewriter nor the rule binds",
        ),
        (
            {
                "rule": {"pattern": "$X = $V"},
                "rewriters": [{"id": "r", "rule": {"kind": "intger"}, "fix": "1"}],
            },
            'rule.rewriters[r].rule.kind: unknown kind "intger"',
        ),
        (
            {
                "rule": {"pattern": "$X = $V"},
                "transform": {"U": "convert($V, toCase=upperCase)"},
                "rewriters": [{"id": "r", "rule": {"kind": "integer"}, "fix": "$U"}],
            },
            "rule.rewriters[r].fix: uses $U, a transform of the rule; a rewriter sees the rule's "
            "captures",
        ),
        (
            {"rule": {"kind": "call"}, "fix": [{"template": "a", "title": "t"}]},
            "rule.fix: a list of fixes offers alternatives",
        ),
        (
            {"rule": {"kind": "call"}, "fix": {"expandEnd": {"regex": ","}}},
            "rule.fix.template: required",
        ),
        (
            {"rule": {"kind": "call"}, "fix": {"template": "", "expandEnd": {"regex": "("}}},
            "rule.fix.expandEnd.regex: invalid regular expression",
        ),
        (
            {"rule": {"kind": "call"}, "fix": {"template": "", "expand_end": {}}},
            "rule.fix.expand_end: unknown key; did you mean expandEnd?",
        ),
        (
            {"rule": {"kind": "call"}, "message": "no calls", "fix": "x"},
            "rule.message: not supported: text of `scan`'s diagnostic",
        ),
        (
            {"rule": {"kind": "call"}, "files": ["src/**"], "fix": "x"},
            "rule.files: not supported: file selection of `scan`; give the tool's `path`",
        ),
    ],
)
def test_fix_transform_and_rewriter_errors_name_the_rule_path(registry, config, message) -> None:
    with pytest.raises(RuleError) as info:
        compile_rule(config, registry.get("python"), edit=True)
    assert message in str(info.value)


def test_rewriters_are_for_ast_edit_only(registry) -> None:
    config = {"rule": {"kind": "call"}, "rewriters": [{"id": "r", "rule": {"kind": "call"}}]}
    with pytest.raises(RuleError) as info:
        compile_rule(config, registry.get("python"))
    assert "rule.rewriters: only ast_edit uses them" in str(info.value)


@pytest.mark.anyio
async def test_ast_edit_applies_rewriters_and_a_fix_object(
    astgrep_run, tether_workdir: Path
) -> None:
    source = "def f():\n    print(a, b)\n    g(x, y, z)\n"
    async with astgrep_run({"a.py": source}) as run:
        config = {
            "rule": {"pattern": "print($$$A)"},
            "rewriters": [
                {"id": "each", "rule": {"kind": "identifier", "pattern": "$X"}, "fix": "log($X)"}
            ],
            # a double-quoted value takes escapes (a single-quoted one would keep `\\n` as is)
            "transform": {"B": 'rewrite($$$A, rewriters=[each], joinBy="\\n")'},
            "fix": "$B",
        }
        staged = await run.call("ast_edit", {"rule": config})
        assert not staged.is_error, staged.text_content
        done = await run.call("resolve", {"edit_id": staged.meta["edit_id"], "action": "accept"})
        assert not done.is_error, done.text_content
        drop_y = {
            "rule": {"kind": "identifier", "regex": "^y$", "inside": {"kind": "argument_list"}},
            "fix": {"template": "", "expandEnd": {"regex": ",", "stopBy": "end"}},
        }
        staged = await run.call("ast_edit", {"rule": drop_y})
        assert not staged.is_error, staged.text_content
        done = await run.call("resolve", {"edit_id": staged.meta["edit_id"], "action": "accept"})
        assert not done.is_error, done.text_content
    assert (tether_workdir / "a.py").read_text() == (
        "def f():\n    log(a)\n    log(b)\n    g(x,  z)\n"
    )


@pytest.mark.parametrize(
    ("spelling", "expected"),
    [
        # the spellings of ast-grep's own parser tests (crates/config/src/transform/parse.rs)
        ("substring($A, startChar=1, endChar=2)", ("substring", "A", {"start": 1, "end": 2})),
        ("substring(   $A, startChar=1)", ("substring", "A", {"start": 1, "end": None})),
        ("substring(  $A,)", ("substring", "A", {"start": None, "end": None})),
        ("replace($A, replace= ^.+, by=', ')", ("replace", "A", {"by": ", "})),
        ("replace($A, replace= ^.+, by =  '[')", ("replace", "A", {"by": "["})),
        (
            "convert($A, toCase=camelCase, separatedBy=[underscore, dash])",
            ("convert", "A", {"to_case": "camelCase", "separators": ("underscore", "dash")}),
        ),
        ("convert($A, toCase=camelCase, separatedBy=[])", ("convert", "A", {"separators": ()})),
        (
            "rewrite($$$B, rewriters=[r1, 'r2'], joinBy = ',,,,')",
            ("rewrite", "B", {"rewriters": ("r1", "r2"), "join_by": ",,,,"}),
        ),
        ("replace($A, replace='it''s', by=\"a\\tb\")", ("replace", "A", {"by": "a\tb"})),
    ],
)
def test_transform_string_form_reads_ast_grep_spellings(registry, spelling, expected) -> None:
    config = {
        "rule": {"pattern": "$A = f($$$B)"},
        "rewriters": [
            {"id": "r1", "rule": {"kind": "integer"}, "fix": "1"},
            {"id": "r2", "rule": {"kind": "integer"}, "fix": "2"},
        ],
        "transform": {"N": spelling},
        "fix": "$N",
    }
    t = compile_rule(config, registry.get("python"), edit=True).transforms["N"]
    op, source, fields = expected
    assert (t.op, t.source) == (op, source)
    for name, value in fields.items():
        assert getattr(t, name) == value, name

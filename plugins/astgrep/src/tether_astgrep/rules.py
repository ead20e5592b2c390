"""ast-grep's rule language: a JSON rule object compiled for one grammar, and its matcher.

A rule is a conjunction of the keys it has (ast-grep's semantics): atomic (`pattern`, `kind`,
`regex`, `nthChild`), relational (`inside`, `has`, `follows`, `precedes`, each with `stopBy`
and `field`) and composite (`all`, `any`, `not`, `matches`). Patterns are compiled and matched
by the pattern engine; every rule error names its path (`rule.inside.pattern: …`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import tree_sitter as ts

from tether_astgrep.grammars import Grammar
from tether_astgrep.matcher import Match, Matcher, _run_span
from tether_astgrep.pattern import (
    CompiledPattern,
    MetaVar,
    PatternError,
    PItem,
    PNode,
    compile_pattern,
)

Env = dict[str, Any]  # name -> ts.Node (single) or list[ts.Node] (multi), as the matcher's

ATOMIC = ("pattern", "kind", "regex", "nthChild", "range")
RELATIONAL = ("inside", "has", "follows", "precedes")
COMPOSITE = ("all", "any", "not", "matches")
RULE_KEYS = (*ATOMIC, *RELATIONAL, *COMPOSITE)
RELATION_KEYS = ("stopBy", "field")
CONFIG_KEYS = ("rule", "constraints", "utils", "fix", "transform")


class RuleError(Exception):
    """A rule cannot be used; `path` is where (`rule.all[1].kind`), the message says why."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}")


@attrs.frozen(eq=False)
class Relation:
    rule: Rule
    stop: str | Rule  # "neighbor", "end" or a rule
    field: str | None


@attrs.frozen(eq=False)
class NthChild:
    step: int  # An+B: a
    offset: int  # b
    reverse: bool
    of_rule: Rule | None


@attrs.frozen(eq=False)
class Rule:
    """One rule object, compiled: every key it has must hold."""

    pattern: CompiledPattern | None = None
    kind_ids: frozenset[int] | None = None
    regex: re.Pattern[str] | None = None
    nth: NthChild | None = None
    span: tuple[int, int, int, int] | None = None  # `range`: 0-based lines, character columns
    inside: Relation | None = None
    has: Relation | None = None
    follows: Relation | None = None
    precedes: Relation | None = None
    all: tuple[Rule, ...] | None = None
    any: tuple[Rule, ...] | None = None
    not_: Rule | None = None
    matches: str | None = None


@attrs.frozen(eq=False)
class CompiledRule:
    """What a search with a rule needs; its prefilter fields mirror `CompiledPattern`'s."""

    source: str  # the rule as given, for caching and messages
    grammar_id: str
    rule: Rule
    utils: Mapping[str, Rule]
    constraints: Mapping[str, Rule]
    interpretation: str
    literals: tuple[bytes, ...]  # every file holding a match contains each one
    var_names: frozenset[str]
    chains: tuple[bytes, ...] = ()
    fix: str | None = None
    # ast_edit: new metavariables computed from captures, in order (`transform`)
    transforms: Mapping[str, Transform] = attrs.field(factory=dict)


@attrs.frozen
class Transform:
    """One `transform` entry: `op` (substring, replace, convert) applied to `source`'s text."""

    op: str
    source: str  # a metavariable name (single or multi) or an earlier transform's
    start: int | None = None  # substring: character slice, negative from the end
    end: int | None = None
    regex: re.Pattern[str] | None = None  # replace: every match of `regex` by `by`
    by: str = ""
    to_case: str = ""  # convert
    separators: tuple[str, ...] = ()

    def apply(self, text: str) -> str:
        if self.op == "substring":
            return text[self.start : self.end]
        if self.op == "replace":
            assert self.regex is not None
            return self.regex.sub(self.by, text)
        return _convert(text, self.to_case, self.separators)


CASES = (
    "lowerCase",
    "upperCase",
    "capitalize",
    "camelCase",
    "snakeCase",
    "kebabCase",
    "pascalCase",
)
SEPARATORS = ("caseChange", "dash", "dot", "slash", "space", "underscore")
_SEPARATOR_RE = {"dash": "-", "dot": ".", "slash": "/", "space": " ", "underscore": "_"}


def _convert(text: str, to_case: str, separators: tuple[str, ...]) -> str:
    if to_case == "lowerCase":
        return text.lower()
    if to_case == "upperCase":
        return text.upper()
    if to_case == "capitalize":
        return text[:1].upper() + text[1:]
    chars = "".join(re.escape(_SEPARATOR_RE[s]) for s in separators if s in _SEPARATOR_RE)
    words = re.split(f"[{chars}]+", text) if chars else [text]
    if "caseChange" in separators:
        split: list[str] = []
        for word in words:
            split.extend(re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+|[A-Z]+", word) or [word])
        words = split
    words = [w for w in words if w]
    if to_case == "snakeCase":
        return "_".join(w.lower() for w in words)
    if to_case == "kebabCase":
        return "-".join(w.lower() for w in words)
    if to_case == "pascalCase":
        return "".join(w[:1].upper() + w[1:].lower() for w in words)
    head, *rest = words or [""]
    return head.lower() + "".join(w[:1].upper() + w[1:].lower() for w in rest)


def _rust_replacement(by: str) -> str:
    """A Rust regex replacement (`$1`, `${name}`, `$$`) as Python's `re.sub` template."""
    out = by.replace("\\", "\\\\")
    out = re.sub(r"\$\{(\w+)\}|\$(\d+|[A-Za-z_]\w*)|\$\$", _group_ref, out)
    return out


def _group_ref(m: re.Match[str]) -> str:
    name = m.group(1) or m.group(2)
    return "$" if name is None else f"\\g<{name}>"


def _transforms(raw: Any, names: frozenset[str], edit: bool) -> dict[str, Transform]:
    if not raw:
        return {}
    if not edit:
        raise RuleError("rule.transform", "only ast_edit uses it (in the fix); ast_grep searches")
    if not isinstance(raw, Mapping):
        raise RuleError("rule.transform", "expected an object: new name -> transformation")
    out: dict[str, Transform] = {}
    for name, spec in raw.items():
        path = f"rule.transform.{name}"
        if not isinstance(spec, Mapping) or len(spec) != 1:
            raise RuleError(
                path,
                "expected an object with one of substring, replace, convert "
                "(the string form `replace($A, …)` is not supported)",
            )
        ((op, args),) = spec.items()
        path = f"{path}.{op}"
        known = {
            "substring": ("source", "startChar", "endChar"),
            "replace": ("source", "replace", "by"),
            "convert": ("source", "toCase", "separatedBy"),
        }
        if op not in known:
            raise RuleError(path, _unknown_key(op, tuple(known)))
        if not isinstance(args, Mapping):
            raise RuleError(path, f"expected an object with {', '.join(known[op])}")
        unknown = [k for k in args if k not in known[op]]
        if unknown:
            raise RuleError(f"{path}.{unknown[0]}", _unknown_key(unknown[0], known[op]))
        source = args.get("source")
        var = (
            re.fullmatch(r"\$(?:\$\$)?([A-Z_][A-Z0-9_]*)", source)
            if isinstance(source, str)
            else None
        )
        if var is None or (var.group(1) not in names and var.group(1) not in out):
            raise RuleError(
                f"{path}.source",
                f"expected a captured metavariable ($NAME) or an earlier transform, got {source!r}",
            )
        if op == "substring":
            bounds = [args.get("startChar"), args.get("endChar")]
            for key, value in zip(("startChar", "endChar"), bounds, strict=True):
                if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                    raise RuleError(f"{path}.{key}", "expected an integer (negative: from the end)")
            out[name] = Transform(op, var.group(1), start=bounds[0], end=bounds[1])
        elif op == "replace":
            if not isinstance(args.get("by"), str):
                raise RuleError(f"{path}.by", "required: the replacement text")
            regex = _regex(args.get("replace"), f"{path}.replace")
            out[name] = Transform(op, var.group(1), regex=regex, by=_rust_replacement(args["by"]))
        else:
            to_case = args.get("toCase")
            if to_case not in CASES:
                raise RuleError(f"{path}.toCase", f"expected one of {', '.join(CASES)}")
            seps = args.get("separatedBy", list(SEPARATORS))
            if not isinstance(seps, list) or any(s not in SEPARATORS for s in seps):
                raise RuleError(
                    f"{path}.separatedBy", f"expected a list of {', '.join(SEPARATORS)}"
                )
            out[name] = Transform(op, var.group(1), to_case=to_case, separators=tuple(seps))
    return out


# -- compiling -------------------------------------------------------------------------------


class _Compiler:
    def __init__(self, grammar: Grammar, strictness: str, util_names: frozenset[str]) -> None:
        self.grammar = grammar
        self.strictness = strictness
        self.util_names = util_names
        self.patterns: list[CompiledPattern] = []
        lang = grammar.ts_language
        self.kinds: dict[str, set[int]] = {}
        for i, name in enumerate(grammar.kind_names):
            if lang.node_kind_is_visible(i):
                self.kinds.setdefault(name, set()).add(i)
        fields = (lang.field_name_for_id(i) for i in range(1, lang.field_count + 1))
        self.fields = {f for f in fields if f is not None}

    def rule(self, raw: Any, path: str) -> Rule:
        if not isinstance(raw, Mapping):
            raise RuleError(path, f"expected a rule object, got {type(raw).__name__}")
        unknown = [k for k in raw if k not in RULE_KEYS]
        if unknown:
            raise RuleError(f"{path}.{unknown[0]}", _unknown_key(unknown[0], RULE_KEYS))
        if not raw:
            raise RuleError(path, f"empty rule: give at least one of {', '.join(RULE_KEYS)}")
        out: dict[str, Any] = {}
        if "pattern" in raw:
            out["pattern"] = self.pattern(raw["pattern"], f"{path}.pattern")
        if "kind" in raw:
            out["kind_ids"] = self.kind(raw["kind"], f"{path}.kind")
        if "regex" in raw:
            out["regex"] = _regex(raw["regex"], f"{path}.regex")
        if "nthChild" in raw:
            out["nth"] = self.nth(raw["nthChild"], f"{path}.nthChild")
        if "range" in raw:
            out["span"] = _span(raw["range"], f"{path}.range")
        for key in RELATIONAL:
            if key in raw:
                out[key] = self.relation(raw[key], f"{path}.{key}", key)
        for key in ("all", "any"):
            if key in raw:
                items = raw[key]
                if not isinstance(items, list) or not items:
                    raise RuleError(f"{path}.{key}", "expected a non-empty list of rules")
                out[key] = tuple(self.rule(r, f"{path}.{key}[{i}]") for i, r in enumerate(items))
        if "not" in raw:
            out["not_"] = self.rule(raw["not"], f"{path}.not")
        if "matches" in raw:
            name = raw["matches"]
            if not isinstance(name, str) or name not in self.util_names:
                known = ", ".join(sorted(self.util_names)) or "none are defined"
                raise RuleError(
                    f"{path}.matches", f"unknown utility rule {name!r} (utils: {known})"
                )
            out["matches"] = name
        return Rule(**out)

    def pattern(self, raw: Any, path: str) -> CompiledPattern:
        if isinstance(raw, str):
            compiled = self._compile(raw, path)
        elif isinstance(raw, Mapping):
            unknown = [k for k in raw if k not in ("context", "selector", "strictness")]
            if unknown:
                raise RuleError(
                    f"{path}.{unknown[0]}",
                    _unknown_key(unknown[0], ("context", "selector", "strictness")),
                )
            context = raw.get("context")
            if not isinstance(context, str):
                raise RuleError(f"{path}.context", "required: the code around the pattern")
            strictness = raw.get("strictness", self.strictness)
            compiled = self._compile(context, f"{path}.context", strictness)
            selector = raw.get("selector")
            if selector is not None:
                if not isinstance(selector, str):
                    raise RuleError(f"{path}.selector", "expected a kind name")
                self.kind(selector, f"{path}.selector")
                compiled = _select(compiled, selector, f"{path}.selector")
        else:
            raise RuleError(path, "expected a pattern string or {context, selector}")
        if compiled.is_sequence:
            raise RuleError(
                path,
                f"{compiled.interpretation} is several sibling nodes; a rule's pattern matches "
                "one node (wrap it in the code around it, or use follows/precedes)",
            )
        self.patterns.append(compiled)
        return compiled

    def _compile(self, text: str, path: str, strictness: str | None = None) -> CompiledPattern:
        try:
            return compile_pattern(text, self.grammar, strictness=strictness or self.strictness)
        except PatternError as exc:
            message = str(exc)
            message = message.removeprefix("pattern: ").removeprefix("strictness: ")
            raise RuleError(path, message) from None

    def kind(self, raw: Any, path: str) -> frozenset[int]:
        if not isinstance(raw, str) or not raw:
            raise RuleError(path, "expected a node kind name")
        ids = self.kinds.get(raw)
        if ids is None:
            close = _similar(raw, list(self.kinds))
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise RuleError(path, f'unknown kind "{raw}" for {self.grammar.id}{hint}')
        return frozenset(ids)

    def nth(self, raw: Any, path: str) -> NthChild:
        reverse = False
        of_rule = None
        position = raw
        if isinstance(raw, Mapping):
            unknown = [k for k in raw if k not in ("position", "reverse", "ofRule")]
            if unknown:
                raise RuleError(
                    f"{path}.{unknown[0]}",
                    _unknown_key(unknown[0], ("position", "reverse", "ofRule")),
                )
            if "position" not in raw:
                raise RuleError(f"{path}.position", "required: a number or An+B")
            position = raw["position"]
            reverse = bool(raw.get("reverse", False))
            if raw.get("ofRule") is not None:
                of_rule = self.rule(raw["ofRule"], f"{path}.ofRule")
            path = f"{path}.position"
        if isinstance(position, bool) or not isinstance(position, int | str):
            raise RuleError(path, "expected a 1-based position or an An+B formula")
        if isinstance(position, int):
            if position < 1:
                raise RuleError(path, f"positions start at 1, got {position}")
            return NthChild(0, position, reverse, of_rule)
        m = re.fullmatch(r"\s*(?:([+-]?\d*)\s*n)?\s*(?:([+-])\s*(\d+))?\s*", position)
        if not position.strip() or m is None:
            raise RuleError(path, f"expected a number or An+B (`2n+1`, `-n+3`), got {position!r}")
        a_text, sign, b_text = m.groups()
        if a_text is None:
            step = 0
        elif a_text in ("", "+"):
            step = 1
        elif a_text == "-":
            step = -1
        else:
            step = int(a_text)
        offset = int(b_text) * (-1 if sign == "-" else 1) if b_text else 0
        if a_text is None and not b_text:
            raise RuleError(path, f"expected a number or An+B, got {position!r}")
        return NthChild(step, offset, reverse, of_rule)

    def relation(self, raw: Any, path: str, key: str) -> Relation:
        if not isinstance(raw, Mapping):
            raise RuleError(path, "expected a rule object (with optional stopBy and field)")
        body = {k: v for k, v in raw.items() if k not in RELATION_KEYS}
        unknown = [k for k in body if k not in RULE_KEYS]
        if unknown:
            raise RuleError(
                f"{path}.{unknown[0]}", _unknown_key(unknown[0], (*RULE_KEYS, *RELATION_KEYS))
            )
        rule = self.rule(body, path)
        stop_raw = raw.get("stopBy", "neighbor")
        stop: str | Rule
        if stop_raw in ("neighbor", "end"):
            stop = stop_raw
        elif isinstance(stop_raw, Mapping):
            stop = self.rule(stop_raw, f"{path}.stopBy")
        else:
            raise RuleError(f"{path}.stopBy", 'expected "neighbor", "end" or a rule object')
        field = raw.get("field")
        if field is not None:
            if key not in ("inside", "has"):
                raise RuleError(f"{path}.field", f"only inside and has take a field, not {key}")
            if not isinstance(field, str) or field not in self.fields:
                close = difflib.get_close_matches(str(field), sorted(self.fields), n=3)
                hint = f"; did you mean {' or '.join(close)}?" if close else ""
                raise RuleError(
                    f"{path}.field", f"unknown field {field!r} for {self.grammar.id}{hint}"
                )
        return Relation(rule, stop, field)


def _similar(name: str, known: list[str]) -> list[str]:
    """Known names like `name`: abbreviations word by word first (`fn_item` is
    `function_item`: each word's letters in order, same first letter), then close spellings."""
    words = name.lower().split("_")

    def abbreviates(short: str, long: str) -> bool:
        rest = iter(long)
        return short[:1] == long[:1] and all(ch in rest for ch in short)

    found = [
        k
        for k in known
        if len(k.split("_")) == len(words)
        and all(abbreviates(w, kw) for w, kw in zip(words, k.split("_"), strict=True))
    ]
    for k in difflib.get_close_matches(name, known, n=3):
        if k not in found:
            found.append(k)
    return found[:3]


def _span(raw: Any, path: str) -> tuple[int, int, int, int]:
    if not isinstance(raw, Mapping) or set(raw) != {"start", "end"}:
        raise RuleError(path, "expected {start: {line, column}, end: {line, column}}")
    out: list[int] = []
    for end in ("start", "end"):
        point = raw[end]
        if not isinstance(point, Mapping) or set(point) != {"line", "column"}:
            raise RuleError(f"{path}.{end}", "expected {line, column} (0-based)")
        for key in ("line", "column"):
            value = point[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise RuleError(f"{path}.{end}.{key}", "expected an integer from 0")
            out.append(value)
    return out[0], out[1], out[2], out[3]


def _unknown_key(key: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return f"unknown key; {hint}known: {', '.join(known)}"


def _regex(raw: Any, path: str) -> re.Pattern[str]:
    if not isinstance(raw, str):
        raise RuleError(path, "expected a regular expression string")
    try:
        return re.compile(raw)
    except re.error as exc:
        raise RuleError(path, f"invalid regular expression: {exc}") from None


def _select(compiled: CompiledPattern, selector: str, path: str) -> CompiledPattern:
    """The first node of kind `selector` in the context's pattern tree, as the pattern."""
    stack: list[PItem] = list(reversed(compiled.items))
    while stack:
        item = stack.pop()
        if isinstance(item, PNode):
            if item.kind == selector:
                literals = tuple(dict.fromkeys(_leaves(item)))
                return attrs.evolve(
                    compiled,
                    items=(item,),
                    interpretation=f"{selector} in {compiled.interpretation}",
                    literals=tuple(t for t in compiled.literals if t in literals),
                    named_literals=(),
                    chains=(),
                    sibling_chains=(),
                    var_names=frozenset(_var_names(item)),
                    also=(),
                )
            stack.extend(reversed(item.children))
    raise RuleError(path, f"no {selector} node in the context ({compiled.interpretation})")


def _leaves(item: PItem) -> Iterator[bytes]:
    if isinstance(item, PNode):
        if item.text is not None:
            yield item.text
        for child in item.children:
            yield from _leaves(child)


def _var_names(item: PItem) -> Iterator[str]:
    if isinstance(item, MetaVar):
        if item.name is not None:
            yield item.name
    else:
        for child in item.children:
            yield from _var_names(child)


def _required_literals(rule: Rule, utils: Mapping[str, Rule], seen: frozenset[str]) -> set[bytes]:
    """Literals every file holding a match contains: those of the patterns the rule needs
    (its own, those of `all` and of relations); `any` and `not` need none."""
    out: set[bytes] = set()
    if rule.pattern is not None:
        out |= set(rule.pattern.literals)
    for rel in (rule.inside, rule.has, rule.follows, rule.precedes):
        if rel is not None:
            out |= _required_literals(rel.rule, utils, seen)
    for sub in rule.all or ():
        out |= _required_literals(sub, utils, seen)
    if rule.matches is not None and rule.matches not in seen:
        out |= _required_literals(utils[rule.matches], utils, seen | {rule.matches})
    return out


def _direct_cycle(
    name: str, utils: Mapping[str, Rule], path: tuple[str, ...]
) -> tuple[str, ...] | None:
    """A chain of `matches` from `name` back to a utility on `path` that never leaves the
    node (through `all`, `any`, `not` only), or None."""
    stack = [utils[name]]
    while stack:
        rule = stack.pop()
        if rule.matches is not None:
            if rule.matches in path:
                return (*path, rule.matches)
            found = _direct_cycle(rule.matches, utils, (*path, rule.matches))
            if found:
                return found
        stack.extend(rule.all or ())
        stack.extend(rule.any or ())
        if rule.not_ is not None:
            stack.append(rule.not_)
    return None


def _is_positive(rule: Rule, utils: Mapping[str, Rule], seen: frozenset[str]) -> bool:
    if rule.pattern is not None or rule.kind_ids is not None:
        return True
    if any(_is_positive(r, utils, seen) for r in rule.all or ()):
        return True
    if rule.any and all(_is_positive(r, utils, seen) for r in rule.any):
        return True
    if rule.matches is not None and rule.matches not in seen:
        return _is_positive(utils[rule.matches], utils, seen | {rule.matches})
    return False


def compile_rule(
    raw: Mapping[str, Any], grammar: Grammar, strictness: str = "smart", *, edit: bool = False
) -> CompiledRule:
    """Compile the `rule` argument: a rule object, or an ast-grep rule config
    (`{"rule": …, "constraints": …, "utils": …, "fix": …}`)."""
    import json

    if "rule" in raw:
        unknown = [k for k in raw if k not in CONFIG_KEYS]
        if unknown:
            raise RuleError(f"rule.{unknown[0]}", _unknown_key(unknown[0], CONFIG_KEYS))
        body, base = raw["rule"], "rule.rule"
        config = raw
    else:
        body, base, config = raw, "rule", {}
    fix = config.get("fix")
    if fix is not None:
        if not edit:
            raise RuleError("rule.fix", "only ast_edit rewrites; ast_grep searches")
        if not isinstance(fix, str):
            raise RuleError(
                "rule.fix", "expected a template string (an object fix is not supported)"
            )
    utils_raw = config.get("utils", {})
    if not isinstance(utils_raw, Mapping):
        raise RuleError("rule.utils", "expected an object of named rules")
    compiler = _Compiler(grammar, strictness, frozenset(utils_raw))
    utils = {name: compiler.rule(r, f"rule.utils.{name}") for name, r in utils_raw.items()}
    for name in utils:
        cycle = _direct_cycle(name, utils, (name,))
        if cycle:
            raise RuleError(
                f"rule.utils.{name}",
                "matches itself on the same node (" + " -> ".join(cycle) + "); a utility may "
                "recurse only through a relation (inside, has, follows, precedes)",
            )
    rule = compiler.rule(body, base)
    if not _is_positive(rule, utils, frozenset()):
        raise RuleError(
            base,
            "needs a positive part: a pattern or a kind (directly, in all, or in every any "
            "branch); regex, nthChild, range, not and relations alone would test every node",
        )
    constraints_raw = config.get("constraints", {})
    if not isinstance(constraints_raw, Mapping):
        raise RuleError("rule.constraints", "expected an object: metavariable name -> rule")
    constraints = {
        name.lstrip("$"): compiler.rule(r, f"rule.constraints.{name}")
        for name, r in constraints_raw.items()
    }
    names = frozenset(v for p in compiler.patterns for v in p.var_names)
    for name in constraints:
        if name not in names:
            raise RuleError(
                f"rule.constraints.{name}", f"${name} is not a metavariable of any pattern"
            )
    transforms = _transforms(config.get("transform", {}), names, edit)
    what = ", ".join(k for k in RULE_KEYS if k in body) if isinstance(body, Mapping) else ""
    return CompiledRule(
        source=json.dumps(raw, sort_keys=True),
        grammar_id=grammar.id,
        rule=rule,
        utils=utils,
        constraints=constraints,
        interpretation=f"rule ({what})"
        + (
            "; patterns read as " + "; ".join(p.interpretation for p in compiler.patterns)
            if compiler.patterns
            else ""
        ),
        literals=tuple(sorted(_required_literals(rule, utils, frozenset()))),
        var_names=names | frozenset(transforms),
        fix=fix,
        transforms=transforms,
    )


# -- matching --------------------------------------------------------------------------------


class _File:
    """One tree being searched: each pattern's matches, found once per file."""

    def __init__(self, tree: ts.Tree, source: bytes) -> None:
        self.tree = tree
        self.source = source
        self.found: dict[int, dict[int, Env]] = {}  # id(pattern) -> node id -> env


class RuleMatcher:
    """A compiled rule prepared for one grammar; the interface of `Matcher`."""

    def __init__(self, compiled: CompiledRule, grammar: Grammar) -> None:
        self.compiled = compiled
        self.grammar = grammar
        self._matchers: dict[int, Matcher] = {}
        self._queries: dict[frozenset[int], ts.Query | None] = {}

    def _matcher(self, pattern: CompiledPattern) -> Matcher:
        m = self._matchers.get(id(pattern))
        if m is None:
            m = self._matchers[id(pattern)] = Matcher(pattern, self.grammar)
        return m

    def _pattern_index(self, pattern: CompiledPattern, f: _File) -> dict[int, Env]:
        found = f.found.get(id(pattern))
        if found is None:
            found = {}
            for _, _, nodes, env in self._matcher(pattern)._raw(f.tree, f.source):
                if len(nodes) == 1:
                    env = {k: v for k, v in env.items() if not k.startswith("\0")}
                    found.setdefault(nodes[0].id, env)
            f.found[id(pattern)] = found
        return found

    # The rule's matches ------------------------------------------------------------------

    def find(self, tree: ts.Tree, source: bytes | None = None) -> list[Match]:
        return self.find_counted(tree, source)[0]

    def find_counted(
        self, tree: ts.Tree, source: bytes | None = None, keep: int | None = None
    ) -> tuple[list[Match], int]:
        assert source is not None
        f = _File(tree, source)
        rule = self.compiled.rule
        out: list[tuple[ts.Node, Env]] = []
        seen: set[tuple[int, int]] = set()
        for node in self._candidates(rule, f):
            env = self._match(rule, node, {}, f)
            if env is None or not self._constrained(env, f):
                continue
            span = (node.start_byte, node.end_byte)
            if span in seen:  # one node wrapping another of the same span is one match
                continue
            seen.add(span)
            out.append((node, env))
        out.sort(key=lambda r: (r[0].start_byte, -r[0].end_byte))
        built = out if keep is None else out[:keep]
        transforms = self.compiled.transforms
        return [_build(node, env, transforms, f.source) for node, env in built], len(out)

    def _candidates(self, rule: Rule, f: _File) -> Iterator[ts.Node]:
        """Nodes that may match: a pattern's matches when the rule needs that pattern,
        else every node of its kind, else every node."""
        if rule.pattern is not None:
            index = self._pattern_index(rule.pattern, f)
            yield from _nodes_with_ids(f.tree.root_node, index)
            return
        for sub in rule.all or ():
            if sub.pattern is not None:
                yield from self._candidates(sub, f)
                return
        kinds = rule.kind_ids
        query = self._kind_query(kinds) if kinds is not None else None
        if query is not None:  # found in C, not by walking every node in Python
            yield from ts.QueryCursor(query).captures(f.tree.root_node).get("c", [])
            return
        for node in _walk(f.tree.root_node):
            if kinds is None or node.kind_id in kinds:
                yield node

    def _kind_query(self, kinds: frozenset[int]) -> ts.Query | None:
        if kinds not in self._queries:
            lang = self.grammar.ts_language
            names = {
                f"({lang.node_kind_for_id(i)})"
                if lang.node_kind_is_named(i)
                else '"'
                + (lang.node_kind_for_id(i) or "").replace("\\", "\\\\").replace('"', '\\"')
                + '"'
                for i in kinds
            }
            try:
                self._queries[kinds] = ts.Query(lang, "[" + " ".join(sorted(names)) + "] @c")
            except Exception:  # a kind the query language cannot name: walk instead
                self._queries[kinds] = None
        return self._queries[kinds]

    def _constrained(self, env: Env, f: _File) -> bool:
        for name, rule in self.compiled.constraints.items():
            value = env.get(name)
            if isinstance(value, list) and len(value) == 1:
                value = value[0]
            # a $$$ run (or a $X over sibling-split nodes) is not constrained, as in ast-grep
            if isinstance(value, ts.Node) and self._match(rule, value, {}, f) is None:
                return False
        return True

    def _match(self, rule: Rule, node: ts.Node, env: Env, f: _File) -> Env | None:
        if rule.kind_ids is not None and node.kind_id not in rule.kind_ids:
            return None
        if rule.pattern is not None:
            found = self._pattern_index(rule.pattern, f).get(node.id)
            if found is None:
                return None
            merged = _merge(env, found, f.source)
            if merged is None:
                return None
            env = merged
        if rule.regex is not None:
            text = f.source[node.start_byte : node.end_byte].decode("utf-8", "replace")
            if rule.regex.search(text) is None:
                return None
        if rule.nth is not None and not self._nth(rule.nth, node, f):
            return None
        if rule.span is not None and rule.span != _char_span(node, f.source):
            return None
        for sub in rule.all or ():
            next_env = self._match(sub, node, env, f)
            if next_env is None:
                return None
            env = next_env
        if rule.any is not None:
            for sub in rule.any:
                next_env = self._match(sub, node, env, f)
                if next_env is not None:
                    env = next_env
                    break
            else:
                return None
        if rule.not_ is not None and self._match(rule.not_, node, env, f) is not None:
            return None
        if rule.matches is not None:
            # a utility that would recurse on the same node was refused when compiled: this
            # recursion moves through the tree, so the tree's depth bounds it
            next_env = self._match(self.compiled.utils[rule.matches], node, env, f)
            if next_env is None:
                return None
            env = next_env
        for rel, walk in (
            (rule.inside, self._inside),
            (rule.has, self._has),
            (rule.follows, self._follows),
            (rule.precedes, self._precedes),
        ):
            if rel is not None:
                for other in walk(rel, node, f):
                    next_env = self._match(rel.rule, other, env, f)
                    if next_env is not None:
                        env = next_env
                        break
                else:
                    return None
        return env

    def _stops(self, rel: Relation, node: ts.Node, f: _File) -> bool:
        stop = rel.stop
        if stop == "neighbor":
            return True
        if stop == "end":
            return False
        assert isinstance(stop, Rule)
        return self._match(stop, node, {}, f) is not None

    def _inside(self, rel: Relation, node: ts.Node, f: _File) -> Iterator[ts.Node]:
        below, parent = node, node.parent
        while parent is not None:
            if rel.field is None or any(
                c.id == below.id for c in parent.children_by_field_name(rel.field)
            ):
                yield parent
            elif rel.stop == "neighbor":
                return
            if self._stops(rel, parent, f):
                return
            below, parent = parent, parent.parent

    def _has(self, rel: Relation, node: ts.Node, f: _File) -> Iterator[ts.Node]:
        roots = node.children if rel.field is None else node.children_by_field_name(rel.field)
        for child in roots:
            yield child
            if not self._stops(rel, child, f):
                yield from self._descend(rel, child, f)

    def _descend(self, rel: Relation, node: ts.Node, f: _File) -> Iterator[ts.Node]:
        for child in node.children:
            yield child
            if not self._stops(rel, child, f):
                yield from self._descend(rel, child, f)

    def _follows(self, rel: Relation, node: ts.Node, f: _File) -> Iterator[ts.Node]:
        other = node.prev_sibling
        while other is not None:
            yield other
            if self._stops(rel, other, f):
                return
            other = other.prev_sibling

    def _precedes(self, rel: Relation, node: ts.Node, f: _File) -> Iterator[ts.Node]:
        other = node.next_sibling
        while other is not None:
            yield other
            if self._stops(rel, other, f):
                return
            other = other.next_sibling

    def _nth(self, nth: NthChild, node: ts.Node, f: _File) -> bool:
        parent = node.parent
        if parent is None or not node.is_named:
            return False
        siblings = [c for c in parent.named_children]
        if nth.of_rule is not None:
            siblings = [c for c in siblings if self._match(nth.of_rule, c, {}, f) is not None]
        if nth.reverse:
            siblings.reverse()
        index = next((i for i, c in enumerate(siblings) if c.id == node.id), None)
        if index is None:
            return False
        position = index + 1
        if nth.step == 0:
            return position == nth.offset
        n, rest = divmod(position - nth.offset, nth.step)
        return rest == 0 and n >= 0


def _walk(root: ts.Node) -> Iterator[ts.Node]:
    """Every node, in document order."""
    cursor = root.walk()
    while True:
        node = cursor.node
        assert node is not None
        yield node
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


def _nodes_with_ids(root: ts.Node, index: dict[int, Env]) -> Iterator[ts.Node]:
    if not index:
        return
    left = len(index)
    for node in _walk(root):
        if node.id in index:
            yield node
            left -= 1
            if not left:
                return


def _char_span(node: ts.Node, source: bytes) -> tuple[int, int, int, int]:
    """(start line, start column, end line, end column): 0-based, columns in characters."""

    def column(offset: int) -> int:
        line_start = source.rfind(b"\n", 0, offset) + 1
        return len(source[line_start:offset].decode("utf-8", "replace"))

    start, end = node.start_point, node.end_point
    return start[0], column(node.start_byte), end[0], column(node.end_byte)


def _text(value: Any, source: bytes) -> bytes:
    if isinstance(value, list):
        return b"\0".join(source[n.start_byte : n.end_byte] for n in value)
    return source[value.start_byte : value.end_byte]


def _merge(env: Env, found: Env, source: bytes) -> Env | None:
    """`env` with `found`'s captures; a name captured twice must capture the same code."""
    out = dict(env)
    for name, value in found.items():
        if name in out:
            if _text(out[name], source) != _text(value, source):
                return None
        else:
            out[name] = value
    return out


@attrs.frozen
class RuleMatch(Match):
    """A rule's match, with the text of its transformed metavariables (`transform`)."""

    texts: Mapping[str, bytes] = attrs.field(factory=dict)


def _build(node: ts.Node, env: Env, transforms: Mapping[str, Transform], source: bytes) -> Match:
    caps: dict[str, tuple[int, int]] = {}
    for name, value in env.items():
        if isinstance(value, list):
            caps[name] = _run_span(value) if value else (-1, -1)
        else:
            caps[name] = (value.start_byte, value.end_byte)
    start: tuple[int, int] = tuple(node.start_point)  # type: ignore[assignment]
    end: tuple[int, int] = tuple(node.end_point)  # type: ignore[assignment]
    if not transforms:
        return Match(node.start_byte, node.end_byte, start, end, caps)
    values: dict[str, str] = {}
    for name, t in transforms.items():
        if t.source in values:
            text = values[t.source]
        else:
            a, b = caps.get(t.source, (-1, -1))
            text = "" if a < 0 else source[a:b].decode("utf-8", "replace")
        values[name] = t.apply(text)
    texts = {k: v.encode() for k, v in values.items()}
    return RuleMatch(node.start_byte, node.end_byte, start, end, caps, texts=texts)

"""ast-grep's rule language: a JSON rule object compiled for one grammar, and its matcher.

A rule is a conjunction of the keys it has (ast-grep's semantics): atomic (`pattern`, `kind`,
`regex`, `nthChild`), relational (`inside`, `has`, `follows`, `precedes`, each with `stopBy`
and `field`) and composite (`all`, `any`, `not`, `matches`). Patterns are compiled and matched
by the pattern engine; every rule error names its path (`rule.inside.pattern: …`).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import tree_sitter as ts

from tether import regex as linear
from tether.text import LISTED_NAME_CHARS, listing, truncate
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
from tether_astgrep.rewrite import render, template_vars

Env = dict[str, Any]  # name -> ts.Node (single) or list[ts.Node] (multi), as the matcher's

ATOMIC = ("pattern", "kind", "regex", "nthChild", "range")
RELATIONAL = ("inside", "has", "follows", "precedes")
COMPOSITE = ("all", "any", "not", "matches")
RULE_KEYS = (*ATOMIC, *RELATIONAL, *COMPOSITE)
RELATION_KEYS = ("stopBy", "field")
CONFIG_KEYS = ("rule", "constraints", "utils", "fix", "transform", "rewriters")
# (`language`: ast-grep's rewriters may repeat the rule's; it must be the search's language)
REWRITER_KEYS = ("id", "language", "rule", "constraints", "utils", "transform", "fix")
FIX_KEYS = ("template", "expandStart", "expandEnd", "title")
# Keys of an ast-grep rule file that are about `scan`'s reporting and file selection: why each
# is refused (an accepted key that did nothing would be a silent guess).
SCAN_KEYS = {
    "id": "names a rule in `scan`'s report; ast_grep reports matches, it needs no id",
    "language": "give the tool's `language` argument (or a `path`) instead",
    "message": "text of `scan`'s diagnostic; ast_grep reports matches, not diagnostics",
    "note": "text of `scan`'s diagnostic; ast_grep reports matches, not diagnostics",
    "severity": "level of `scan`'s diagnostic; ast_grep reports matches, not diagnostics",
    "labels": "highlights of `scan`'s diagnostic; ast_grep reports each match's captures",
    "url": "a link in `scan`'s diagnostic; ast_grep reports matches, not diagnostics",
    "metadata": "data carried into `scan`'s report; ast_grep has no report to carry it",
    "files": "file selection of `scan`; give the tool's `path` (a file or directory) instead",
    "ignores": "file selection of `scan`; give the tool's `path` (a file or directory) instead",
}


# A rule is the model's input and its cost is paid per node of every file searched: bounded.
#: rule objects a rule may hold, counting a utility's whole rule each time `matches` uses it
MAX_RULE_NODES = 10_000
#: how deep rule objects may nest, counting the rules each `matches` brings in
MAX_RULE_DEPTH = 64
#: digits of a number in an `nthChild` formula
MAX_NTH_DIGITS = 9


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
    regex: linear.Regex[str] | None = None
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
    # the fix object's `expandStart`/`expandEnd`: siblings the replaced range grows to
    expand_start: Relation | None = None
    expand_end: Relation | None = None
    rewriters: Mapping[str, Rewriter] = attrs.field(factory=dict)


@attrs.frozen(eq=False)
class Rewriter:
    """One of the config's `rewriters`: a rule with its own fix, applied by `rewrite`."""

    id: str
    rule: Rule
    constraints: Mapping[str, Rule]
    transforms: Mapping[str, Transform]
    fix: str
    expand_start: Relation | None = None
    expand_end: Relation | None = None


@attrs.frozen
class Transform:
    """One `transform` entry: `op` (substring, replace, convert) applied to `source`'s text,
    or `rewrite`: the `rewriters` applied to the source's nodes (by the matcher)."""

    op: str
    source: str  # a metavariable name (single or multi) or an earlier transform's
    start: int | None = None  # substring: character slice, negative from the end
    end: int | None = None
    regex: linear.Regex[str] | None = None  # replace: every match of `regex` by `by`
    by: str = ""
    to_case: str = ""  # convert
    separators: tuple[str, ...] = ()
    rewriters: tuple[str, ...] = ()  # rewrite: ids tried in order on each node, first wins
    join_by: str | None = None  # rewrite: the rewrites alone, joined (else spliced in place)

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
    words = _split_words(text, separators)
    if to_case == "snakeCase":
        return "_".join(w.lower() for w in words)
    if to_case == "kebabCase":
        return "-".join(w.lower() for w in words)
    if to_case == "pascalCase":
        return "".join(w[:1].upper() + w[1:] for w in words)
    return "".join(w.lower() if i == 0 else w[:1].upper() + w[1:] for i, w in enumerate(words))


def _split_words(text: str, separators: tuple[str, ...]) -> list[str]:
    """ast-grep's word split (its `Delimiter`): at each separator character, and with
    `caseChange` where a lower-case letter meets an upper-case one (`aB`) or a run of
    upper-case letters meets a lower-case one (`XMLHttp`: XML, Http). Every other character,
    `#` or `$` included, stays in its word."""
    delimiters = {_SEPARATOR_RE[s] for s in separators if s in _SEPARATOR_RE}
    state = "lower" if "caseChange" in separators else "ignore"
    words: list[str] = []
    left = right = 0
    for c in text:
        if c in delimiters:
            words.append(text[left:right])
            left = right = right + 1
            if state != "ignore":
                state = "lower"
            continue
        if state == "lower" and c.isupper():
            words.append(text[left:right])
            left, right, state = right, right + 1, "one_upper"
            continue
        if state == "multi_upper" and c.islower():
            words.append(text[left : right - 1])
            left, right, state = right - 1, right + 1, "lower"
            continue
        right += 1
        if state == "ignore":
            continue
        if c.islower():
            state = "lower"
        elif state == "lower":
            state = "one_upper"
        else:
            state = "multi_upper"
    words.append(text[left:right])
    return [w for w in words if w]


def _rust_replacement(by: str) -> str:
    """A Rust regex replacement (`$1`, `${name}`, `$$`) as Python's `re.sub` template."""
    out = by.replace("\\", "\\\\")
    out = re.sub(r"\$\{(\w+)\}|\$(\d+|[A-Za-z_]\w*)|\$\$", _group_ref, out)
    return out


def _group_ref(m: re.Match[str]) -> str:
    name = m.group(1) or m.group(2)
    return "$" if name is None else f"\\g<{name}>"


def _transforms(
    raw: Any, names: frozenset[str], edit: bool, base: str = "rule"
) -> dict[str, Transform]:
    """The `transform` table, in the order its entries depend on each other (a transform may
    use another defined before or after it, as in ast-grep; a cycle is refused)."""
    if not raw:
        return {}
    if not edit:
        raise RuleError(
            f"{base}.transform", "only ast_edit uses it (in the fix); ast_grep searches"
        )
    if not isinstance(raw, Mapping):
        raise RuleError(f"{base}.transform", "expected an object: new name -> transformation")
    parsed: dict[str, Transform] = {}
    for name, spec in raw.items():
        path = f"{base}.transform.{name}"
        if name in names:
            raise RuleError(path, f"${name} is already a metavariable of the rule")
        if isinstance(spec, str):
            op, args = _parse_transform_string(spec, path)
            parsed[name] = _transform(op, args, path, names | frozenset(raw))
            continue
        if not isinstance(spec, Mapping) or len(spec) != 1:
            raise RuleError(
                path,
                "expected an object with one of substring, replace, convert, rewrite, or a "
                "string such as `replace($A, replace='^_', by='')`",
            )
        ((op, args),) = spec.items()
        parsed[name] = _transform(op, args, f"{path}.{op}", names | frozenset(raw))
    out: dict[str, Transform] = {}
    visiting: list[str] = []

    def visit(name: str) -> None:
        if name in out:
            return
        if name in visiting:
            cycle = " -> ".join(f"${n}" for n in (*visiting[visiting.index(name) :], name))
            raise RuleError(f"{base}.transform.{name}", f"depends on itself ({cycle})")
        visiting.append(name)
        source = parsed[name].source
        if source in parsed:
            visit(source)
        visiting.pop()
        out[name] = parsed[name]

    for name in parsed:
        visit(name)
    return out


_TRANSFORM_ARGS = {
    "substring": ("source", "startChar", "endChar"),
    "replace": ("source", "replace", "by"),
    "convert": ("source", "toCase", "separatedBy"),
    "rewrite": ("source", "rewriters", "joinBy"),
}


def _transform(op: Any, args: Any, path: str, names: frozenset[str]) -> Transform:
    """One transformation from its arguments (the object form's, or the string form's)."""
    known = _TRANSFORM_ARGS
    if op not in known:
        close = difflib.get_close_matches(str(op), list(known), n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise RuleError(path, f"unknown transformation {op!r}; {hint}known: {', '.join(known)}")
    if not isinstance(args, Mapping):
        raise RuleError(path, f"expected an object with {', '.join(known[op])}")
    unknown = [k for k in args if k not in known[op]]
    if unknown:
        raise RuleError(f"{path}.{unknown[0]}", _unknown_key(unknown[0], known[op]))
    source = args.get("source")
    var = re.fullmatch(r"\$(\$\$)?([A-Z_][A-Z0-9_]*)", source) if isinstance(source, str) else None
    if var is None or var.group(2) not in names:
        raise RuleError(
            f"{path}.source",
            f"expected a captured metavariable ($NAME) or another transform, got {source!r}",
        )
    name = var.group(2)
    if op == "substring":
        bounds = [args.get("startChar"), args.get("endChar")]
        for key, value in zip(("startChar", "endChar"), bounds, strict=True):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise RuleError(f"{path}.{key}", "expected an integer (negative: from the end)")
        return Transform(op, name, start=bounds[0], end=bounds[1])
    if op == "replace":
        if not isinstance(args.get("by"), str):
            raise RuleError(f"{path}.by", "required: the replacement text")
        regex = _regex(args.get("replace"), f"{path}.replace")
        return Transform(op, name, regex=regex, by=_rust_replacement(args["by"]))
    if op == "rewrite":
        ids = args.get("rewriters")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            raise RuleError(f"{path}.rewriters", "required: a list of rewriter ids")
        join_by = args.get("joinBy")
        if join_by is not None and not isinstance(join_by, str):
            raise RuleError(f"{path}.joinBy", "expected a string put between the rewrites")
        return Transform(op, name, rewriters=tuple(ids), join_by=join_by)
    to_case = args.get("toCase")
    if to_case not in CASES:
        raise RuleError(f"{path}.toCase", f"expected one of {', '.join(CASES)}")
    seps = args.get("separatedBy", list(SEPARATORS))
    if not isinstance(seps, list) or any(s not in SEPARATORS for s in seps):
        raise RuleError(f"{path}.separatedBy", f"expected a list of {', '.join(SEPARATORS)}")
    return Transform(op, name, to_case=to_case, separators=tuple(seps))


# Read with the linear engine: these scan text the model wrote, and with Python's `re` their
# runs of `\s*` around optional parts backtrack cubically (2,000 spaces: 26 s).
_STRING_FORM = linear.compile(r"(?s)\s*(\w+)\s*\(\s*(\$[$\w]*)\s*(.*?)\s*\)\s*")
_STRING_FORM_KEY = linear.compile(r"\s*(\w+)\s*=\s*")
_SINGLE_QUOTED = linear.compile(r"'((?:[^']|'')*)'")
_DOUBLE_QUOTED = linear.compile(r'(?s)"((?:[^"\\]|\\.)*)"')
_AN_PLUS_B = linear.compile(r"\s*(?:([+-]?\d*)\s*n)?\s*(?:([+-])\s*(\d+))?\s*")


def _parse_transform_string(text: str, path: str) -> tuple[str, dict[str, Any]]:
    """ast-grep's string form, `op($SOURCE, key=value, ...)`, as (op, arguments).

    A value is quoted (`'…'` with `''` for a quote, or `"…"` with backslash escapes), a list
    (`[a, 'b']`), or bare up to the next comma (a number for startChar/endChar).
    """
    form = "expected `op($SOURCE, key=value, …)`, e.g. `replace($A, replace='^_', by='')`"
    m = _STRING_FORM.fullmatch(text)
    if m is None:
        raise RuleError(path, f"{form}; got {text!r}")
    op, source, rest = m.groups()
    args: dict[str, Any] = {"source": source}
    pos = 0
    while pos < len(rest):
        if rest[pos] == ",":
            pos += 1
        key_match = _STRING_FORM_KEY.match(rest, pos)
        if key_match is None:
            if not rest[pos:].strip():
                break
            raise RuleError(path, f"{form}; cannot read {rest[pos:]!r}")
        key = key_match.group(1)
        pos = key_match.end()
        value, pos = _string_form_value(rest, pos, f"{path}.{key}")
        if key in args:
            raise RuleError(f"{path}.{key}", "given twice")
        if key in ("startChar", "endChar") and isinstance(value, str):
            if not re.fullmatch(r"[+-]?\d+", value):
                raise RuleError(f"{path}.{key}", f"expected an integer, got {value!r}")
            value = int(value)
        args[key] = value
        pos = len(rest) - len(rest[pos:].lstrip())
        if pos < len(rest) and rest[pos] != ",":
            raise RuleError(path, f"{form}; expected `,` before {rest[pos:]!r}")
    return op, args


def _string_form_value(text: str, pos: int, path: str) -> tuple[Any, int]:
    """One value of the string form starting at `pos`: (value, position after it)."""
    if pos >= len(text):
        raise RuleError(path, "a value is missing after `=`")
    first = text[pos]
    if first == "[":
        close = text.find("]", pos)
        if close < 0:
            raise RuleError(path, "a list is not closed with `]`")
        items = [i.strip() for i in text[pos + 1 : close].split(",")]
        return [_unquote(i, path) for i in items if i], close + 1
    if first == "'":
        m = _SINGLE_QUOTED.match(text, pos)
        if m is None:
            raise RuleError(path, "a quoted value is not closed with `'`")
        return m.group(1).replace("''", "'"), m.end()
    if first == '"':
        m = _DOUBLE_QUOTED.match(text, pos)
        if m is None:
            raise RuleError(path, 'a quoted value is not closed with `"`')
        return _unquote(m.group(0), path), m.end()
    end = text.find(",", pos)
    end = len(text) if end < 0 else end
    return text[pos:end].strip(), end


def _unquote(item: str, path: str) -> str:
    if item.startswith("'") and item.endswith("'") and len(item) >= 2:
        return item[1:-1].replace("''", "'")
    if item.startswith('"'):
        try:
            value = json.loads(item)
        except ValueError:
            raise RuleError(path, f"cannot read the quoted value {item}") from None
        if isinstance(value, str):
            return value
    return item


# -- compiling -------------------------------------------------------------------------------


class _Compiler:
    def __init__(self, grammar: Grammar, strictness: str, utils: Mapping[str, str]) -> None:
        self.grammar = grammar
        self.strictness = strictness
        self.utils = utils  # a name `matches` may use -> its key in the compiled utils
        self.patterns: list[CompiledPattern] = []
        self.written = [0]  # rule objects compiled, shared with the scoped compilers
        self.depth = 0
        lang = grammar.ts_language
        self.kinds: dict[str, set[int]] = {}
        for i, name in enumerate(grammar.kind_names):
            if lang.node_kind_is_visible(i):
                self.kinds.setdefault(name, set()).add(i)
        fields = (lang.field_name_for_id(i) for i in range(1, lang.field_count + 1))
        self.fields = {f for f in fields if f is not None}

    def scoped(self, utils: Mapping[str, str]) -> _Compiler:
        """A compiler for a rewriter: its own utilities beside the rule's, its own patterns."""
        child = object.__new__(_Compiler)
        child.__dict__.update(self.__dict__)
        child.utils = {**self.utils, **utils}
        child.patterns = []
        return child

    def rule(self, raw: Any, path: str) -> Rule:
        self.written[0] += 1
        if self.written[0] > MAX_RULE_NODES:
            raise RuleError(path, f"the rule holds more than {MAX_RULE_NODES} rule objects")
        if self.depth >= MAX_RULE_DEPTH:
            raise RuleError(path, f"rule objects nest deeper than {MAX_RULE_DEPTH} levels")
        self.depth += 1
        try:
            return self._rule(raw, path)
        finally:
            self.depth -= 1

    def _rule(self, raw: Any, path: str) -> Rule:
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
            if not isinstance(name, str) or name not in self.utils:
                known = listing(sorted(self.utils), empty="none are defined", quote=False)
                raise RuleError(
                    f"{path}.matches",
                    f"unknown utility rule {truncate(str(name), LISTED_NAME_CHARS)!r} "
                    f"(utils: {known})",
                )
            out["matches"] = self.utils[name]
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
                compiled = _select(compiled, selector, f"{path}.selector", self.grammar)
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
            advice = self.grammar.kind_hints.get(raw)
            if advice is not None:
                raise RuleError(path, f'unknown kind "{raw}" for {self.grammar.id}: {advice}')
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
        m = _AN_PLUS_B.fullmatch(position)
        if not position.strip() or m is None:
            raise RuleError(
                path,
                f"expected a number or An+B (`2n+1`, `-n+3`), got {truncate(repr(position), 80)}",
            )
        a_text, sign, b_text = m.groups()
        if any(len((t or "").lstrip("+-")) > MAX_NTH_DIGITS for t in (a_text, b_text)):
            raise RuleError(
                path,
                f"a number of more than {MAX_NTH_DIGITS} digits in {truncate(repr(position), 80)}",
            )
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
            raise RuleError(path, f"expected a number or An+B, got {truncate(repr(position), 80)}")
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
    return (
        f"unknown key; {hint}known: {', '.join(known)} (ast-grep ignores a key it does not "
        "know; tether refuses it, so that a typo does not silently search for something else)"
    )


def _regex(raw: Any, path: str) -> linear.Regex[str]:
    if not isinstance(raw, str):
        raise RuleError(path, "expected a regular expression string")
    try:
        return linear.compile(raw)
    except linear.RegexError as exc:
        raise RuleError(path, str(exc)) from None


def _wrapped(compiled: CompiledPattern, selector: str, grammar: Grammar) -> PItem | None:
    """The context's pattern inside the node of kind `selector` that the reading dropped as a
    wrapper (`$A = $B` is an `expression_statement` around an assignment): that node, when the
    context read in its rung has one spanning exactly the fragment."""
    from tether_astgrep.pattern import placeholders_for

    scaffold = next((sc for sc in grammar.scaffolds if sc.rung == compiled.rung), None)
    if scaffold is None or len(compiled.items) != 1:
        return None
    substituted, _ = placeholders_for(compiled.source, "", None, grammar.metavar_template)
    parser = grammar.parser()
    for terminator in scaffold.terminators:
        body = "\n".join(scaffold.indent + line for line in (substituted + terminator).split("\n"))
        start = len((scaffold.prefix + scaffold.indent).encode())
        end = len((scaffold.prefix + body).encode())
        tree = parser.parse((scaffold.prefix + body + scaffold.suffix).encode())
        if tree.root_node.has_error:
            continue
        node = tree.root_node.descendant_for_byte_range(start, end - len(terminator))
        while node is not None and node.start_byte == start:
            if node.type == selector and node.end_byte <= end:
                return PNode(selector, True, None, compiled.items)
            node = node.parent
    return None


def _select(
    compiled: CompiledPattern, selector: str, path: str, grammar: Grammar | None = None
) -> CompiledPattern:
    """The first node of kind `selector` in the context's pattern tree, as the pattern (or the
    wrapper of that kind the reading dropped around it)."""
    stack: list[PItem] = list(reversed(compiled.items))
    wrapper = None
    if grammar is not None and not any(selector == k for k in _kinds(compiled.items)):
        wrapper = _wrapped(compiled, selector, grammar)
    if wrapper is not None:
        stack = [wrapper]
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


def _kinds(items: tuple[PItem, ...]) -> Iterator[str]:
    for item in items:
        if isinstance(item, PNode):
            yield item.kind
            yield from _kinds(item.children)


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


def _split_config(raw: Mapping[str, Any], *, edit: bool) -> tuple[Any, str, Mapping[str, Any]]:
    """The rule body, its argument path and the config around it (`{}` for a bare rule
    object), once the config's keys are checked."""
    if "rule" in raw:
        for key in raw:
            if key in SCAN_KEYS:
                raise RuleError(f"rule.{key}", f"not supported: {SCAN_KEYS[key]}")
            if key not in CONFIG_KEYS:
                raise RuleError(f"rule.{key}", _unknown_key(key, CONFIG_KEYS))
        body, base = raw["rule"], "rule.rule"
        config = raw
    else:
        body, base, config = raw, "rule", {}
    if not edit:
        for key, why in (
            ("fix", "only ast_edit rewrites; ast_grep searches"),
            ("rewriters", "only ast_edit uses them (in a transform); ast_grep searches"),
        ):
            if config.get(key) is not None:
                raise RuleError(f"rule.{key}", why)
    return body, base, config


def _check_rewriter_names(
    transforms: Mapping[str, Transform], rewriters: Mapping[str, Rewriter]
) -> None:
    """Every `rewrite` transform (the rule's and the rewriters') names a defined rewriter."""
    tables = [
        ("rule", transforms),
        *((f"rewriter {r.id}", r.transforms) for r in rewriters.values()),
    ]
    for where, table in tables:
        for name, t in table.items():
            missing = [i for i in t.rewriters if i not in rewriters]
            if missing:
                known = listing(rewriters, empty="none are defined", quote=False)
                raise RuleError(
                    _transform_path(where, name) + ".rewriters",
                    f"unknown rewriter {truncate(missing[0], LISTED_NAME_CHARS)!r} "
                    f"(rewriters: {known})",
                )


def _check_expansion(rules: Mapping[str, Rule], utils: Mapping[str, Rule]) -> None:
    """Each of `rules` (by argument path), its utilities inlined where `matches` uses them, is
    at most MAX_RULE_NODES rule objects and MAX_RULE_DEPTH levels deep: what matching it costs
    at one node. Each utility is measured once, so a diamond of utilities (each using the next
    twice: 2**51 objects from 51) is refused at once; a utility reached again through itself
    (recursion through a relation, which moves through the tree) counts one object there."""
    measured: dict[str, tuple[int, int]] = {}
    active: set[str] = set()

    def util(name: str, path: str, depth: int) -> tuple[int, int]:
        if name in measured:
            return measured[name]
        if name in active:
            return 1, 1
        active.add(name)
        found = measure(utils[name], path, depth)
        active.discard(name)
        measured[name] = found
        return found

    def measure(rule: Rule, path: str, depth: int) -> tuple[int, int]:
        if depth > MAX_RULE_DEPTH:
            raise RuleError(
                path,
                f"nests deeper than {MAX_RULE_DEPTH} levels, counting the utilities `matches` "
                "brings in",
            )
        parts: list[Rule] = [*(rule.all or ()), *(rule.any or ())]
        if rule.not_ is not None:
            parts.append(rule.not_)
        for rel in (rule.inside, rule.has, rule.follows, rule.precedes):
            if rel is not None:
                parts.append(rel.rule)
                if isinstance(rel.stop, Rule):
                    parts.append(rel.stop)
        if rule.nth is not None and rule.nth.of_rule is not None:
            parts.append(rule.nth.of_rule)
        size, deepest = 1, 0
        for part in parts:
            part_size, part_depth = measure(part, path, depth + 1)
            size, deepest = size + part_size, max(deepest, part_depth)
        if rule.matches is not None:
            used_size, used_depth = util(rule.matches, path, depth + 1)
            size, deepest = size + used_size, max(deepest, used_depth)
        if size > MAX_RULE_NODES:
            raise RuleError(
                path,
                f"expands to more than {MAX_RULE_NODES} rule objects, counting a utility's "
                "whole rule each time `matches` uses it",
            )
        return size, deepest + 1

    for name in utils:
        util(name, _util_path(name), 1)
    for path, rule in rules.items():
        measure(rule, path, 1)


def _util_path(name: str) -> str:
    rid, _, own = name.partition("/")
    return f"rule.rewriters[{rid}].utils.{own}" if own else f"rule.utils.{name}"


def _check_util_cycles(utils: Mapping[str, Rule]) -> None:
    """No utility matches itself on the same node (it would recurse forever)."""
    for name in utils:
        cycle = _direct_cycle(name, utils, (name,))
        if cycle:
            raise RuleError(
                f"rule.utils.{name}",
                "matches itself on the same node (" + " -> ".join(cycle) + "); a utility may "
                "recurse only through a relation (inside, has, follows, precedes)",
            )


def rule_object(raw: str | Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The ``rule`` argument as an object: given as one, or as YAML or JSON text (ast-grep's
    own rule files are YAML; a client whose schema dialect has no free-form object, Gemini's,
    sends text). A text that is not a YAML mapping is an error naming ``rule``."""
    if raw is None or isinstance(raw, Mapping):
        return raw
    import yaml

    import tether

    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise tether.ArgumentError("rule", f"not valid YAML or JSON{at}: {problem}") from None
    if not isinstance(value, Mapping):
        raise tether.ArgumentError(
            "rule",
            f"expected a rule object (a mapping, as YAML or JSON text), got "
            f"{type(value).__name__ if value is not None else 'nothing'}",
        )
    return value


def compile_rule(
    raw: Mapping[str, Any], grammar: Grammar, strictness: str = "smart", *, edit: bool = False
) -> CompiledRule:
    """Compile the `rule` argument: a rule object, or an ast-grep rule config
    (`{"rule": …, "constraints": …, "utils": …, "transform": …, "fix": …, "rewriters": …}`)."""
    body, base, config = _split_config(raw, edit=edit)
    utils_raw = config.get("utils", {})
    if not isinstance(utils_raw, Mapping):
        raise RuleError("rule.utils", "expected an object of named rules")
    compiler = _Compiler(grammar, strictness, {name: name for name in utils_raw})
    utils = {name: compiler.rule(r, f"rule.utils.{name}") for name, r in utils_raw.items()}
    rule = compiler.rule(body, base)
    constraints = _constraints(compiler, config, "rule", utils)
    names = frozenset(v for p in compiler.patterns for v in p.var_names)
    transforms = _transforms(config.get("transform", {}), names, edit)
    fix, expand_start, expand_end = _fix(compiler, config.get("fix"), "rule.fix")
    rewriters = _rewriters(compiler, config.get("rewriters"), names, frozenset(transforms), utils)
    _check_rewriter_names(transforms, rewriters)
    _check_expansion(
        _top_rules(base, rule, constraints, rewriters, expand_start, expand_end), utils
    )
    _check_util_cycles(utils)
    _check_positive(base, rule, utils)
    return CompiledRule(
        source=json.dumps(raw, sort_keys=True),
        grammar_id=grammar.id,
        rule=rule,
        utils=utils,
        constraints=constraints,
        interpretation=_rule_interpretation(body, compiler.patterns),
        literals=tuple(sorted(_required_literals(rule, utils, frozenset()))),
        var_names=names | frozenset(transforms),
        fix=fix,
        transforms=transforms,
        expand_start=expand_start,
        expand_end=expand_end,
        rewriters=rewriters,
    )


def _top_rules(
    base: str,
    rule: Rule,
    constraints: Mapping[str, Rule],
    rewriters: Mapping[str, Rewriter],
    expand_start: Relation | None,
    expand_end: Relation | None,
) -> dict[str, Rule]:
    """Every rule of a config that is not a utility, by its path in the config."""
    return {
        base: rule,
        **{f"rule.constraints.{k}": r for k, r in constraints.items()},
        **{f"rule.rewriters[{k}].rule": r.rule for k, r in rewriters.items()},
        **{
            f"rule.rewriters[{k}].constraints.{c}": cr
            for k, r in rewriters.items()
            for c, cr in r.constraints.items()
        },
        **{
            f"rule.fix.{key}": rel.rule
            for key, rel in (("expandStart", expand_start), ("expandEnd", expand_end))
            if rel is not None
        },
    }


def _check_positive(base: str, rule: Rule, utils: Mapping[str, Rule]) -> None:
    """Refuse a rule with nothing to find nodes by (it would test every node)."""
    if not _is_positive(rule, utils, frozenset()):
        raise RuleError(
            base,
            "needs a positive part: a pattern or a kind (directly, in all, or in every any "
            "branch); regex, nthChild, range, not and relations alone would test every node",
        )


def _rule_interpretation(body: Any, patterns: list[CompiledPattern]) -> str:
    """How the rule reads: its top-level keys, then how each of its patterns reads."""
    what = ", ".join(k for k in RULE_KEYS if k in body) if isinstance(body, Mapping) else ""
    return f"rule ({what})" + (
        "; patterns read as " + "; ".join(p.interpretation for p in patterns) if patterns else ""
    )


def _transform_path(where: str, name: str) -> str:
    if where == "rule":
        return f"rule.transform.{name}"
    return f"rule.rewriters[{where.removeprefix('rewriter ')}].transform.{name}"


def _constraints(
    compiler: _Compiler, config: Mapping[str, Any], base: str, utils: Mapping[str, Rule]
) -> dict[str, Rule]:
    """The `constraints` table; each name must be a metavariable of the rule's patterns."""
    raw = config.get("constraints", {})
    if not isinstance(raw, Mapping):
        raise RuleError(f"{base}.constraints", "expected an object: metavariable name -> rule")
    constraints = {
        name.lstrip("$"): compiler.rule(r, f"{base}.constraints.{name}") for name, r in raw.items()
    }
    names = frozenset(v for p in compiler.patterns for v in p.var_names)
    for name in constraints:
        if name not in names:
            raise RuleError(
                f"{base}.constraints.{name}", f"${name} is not a metavariable of any pattern"
            )
    return constraints


def _fix(
    compiler: _Compiler, raw: Any, path: str
) -> tuple[str | None, Relation | None, Relation | None]:
    """A `fix`: a template string, or an object {template, expandStart, expandEnd, title}
    whose expansions grow the replaced range to the nearest sibling each matches."""
    if raw is None or isinstance(raw, str):
        return raw, None, None
    if isinstance(raw, list):
        raise RuleError(
            path,
            "a list of fixes offers alternatives for an editor to pick from; ast_edit applies "
            "one: give a template string or one {template, expandStart, expandEnd} object",
        )
    if not isinstance(raw, Mapping):
        raise RuleError(path, "expected a template string or {template, expandStart, expandEnd}")
    unknown = [k for k in raw if k not in FIX_KEYS]
    if unknown:
        raise RuleError(f"{path}.{unknown[0]}", _unknown_key(unknown[0], FIX_KEYS))
    template = raw.get("template")
    if not isinstance(template, str):
        raise RuleError(f"{path}.template", "required: the template string")
    if raw.get("title") is not None and not isinstance(raw["title"], str):
        raise RuleError(f"{path}.title", "expected a string")
    start = end = None
    if raw.get("expandStart") is not None:
        start = compiler.relation(raw["expandStart"], f"{path}.expandStart", "expandStart")
    if raw.get("expandEnd") is not None:
        end = compiler.relation(raw["expandEnd"], f"{path}.expandEnd", "expandEnd")
    return template, start, end


def _rewriters(
    compiler: _Compiler,
    raw: Any,
    upper: frozenset[str],
    upper_transforms: frozenset[str],
    utils: dict[str, Rule],
) -> dict[str, Rewriter]:
    """The `rewriters` list: each a rule config with an `id` and a `fix`, whose matches
    inherit the enclosing rule's metavariables (`upper`, which its fix may use too)."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise RuleError("rule.rewriters", "expected a list of rewriters {id, rule, fix, …}")
    out: dict[str, Rewriter] = {}
    for i, item in enumerate(raw):
        rid = _rewriter_id(item, f"rule.rewriters[{i}]", out)
        language = item.get("language")
        if language is not None and (
            not isinstance(language, str) or language.lower() != compiler.grammar.id
        ):
            raise RuleError(
                f"rule.rewriters[{i}].language",
                f"{language!r} is not the language searched ({compiler.grammar.id}); a "
                "rewriter applies to the rule's own matches, in its language",
            )
        out[rid] = _rewriter(compiler, item, rid, upper, upper_transforms, utils)
    return out


def _rewriter_id(item: Any, path: str, seen: Mapping[str, Rewriter]) -> str:
    """A rewriter's `id`, once its keys are checked (`path` names it by position)."""
    if not isinstance(item, Mapping):
        raise RuleError(path, "expected a rewriter object {id, rule, fix, …}")
    unknown = [k for k in item if k not in REWRITER_KEYS]
    if unknown:
        raise RuleError(f"{path}.{unknown[0]}", _unknown_key(unknown[0], REWRITER_KEYS))
    rid = item.get("id")
    if not isinstance(rid, str) or not rid:
        raise RuleError(f"{path}.id", "required: the name `rewrite` refers to")
    if rid in seen:
        raise RuleError(f"{path}.id", f"{rid!r} is defined twice")
    return rid


def _rewriter(
    compiler: _Compiler,
    item: Mapping[str, Any],
    rid: str,
    upper: frozenset[str],
    upper_transforms: frozenset[str],
    utils: dict[str, Rule],
) -> Rewriter:
    """One rewriter `rid`: its own utils (added to `utils`), rule, constraints, transforms, fix."""
    path = f"rule.rewriters[{rid}]"
    if "rule" not in item:
        raise RuleError(f"{path}.rule", "required: the rule a node must match")
    if item.get("fix") is None:
        raise RuleError(f"{path}.fix", "required: what a matching node is rewritten to")
    own_raw = item.get("utils", {})
    if not isinstance(own_raw, Mapping):
        raise RuleError(f"{path}.utils", "expected an object of named rules")
    scope = {name: f"{rid}/{name}" for name in own_raw}
    sub = compiler.scoped(scope)
    for name, r in own_raw.items():
        utils[scope[name]] = sub.rule(r, f"{path}.utils.{name}")
    # no positive part needed: a rewriter is tried only on the nodes under a capture
    rule = sub.rule(item["rule"], f"{path}.rule")
    constraints = _constraints(sub, item, path, utils)
    names = frozenset(v for p in sub.patterns for v in p.var_names)
    transforms = _transforms(item.get("transform", {}), names | upper, True, path)
    fix, start, end = _fix(sub, item["fix"], f"{path}.fix")
    assert fix is not None
    known = names | upper | frozenset(transforms)
    unbound = [v for v in template_vars(fix) if v not in known]
    if unbound and unbound[0] in upper_transforms:
        # ast-grep accepts it and inserts nothing: a rewriter runs before the rule's
        # transforms are all computed, with the rule's captures only
        raise RuleError(
            f"{path}.fix",
            f"uses ${unbound[0]}, a transform of the rule; a rewriter sees the rule's "
            "captures, not its transforms (transform the capture in the rewriter)",
        )
    if unbound:
        raise RuleError(
            f"{path}.fix",
            f"uses ${unbound[0]}, which neither this rewriter nor the rule binds",
        )
    return Rewriter(rid, rule, constraints, transforms, fix, start, end)


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
        c = self.compiled
        made = [
            self._build(node, env, env, c.transforms, c.expand_start, c.expand_end, f)
            for node, env in built
        ]
        return made, len(out)

    # Building a match: its captures, transforms and the range its fix replaces -------------

    def _build(
        self,
        node: ts.Node,
        env: Env,
        enclosing: Env,
        transforms: Mapping[str, Transform],
        expand_start: Relation | None,
        expand_end: Relation | None,
        f: _File,
    ) -> Match:
        caps: dict[str, tuple[int, int]] = {}
        for name, value in env.items():
            if isinstance(value, list):
                caps[name] = (
                    _run_span(value, self.grammar.list_comma_ids, (node.start_byte, node.end_byte))
                    if value
                    else (-1, -1)
                )
            else:
                caps[name] = (value.start_byte, value.end_byte)
        start: tuple[int, int] = tuple(node.start_point)  # type: ignore[assignment]
        end: tuple[int, int] = tuple(node.end_point)  # type: ignore[assignment]
        # ast-grep's fix object: the replaced range grows to the nearest sibling before
        # (expandStart) or after (expandEnd) that matches, searched as follows/precedes search
        edit_start = edit_end = -1
        if expand_start is not None:
            for other in self._follows(expand_start, node, f):
                if self._match(expand_start.rule, other, env, f) is not None:
                    edit_start = other.start_byte
                    break
        if expand_end is not None:
            for other in self._precedes(expand_end, node, f):
                if self._match(expand_end.rule, other, env, f) is not None:
                    edit_end = other.end_byte
                    break
        if not transforms:
            return Match(node.start_byte, node.end_byte, start, end, caps, edit_start, edit_end)
        texts = self._texts(transforms, env, enclosing, f)
        return RuleMatch(
            node.start_byte, node.end_byte, start, end, caps, edit_start, edit_end, texts=texts
        )

    def _texts(
        self, transforms: Mapping[str, Transform], env: Env, enclosing: Env, f: _File
    ) -> dict[str, bytes]:
        """Each transform's text, in dependency order. A transform of a multi-line capture is
        de-indented like the capture (its lines relative to the capture's line), as ast-grep
        does; `render` indents it again where it lands."""
        texts: dict[str, bytes] = {}
        for name, t in transforms.items():
            value = env.get(t.source)
            if t.source in texts:
                text, anchor = texts[t.source], None
            elif value is None or (isinstance(value, list) and not value):
                text, anchor = b"", None
            else:
                a, b = (
                    _run_span(value)
                    if isinstance(value, list)
                    else (value.start_byte, value.end_byte)
                )
                text, anchor = f.source[a:b], a
            if t.op == "rewrite":
                out = self._rewrite(t, value, env, enclosing, f) if anchor is not None else b""
            else:
                out = t.apply(text.decode("utf-8", "replace")).encode()
            if anchor is not None and b"\n" in out:
                out = _deindent(out, _indent_width(f.source, anchor))
            texts[name] = out
        return texts

    def _rewrite(self, t: Transform, value: Any, env: Env, enclosing: Env, f: _File) -> bytes:
        """ast-grep's `rewrite`: every node under the source (itself first, then in document
        order) is tried with each rewriter in turn, the first that matches rewrites it; an
        edit inside one already made is dropped (the outer node wins). Without `joinBy` the
        edits are spliced into the source's text; with it, only the rewrites, joined."""
        nodes: list[ts.Node] = value if isinstance(value, list) else [value]
        rewriters = [self.compiled.rewriters[i] for i in t.rewriters]
        edits: list[tuple[int, int, bytes]] = []
        for top in nodes:
            for node in _walk(top):
                for rw in rewriters:
                    # the rewriter's captures start from the enclosing rule's (a name bound
                    # there must capture the same code here); they are not passed further down
                    found = self._match(rw.rule, node, dict(enclosing), f)
                    if found is None or not self._constrained(found, f, rw.constraints):
                        continue
                    m = self._build(
                        node, found, enclosing, rw.transforms, rw.expand_start, rw.expand_end, f
                    )
                    a = m.edit_start if m.edit_start >= 0 else m.start_byte
                    b = m.edit_end if m.edit_end >= 0 else m.end_byte
                    edits.append((a, b, render(rw.fix, m, f.source, f.tree, self.grammar)))
                    break
        start, stop = nodes[0].start_byte, nodes[-1].end_byte
        out: list[bytes] = []
        pos = start
        for a, b, text in edits:
            if a < pos and (t.join_by is None or out):
                continue  # inside (or overlapping) an edit already made
            if t.join_by is None:
                out.append(f.source[pos:a])
            elif out:
                out.append(t.join_by.encode())
            out.append(text)
            pos = b
        if t.join_by is None:
            out.append(f.source[pos:stop])
        return b"".join(out)

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

    def _constrained(
        self, env: Env, f: _File, constraints: Mapping[str, Rule] | None = None
    ) -> bool:
        table = self.compiled.constraints if constraints is None else constraints
        for name, rule in table.items():
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
        if rule.regex is not None and not rule.regex.matches(
            f.source[node.start_byte : node.end_byte]
        ):
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


def _indent_width(source: bytes, offset: int) -> int:
    """The spaces that begin the line holding `offset` (ast-grep counts spaces only)."""
    line = source[source.rfind(b"\n", 0, offset) + 1 : offset]
    return len(line) - len(line.lstrip(b" "))


def _deindent(text: bytes, width: int) -> bytes:
    """`text` with `width` leading spaces taken off each line after the first that has them."""
    if not width:
        return text
    pad = b" " * width
    first, *rest = text.split(b"\n")
    return b"\n".join([first, *(line.removeprefix(pad) for line in rest)])


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

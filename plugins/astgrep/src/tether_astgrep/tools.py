"""The three tools: `ast_grep` (read), `ast_edit` and `resolve` (write)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import attrs

import tether
from tether.budget import narrower_path
from tether.contributions import collect
from tether.resources import ResourceKey
from tether.text import duration, plural, show_path, shown_note, truncate
from tether.workdir.writing import FileChange, StaleFiles, apply_changes_async
from tether_astgrep.config import AstgrepConfig
from tether_astgrep.grammars import Grammar, GrammarRegistry
from tether_astgrep.service import AstgrepService, SearchOutcome, StagedEdit

if TYPE_CHECKING:
    from tether_astgrep.engine import FileResult

#: the run resource this plugin wires: grammars, the search engine and the staged edits
RESOURCE: ResourceKey[AstgrepService] = ResourceKey("astgrep_service", AstgrepService)
Strictness = Literal["cst", "smart", "ast", "signature"]
STRICTNESS_DOC = (
    "How much of the code the pattern must account for. smart (default): keywords, modifiers "
    "and trailing clauses the pattern does not mention are allowed (`if $C: $$$B` also finds "
    "ifs with elif/else, `function $F() {}` also `async function`); cst: every child counts "
    "(an if without else finds only ifs without else); ast: the pattern's own keywords and "
    "punctuation may differ too (`const $X = 1` also finds `let x = 1`); signature: like ast, "
    "and names and literals compare by kind only (`foo(1)` also finds `bar(2)`)"
)
MATCH_TEXT_CHARS = 400
CAPTURE_CHARS = 200


def make_service(run: tether.Run) -> AstgrepService:
    config = run.config("astgrep", AstgrepConfig)
    registry = GrammarRegistry()
    # The core's collector: a malformed grammar or a second one with a taken id is dropped and
    # its plugin reported (naming the holder); every other grammar keeps working.
    found = collect(
        run.pm,
        "tether_astgrep_grammars",
        Grammar,
        key=lambda grammar: grammar.id,
        label="grammar",
        check=_grammar_problem,
    )
    for contribution in found.values():
        registry.add(contribution.item, origin=contribution.plugin)
    # git runs as the run's child; the forked workers are the run's process owner's to kill
    # if the service could not stop them itself
    return AstgrepService(
        run.workdir,
        registry,
        config,
        run.run_command,
        on_worker_start=run.adopt_pid,
        on_worker_exit=run.release_pid,
    )


def _grammar_problem(grammar: Grammar) -> str | None:
    if not grammar.scaffolds:
        return f"grammar {grammar.id!r} has an empty scaffold ladder"
    return None


# One answer shows at most this many matches (20,000 were 3.6 MB): the rest is counted, and the
# answer says how to get the next page (`offset`).
MAX_RESULTS_CAP = 500


def _service(call: tether.CallContext) -> AstgrepService:
    service = call.run.resource(RESOURCE)
    return service


RULE_DOC = (
    "Instead of pattern: an ast-grep rule, as an object or as YAML/JSON text, e.g. "
    '{"kind": "call", "inside": {"kind": "for_statement", "stopBy": "end"}} (keys: pattern, '
    "kind, regex, nthChild, inside, has, follows, precedes with stopBy and field, all, any, "
    'not, matches), or an ast-grep rule config {"rule": {...}, "constraints": {"X": {...}}, '
    '"utils": {"name": {...}}, "transform": {...}, "rewriters": [...], "fix": "..." or '
    '{"template", "expandStart", "expandEnd"}} (fix, transform, rewriters: ast_edit only)'
)


@attrs.frozen
class AstGrepArgs:
    pattern: str | None = tether.arg(
        None,
        description=(
            "Code with metavariables: $NAME one node, $$$NAME a run of siblings, $_ any node "
            "(exactly one of pattern and rule)"
        ),
    )
    rule: str | dict[str, Any] | None = tether.arg(None, description=RULE_DOC)
    dump: bool = tether.arg(
        False,
        description=(
            "Search nothing: show how the pattern is read (each reading's node tree, the one a "
            "search uses first) and the snippet's syntax tree as a whole file (kinds, fields, "
            "text), to fix a pattern or find kind and field names for a rule"
        ),
    )
    path: str | None = tether.arg(
        None, description="File or directory to search, relative to the workdir; default: all of it"
    )
    language: str | None = tether.arg(
        None,
        # (the run's tool spec says which grammars are installed: `_with_languages`)
        description="Grammar id; inferred from a file path",
    )
    max_results: int = tether.arg(
        50,
        description=(
            f"How many matches to show (at most {MAX_RESULTS_CAP}; `offset` for the next page)"
        ),
        minimum=1,
        maximum=MAX_RESULTS_CAP,
    )
    strictness: Strictness = tether.arg("smart", description=STRICTNESS_DOC)
    offset: int = tether.arg(
        0, description="Matches to skip before the first shown (the next page)", minimum=0
    )


@attrs.frozen
class AstEditArgs:
    pattern: str | None = tether.arg(
        None, description="What to match (same syntax as ast_grep; exactly one of pattern and rule)"
    )
    rewrite: str | None = tether.arg(
        None,
        description=(
            "What to put in its place; $NAME is replaced by its capture (required, unless the "
            "rule config has a fix)"
        ),
    )
    rule: str | dict[str, Any] | None = tether.arg(None, description=RULE_DOC)
    path: str | None = tether.arg(
        None, description="Scope, relative to the workdir; default: all of it"
    )
    language: str | None = tether.arg(None, description="Grammar id; inferred from a file path")
    strictness: Strictness = tether.arg(
        "smart",
        description=(
            "As for ast_grep; code the pattern does not mention before or after the part it "
            "matches (an `else`, an `async`) is kept verbatim"
        ),
    )
    diagnostics: bool = tether.arg(
        True,
        description=(
            "Ask the project's checkers (tether-lsp's language servers) which diagnostics the "
            "edit would introduce, before anything is written; false skips that (seconds per "
            "file on a big project)"
        ),
    )


@attrs.frozen
class ResolveArgs:
    edit_id: str = tether.arg(description='The id from an ast_edit result, e.g. "edit_1"')
    action: Literal["accept", "discard"] = tether.arg(
        description="accept: write every file (all or nothing); discard: drop the staged edit"
    )
    force: bool = tether.arg(
        False,
        description=(
            "accept an edit whose syntax check found new errors (ast_edit named the files); "
            "without it such an edit is refused and stays staged"
        ),
    )


def _header(outcome: SearchOutcome) -> str:
    return f"interpreted as: {outcome.pattern.interpretation}"


def _skips(outcome: SearchOutcome, max_bytes: int) -> str | None:
    if not outcome.skipped:
        return None
    words = {
        "binary": "binary",
        "too large": f"over {max_bytes} bytes",
        "unreadable": "unreadable",
        # what the core's reader refused by kind: never opened
        **{k: f"not regular files ({k})" for k in outcome.skipped if k.startswith("a ")},
    }
    parts = [f"{n} {words.get(k, k)}" for k, n in sorted(outcome.skipped.items())]
    return "skipped files: " + ", ".join(parts)


def _unread_ignores(outcome: SearchOutcome) -> str | None:
    if not outcome.unreadable_ignores:
        return None
    names = outcome.unreadable_ignores
    its = "its" if len(names) == 1 else "their"
    return (
        f"warning: could not read {', '.join(names)}; {its} rules were not applied, "
        "so files meant to be ignored may be included"
    )


def installed_grammars(run: tether.Run) -> list[str]:
    """The ids of the grammars the run's plugins contribute whose package is installed,
    without importing any grammar (a lazy grammar's module is looked up, not loaded)."""
    import importlib.util

    from tether_astgrep.grammars import LazyLanguage

    ids = []
    for contributed in run.pm.hook.tether_astgrep_grammars():
        for grammar in contributed or ():
            if not isinstance(grammar, Grammar):
                continue
            language = grammar.language
            if isinstance(language, LazyLanguage):
                try:
                    if importlib.util.find_spec(language.module) is None:
                        continue
                except (ImportError, ValueError):
                    continue
            ids.append(grammar.id)
    return sorted(set(ids))


def _with_languages(args: type, ids: list[str]) -> type:
    """`args` whose `language` description lists the installed grammars."""
    described = (
        f"Grammar id, one of: {', '.join(ids)} (installed here); inferred from a file path"
        if ids
        else "Grammar id; inferred from a file path (no grammar is installed)"
    )

    @attrs.frozen
    class WithLanguages(args):
        language: str | None = tether.arg(None, description=described)

    WithLanguages.__name__ = WithLanguages.__qualname__ = args.__name__
    WithLanguages.__doc__ = args.__doc__
    return WithLanguages


def _rule_object(raw: str | dict[str, Any] | None) -> Any:
    from tether_astgrep.rules import rule_object  # the rule engine loads on a rule's first use

    return rule_object(raw)


def _one_of(pattern: str | None, rule: str | dict[str, Any] | None) -> None:
    if (pattern is None) == (rule is None):
        why = "both were given" if pattern is not None else "neither was given"
        raise tether.ArgumentError(
            "rule" if pattern is not None else "pattern",
            f"takes exactly one of pattern (code with metavariables) and rule (an ast-grep "
            f"rule object); {why}",
        )


async def handle_ast_grep(call: tether.CallContext, args: AstGrepArgs) -> tether.ToolResult:
    service = _service(call)
    if args.dump:
        return _dump(service, args)
    _one_of(args.pattern, args.rule)
    outcome = await service.search(
        args.pattern,
        args.path,
        args.language,
        strictness=args.strictness,
        max_results=args.offset + args.max_results,
        rule=_rule_object(args.rule),
    )
    # Only the first offset + max_results matches were built; the rest are counts.
    shown = [(r, m) for r in outcome.files for m in r.matches][args.offset :]
    total = outcome.total
    files_with = sum(1 for r in outcome.files if r.count)
    lines = [
        f"{plural(total, 'match')} in {plural(files_with, 'file')} "
        f"({outcome.searched} {outcome.grammar.id} files searched); " + _header(outcome)
    ]
    note = _page_note(args.offset, len(shown), total)
    structured = _match_lines(shown, lines)
    if note:
        lines.append(note)
    unsearchable_meta = _search_notes(outcome, service.config, lines)
    return tether.ToolResult.text(
        "\n".join(lines),
        total=total,
        shown=len(shown),
        files_done=len(outcome.files),
        files_total=outcome.files_total,
        # the work it took: files parsed, files whose matches an earlier identical search gave
        files_parsed=outcome.parsed,
        files_reused=outcome.reused,
        stopped=outcome.stalled,
        interpreted_as=outcome.pattern.interpretation,
        matches=structured,
        other_readings=[
            {"interpreted_as": what, "matches": n} for what, n in outcome.other_readings
        ],
        unreadable_ignores=outcome.unreadable_ignores,
        unsearchable=unsearchable_meta,
    )


def _page_note(offset: int, shown: int, total: int) -> str | None:
    """What part of the matches the answer shows, and how to ask for the next page."""
    if offset == 0:
        note = shown_note(shown, total)
    elif shown:
        note = f"matches {offset + 1}-{offset + shown} of {total} shown"
    else:
        note = f"no match past offset {offset} ({total} in all)"
    if note and offset + shown < total:
        note += f"; the next page: offset {offset + shown}"
    return note


def _dump(service: AstgrepService, args: AstGrepArgs) -> tether.ToolResult:
    """`dump`: how the snippet parses, and how the pattern reads it."""
    if args.pattern is None:
        raise tether.ArgumentError("pattern", "required with dump: the snippet to show")
    if args.rule is not None:
        raise tether.ArgumentError("rule", "not used with dump; leave it out")
    text, dumped = service.dump(args.pattern, args.language, args.path, args.strictness)
    return tether.ToolResult.text(text, **dumped)


def _match_lines(
    shown: list[tuple[FileResult, tuple[Any, ...]]], lines: list[str]
) -> list[dict[str, Any]]:
    """Each shown match and its captures appended to `lines`; the matches as structured data."""
    structured = []
    for result, (line, col, end_line, end_col, text, caps) in shown:
        lines.append(
            f"{show_path(result.path)}:{line}:{col}: {truncate(text.strip(), MATCH_TEXT_CHARS)}"
        )
        for name, value in caps.items():
            lines.append(f"    ${name} = {truncate(value, CAPTURE_CHARS)}")
        structured.append(
            {
                "path": result.path,
                "line": line,
                "column": col,
                "end_line": end_line,
                "end_column": end_col,
                "text": text,
                "captures": caps,
            }
        )
    return structured


def _search_notes(
    outcome: SearchOutcome, config: AstgrepConfig, lines: list[str]
) -> dict[str, Any]:
    """What a search's answer says after its matches (a stop, other readings, syntax errors,
    what could not be searched or read), appended to `lines`; the unsearchable files' meta."""
    stopped = _stopped(outcome, config.search_timeout_s)
    if stopped:
        lines.append(stopped + "; the matches above are from those files")
    lines.extend(_other_readings(outcome))
    broken = sum(1 for r in outcome.files if r.parse_errors and r.count)
    if broken:
        lines.append(
            f"{broken} files with matches have syntax errors (matched in their well-formed parts)"
        )
    unsearchable, unsearchable_meta = _unsearchable(outcome)
    if unsearchable:
        lines.append(unsearchable)
    skip = _skips(outcome, config.max_file_bytes)
    if skip:
        lines.append(skip)
    unread = _unread_ignores(outcome)
    if unread:
        lines.append(unread)
    return unsearchable_meta


# Files named in the "not searchable" warning; the count covers all of them.
UNSEARCHABLE_SHOWN = 5


def _unsearchable(outcome: SearchOutcome) -> tuple[str | None, dict[str, Any]]:
    """Files with code the grammar could not parse (ERROR regions), where a match may be lost:
    a warning line and `meta["unsearchable"]` ({files, lines, paths: the first few, reread:
    the lines a search read again past the grammar's errors, `recovery.py`})."""
    reread_note, reread = _reread(outcome)
    counted = _files_by_lines(outcome, "unsearchable_lines")
    if counted is None:
        return reread_note, {"files": 0, "lines": 0, "paths": [], "reread": reread}
    where, meta = counted
    line = (
        f"warning: {plural(meta['files'], 'file')} with code the {outcome.grammar.id} grammar "
        f"could not parse: {plural(meta['lines'], 'line')} not searchable, where matches may be "
        f"missing ({where})"
    )
    if reread_note:
        line += "\n" + reread_note
    return line, {**meta, "reread": reread}


def _reread(outcome: SearchOutcome) -> tuple[str | None, dict[str, Any]]:
    """The note on regions the grammar could not parse that the search read again."""
    counted = _files_by_lines(outcome, "reread_lines")
    if counted is None:
        return None, {"files": 0, "lines": 0, "paths": []}
    where, meta = counted
    note = (
        f"note: {plural(meta['lines'], 'line')} the {outcome.grammar.id} grammar could not parse "
        "were searched by reading a keyword as a name, leaving a short run of code or a "
        "misplaced #if line out, or reading the directive lines alone; no "
        f"match that holds or borders code left out is shown ({where})"
    )
    return note, meta


def _files_by_lines(outcome: SearchOutcome, field: str) -> tuple[str, dict[str, Any]] | None:
    """The files with lines counted in `field` ("unsearchable_lines", "reread_lines"): the
    worst few named ("a.kt (3 lines), … and N more") and {files, lines, paths}; None if none."""
    hit = [(getattr(r, field), r.path) for r in outcome.files if getattr(r, field)]
    if not hit:
        return None
    worst = sorted(hit, key=lambda h: (-h[0], h[1]))[:UNSEARCHABLE_SHOWN]
    total = sum(n for n, _ in hit)
    where = ", ".join(f"{path} ({plural(n, 'line')})" for n, path in worst)
    more = f" and {len(hit) - len(worst)} more" if len(hit) > len(worst) else ""
    paths = [{"path": path, "lines": n} for n, path in worst]
    return where + more, {"files": len(hit), "lines": total, "paths": paths}


async def handle_ast_edit(call: tether.CallContext, args: AstEditArgs) -> tether.ToolResult:
    service = _service(call)
    outcome = await _edit_outcome(service, args)
    changed = [r for r in outcome.files if r.new is not None and r.new != r.original]
    replaced = sum(r.replaced for r in changed)
    lossy = [(r.path, n) for r in outcome.files for n in r.lossy_lines]
    lossy_line = _lossy(lossy)
    if not changed:
        raise _nothing_staged(outcome, lossy_line)
    staged = service.stage(outcome)
    lines = [
        f"(proposed) {plural(replaced, 'replacement')} in {plural(len(changed), 'file')}; "
        "nothing written yet: "
        f'call resolve with edit_id "{staged.edit_id}" and action "accept" or "discard"',
        _header(outcome),
    ]
    inner = sum(r.skipped_inner for r in changed)
    if inner:
        lines.append(
            f"{plural(inner, 'inner match')} skipped (an enclosing match is rewritten instead)"
        )
    if lossy_line:
        lines.append(lossy_line)
    kept = [(r.path, n) for r in changed for n in r.kept_lines]
    if kept:
        lines.append(_kept_line(kept))
    dropped = [(r.path, n, text) for r in changed for n, text in r.dropped_comments]
    if dropped:
        lines.append(_dropped_line(dropped))
    broken = [r for r in changed if r.new_error_lines]
    lines.extend(_broken_lines(broken))
    lines.extend(_syntax_summary(changed))
    unsearchable, unsearchable_meta = _unsearchable(outcome)
    if unsearchable:
        lines.append(unsearchable)
    unread = _unread_ignores(outcome)
    if unread:
        lines.append(unread)
    # what the project's checkers (any family answering the core's hook) say the edit would
    # introduce, before resolve writes it; above the diff, which a cap may cut
    checked = await _diagnostics_preview(call, staged, diagnostics=args.diagnostics)
    lines.append(checked.text)
    lines.append(truncate(_diff(changed), service.config.preview_chars))
    return tether.ToolResult.text(
        "\n".join(lines),
        edit_id=staged.edit_id,
        diagnostics_preview=dict(checked.meta),
        replacements=replaced,
        files=[r.path for r in changed],
        new_syntax_errors={r.path: list(r.new_error_lines) for r in broken},
        syntax_checks=_syntax_checks(changed),
        not_rewritten=[{"path": p, "line": n} for p, n in lossy],
        kept_verbatim=[{"path": p, "line": n} for p, n in kept],
        dropped_comments=[{"path": p, "line": n, "text": t} for p, n, t in dropped],
        unsearchable=unsearchable_meta,
        unreadable_ignores=outcome.unreadable_ignores,
    )


async def _edit_outcome(service: AstgrepService, args: AstEditArgs) -> SearchOutcome:
    """The edit's search over every file; a search that stopped stages nothing."""
    _one_of(args.pattern, args.rule)
    outcome = await service.search(
        args.pattern,
        args.path,
        args.language,
        mode="edit",
        rewrite=args.rewrite,
        strictness=args.strictness,
        rule=_rule_object(args.rule),
    )
    stopped = _stopped(outcome, service.config.search_timeout_s)
    if stopped:
        raise tether.ToolError(f"{stopped}; nothing staged (a partial rewrite is never staged)")
    return outcome


async def _diagnostics_preview(
    call: tether.CallContext, staged: StagedEdit, *, diagnostics: bool
) -> tether.ResultNote:
    """What the project's checkers say the staged edit would introduce (unless turned off)."""
    if diagnostics:
        return await call.run.preview_diagnostics(staged_change(staged))
    return tether.ResultNote(text="(no diagnostics preview: the call set diagnostics=false)")


def _nothing_staged(outcome: SearchOutcome, lossy_line: str | None) -> tether.ToolError:
    """The error of an edit no match of which changes anything, with why it may have missed."""
    return tether.ToolError(
        f"nothing staged: no match changes anything in {outcome.searched} "
        f"{outcome.grammar.id} files ({_header(outcome)})"
        + (f"; {lossy_line}" if lossy_line else "")
        + "".join(f"; {line}" for line in _other_readings(outcome))
        + (f"; {_unsearchable(outcome)[0]}" if _unsearchable(outcome)[0] else "")
    )


def _kept_line(kept: list[tuple[str, int]]) -> str:
    where = ", ".join(f"{show_path(p)}:{n}" for p, n in kept[:10])
    more = f" and {len(kept) - 10} more" if len(kept) > 10 else ""
    return (
        "code the pattern does not mention is kept verbatim before or after "
        f"{plural(len(kept), 'rewritten match')} ({where}{more}): check that it still fits"
    )


def _dropped_line(dropped: list[tuple[str, int, str]]) -> str:
    where = ", ".join(f"{p}:{n} {text}" for p, n, text in dropped[:5])
    more = f" and {len(dropped) - 5} more" if len(dropped) > 5 else ""
    return (
        f"warning: the rewrite drops {plural(len(dropped), 'comment')} that no capture it "
        f"uses carries ({where}{more}): capture the code around them, or re-add them"
    )


def _broken_lines(broken: list[FileResult]) -> list[str]:
    """A warning per file the rewrite gives new syntax errors."""
    lines = []
    for r in broken:
        assert r.syntax is not None
        lines.append(
            f"warning: {show_path(r.path)} has new syntax errors after the rewrite "
            f"({r.syntax.check}: {r.syntax.detail})"
        )
    return lines


def _diff(changed: list[FileResult]) -> str:
    """The unified diff of every changed file (each line ending in a newline)."""
    import difflib  # only a preview pays for it

    diff: list[str] = []
    for r in changed:
        assert r.original is not None and r.new is not None
        diff.extend(
            difflib.unified_diff(
                r.original.decode("utf-8", "replace").splitlines(keepends=True),
                r.new.decode("utf-8", "replace").splitlines(keepends=True),
                fromfile=f"a/{show_path(r.path)}",
                tofile=f"b/{show_path(r.path)}",
            )
        )
    return "".join(d if d.endswith("\n") else d + "\n" for d in diff)


def _syntax_checks(changed: list[FileResult]) -> dict[str, dict[str, Any]]:
    """Per changed file, how its new text was checked for syntax and what that found."""
    return {
        r.path: {
            "check": r.syntax.check,
            "new_error_lines": list(r.syntax.new_error_lines),
            "cannot_see": r.syntax.cannot_see,
            "why": r.syntax.why,
        }
        for r in changed
        if r.syntax is not None
    }


def staged_change(staged: StagedEdit) -> tether.StagedChange:
    """A staged edit as the core's staged change, for the diagnostics preview."""
    files = tuple(tether.StagedFile(path, old, new) for path, old, new in staged.changes)
    return tether.StagedChange(files, origin=f"ast_edit {staged.edit_id}")


def _stopped(outcome: SearchOutcome, stall_s: float) -> str | None:
    if not outcome.stalled:
        return None
    return (
        f"stopped after {len(outcome.files)} of {outcome.files_total} files: no search worker "
        f"finished a file for {duration(stall_s)}"
    )


def _other_readings(outcome: SearchOutcome) -> list[str]:
    return [
        f"note: read as {what} it finds {plural(n, 'match')}; write the pattern so that only "
        "that reading parses (e.g. with the code around it) to search that way"
        for what, n in outcome.other_readings
    ]


def _lossy(lossy: list[tuple[str, int]]) -> str | None:
    if not lossy:
        return None
    where = ", ".join(f"{show_path(p)}:{n}" for p, n in lossy[:10])
    more = f" and {len(lossy) - 10} more" if len(lossy) > 10 else ""
    return (
        f"{plural(len(lossy), 'match')} not rewritten ({where}{more}): the code has parts the "
        "pattern does not mention between the parts it does, which the rewrite would drop; "
        "mention them in the pattern, or use strictness cst"
    )


def _syntax_summary(changed: list[FileResult]) -> list[str]:
    """One line per kind of check: which files it covered and what it cannot see."""
    groups: dict[tuple[str, str, str], list[FileResult]] = {}
    for r in changed:
        if r.syntax is not None:
            key = (r.syntax.check, r.syntax.cannot_see, r.syntax.why)
            groups.setdefault(key, []).append(r)
    out = []
    for (check, blind, why), results in groups.items():
        clean = sum(1 for r in results if not r.new_error_lines)
        names = (
            "" if len(results) > 5 else " (" + ", ".join(show_path(r.path) for r in results) + ")"
        )
        if check == "tree-sitter":
            what = f"syntax check: tree-sitter only on {plural(len(results), 'file')}{names}: "
            bad = len(results) - clean
            what += "no new ERROR nodes" if not bad else f"new ERROR nodes in {bad}"
            what += f"; it cannot see {blind}"
            if why:
                what += f"; {why}"
        else:
            what = f"syntax check: {check} on {plural(len(results), 'file')}{names}: "
            bad = len(results) - clean
            what += "no new errors" if not bad else f"new errors in {bad}"
        out.append(what)
    return out


#: what ``ast_edit``'s approval card says it changes: it stages, ``resolve`` writes
STAGES_ONLY = "nothing is written: the edit is staged, and resolve's card will show its diff"


def describe_resolve(call: tether.CallContext, args: ResolveArgs) -> tether.StagedChange | str:
    """What ``resolve`` will write, for its approval card: the staged edit's diff."""
    if args.action != "accept":
        return "nothing is written: the staged edit is dropped"
    staged = _service(call).staged.get(args.edit_id)
    if staged is None:
        return f"nothing: {truncate(args.edit_id, 80)!r} is not a staged edit"
    return staged_change(staged)


async def handle_resolve(call: tether.CallContext, args: ResolveArgs) -> tether.ToolResult:
    service = _service(call)
    staged = service.staged.get(args.edit_id)
    if staged is None:
        done = service.resolved.get(args.edit_id)
        if done is not None:
            raise tether.ToolError(f"{args.edit_id} was already resolved ({done}); nothing to do")
        known = ", ".join(service.staged) or "none"
        raise tether.ArgumentError("edit_id", f"unknown edit {args.edit_id!r} (staged: {known})")
    if args.action == "accept" and staged.broken and not args.force:
        where = "; ".join(
            f"{path} (line{'s' if len(ns) > 1 else ''} {', '.join(map(str, ns[:10]))})"
            for path, ns in staged.broken
        )
        raise tether.ToolError(
            f"{args.edit_id} not written: its syntax check found new errors in {where}. "
            "It stays staged: discard it and fix the pattern or rewrite, or call resolve again "
            "with force: true to write it anyway"
        )
    del service.staged[args.edit_id]
    names = [show_path(p.relative_to(service.workdir).as_posix()) for p, _, _ in staged.changes]
    if args.action == "discard":
        service.resolved[args.edit_id] = "discarded"
        return tether.ToolResult.text(f"{args.edit_id} discarded; no file was changed")
    changes = [FileChange(path, old, new) for path, old, new in staged.changes]
    try:
        await apply_changes_async(changes, root=service.workdir)
    except StaleFiles as exc:
        service.resolved[args.edit_id] = "rejected"
        stale = ", ".join(show_path(p.relative_to(service.workdir).as_posix()) for p in exc.paths)
        raise tether.ToolError(
            f"{args.edit_id} rejected, nothing written: changed since staging: {stale}. "
            "Run ast_edit again on the current files."
        ) from None
    except OSError as exc:
        service.resolved[args.edit_id] = "failed"
        raise tether.ToolError(
            f"{args.edit_id} failed while writing ({exc}); no file was changed"
        ) from None
    service.resolved[args.edit_id] = "accepted"
    return tether.ToolResult.text(
        f"{args.edit_id} applied to {plural(len(names), 'file')}: {', '.join(names)}",
        files=names,
    )


GREP_DOC = (
    "Structural code search: finds code by its syntax tree, not its text. The pattern is parsed "
    "with the file's grammar (trying statement, expression, class member, declaration contexts; "
    "the result says which was used). $NAME matches one node, $$$NAME a run of siblings, $_ any "
    "node; a repeated $NAME must capture the same code. Whitespace and comments are ignored; "
    "strings and comments are never searched inside. By default (strictness smart) code the "
    "pattern does not mention, such as an else/elif branch, further except clauses or an async "
    "modifier, does not prevent a match; strictness cst requires every child. $ followed by a "
    "lower-case letter or inside a name ($ZodType) is literal code. Returns file:line:column, "
    "the matched code and the captures; a search that finds nothing names other readings "
    "that would. Instead of a pattern, `rule` takes an ast-grep rule (kind, regex, inside/has/"
    "follows/precedes, all/any/not, constraints...). `dump: true` shows how a snippet parses "
    "(the pattern's reading and its syntax tree with kinds and fields) without searching."
)
EDIT_DOC = (
    "Structural rewrite, staged: matches like ast_grep (a pattern, or a rule whose config may "
    "carry fix and transform) and replaces each match with `rewrite` "
    "($NAME substituted, multi-line captures keeping their shape). Code the pattern does not "
    "mention before or after the matched parts (an else branch, a trailing ;) is kept verbatim. "
    "Writes nothing; returns a diff preview, which syntax check ran on each file (Python: "
    "compile()), the diagnostics the project's language servers say the edit would introduce "
    "(when tether-lsp is installed), and an edit_id for resolve."
)
RESOLVE_DOC = (
    "Accept or discard an edit staged by ast_edit. Accept writes every file or none: if any file "
    "changed since staging, the whole edit is rejected. An edit whose syntax check found new "
    "errors is refused (it stays staged) unless force is true."
)


def tool_specs(run: tether.Run) -> list[tether.ToolSpec]:
    ids = installed_grammars(run)
    return [
        tether.ToolSpec(
            name="ast_grep",
            tier=tether.Tier.READ,
            args=_with_languages(AstGrepArgs, ids),
            handler=handle_ast_grep,
            description=GREP_DOC,
            requires=(RESOURCE,),
            continuation=narrower_path("path"),
        ),
        tether.ToolSpec(
            name="ast_edit",
            tier=tether.Tier.WRITE,
            args=_with_languages(AstEditArgs, ids),
            handler=handle_ast_edit,
            description=EDIT_DOC,
            requires=(RESOURCE,),
            describe_change=lambda call, args: STAGES_ONLY,
        ),
        tether.ToolSpec(
            name="resolve",
            tier=tether.Tier.WRITE,
            args=ResolveArgs,
            handler=handle_resolve,
            description=RESOLVE_DOC,
            requires=(RESOURCE,),
            parallel_safe=False,
            describe_change=describe_resolve,
        ),
    ]

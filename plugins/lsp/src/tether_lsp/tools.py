"""Tool arguments and handlers of ``lsp`` and ``lsp_rename``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeVar

import attrs

import tether
from tether.budget import next_file
from tether.resources import ResourceKey

if TYPE_CHECKING:
    from tether_lsp.supervisor import LspSupervisor

# The handlers import the query modules (the client, the renderers, the cross-check) when first
# called: registering the tools costs only the argument classes.

#: the run resource this plugin wires: the language servers of the run (the class is imported
#: by the hook that builds it, not by every start)
RESOURCE: ResourceKey[LspSupervisor] = ResourceKey(
    "lsp_supervisor", "tether_lsp.supervisor:LspSupervisor"
)

Action = Literal[
    "diagnostics",
    "definition",
    "type_definition",
    "implementation",
    "references",
    "incoming_calls",
    "outgoing_calls",
    "hover",
    "symbols",
    "code_actions",
    "status",
    "reload",
    "checkpoint",
]
T = TypeVar("T")


@attrs.frozen
class LspArgs:
    action: Action = tether.arg(
        description=(
            'diagnostics (file, or "*" for the project\'s checker; with since, what changed since '
            "a checkpoint); definition, "
            "type_definition, implementation, references, incoming_calls, outgoing_calls, "
            "hover, code_actions (file, line, symbol); symbols (query for workspace symbols, or file for its outline); status; "
            "reload; checkpoint (optional name: marks the diagnostics known now, for since)"
        )
    )
    file: str | None = tether.arg(None, description="Path relative to the workdir")
    line: int | None = tether.arg(None, description="1-based line holding the symbol")
    symbol: str | None = tether.arg(
        None,
        description=(
            "Text of the symbol as it appears on that line (never a column); a whole "
            "identifier wins over a match inside a longer one, `Obj.method` means `method`; "
            "when it occurs several times, pick one with name#2"
        ),
    )
    query: str | None = tether.arg(None, description="Workspace symbol search (action symbols)")
    name: str | None = tether.arg(
        None,
        description="Name of the checkpoint to mark (action checkpoint; default cp1, cp2, …)",
        min_length=1,
        max_length=200,
    )
    since: str | None = tether.arg(
        None,
        description=(
            "A checkpoint's name (action diagnostics): the diagnostics introduced, fixed and "
            "already there since it — of `file`, or of every file known then or written since"
        ),
    )


@attrs.frozen
class RenameArgs:
    file: str = tether.arg(
        description="Path of the file holding the symbol, relative to the workdir"
    )
    line: int = tether.arg(description="1-based line holding the symbol")
    symbol: str = tether.arg(
        description="Text of the symbol on that line (substring; name#2 picks the 2nd occurrence)"
    )
    new_name: str = tether.arg(description="The new name")
    force: bool = tether.arg(
        False,
        description=(
            "Rename even though the old name is used in files of the project the server cannot "
            "see (listed in the refusal); those are left as they are"
        ),
    )
    preview: bool = tether.arg(
        False,
        description=(
            "Write nothing: show the rename's edits and the diagnostics the language servers "
            "say it would introduce"
        ),
    )


LSP_DESCRIPTION = (
    "Ask the project's language server. Positions are a 1-based `line` plus the `symbol` text "
    "on it, never a column. Results are path:line:col plus the source line."
)
RENAME_DESCRIPTION = (
    "Rename a symbol across the project through its language server; every file is written "
    "or none is. With preview: true nothing is written: the edits and the diagnostics the "
    "rename would introduce."
)


def _supervisor(call: tether.CallContext) -> LspSupervisor:
    return call.run.resource(RESOURCE)


_POSITION = tether.Action(required=("file", "line", "symbol"))

# Which fields each action takes, enforced by the core: a missing one and one the action does not
# use are refused, naming the field and the action.
ACTIONS = tether.Actions(
    "action",
    {
        "diagnostics": tether.Action(optional=("file", "since")),  # one of them at least
        **{
            name: _POSITION
            for name in (
                "definition",
                "type_definition",
                "implementation",
                "references",
                "incoming_calls",
                "outgoing_calls",
                "hover",
                "code_actions",
            )
        },
        "symbols": tether.Action(optional=("query", "file")),  # one of them at least
        "status": tether.Action(),
        "reload": tether.Action(optional=("file",)),
        "checkpoint": tether.Action(optional=("name",)),
    },
)


def _given(value: T | None) -> T:
    assert value is not None, "the core's per-action check lets no required field through empty"
    return value


async def handle_lsp(call: tether.CallContext, args: LspArgs) -> str:
    supervisor = _supervisor(call)
    # a long wait for an indexing server is visible where the transport shows progress
    with supervisor.forwarding_progress(call.report_progress):
        text = await _answer_lsp(call, args)
    return _with_notes(supervisor, text)


def _with_notes(supervisor: LspSupervisor, text: str) -> str:
    """The answer, followed by what happened on the way (a hung server restarted)."""
    notes, supervisor.notes[:] = list(supervisor.notes), []
    return text + "".join(f"\n{note}" for note in notes)


async def _answer_lsp(call: tether.CallContext, args: LspArgs) -> str:
    from tether_lsp import checker, queries

    supervisor = _supervisor(call)
    action = args.action
    if action == "status":
        return await supervisor.status()
    if action == "reload":
        path = call.run.confine(args.file, field="file") if args.file else None
        return await supervisor.reload(path)
    if action == "checkpoint":
        if args.name is not None and not args.name.strip():
            raise tether.ArgumentError("name", "a non-empty name, or leave it out")
        return await supervisor.checkpoints.mark(supervisor, args.name)
    if action == "diagnostics":
        if args.since is not None:
            from tether_lsp import checkpoints

            checkpoint = supervisor.checkpoints.get(args.since)
            if args.file == "*":
                raise tether.ArgumentError(
                    "file", 'one file, or leave it out with since (not "*": the checker)'
                )
            path = call.run.confine(args.file, field="file") if args.file else None
            return await checkpoints.since(supervisor, checkpoint, path)
        if args.file is None:
            raise tether.ArgumentError(
                "file",
                'required for action "diagnostics" (or `since` for what changed since a '
                "checkpoint)",
            )
        if args.file == "*":
            return await checker.run_checkers(supervisor)
        return await queries.file_diagnostics(supervisor, call.run.confine(args.file, field="file"))
    if action == "symbols":
        if args.query is None and args.file is None:
            raise tether.ArgumentError(
                "query", 'required for action "symbols" (or `file` for the symbols of one file)'
            )
        path = call.run.confine(args.file, field="file") if args.file is not None else None
        if args.query is not None:
            return await queries.workspace_symbols(supervisor, args.query, path)
        assert path is not None
        session = await queries.open_session(supervisor, path, action)
        return session.with_indexing(await queries.document_symbols(session))
    file, line, symbol = _given(args.file), _given(args.line), _given(args.symbol)
    session = await queries.open_session(supervisor, call.run.confine(file, field="file"), action)
    if action == "hover":
        text = await queries.hover(session, line, symbol)
    elif action == "code_actions":
        text = await queries.code_actions(session, line, symbol)
    elif action in ("incoming_calls", "outgoing_calls"):
        text = await queries.call_hierarchy(session, action, line, symbol)
    else:
        text = await queries.navigate(session, action, line, symbol)
    return session.with_indexing(text)


async def handle_rename(call: tether.CallContext, args: RenameArgs) -> str:
    from tether_lsp import queries, rename

    supervisor = _supervisor(call)
    path = call.run.confine(args.file, field="file")
    with supervisor.forwarding_progress(call.report_progress):
        session = await queries.open_session(supervisor, path, "rename")
        text = await rename.rename(
            session,
            args.line,
            args.symbol,
            args.new_name,
            force=args.force,
            preview=args.preview,
        )
    return _with_notes(supervisor, session.with_indexing(text))


async def describe_rename(call: tether.CallContext, args: RenameArgs) -> tether.StagedChange | str:
    """What ``lsp_rename`` will write, for its approval card: the server's edit as a diff."""
    from tether_lsp import queries, rename

    if args.preview:
        return "nothing is written: a preview"
    supervisor = _supervisor(call)
    path = call.run.confine(args.file, field="file")
    session = await queries.open_session(supervisor, path, "rename")
    return await rename.proposed_change(session, args.line, args.symbol, args.new_name)


def _continue(call: tether.CallContext, cut: tether.Cut) -> str | None:
    """A project's diagnostics cut by the result budget continue file by file; other actions
    get the core's advice to ask for less."""
    if call.args.action == "diagnostics" and call.args.file == "*" and call.args.since is None:
        return next_file("file")(call, cut)
    return None


def tool_specs(run: tether.Run) -> list[tether.ToolSpec]:
    return [
        tether.ToolSpec(
            name="lsp",
            tier=tether.Tier.READ,
            args=LspArgs,
            handler=handle_lsp,
            description=LSP_DESCRIPTION,
            requires=(RESOURCE,),
            parallel_safe=True,
            actions=ACTIONS,
            continuation=tether.Continuation(next=_continue),
        ),
        tether.ToolSpec(
            name="lsp_rename",
            tier=tether.Tier.WRITE,
            args=RenameArgs,
            handler=handle_rename,
            description=RENAME_DESCRIPTION,
            requires=(RESOURCE,),
            parallel_safe=True,
            describe_change=describe_rename,
        ),
    ]

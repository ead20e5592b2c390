"""The ``breakpoints`` op: line breakpoints (anchored on the text they were set on, so they
follow edits), function breakpoints and exception filters, kept for the next launch or sent to
the live session; each answer says what changed."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tether import ArgumentError
from tether_debug import breakpoints as bp
from tether_debug import dap_requests as dap
from tether_debug import features
from tether_debug.anchors import Anchor, read_text
from tether_debug.breakpoints import BreakpointSpec
from tether_debug.state import Phase

if TYPE_CHECKING:
    from tether_debug.session import DebugSession
    from tether_debug.supervisor import DebugSupervisor


async def op_breakpoints(
    supervisor: DebugSupervisor,
    *,
    file: str | None,
    lines: Sequence[int] | None,
    function: str | None,
    exceptions: Sequence[str] | None,
    spec: BreakpointSpec,
    remove: bool,
    symbol: str | None = None,
) -> str:
    _check_breakpoint_arguments(file, lines, function, exceptions, spec, remove, symbol)
    session = _session_for_breakpoints(supervisor, spec, function, exceptions, remove)
    if exceptions is not None:
        return await _set_exceptions(supervisor, session, list(exceptions))
    if function is not None:
        return await _set_function(supervisor, session, function, spec, remove)
    assert file is not None and lines is not None
    return await _set_lines(supervisor, session, file, lines, spec, remove, symbol)


def _session_for_breakpoints(
    supervisor: DebugSupervisor,
    spec: BreakpointSpec,
    function: str | None,
    exceptions: Sequence[str] | None,
    remove: bool,
) -> DebugSession | None:
    """The live session the breakpoints go to now (None: they wait for launch/attach),
    once it is known to honour them."""
    session = supervisor.session
    if session is None or not session.live or session.phase is Phase.STARTING:
        return None
    # refused by name before anything changes: the adapter would ignore the setting
    # and stop unconditionally (or never)
    capabilities, adapter_id = session.capabilities, session.adapter.id
    for name in spec.settings():
        features.require(capabilities, adapter_id, name, "breakpoints")
    if spec.hit_condition is not None:
        refused = bp.hit_refusal(session.adapter, bp.HitCondition.parse(spec.hit_condition))
        if refused is not None:
            raise ArgumentError("hit_condition", f'{refused}; op "breakpoints" cannot use it')
    if function is not None and not remove:
        features.require(capabilities, adapter_id, "function", "breakpoints")
    if exceptions is not None:
        features.check_exception_filters(capabilities, adapter_id, exceptions)
    return session


async def _set_lines(
    supervisor: DebugSupervisor,
    session: DebugSession | None,
    file: str,
    lines: Sequence[int],
    spec: BreakpointSpec,
    remove: bool,
    symbol: str | None,
) -> str:
    path, library = await supervisor.source_file(file)
    before = dict(supervisor.requested.files.get(path, {}))
    wanted = supervisor.requested.lines_after(path, lines, spec, remove)
    name = supervisor.rel(path) + (f" ({library})" if library else "")
    return _with_changes(
        await _send_lines(supervisor, session, path, name, library, wanted, lines, symbol, remove),
        before,
        wanted,
        replaced=not remove and not spec.settings() and bool(lines),
    )


async def _send_lines(
    supervisor: DebugSupervisor,
    session: DebugSession | None,
    path: Path,
    name: str,
    library: str | None,
    wanted: dict[int, BreakpointSpec],
    lines: Sequence[int],
    symbol: str | None,
    remove: bool,
) -> str:
    """Keep ``wanted`` as the file's breakpoints and send them to the live session, if any;
    the answer's report of each line."""
    anchor = _anchor(supervisor, path, name, wanted, lines, symbol, remove)
    ignored = session.adapter.ignores_library_code(session.start_arguments) if session else None
    if library and ignored:
        # sent now, the adapter would accept them and never stop there: kept for the next
        # launch, whose arguments then let the adapter stop in library code
        supervisor.requested.commit_lines(path, wanted, anchor)
        return f"Breakpoints in {name}: NOT sent to the running session: {ignored}"
    if session is not None:
        symbols = anchor.symbols if anchor is not None else None
        states = await dap.set_breakpoints(session, path, wanted, symbols)
        supervisor.requested.commit_lines(path, wanted, anchor)
        if not wanted:
            return f"Cleared every breakpoint in {name} (sent to the running {session.adapter.id} session)."
        return f"Breakpoints in {name} (sent to the running session):\n" + bp.render(states, name)
    supervisor.requested.commit_lines(path, wanted, anchor)
    if not wanted:
        return f"Cleared every breakpoint in {name}."
    listed = ", ".join(f"{line}{line_spec.describe()}" for line, line_spec in wanted.items())
    noun = "line" if len(wanted) == 1 else "lines"
    return (
        f"Breakpoints in {name}: {noun} {listed}. "
        "No session is running: they are sent at launch/attach."
    )


def _anchor(
    supervisor: DebugSupervisor,
    path: Path,
    name: str,
    wanted: Collection[int],
    lines: Sequence[int],
    symbol: str | None,
    remove: bool,
) -> Anchor | None:
    """The text the file's breakpoints are set on now (checking ``symbol`` on each line),
    keeping the symbols of the lines this call leaves alone; None for an unreadable file."""
    text = read_text(path, supervisor.run.workdir)
    if text is None:
        return None
    known = supervisor.requested.anchors.get(path)
    symbols = dict(known.symbols) if known is not None else {}
    if not remove:
        for line in lines:
            symbols.pop(line, None)
    anchor = Anchor(text, symbols)
    if symbol is not None:
        anchor.check_symbol(lines, symbol, name)
        symbols.update(dict.fromkeys(lines, symbol))
    return Anchor(text, {n: s for n, s in symbols.items() if n in wanted})


async def _set_function(
    supervisor: DebugSupervisor,
    session: DebugSession | None,
    function: str,
    spec: BreakpointSpec,
    remove: bool,
) -> str:
    wanted = supervisor.requested.functions_after(function, spec, remove)
    if session is not None:
        states = await dap.set_function_breakpoints(session, wanted)
        supervisor.requested.functions = wanted
        if not wanted:
            return "Cleared every function breakpoint (sent to the running session)."
        return "Function breakpoints (sent to the running session):\n" + bp.render(states)
    supervisor.requested.functions = wanted
    if not wanted:
        return "Cleared every function breakpoint."
    listed = ", ".join(f"{name}{s.describe()}" for name, s in wanted.items())
    return (
        f"Function breakpoints: {listed}. No session is running: they are sent at "
        "launch/attach (an adapter without function breakpoints refuses them then)."
    )


async def _set_exceptions(
    supervisor: DebugSupervisor, session: DebugSession | None, filters: list[str]
) -> str:
    listed = ", ".join(filters) if filters else "none (no exception stops the program)"
    if session is not None:
        await dap.set_exception_filters(session, filters)
        session.exceptions_set, session.exceptions_refused = filters, []
        supervisor.requested.exceptions = filters
        return f"Exception filters of the running {session.adapter.id} session: {listed}."
    supervisor.requested.exceptions = filters
    return (
        f"Exception filters: {listed}. No session is running: they replace the adapter's "
        "defaults at launch/attach (a filter the adapter does not offer is refused then)."
    )


def _check_breakpoint_arguments(
    file: str | None,
    lines: Sequence[int] | None,
    function: str | None,
    exceptions: Sequence[str] | None,
    spec: BreakpointSpec,
    remove: bool,
    symbol: str | None,
) -> None:
    if symbol is not None and (file is None or not lines or remove):
        raise ArgumentError(
            "symbol",
            'used with file and lines in op "breakpoints" (a substring of each line, so the '
            "breakpoint follows it through edits); leave it out",
        )
    bp.check_arguments(
        file=file,
        lines=lines,
        function=function,
        exceptions=exceptions,
        spec=spec,
        remove=remove,
    )


def _with_changes(
    answer: str,
    before: Mapping[int, BreakpointSpec],
    after: Mapping[int, BreakpointSpec],
    replaced: bool,
) -> str:
    """``answer`` followed by every breakpoint of the file this call took out or changed, so
    that none goes silently (a call without a setting makes ``lines`` the file's whole list)."""
    gone = [f"line {line}{spec.describe()}" for line, spec in before.items() if line not in after]
    changed = [
        f"line {line}{spec.describe() or ' [plain]'} is now{after[line].describe() or ' plain'}"
        for line, spec in before.items()
        if line in after and after[line] != spec
    ]
    notes = []
    if gone:
        why = (
            " (a call without condition, hit_condition or log_message sets the file's whole list;"
            " pass a setting to add lines, remove: true to take some out)"
            if replaced
            else ""
        )
        notes.append(f"Removed: {', '.join(gone)}{why}.")
    if changed:
        notes.append(f"Changed: {'; '.join(changed)}.")
    return "\n".join([answer, *notes])

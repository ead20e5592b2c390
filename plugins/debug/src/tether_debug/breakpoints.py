"""Breakpoints as the agent asks for them — source lines and functions, each optionally with a
condition, a hit condition or a log message, and the exception filters — checked against the
adapter's capabilities, turned into DAP requests, and reported back line by line."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from tether import ArgumentError
from tether_debug import features
from tether_debug.anchors import Anchor
from tether_debug.loaded import Placed

if TYPE_CHECKING:
    from tether_debug.adapters import DebugAdapter

#: tether's hit conditions, one meaning on every adapter: the operator compares the breakpoint's
#: hit count (1 on its first hit) with N; a bare ``N`` means ``== N`` (only the Nth hit)
HIT_OPERATORS = ("==", ">=", "<=", ">", "<", "%")
_HIT = re.compile(r"\s*(==|>=|<=|>|<|%)?\s*([0-9]{1,9})\s*")
HIT_FORMS = '"N" (only the Nth hit), "== N", ">= N", "> N", "<= N", "< N" or "% N" (every Nth)'


@attrs.frozen
class HitCondition:
    """A hit condition as tether means it: stop when ``hits <op> count`` (``%``: divisible)."""

    op: str
    count: int

    @classmethod
    def parse(cls, text: str) -> HitCondition:
        found = _HIT.fullmatch(text)
        if found is None or int(found.group(2)) < 1:
            raise ArgumentError(
                "hit_condition", f"expected {HIT_FORMS} with N a positive integer, got {text!r}"
            )
        return cls(found.group(1) or "==", int(found.group(2)))

    def __str__(self) -> str:
        return f"{self.op} {self.count}"


@attrs.frozen
class BreakpointSpec:
    """What one breakpoint does besides stopping (all None: a plain breakpoint)."""

    condition: str | None = None
    hit_condition: str | None = None
    log_message: str | None = None

    def settings(self) -> dict[str, str]:
        """The tool fields set, by name."""
        return {
            name: value
            for name, value in (
                ("condition", self.condition),
                ("hit_condition", self.hit_condition),
                ("log_message", self.log_message),
            )
            if value is not None
        }

    def unsupported(self, capabilities: Mapping[str, Any], adapter: DebugAdapter) -> str | None:
        """Why the adapter cannot honour this breakpoint (the first setting it lacks, or a hit
        condition it cannot express), or None."""
        for name in self.settings():
            if not features.supports(capabilities, name):
                return features.refusal(adapter.id, name)
        if self.hit_condition is not None:
            return hit_refusal(adapter, HitCondition.parse(self.hit_condition))
        return None

    def dap(self, adapter: DebugAdapter) -> dict[str, str]:
        """The DAP fields of a SourceBreakpoint/FunctionBreakpoint for these settings, the hit
        condition in the adapter's own words (call only when :meth:`unsupported` is None)."""
        fields = {"condition": self.condition, "logMessage": self.log_message}
        if self.hit_condition is not None:
            fields["hitCondition"] = adapter.hit_condition(HitCondition.parse(self.hit_condition))
        return {key: value for key, value in fields.items() if value is not None}

    def describe(self) -> str:
        parts = []
        if self.condition is not None:
            parts.append(f"if {self.condition}")
        if self.hit_condition is not None:
            parts.append(f"hit {self.hit_condition}")
        if self.log_message is not None:
            parts.append(f"log {self.log_message!r}, does not stop")
        return f" [{'; '.join(parts)}]" if parts else ""


@attrs.define
class BreakpointState:
    """One requested breakpoint (a line, or a function by name) and what the adapter made of it."""

    requested: int
    spec: BreakpointSpec = BreakpointSpec()
    function: str | None = None
    id: int | None = None
    verified: bool | None = None  # None: not sent to an adapter yet
    line: int | None = None
    message: str | None = None
    #: not sent: the adapter's capabilities lack what the spec asks (the refusal)
    refused: str | None = None
    #: the line sent, when the program runs an earlier text of the file than the one
    #: ``requested`` is a line of (the file changed since it started); None: the same line
    loaded: int | None = None
    #: not verified: the nearest line the adapter verified when asked (None: none found, or not
    #: asked because the program was running)
    nearest: int | None = None


@attrs.define
class Requested:
    """The breakpoints the agent asked for in this conversation: kept across sessions, sent at
    launch/attach, and to the live session when it changes."""

    files: dict[Path, dict[int, BreakpointSpec]] = attrs.field(factory=dict)
    functions: dict[str, BreakpointSpec] = attrs.field(factory=dict)
    #: exception filters chosen by a call; None: the adapter's defaults (or the config's)
    exceptions: list[str] | None = None
    #: each file's text when its breakpoints were set or last moved (see anchors.py)
    anchors: dict[Path, Anchor] = attrs.field(factory=dict)

    def lines_after(
        self, path: Path, lines: Sequence[int], spec: BreakpointSpec, remove: bool
    ) -> dict[int, BreakpointSpec]:
        """A file's breakpoints once this call applies (the caller commits them):
        ``remove`` takes the lines out; a call with a setting adds or updates the lines and
        keeps the file's others; a plain call makes ``lines`` the file's whole list."""
        current = dict(self.files.get(path, {}))
        if remove:
            missing = [line for line in lines if line not in current]
            if missing:
                have = ", ".join(map(str, sorted(current))) or "none"
                raise ArgumentError(
                    "lines", f"no breakpoint on line {missing[0]} to remove (this file has: {have})"
                )
            return {line: s for line, s in current.items() if line not in lines}
        if spec.settings():
            return {**current, **dict.fromkeys(lines, spec)}
        return dict.fromkeys(sorted(set(lines)), spec)

    def commit_lines(
        self, path: Path, lines: Mapping[int, BreakpointSpec], anchor: Anchor | None = None
    ) -> None:
        """Keep ``lines`` as the file's breakpoints, and ``anchor`` as the text they are on
        (with the symbols of the lines that have one); None keeps the anchor known (or none)."""
        if lines:
            self.files[path] = dict(sorted(lines.items()))
            if anchor is not None:
                symbols = {n: s for n, s in anchor.symbols.items() if n in lines}
                self.anchors[path] = Anchor(anchor.text, symbols)
        else:
            self.files.pop(path, None)
            self.anchors.pop(path, None)

    def functions_after(
        self, function: str, spec: BreakpointSpec, remove: bool
    ) -> dict[str, BreakpointSpec]:
        current = dict(self.functions)
        if remove:
            if function not in current:
                have = ", ".join(current) or "none"
                raise ArgumentError(
                    "function", f"no function breakpoint {function!r} to remove (set: {have})"
                )
            current.pop(function)
        else:
            current[function] = spec
        return current


def hit_refusal(adapter: DebugAdapter, hit: HitCondition) -> str | None:
    """Why ``adapter`` cannot stop on the hits ``hit`` means, or None."""
    if adapter.hit_condition(hit) is not None:
        return None
    can = ", ".join(f'"{op} N"' for op in adapter.hit_operators)
    return f'{adapter.id} cannot stop on hits "{hit}": of the hit conditions it takes only {can}'


def check_arguments(
    *,
    file: str | None,
    lines: Sequence[int] | None,
    function: str | None,
    exceptions: Sequence[str] | None,
    spec: BreakpointSpec,
    remove: bool,
) -> None:
    """The combinations op ``breakpoints`` takes, each refused naming the field."""
    if spec.hit_condition is not None:
        HitCondition.parse(spec.hit_condition)
    given = [name for name, v in (("file", file), ("function", function)) if v is not None]
    if exceptions is not None:
        given.append("exceptions")
    if len(given) != 1:
        why = f"{' and '.join(given)} were given" if given else "none was given"
        raise ArgumentError(
            given[-1] if given else "file",
            'op "breakpoints" takes exactly one of file (with lines), function and exceptions; '
            + why,
        )
    if file is not None:
        if lines is None:
            raise ArgumentError("lines", 'required for op "breakpoints" with file')
        bad = [line for line in lines if line < 1]
        if bad:
            raise ArgumentError("lines", f"line numbers start at 1, got {bad[0]}")
        if remove and not lines:
            raise ArgumentError("lines", "remove needs the lines to take out ([] clears the file)")
        if spec.settings() and not lines:
            name = next(iter(spec.settings()))
            raise ArgumentError("lines", f"{name} needs the lines it applies to; got []")
        if remove and spec.settings():
            name = next(iter(spec.settings()))
            raise ArgumentError(name, "not used with remove; leave it out")
        return
    if lines is not None:
        raise ArgumentError("lines", 'used only with file in op "breakpoints"; leave it out')
    if function is not None:
        if not function.strip():
            raise ArgumentError("function", "expected a function name, got an empty string")
        if remove and spec.settings():
            name = next(iter(spec.settings()))
            raise ArgumentError(name, "not used with remove; leave it out")
        return
    # exceptions
    for name in spec.settings():
        raise ArgumentError(name, 'used with file or function in op "breakpoints"; leave it out')
    if remove:
        raise ArgumentError("remove", "not used with exceptions ([] turns every filter off)")


def source_breakpoints(
    specs: Mapping[int, BreakpointSpec],
    capabilities: Mapping[str, Any],
    adapter: DebugAdapter,
    place: Callable[[int], Placed] | None = None,
) -> tuple[list[BreakpointState], list[dict[str, Any]]]:
    """Every line's state, and the DAP breakpoints to send (those the adapter can honour: one
    it cannot is not sent, so it never stops where it should not, and its state says why).

    ``place`` gives each line's line in the text the program runs (see loaded.py): a line it
    has none for is refused by name, never sent as it is."""
    states, sent = [], []
    for line, spec in specs.items():
        state = BreakpointState(line, spec)
        state.refused = spec.unsupported(capabilities, adapter)
        if state.refused is None and place is not None:
            placed = place(line)
            if placed.line is None:
                state.refused = f"{placed.why}; restart the program to break there"
            elif placed.line != line:
                state.loaded = placed.line
        states.append(state)
        if state.refused is None:
            sent.append({"line": state.loaded or line, **spec.dap(adapter)})
    return states, sent


def function_breakpoints(
    specs: Mapping[str, BreakpointSpec], capabilities: Mapping[str, Any], adapter: DebugAdapter
) -> tuple[list[BreakpointState], list[dict[str, Any]]]:
    states, sent = [], []
    can = features.supports(capabilities, "function")
    for name, spec in specs.items():
        state = BreakpointState(0, spec, function=name)
        state.refused = (
            spec.unsupported(capabilities, adapter)
            if can
            else features.refusal(adapter.id, "function")
        )
        states.append(state)
        if state.refused is None:
            sent.append({"name": name, **spec.dap(adapter)})
    return states, sent


def take_answer(states: Sequence[BreakpointState], answered: Sequence[Any]) -> None:
    """Fill in what the adapter said about each breakpoint sent (in the order sent)."""
    sent = [state for state in states if state.refused is None]
    for state, info in zip(sent, answered, strict=False):
        if not isinstance(info, Mapping):
            continue
        state.id = info.get("id")
        state.verified = bool(info.get("verified", False))
        state.line = info.get("line")
        state.message = info.get("message")


def render(states: Sequence[BreakpointState], source: str | None = None) -> str:
    """One line per breakpoint: verified, moved, pending, refused or NOT verified (with the
    nearest line that did verify)."""
    verified_lines = [s.line or s.requested for s in states if s.verified and s.function is None]
    # a file none of whose lines verified, with no word from the adapter, is code not loaded yet
    # (a shared library lldb has not seen): its breakpoints are pending, not wrong
    none_verified = not verified_lines
    out = []
    for state in states:
        what = (
            f"function {state.function}"
            if state.function is not None
            else f"line {state.requested}"
        )
        what += state.spec.describe()
        if state.loaded is not None:
            what += f" (line {state.loaded} in the text the program runs)"
        if state.refused is not None:
            out.append(f"  {what}: NOT set: {state.refused}")
        elif state.verified is None:
            out.append(f"  {what}: set (sent at launch)")
        elif state.verified and state.line in (None, state.requested, 0):
            out.append(f"  {what}: verified")
        elif state.verified and state.function is None:
            out.append(f"  {what}: moved by the adapter to line {state.line}")
        elif state.verified:
            out.append(f"  {what}: verified")
        elif state.function is not None:
            why = f" ({state.message})" if state.message else ""
            out.append(f"  {what}: pending{why}: no such function in the code loaded so far")
        elif none_verified and not state.message and source:
            out.append(
                f"  {what}: pending (set when code from {source} loads; the program has loaded "
                "none yet — if it never does, or the line holds no code, it never stops)"
            )
        else:
            why = f" ({state.message})" if state.message else ""
            nearest = ""
            if state.nearest is not None:
                nearest = f"; nearest line the adapter takes: {state.nearest}"
            elif verified_lines:
                best = min(verified_lines, key=lambda n: abs(n - state.requested))
                nearest = f"; nearest verified line: {best}"
            out.append(f"  {what}: NOT verified{why}{nearest}")
    return "\n".join(out)

"""The debug supervisor of one run (one conversation): the adapters contributed by plugins,
the breakpoints asked for so far (moved as their files change), at most one live session with
its TTL, and the news the next answer carries. The ``debug`` tool's ops are functions in
:mod:`tether_debug.ops` (breakpoints, inspection, control, lifecycle) that take it."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from tether import ArgumentError, ToolError
from tether.contributions import collect
from tether.errors import PathError
from tether.processes.availability import CommandProbe
from tether.workdir.paths import relative
from tether_debug.adapters import DebugAdapter, LibraryRoot, availability
from tether_debug.anchors import Anchor, follow_all, read_text
from tether_debug.breakpoints import BreakpointSpec, Requested
from tether_debug.config import DebugConfig
from tether_debug.report import where
from tether_debug.session import DebugSession, Phase

if TYPE_CHECKING:
    from tether import Run


def _adapter_problem(adapter: DebugAdapter) -> str | None:
    if not isinstance(adapter.id, str) or not adapter.id:
        return "it has no id (set the class attribute `id`)"
    commands = adapter.commands
    if not isinstance(commands, tuple) or not all(
        isinstance(c, tuple) and all(isinstance(a, str) for a in c) for c in commands
    ):
        return f"commands: expected a tuple of argv tuples, got {commands!r:.60}"
    for name in ("root_markers", "program_suffixes"):
        value = getattr(adapter, name)
        if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
            return f"{name}: expected a tuple of strings, got {value!r:.60}"
    return None


class DebugSupervisor:
    """Resource ``debug_supervisor``: wired only when the run has a conversation id."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.config = run.config("debug", DebugConfig)
        self.requested = Requested()
        self._roots: dict[str, list[LibraryRoot]] = {}  # library roots per adapter id
        self.session: DebugSession | None = None
        self.probe = CommandProbe(run)
        self._adapters: dict[str, DebugAdapter] | None = None
        #: breakpoints moved or dropped because their file changed, for the next answer
        self._moved: list[str] = []

    # --- adapters ---------------------------------------------------------------------------

    def adapters(self) -> dict[str, DebugAdapter]:
        """Every adapter contributed through ``tether_debug_adapters``, by the core's collector:
        a malformed adapter or a second one with a taken id is dropped and its plugin reported
        (``tether plugins``, ``run.pm.report``); the others keep working."""
        if self._adapters is None:
            found = collect(
                self.run.pm,
                "tether_debug_adapters",
                DebugAdapter,
                key=lambda adapter: adapter.id,
                label="debug adapter",
                check=_adapter_problem,
            )
            self._adapters = {name: c.item for name, c in found.items()}
        return self._adapters

    def adapter_named(self, name: str) -> DebugAdapter:
        adapters = self.adapters()
        if name not in adapters:
            raise ArgumentError(
                "adapter", f"unknown adapter {name!r}; known: {', '.join(sorted(adapters))}"
            )
        return adapters[name]

    # --- breakpoints ------------------------------------------------------------------------

    def follow_edits(self) -> None:
        """Move the breakpoints of every file that changed since they were set (a tether
        write or another process: the text is compared, so both count) to where their lines
        went, or drop them as lost or ambiguous; the next answer says which.

        A live session keeps what it was sent: its program loaded the earlier text (a built
        binary, an imported module), so the moved lines would mean something else to it."""
        for path, specs in list(self.requested.files.items()):
            anchor = self.requested.anchors.get(path)
            if anchor is None:
                continue
            text = read_text(path, self.run.workdir)
            if text == anchor.text:
                continue
            name = self.rel(path)
            if text is None:
                self.requested.commit_lines(path, {})
                self._moved.append(
                    f"{name} is gone: its breakpoints are lost (lines {', '.join(map(str, specs))})."
                )
                continue
            moved: dict[int, BreakpointSpec] = {}
            symbols: dict[int, str] = {}
            said = []
            moves = follow_all(anchor.text, text, list(specs), anchor.symbols)
            for (line, spec), move in zip(specs.items(), moves, strict=True):
                said.append(f"  {move.describe(spec.describe())}")
                if move.new is None:
                    continue
                if move.new in moved:
                    said[-1] += f"; it joins the breakpoint already on line {move.new}"
                moved[move.new] = spec
                if line in anchor.symbols:
                    symbols[move.new] = anchor.symbols[line]
            self.requested.commit_lines(path, moved, Anchor(text, symbols))
            session = self.session
            later = (
                " The running program started from the earlier text and keeps its breakpoints "
                "where they were; the moves apply from the next launch."
                if session is not None and session.live
                else ""
            )
            self._moved.append(
                f"{name} changed since its breakpoints were set:{later}\n" + "\n".join(said)
            )

    def saw_writes(self, before: Mapping[Path, bytes | None]) -> None:
        """Files a tether call wrote, with what they held before: a live session takes that as
        the text its program loaded of each file it had not seen yet (see loaded.py)."""
        session = self.session
        if session is None or not session.live:
            return
        for path, content in before.items():
            session.loaded.saw_before_write(path, content)

    async def source_file(self, file: str) -> tuple[Path, str | None]:
        """A breakpoint's file: in the workdir, or — a breakpoint writes nothing — under one of
        the program's library roots (its interpreter's standard library and packages, the Go
        toolchain and module cache), said as the second item. Anything else is refused, naming
        the roots that are allowed."""
        try:
            path = self.run.confine(file, field="file")
        except PathError as exc:
            if not Path(file).is_absolute():
                raise
            # as the toolchain names it (GOROOT's src may be a symlink elsewhere, and the
            # adapter knows the file by the name the build used), or where it leads
            lexical = Path(os.path.normpath(file))
            resolved = lexical.resolve()
            roots = await self._library_roots(lexical)
            for root in roots:
                inside = _within(lexical, root.path) or _within(resolved, root.path.resolve())
                if inside:
                    if not resolved.is_file():
                        raise ArgumentError("file", f"no such file: {file!r}") from None
                    return lexical, f"{root.what}: {root.path}"
            allowed = "; ".join(f"{r.path} ({r.what})" for r in roots)
            raise ArgumentError(
                "file",
                f"{exc.expected}; besides the workdir, breakpoints may go only in the program's "
                + (
                    f"library roots: {allowed}"
                    if allowed
                    else "library roots, and no adapter for this file reports any"
                ),
            ) from None
        if not path.is_file():
            raise ArgumentError("file", f"no such file in the workdir: {file!r}")
        return path, None

    async def _library_roots(self, path: Path) -> list[LibraryRoot]:
        """The library roots of the adapters that debug ``path``'s kind of file (cached)."""
        roots: list[LibraryRoot] = []
        for adapter in self.adapters().values():
            if not adapter.matches_program(path):
                continue
            if adapter.id not in self._roots:
                found = await availability(adapter, self.run.workdir, self.run.workdir, self.probe)
                self._roots[adapter.id] = (
                    await adapter.library_roots(self.run, found.resolution)
                    if found.resolution.command is not None
                    else []
                )
            roots += [r for r in self._roots[adapter.id] if r not in roots]
        return roots

    # --- each op ----------------------------------------------------------------------------

    async def guarded(self, op: Awaitable[str]) -> str:
        """Run one op; when the session was ended during it for an adapter that stopped
        answering, its result is an error that says so (whatever the op had to say before)."""
        self.follow_edits()
        try:
            text = await op
        except ToolError as exc:
            await self._report_hang(str(exc))
            raise
        await self._report_hang(text)
        return await self._with_news(text)

    async def _with_news(self, text: str) -> str:
        """What happened since the last answer that this one did not say: a stop that came
        after an answer said "still running", and what log points printed."""
        if self._moved:
            text = "\n".join([*self._moved, text])
            self._moved.clear()
        session = self.session
        if session is None:
            return text
        extra = []
        if session.live and session.phase is Phase.STOPPED and not self.stop_reported(session):
            extra.append(f"Meanwhile the program stopped:\n{await where(session, True)}")
        logged = session.take_logged()
        if logged:
            extra.append(logged)
        return "\n".join([text, *extra])

    @staticmethod
    def stop_reported(session: DebugSession) -> bool:
        return session.stop is not None and session.stop is session.reported_stop

    async def _report_hang(self, said: str) -> None:
        session = self.session
        if session is None or session.hang_note is None or session.hang_reported:
            return
        session.hang_reported = True
        await session.close(session.hang_note)  # waits (bounded) until both trees are gone
        raise ToolError(f"{said}\n{session.hang_note}.")

    def live_session(self) -> DebugSession:
        session = self.session
        if session is None:
            raise ToolError("no debug session in this conversation: launch or attach first")
        if not session.live:
            again = "" if session.hang_note else " Launch or attach again."  # it says so itself
            raise ToolError(f"the debug session has ended: {session.end_reason}.{again}")
        return session

    def rel(self, path: Path) -> str:
        return relative(self.run.workdir, path)

    async def aclose(self) -> None:
        if self.session is not None and self.session.live:
            await self.session.close("the run closed")


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents

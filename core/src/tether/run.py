"""A run: the live resources of one conversation, the tools they back, and the call pipeline."""

from __future__ import annotations

import contextvars
import inspect
import itertools
import math
import os
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

import anyio
import anyio.abc
import attrs

from tether import preview as _preview
from tether.args import structure_args, structure_config
from tether.budget import apply_budget
from tether.config import HARNESS_ORIGIN, CoreConfig, layer_config
from tether.contributions import call_each, collect, report_failure
from tether.errors import ArgumentErrors, ConfigError, PluginError, ToolError
from tether.gate import ApprovalGate, ApprovalSources
from tether.observe import CallObserver, CallRecord, observing
from tether.person import APPROVER, CONVERSATION
from tether.plugins import TetherPluginManager, make_plugin_manager
from tether.processes import managed as _process
from tether.processes import watchdog as _watchdog
from tether.processes.owner import ProcessOwner
from tether.registry import SchemaFormat, ToolRegistry, schema_problem
from tether.resources import _MISSING, ResourceKey, Resources, _calling_conversation
from tether.terminal import warn as _warn
from tether.text import duration
from tether.tiers import Tier
from tether.tools import CallContext, ResultNote, ToolResult, ToolSpec, as_result
from tether.workdir import journal as _journal
from tether.workdir.paths import confine_in as _confine_in
from tether.workdir.writing import recording_writes, writes_confined_to

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal

    from tether.preview import StagedChange


T = TypeVar("T")
D = TypeVar("D")

# Tools held (not parallel-safe, currently running) by the task chain making a call: a bridge
# call back into the same tool would wait on its own lock forever.
_held_tools: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "tether_held_tools", default=frozenset()
)


class Run:
    """One run. Create it with :func:`open_run`; never directly.

    A facade over its parts, each found by name: :attr:`resources` (what plugins wired),
    :attr:`registry` (tools and surfaces), :attr:`gate` (approval), :attr:`process_owner` (every
    child process and its end). The run itself owns the configuration and the call pipeline.
    """

    def __init__(
        self,
        *,
        workdir: Path,
        conversation_id: str | None,
        pm: TetherPluginManager,
        config: Mapping[str, Any],
        options: Mapping[str, Any],
        task_group: anyio.abc.TaskGroup,
        workdir_config: Mapping[str, Any] | None = None,
        trust_workdir: bool = False,
    ) -> None:
        self.workdir = workdir
        self.conversation_id = conversation_id
        self.pm = pm
        #: run options a family reads (``vibe=True`` is ``options["vibe"]``); the core gives
        #: them no meaning
        self.options: Mapping[str, Any] = dict(options)
        self.task_group = task_group
        #: the harness layer (anything) and the workdir layer (what each field allows)
        self.raw_config: dict[str, Any] = dict(config)
        self.workdir_config: dict[str, Any] = dict(workdir_config or {})
        #: workdir-local bin dirs (.venv/bin, venv/bin, node_modules/.bin) may run read-tier, and
        #: children start without the sanitised launch (:mod:`tether.processes.launch`)
        self.trust_workdir = trust_workdir
        #: workdir settings that were ignored (harness-only or looser), as said on stderr
        self.config_notes: list[str] = []
        self._unsent_notes: list[str] = []
        # what was wrong with the workdir's file itself (not valid TOML, not a table)
        self._note_ignored(getattr(workdir_config, "notes", ()))
        self.core: CoreConfig = self._load_config("core", CoreConfig)
        self.problems: list[str] = []
        self._configs: dict[str, Any] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self._call_ids = itertools.count(1)
        #: what watches every call (``tether_call_observers``: a tracer, a call log)
        self.observers: tuple[CallObserver, ...] = ()
        self.closed = False
        #: what plugins wired (a read-only mapping by name; typed access: :meth:`resource`)
        self.resources = Resources()
        #: the tools, by name, and the surfaces that see them
        self.registry = ToolRegistry(self.core.surfaces)
        #: the approval gate, asking the run's approver
        self.gate = ApprovalGate(
            self.core.approval,
            lambda: self.resource(APPROVER, None),
            _approval_sources(config, workdir_config),
        )
        #: every child process of the run; they end when it closes
        self.process_owner = ProcessOwner(task_group, workdir, trust_workdir=trust_workdir)

    # --- configuration, paths, resources --------------------------------------------------

    def config(self, table: str, cls: type[T]) -> T:
        """The ``[table]`` configuration loaded strictly into ``cls`` (cached per run)."""
        if table not in self._configs:
            self._configs[table] = self._load_config(table, cls)
        return self._configs[table]

    def _load_config(self, table: str, cls: type[T]) -> T:
        harness = self.raw_config.get(table, {})
        local = self.workdir_config.get(table)
        # the harness's own table is loaded strictly: its errors are errors
        loaded = structure_config(harness, cls, table)
        if local is None:
            return loaded
        if not isinstance(local, Mapping):
            self._note_ignored([f"{table}: ignored (expected a table, got {type(local).__name__})"])
            return loaded
        raw, notes = layer_config(harness, local, cls, table)
        # each key the workdir changed must load on its own: one that does not (a wrong type,
        # out of bounds) is ignored and said, and the run goes on without it
        accepted = dict(harness)
        for key, value in raw.items():
            if key in harness and harness[key] == value:
                continue
            trial = {**accepted, key: value}
            try:
                structure_config(trial, cls, table)
            except ConfigError as exc:
                notes.append(f"{table}.{key}: ignored ({exc})")
                continue
            accepted = trial
        self._note_ignored(notes)
        return structure_config(accepted, cls, table)

    def _note_ignored(self, notes: Iterable[str]) -> None:
        """Workdir settings that were ignored: said on stderr and in the next result's
        ``meta.config_ignored``."""
        for note in notes:
            note = f"workdir configuration: {note}"
            _warn("tether: %s", note)
            self.config_notes.append(note)
            self._unsent_notes.append(note)

    def confine(self, path: str, field: str = "path") -> Path:
        """``path`` resolved inside the workdir, or a PathError naming ``field``."""
        return _confine_in(self.workdir, path, field)  # resolved when the run opened

    @overload
    def resource(self, key: ResourceKey[T]) -> T: ...
    @overload
    def resource(self, key: ResourceKey[T], default: D) -> T | D: ...

    def resource(self, key: ResourceKey[Any], default: Any = _MISSING) -> Any:
        """The resource wired for ``key`` (see :mod:`tether.resources`); ``default`` when given
        and nothing is wired, else a ToolError naming the key."""
        return self.resources.require(key, default)

    # --- processes (the process owner's) --------------------------------------------------

    @property
    def owner(self) -> str:
        """The marker every process of this run carries (``TETHER_OWNER``)."""
        return self.process_owner.owner

    async def spawn(self, argv: Sequence[str], **kwargs: Any) -> _process.ManagedProcess:
        """Start a child that belongs to this run (:meth:`tether.processes.owner.ProcessOwner.spawn`)."""
        return await self.process_owner.spawn(argv, **kwargs)

    async def run_command(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float,
        cwd: str | os.PathLike[str] | None = None,
        max_output_bytes: int = 4 * 1024 * 1024,
        env: Mapping[str, str] | None = None,
    ) -> _process.CommandResult:
        """Run a short command (git, a version probe) as a child of this run, bounded in time
        and in output (:meth:`tether.processes.owner.ProcessOwner.run_command`)."""
        return await self.process_owner.run_command(
            argv, timeout_s=timeout_s, cwd=cwd, max_output_bytes=max_output_bytes, env=env
        )

    def child_env(self) -> dict[str, str]:
        """Environment entries for a process a library starts on the run's behalf (then pass its
        pid to :meth:`adopt_pid`): the owner marker lets the run find its detached descendants."""
        return self.process_owner.child_env()

    def adopt_pid(self, pid: int) -> bool:
        """Kill the tree of ``pid`` (started by a library, not :meth:`spawn`) when the run
        closes; False (nothing adopted) when it is not a process of this one's tree."""
        return self.process_owner.adopt_pid(pid)

    def release_pid(self, pid: int) -> None:
        """An adopted ``pid`` exited and its library reaped it: the close leaves its number alone."""
        self.process_owner.release_pid(pid)

    # --- tools (the registry's) -----------------------------------------------------------

    def _wire(self) -> None:
        """Resources, then tools, from every plugin, through the core's one collector: a plugin
        whose hook raises or returns something malformed is reported ``failed`` in
        ``pm.report`` and everything else keeps working."""
        core = {} if self.conversation_id is None else {CONVERSATION: self.conversation_id}
        self.resources.wire(self.pm, self, core)
        tools = collect(
            self.pm,
            "tether_tools",
            ToolSpec,
            key=lambda spec: spec.name,
            label="tool",
            check=schema_problem,
            run=self,
        )
        for contribution in tools.values():
            self.registry.add(contribution.item, contribution.plugin, self.resources.__contains__)
        self.observers = self._observers()

    def _observers(self) -> tuple[CallObserver, ...]:
        """What every ``tether_call_observers`` answered; one that is no observer is reported."""
        found: list[CallObserver] = []
        for plugin, value in call_each(self.pm, "tether_call_observers", run=self):
            for item in value if isinstance(value, list | tuple) else [value]:
                if item is None:
                    continue
                if isinstance(item, CallObserver):
                    found.append(item)
                else:
                    report_failure(
                        self.pm,
                        plugin,
                        "tether_call_observers",
                        f"returned a {type(item).__name__}, which has no observe_call and "
                        "observe_wait",
                    )
        return tuple(found)

    def register_host_tool(self, spec: ToolSpec) -> None:
        """Add one of the harness's own tools (write, edit, read…): same gates and wrappers."""
        if not self.registry.add(spec, "host", self.resources.__contains__):
            raise PluginError(f"host tool {spec.name!r} {self.registry.skipped[spec.name]}")

    @property
    def tools(self) -> Mapping[str, ToolSpec]:
        """Every registered tool, whatever the surface."""
        return self.registry.tools

    @property
    def skipped_tools(self) -> Mapping[str, str]:
        """Tools declared but not registered, with the reason (a resource that is not wired)."""
        return self.registry.skipped

    @property
    def surfaces(self) -> Mapping[str, Tier]:
        return self.registry.surfaces

    def surface_tier(self, surface: str) -> Tier:
        return self.registry.surface_tier(surface)

    def tools_for(self, surface: str = "default") -> list[ToolSpec]:
        """The tools a caller on ``surface`` sees, by name."""
        return self.registry.tools_for(surface)

    def schemas(
        self, surface: str = "default", format: SchemaFormat = "json"
    ) -> list[dict[str, Any]]:
        """Tool schemas for ``surface`` in plain JSON (with tier), OpenAI, Anthropic or Gemini format."""
        return self.registry.schemas(surface, format)

    # --- the call pipeline ------------------------------------------------------------------

    async def call(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        *,
        surface: str = "default",
        call_id: str | None = None,
        on_progress: Callable[[str], None] | None = None,
        conversation: str | None = None,
    ) -> ToolResult:
        """Call a tool through the whole pipeline: surface lookup → strict validation → approval
        → serialisation → handler under a timeout → ``tether_process_result`` wrappers.
        Workdir settings ignored since the last result are listed in ``meta.config_ignored``.
        ``on_progress`` receives the messages the tool reports while it runs
        (:meth:`CallContext.report_progress`). ``conversation`` names the calling conversation
        when one run serves several (``tether serve``): its per-conversation resources (a
        debug session, kernels — :class:`tether.resources.PerConversation`) are its own;
        default: the run's ``conversation_id``."""
        call_id = call_id or f"call_{next(self._call_ids)}"
        spec = self.registry.get(name)
        token = _calling_conversation.set(conversation) if conversation is not None else None
        try:
            record = CallRecord(self, name, surface, call_id, spec.tier.value if spec else None)
            with observing(record, self.observers):
                result = await self._call(
                    name, args, surface=surface, call_id=call_id, on_progress=on_progress
                )
                record.result = result
        finally:
            if token is not None:
                _calling_conversation.reset(token)
        if self._unsent_notes:
            result = result.with_meta(config_ignored=list(self._unsent_notes))
            self._unsent_notes.clear()
        return result

    async def _call(
        self,
        name: str,
        args: Mapping[str, Any] | None,
        *,
        surface: str,
        call_id: str | None,
        on_progress: Callable[[str], None] | None = None,
    ) -> ToolResult:
        call_id = call_id or f"call_{next(self._call_ids)}"
        if self.closed:
            return ToolResult.error("the run is closed", call_id=call_id)
        try:
            limit = self.surface_tier(surface)
        except ToolError as exc:
            return ToolResult.error(str(exc), call_id=call_id)
        spec = self.registry.get(name)
        if spec is None or spec.tier > limit:
            failed = [f"{i.name} ({i.reason})" for i in self.pm.report if i.status == "failed"]
            return ToolResult.error(
                self.registry.not_on_surface(name, surface, failed), call_id=call_id
            )
        raw = {} if args is None else args
        try:
            parsed: Any = structure_args(raw, spec.args)
        except ArgumentErrors as exc:
            return ToolResult.error(f"invalid arguments for {name}:\n{exc}", call_id=call_id)
        if spec.actions is not None and (problems := spec.actions.problems(raw)):
            text = "\n".join(problems)
            return ToolResult.error(f"invalid arguments for {name}:\n{text}", call_id=call_id)
        ctx = CallContext(
            run=self,
            spec=spec,
            args=parsed,
            raw_args=dict(raw),
            surface=surface,
            call_id=call_id,
            on_progress=on_progress,
        )
        refusal = await self.gate.check(ctx)
        if refusal is not None:
            return ToolResult.error(refusal, call_id=call_id)
        result = await self._run_serialised(ctx)
        # the budget cuts what every post-processor added to, never what they see
        final = apply_budget(ctx, await self._post_process(ctx, result))
        return final.with_meta(call_id=call_id) if "call_id" not in final.meta else final

    async def _post_process(self, ctx: CallContext, result: ToolResult) -> ToolResult:
        """Every ``tether_process_result`` in the collector's order, each bounded in time and
        attributed; each sees the handler's result and can only add to the final one."""
        notes, meta, _ = await self._gather_notes(
            "tether_process_result", "post-processing", call=ctx, result=result
        )
        if not notes and not meta:
            return result
        for note in notes:
            result = result.with_text_appended(note)
        return result.with_meta(**meta) if meta else result

    async def preview_diagnostics(self, change: StagedChange) -> ResultNote:
        """The diagnostics ``change`` would introduce, from every plugin that answers
        ``tether_preview_diagnostics`` (tether-lsp: the project's language servers), each
        bounded by ``[core] post_process_timeout_s``. Nothing is written. When no plugin
        checks the change the text says so; it is never empty. ``meta["preview_by"]`` names
        the plugins that answered."""
        hook = "tether_preview_diagnostics"
        notes, meta, answered = await self._gather_notes(
            hook, "diagnostics preview", run=self, change=change
        )
        if not answered:
            from tether.contributions import plugin_name

            plugins = [
                plugin_name(self.pm, impl.plugin)
                for impl in reversed(getattr(self.pm.hook, hook).get_hookimpls())
            ]
            notes.append(_preview.nobody_checked(plugins) if plugins else _preview.NO_PREVIEWER)
        return ResultNote(text="\n".join(notes), meta={**meta, "preview_by": answered})

    async def _gather_notes(
        self, hook: str, what: str, **kwargs: Any
    ) -> tuple[list[str], dict[str, Any], list[str]]:
        """Every implementation of ``hook`` in the collector's order, each bounded by
        ``[core] post_process_timeout_s``: their texts, merged meta, and the plugins that
        answered. One that raises or times out is a line naming it (``what`` says of what)."""
        timeout = self.core.post_process_timeout_s
        notes: list[str] = []
        meta: dict[str, Any] = {}
        answered: list[str] = []
        for plugin, value in call_each(self.pm, hook, **kwargs):
            try:
                with anyio.fail_after(timeout):
                    added = await value if inspect.isawaitable(value) else value
            except TimeoutError:
                notes.append(f"({what} by {plugin!r} gave no answer within {duration(timeout)})")
                continue
            except (ToolError, Exception) as exc:
                notes.append(f"({what} by {plugin!r} failed: {type(exc).__name__}: {exc})")
                continue
            if added is None:
                continue
            if isinstance(added, str):
                added = ResultNote(text=added)
            if not isinstance(added, ResultNote):
                report_failure(
                    self.pm,
                    plugin,
                    hook,
                    f"returned a {type(added).__name__}; it adds text or a tether.ResultNote, "
                    "it never replaces the result",
                )
                continue
            answered.append(plugin)
            if added.text:
                notes.append(added.text)
            meta.update(added.meta)
        return notes, meta, answered

    async def _run_serialised(self, ctx: CallContext) -> ToolResult:
        spec = ctx.spec
        if spec.parallel_safe:
            return await self._run_handler(ctx)
        held = _held_tools.get()
        if spec.name in held:
            return ToolResult.error(
                f"{spec.name!r} cannot be called from inside a running {spec.name!r} call (it runs one call at a time)"
            )
        lock = self._locks.setdefault(spec.name, anyio.Lock())
        async with lock:
            token = _held_tools.set(held | {spec.name})
            try:
                return await self._run_handler(ctx)
            finally:
                _held_tools.reset(token)

    async def _run_handler(self, ctx: CallContext) -> ToolResult:
        # a file the tool declares it writes by its own means: what it held before, read now
        before = await self._declared_before(ctx)
        with recording_writes() as log:
            result = await self._run_handler_unrecorded(ctx)
        declared = self._declared_writes(ctx, result) if not result.is_error else []
        unique: dict[Path, None] = {**log.paths, **{path: None for path in declared}}
        if not unique:
            return result
        before.update(log.before)  # the core's own writers saw it at the moment of writing
        return attrs.evolve(
            result,
            written=tuple(unique),
            before={path: before[path] for path in unique if path in before},
        )

    async def _declared_before(self, ctx: CallContext) -> dict[Path, bytes | None]:
        """What the file named by a ``ToolSpec.writes`` argument holds before the call (None:
        it does not exist); nothing for a callable, which names its files only afterwards."""
        writes = ctx.spec.writes
        if not isinstance(writes, str):
            return {}
        value = ctx.raw_args.get(writes)
        if not isinstance(value, str):
            return {}
        from tether.workdir.reading import UnreadableFile, read_bytes

        try:
            path = self.confine(value, field=writes)
            return {path: await read_bytes(self.workdir, path, field=writes)}
        except UnreadableFile as exc:  # a file not there yet held nothing; one unreadable, unknown
            return {path: None} if exc.reason == "missing" else {}
        except ToolError:
            return {}

    def _declared_writes(self, ctx: CallContext, result: ToolResult) -> list[Path]:
        writes = ctx.spec.writes
        if writes is None:
            return []
        raw: list[str | Path]
        if isinstance(writes, str):
            value = ctx.raw_args.get(writes)
            raw = [value] if isinstance(value, str) else []
        else:
            raw = list(writes(ctx, result))
        out = []
        for item in raw:
            try:
                out.append(
                    self.confine(str(item), field=writes if isinstance(writes, str) else "path")
                )
            except ToolError:
                continue  # outside the workdir: not ours to post-process
        return out

    async def _run_handler_unrecorded(self, ctx: CallContext) -> ToolResult:
        spec = ctx.spec
        timeout = self.core.call_timeout_s if spec.timeout_s is None else spec.timeout_s
        try:
            with (
                anyio.move_on_after(timeout if timeout else math.inf) as scope,
                writes_confined_to(self.workdir),  # every write of the call is checked against it
            ):
                if inspect.iscoroutinefunction(spec.handler):
                    value = await spec.handler(ctx, ctx.args)
                else:  # a synchronous host tool
                    handler: Any = spec.handler
                    # abandoned at the timeout: the call ends on time whatever the host tool
                    # waits on (the CLI exits without a thread that outlives its run)
                    value = await anyio.to_thread.run_sync(
                        handler, ctx, ctx.args, abandon_on_cancel=True
                    )
                    if inspect.isawaitable(value):
                        value = await value
        except ToolError as exc:
            return ToolResult.error(str(exc))
        except ExceptionGroup as group:
            # a handler's own task group (``lsp status`` assessing every server at once) that
            # failed only with expected failures: the first says why, as a lone one would
            expected, rest = group.split(ToolError)
            if rest is not None or expected is None:
                raise
            first: BaseException = expected
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            return ToolResult.error(str(first))
        except ImportError as exc:  # a dependency the plugin imports when called is missing
            origin = self.registry.origin.get(spec.name, "?")
            module = exc.name or str(exc)
            return ToolResult.error(
                f"{spec.name} cannot run: plugin {origin!r} needs module {module!r}, which is "
                f"not installed ({type(exc).__name__}: {exc})"
            )
        if scope.cancelled_caught:
            return ToolResult.error(f"{spec.name} timed out after {timeout:g} s and was cancelled")
        return as_result(value)

    def warm(self) -> None:
        """Start in the background what the resources can start ahead of the first call (each
        resource's ``async def warm()``: the language servers of the workdir's roots), so a
        served run's first call does not pay the whole start. A call meanwhile waits as usual."""

        async def warm_one(name: str, warm: Callable[[], Any]) -> None:
            try:
                await warm()
            except Exception as exc:  # the first call reports what is wrong; this is a head start
                _warn("tether: warming %s failed: %s", name, exc)

        for name in self.resources:
            values: list[Any] = self.resources.every(name)
            for value in values:
                warm = getattr(value, "warm", None)
                if warm is not None and inspect.iscoroutinefunction(warm):
                    self.task_group.start_soon(warm_one, name, warm)

    # --- closing ----------------------------------------------------------------------------

    async def close_conversation(self, conversation: str) -> None:
        """One conversation of a served run ended: close its per-conversation resources (its
        debug session, its kernels); the shared ones stay."""
        for problem in await self.resources.close_conversation(
            conversation, self.core.close_timeout_s
        ):
            _warn("tether: %s", problem)

    async def _close(self) -> None:
        self.closed = True
        # every resource at once under one budget; past it, the process trees are killed
        await self.resources.aclose(
            self.core.close_timeout_s, self.problems, on_overdue=self.process_owner.kill_all
        )
        # spawning stays possible while resources close (a worktree's `git worktree remove`):
        # the processes are terminated only after that
        await self.process_owner.close()
        for problem in self.problems:
            _warn("tether: %s", problem)


def _approval_sources(
    config: Mapping[str, Any], workdir_config: Mapping[str, Any] | None
) -> ApprovalSources:
    """Where the approval entries came from, so a refusal names the one to change."""

    def approval(layer: Mapping[str, Any] | None) -> Mapping[str, Any]:
        core = (layer or {}).get("core")
        table = core.get("approval") if isinstance(core, Mapping) else None
        return table if isinstance(table, Mapping) else {}

    return ApprovalSources(
        harness=approval(config),
        workdir=approval(workdir_config),
        harness_origin=getattr(config, "origin", HARNESS_ORIGIN),
        set_by=getattr(config, "set_by", {}),
        workdir_origin=getattr(workdir_config, "source", None),
    )


@asynccontextmanager
async def open_run(
    workdir: str | os.PathLike[str],
    *,
    conversation_id: str | None = None,
    plugins: Iterable[object] = (),
    config: Mapping[str, Any] | None = None,
    vibe: bool = False,
    entry_points: bool = True,
    workdir_config: Mapping[str, Any] | None = None,
    trust_workdir: bool = False,
    options: Mapping[str, Any] | None = None,
) -> AsyncIterator[Run]:
    """Open a run on ``workdir``: wire resources, register tools; on exit close every resource
    and kill every child process tree the run started (shielded, time-bounded).

    ``plugins`` are the harness's own plugin objects (hooks such as ``tether_resources`` for a
    question port or an approver). ``entry_points=False`` loads no installed plugin (tests).
    ``config`` is the harness layer (it may set anything); ``workdir_config`` the checkout's own
    (``tether.config.load_workdir_config``): it may set only timeouts and caps and make approval
    and surfaces stricter — every other key is ignored and noted. ``trust_workdir`` lets
    read-tier servers run from the workdir's ``.venv/bin``, ``venv/bin`` and ``node_modules/.bin``.
    ``options`` are run options a family reads (:attr:`Run.options`); ``vibe=True`` is
    ``options={"vibe": True}`` (tether-vibe's background workers).
    """
    root = _workdir_root(workdir)
    await _recover_pending(root)
    pm = make_plugin_manager(entry_points_group="tether" if entry_points else None, plugins=plugins)
    try:
        async with anyio.create_task_group() as tg:
            run = Run(
                workdir=root,
                conversation_id=conversation_id,
                pm=pm,
                config=config if config is not None else {},
                options={**(options or {}), **({"vibe": True} if vibe else {})},
                task_group=tg,
                workdir_config=workdir_config,
                trust_workdir=trust_workdir,
            )
            # kills the run's children if this process dies without running its finally blocks
            watchdog = _watchdog.start(run.owner)
            try:
                run._wire()
                yield run
            finally:
                with (
                    anyio.CancelScope(shield=True),
                    anyio.move_on_after(run.core.close_timeout_s * 2),
                ):
                    await run._close()
                # the close may have been cut short: make sure no child survives
                run.process_owner.kill_all()
                _watchdog.stop(watchdog)
                tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # the run's task group is an implementation detail: give the harness its own exception
        raise _single(group) from None


def _workdir_root(workdir: str | os.PathLike[str]) -> Path:
    root = Path(workdir).resolve()
    if not root.is_dir():
        raise ToolError(f"workdir: {str(root)!r} is not a directory")
    return root


async def _recover_pending(root: Path) -> None:
    """Finish or undo a change whose process died on ``root`` before the run starts; put off
    (and said) while another process's change holds the workdir's write lock."""
    if _journal.pending(root):  # a change whose process died: finish or undo it first
        try:
            # off the event loop: another process's change may hold the workdir's write lock
            for line in await anyio.to_thread.run_sync(_journal.recover, root):
                _warn("tether: recovered %s", line)
        except _journal.WorkdirBusy as exc:  # the run's first write recovers under the lock
            _warn("tether: recovery put off: %s", exc)


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    while isinstance(group, BaseExceptionGroup) and len(group.exceptions) == 1:
        group = group.exceptions[0]  # type: ignore[assignment]
    return group


class SyncRun:
    """A blocking facade over a :class:`Run` for harnesses that are not async."""

    def __init__(self, run: Run, portal: BlockingPortal) -> None:
        self.run = run
        self._portal = portal

    def call(
        self, name: str, args: Mapping[str, Any] | None = None, *, surface: str = "default"
    ) -> ToolResult:
        return self._portal.call(lambda: self.run.call(name, args, surface=surface))

    def schemas(
        self, surface: str = "default", format: SchemaFormat = "json"
    ) -> list[dict[str, Any]]:
        return self.run.schemas(surface=surface, format=format)

    def register_host_tool(self, spec: ToolSpec) -> None:
        self.run.register_host_tool(spec)

    @property
    def portal(self) -> BlockingPortal:
        """The portal whose event loop runs the run: ``portal.call(async_fn, *args)`` blocks."""
        return self._portal

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.run, name)
        if inspect.iscoroutinefunction(value):
            # handing back the coroutine function would make `sync_run.spawn(...)` return a
            # coroutine that is never awaited; say what to do instead
            raise AttributeError(
                f"Run.{name} is async and has no blocking form on SyncRun; "
                f"use sync_run.portal.call(sync_run.run.{name}, ...)"
            )
        return value


@contextmanager
def open_run_sync(workdir: str | os.PathLike[str], **kwargs: Any) -> Iterator[SyncRun]:
    """:func:`open_run` for synchronous code; the event loop runs in a background thread."""
    from anyio.from_thread import start_blocking_portal  # only sync harnesses pay for it

    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(open_run(workdir, **kwargs)) as run,
    ):
        yield SyncRun(run, portal)


__all__ = ["Run", "SyncRun", "open_run", "open_run_sync"]

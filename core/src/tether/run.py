"""A run: the live resources of one conversation, the tools they back, and the call pipeline."""

from __future__ import annotations

import contextvars
import inspect
import itertools
import logging
import math
import os
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import anyio.abc
import anyio.lowlevel
import attrs

from tether import journal as _journal
from tether import process as _process
from tether import watchdog as _watchdog
from tether.approval import ApprovalRequest, Decision, render_args
from tether.args import object_schema, structure_args, structure_config
from tether.config import CoreConfig, layer_config
from tether.contributions import call_each, collect, report_failure
from tether.errors import ArgumentErrors, ConfigError, NoPerson, PluginError, ToolError
from tether.fsutil import recording_writes, writes_confined_to
from tether.paths import confine as _confine
from tether.plugins import TetherPluginManager, make_plugin_manager
from tether.text import duration
from tether.tiers import BUILTIN_SURFACES, Tier
from tether.tools import CallContext, ResultNote, ToolResult, ToolSpec, as_result

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal

log = logging.getLogger("tether")
T = TypeVar("T")
SchemaFormat = Literal["json", "openai", "anthropic"]

# Tools held (not parallel-safe, currently running) by the task chain making a call: a bridge
# call back into the same tool would wait on its own lock forever.
_held_tools: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "tether_held_tools", default=frozenset()
)


class Run:
    """One run. Create it with :func:`open_run`; never directly."""

    def __init__(
        self,
        *,
        workdir: Path,
        conversation_id: str | None,
        pm: TetherPluginManager,
        config: Mapping[str, Any],
        vibe: bool,
        task_group: anyio.abc.TaskGroup,
        workdir_config: Mapping[str, Any] | None = None,
        trust_workdir: bool = False,
    ) -> None:
        self.workdir = workdir
        self.conversation_id = conversation_id
        self.pm = pm
        self.vibe = vibe
        self.task_group = task_group
        #: the harness layer (anything) and the workdir layer (what each field allows)
        self.raw_config: dict[str, Any] = dict(config)
        self.workdir_config: dict[str, Any] = dict(workdir_config or {})
        #: workdir-local bin dirs (.venv/bin, venv/bin, node_modules/.bin) may run read-tier
        self.trust_workdir = trust_workdir
        #: workdir settings that were ignored (harness-only or looser), as said on stderr
        self.config_notes: list[str] = []
        self._unsent_notes: list[str] = []
        self.core: CoreConfig = self._load_config("core", CoreConfig)
        self.resources: dict[str, Any] = {}
        self.problems: list[str] = []
        self._resource_origin: dict[str, str] = {}
        self._tools: dict[str, ToolSpec] = {}
        self._tool_origin: dict[str, str] = {}
        self._skipped: dict[str, str] = {}
        self._configs: dict[str, Any] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self._allowed_for_run: set[str] = set()
        self._approvals_waiting: dict[str, set[anyio.CancelScope]] = {}
        self._processes: list[_process.ManagedProcess] = []
        self._adopted: set[int] = set()
        self._call_ids = itertools.count(1)
        self._spawn_ids = itertools.count(1)
        # every process of this run carries TETHER_OWNER=<owner>/<n>: detached daemons included
        self.owner = f"{os.getpid()}.{os.urandom(6).hex()}"
        self.closed = False
        # spawning stays possible while resources close (a worktree's `git worktree remove`):
        # the processes are terminated only after that
        self._processes_closed = False
        self.surfaces: dict[str, Tier] = dict(BUILTIN_SURFACES)
        for name, tier in self.core.surfaces.items():
            self.surfaces[name] = Tier(tier)

    # --- configuration, paths, processes ----------------------------------------------------

    def config(self, table: str, cls: type[T]) -> T:
        """The ``[table]`` configuration loaded strictly into ``cls`` (cached per run)."""
        if table not in self._configs:
            self._configs[table] = self._load_config(table, cls)
        return self._configs[table]

    def _load_config(self, table: str, cls: type[T]) -> T:
        harness = self.raw_config.get(table, {})
        local = self.workdir_config.get(table)
        if local is None or not isinstance(harness, Mapping):
            return structure_config(harness, cls, table)
        if not isinstance(local, Mapping):
            raise ConfigError(f"{table}: expected a table in the workdir's configuration")
        raw, notes = layer_config(harness, local, cls, table)
        for note in notes:
            note = f"workdir configuration: {note}"
            log.warning("tether: %s", note)
            self.config_notes.append(note)
            self._unsent_notes.append(note)
        return structure_config(raw, cls, table)

    def confine(self, path: str, field: str = "path") -> Path:
        """``path`` resolved inside the workdir, or a PathError naming ``field``."""
        return _confine(self.workdir, path, field)

    async def spawn(self, argv: Sequence[str], **kwargs: Any) -> _process.ManagedProcess:
        """Start a child that belongs to this run (see :func:`tether.process.spawn`).

        The start is shielded from cancellation; if the caller was cancelled meanwhile, the
        process it will never see is terminated at once and the cancellation goes on.
        """
        if self._processes_closed:
            raise ToolError("the run is closed; no new process can start")
        marker = f"{self.owner}/{next(self._spawn_ids)}"
        with anyio.CancelScope(shield=True):
            proc = await _process.spawn(argv, task_group=self.task_group, marker=marker, **kwargs)
            self._processes = [p for p in self._processes if not p.terminated]
            self._processes.append(proc)
        try:
            await anyio.lowlevel.checkpoint()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await proc.terminate(grace_s=0.2)
            raise
        return proc

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
        and in output: on timeout its whole tree is killed and ``timed_out`` is set; stdout
        beyond ``max_output_bytes`` is dropped and counted; stderr keeps its tail. A program
        that cannot start raises ``OSError``."""
        proc = await self.spawn(
            list(argv), cwd=cwd if cwd is not None else self.workdir, stdin=False, env=env
        )
        out = bytearray()
        dropped = 0
        code: int | None = None
        with anyio.move_on_after(timeout_s):
            async for chunk in proc.stdout:
                room = max_output_bytes - len(out)
                out += chunk[:room]
                dropped += max(0, len(chunk) - room)
            code = await proc.wait()
        if code is None:
            with anyio.CancelScope(shield=True):
                await proc.terminate(grace_s=0.2)
        return _process.CommandResult(
            tuple(argv), code, bytes(out), proc.stderr_tail.text(), dropped
        )

    def child_env(self) -> dict[str, str]:
        """Environment entries for a process a library starts on the run's behalf (then pass its
        pid to :meth:`adopt_pid`): the owner marker lets the run find its detached descendants."""
        return {_process.OWNER_ENV: f"{self.owner}/adopted"}

    def adopt_pid(self, pid: int) -> None:
        """Kill the tree of ``pid`` (started by a library, not :meth:`spawn`) when the run closes."""
        self._adopted.add(pid)

    # --- registry ---------------------------------------------------------------------------

    def _wire(self) -> None:
        """Resources, then tools, from every plugin, through the core's one collector: a plugin
        whose hook raises or returns something malformed is reported ``failed`` in
        ``pm.report`` and everything else keeps working."""
        for plugin, wired in call_each(self.pm, "tether_resources", run=self):
            if not isinstance(wired, Mapping):
                report_failure(
                    self.pm,
                    plugin,
                    "tether_resources",
                    f"must return a dict, got {type(wired).__name__}; nothing wired from it",
                )
                continue
            for name, resource in wired.items():
                if name in self.resources:
                    report_failure(
                        self.pm,
                        plugin,
                        "tether_resources",
                        f"resource {name!r} dropped: already wired by {self._resource_origin[name]!r}",
                    )
                    continue
                self.resources[name] = resource
                self._resource_origin[name] = plugin
        tools = collect(
            self.pm,
            "tether_tools",
            ToolSpec,
            key=lambda spec: spec.name,
            label="tool",
            check=_schema_problem,
            run=self,
        )
        for contribution in tools.values():
            self._add_tool(contribution.item, contribution.plugin)

    def _add_tool(self, spec: ToolSpec, origin: str) -> bool:
        if not isinstance(spec, ToolSpec):
            raise PluginError(
                f"plugin {origin!r} declared {spec!r}, which is not a tether.ToolSpec"
            )
        if spec.name in self._tools or spec.name in self._skipped:
            raise PluginError(
                f"tool name {spec.name!r} is declared by both {self._tool_origin[spec.name]!r} and {origin!r}"
            )
        problem = _schema_problem(spec)
        if problem is not None:
            raise PluginError(f"tool {spec.name!r} from {origin!r}: {problem}")
        missing = [r for r in spec.requires if r not in self.resources]
        self._tool_origin[spec.name] = origin
        if missing:
            self._skipped[spec.name] = (
                f"needs resource(s) {', '.join(missing)} (not wired for this run)"
            )
            return False
        self._tools[spec.name] = spec
        return True

    def register_host_tool(self, spec: ToolSpec) -> None:
        """Add one of the harness's own tools (write, edit, read…): same gates and wrappers."""
        if not self._add_tool(spec, "host"):
            raise PluginError(f"host tool {spec.name!r} {self._skipped[spec.name]}")

    @property
    def tools(self) -> Mapping[str, ToolSpec]:
        """Every registered tool, whatever the surface."""
        return dict(self._tools)

    @property
    def skipped_tools(self) -> Mapping[str, str]:
        """Tools declared but not registered, with the reason (a resource that is not wired)."""
        return dict(self._skipped)

    def surface_tier(self, surface: str) -> Tier:
        try:
            return self.surfaces[surface]
        except KeyError:
            known = ", ".join(sorted(self.surfaces))
            raise ToolError(f"surface: unknown surface {surface!r} (known: {known})") from None

    def tools_for(self, surface: str = "default") -> list[ToolSpec]:
        """The tools a caller on ``surface`` sees, by name."""
        limit = self.surface_tier(surface)
        return [spec for _, spec in sorted(self._tools.items()) if spec.tier <= limit]

    def schemas(
        self, surface: str = "default", format: SchemaFormat = "json"
    ) -> list[dict[str, Any]]:
        """Tool schemas for ``surface`` in plain JSON (with tier), OpenAI or Anthropic format."""
        out = []
        for spec in self.tools_for(surface):
            schema = object_schema(spec.args)
            if format == "openai":
                out.append(
                    {
                        "type": "function",
                        "function": {
                            "name": spec.name,
                            "description": spec.full_description,
                            "parameters": schema,
                        },
                    }
                )
            elif format == "anthropic":
                out.append(
                    {
                        "name": spec.name,
                        "description": spec.full_description,
                        "input_schema": schema,
                    }
                )
            elif format == "json":
                out.append(
                    {
                        "name": spec.name,
                        "tier": spec.tier.value,
                        "description": spec.full_description,
                        "input_schema": schema,
                    }
                )
            else:
                raise ValueError(f"format: expected json, openai or anthropic, got {format!r}")
        return out

    # --- the call pipeline ------------------------------------------------------------------

    async def call(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        *,
        surface: str = "default",
        call_id: str | None = None,
    ) -> ToolResult:
        """Call a tool through the whole pipeline: surface lookup → strict validation → approval
        → serialisation → handler under a timeout → ``tether_process_result`` wrappers.
        Workdir settings ignored since the last result are listed in ``meta.config_ignored``."""
        result = await self._call(name, args, surface=surface, call_id=call_id)
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
    ) -> ToolResult:
        call_id = call_id or f"call_{next(self._call_ids)}"
        if self.closed:
            return ToolResult.error("the run is closed", call_id=call_id)
        try:
            limit = self.surface_tier(surface)
        except ToolError as exc:
            return ToolResult.error(str(exc), call_id=call_id)
        spec = self._tools.get(name)
        if spec is None or spec.tier > limit:
            return ToolResult.error(
                self._not_on_surface(name, surface, limit, spec), call_id=call_id
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
            run=self, spec=spec, args=parsed, raw_args=dict(raw), surface=surface, call_id=call_id
        )
        refusal = await self._gate(ctx)
        if refusal is not None:
            return ToolResult.error(refusal, call_id=call_id)
        result = await self._run_serialised(ctx)
        final = await self._post_process(ctx, result)
        return final.with_meta(call_id=call_id) if "call_id" not in final.meta else final

    async def _post_process(self, ctx: CallContext, result: ToolResult) -> ToolResult:
        """Every ``tether_process_result`` in the collector's order, each bounded in time and
        attributed; each sees the handler's result and can only add to the final one."""
        hook = "tether_process_result"
        timeout = self.core.post_process_timeout_s
        notes: list[str] = []
        meta: dict[str, Any] = {}
        for plugin, value in call_each(self.pm, hook, call=ctx, result=result):
            try:
                with anyio.fail_after(timeout):
                    added = await value if inspect.isawaitable(value) else value
            except TimeoutError:
                notes.append(
                    f"(post-processing by {plugin!r} gave no answer within {duration(timeout)})"
                )
                continue
            except (ToolError, Exception) as exc:
                notes.append(f"(post-processing by {plugin!r} failed: {type(exc).__name__}: {exc})")
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
                    f"returned a {type(added).__name__}; a post-processor adds text or a "
                    "tether.ResultNote, it never replaces the result",
                )
                continue
            if added.text:
                notes.append(added.text)
            meta.update(added.meta)
        if not notes and not meta:
            return result
        for note in notes:
            result = result.with_text_appended(note)
        return result.with_meta(**meta) if meta else result

    def _not_on_surface(self, name: str, surface: str, limit: Tier, spec: ToolSpec | None) -> str:
        if spec is not None:
            return (
                f"tool {name!r} ({spec.tier.value} tier) is not available on surface {surface!r}, "
                f"which allows {limit.value}-tier tools at most"
            )
        visible = ", ".join(s.name for s in self.tools_for(surface)) or "none"
        hint = f" ({name!r} {self._skipped[name]})" if name in self._skipped else ""
        failed = [f"{i.name} ({i.reason})" for i in self.pm.report if i.status == "failed"]
        if failed:  # the tool may be one of theirs: say which plugin and what it lacks
            hint += f"; plugins that failed to load: {'; '.join(failed)}"
        return f"unknown tool {name!r}; tools on surface {surface!r}: {visible}{hint}"

    async def _gate(self, ctx: CallContext) -> str | None:
        tier = ctx.spec.tier
        policy = getattr(self.core.approval, tier.value)
        if policy == "auto" or ctx.tool in self._allowed_for_run:
            return None
        if policy == "deny":
            return f'{ctx.tool!r} refused: {tier.value}-tier calls are denied by policy ([core.approval] {tier.value} = "deny")'
        approver = self.resources.get("approver")
        if approver is None:
            return (
                f'{ctx.tool!r} refused: it needs approval ({tier.value} tier, policy "ask") and this run has no '
                f'approver attached (fail closed). Auto-approve the tier ([core.approval] {tier.value} = "auto"; '
                f"`tether call/session --approve {tier.value}` on the command line) or attach an approver."
            )
        request = ApprovalRequest(
            tool=ctx.tool,
            tier=tier,
            args_summary=render_args(ctx.raw_args),
            call_id=ctx.call_id,
            surface=ctx.surface,
            args=dict(ctx.raw_args),
        )
        # approvals of the same tool waiting at once: "allow for the run" on one answers them all
        waiting = self._approvals_waiting.setdefault(ctx.tool, set())
        decision: Decision | None = None
        with anyio.CancelScope() as scope:
            waiting.add(scope)
            try:
                decision = await approver.approve(request)
            except NoPerson as exc:
                return f"{ctx.tool!r} refused: it needs approval and no person is attached to give it ({exc}) (fail closed)"
            except TimeoutError:
                return f"{ctx.tool!r} refused: the approval question timed out (fail closed)"
            finally:
                waiting.discard(scope)
        if decision is None:  # withdrawn: another card allowed this tool for the rest of the run
            return None
        if decision is Decision.ALLOW_FOR_RUN:
            self._allowed_for_run.add(ctx.tool)
            for other in list(waiting):
                other.cancel()
            return None
        if decision is Decision.ALLOW:
            return None
        return f"{ctx.tool!r} refused: the person denied this call"

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
        with recording_writes() as written:
            result = await self._run_handler_unrecorded(ctx)
        declared = self._declared_writes(ctx, result) if not result.is_error else []
        unique: dict[Path, None] = {**written, **{path: None for path in declared}}
        if not unique:
            return result
        return attrs.evolve(result, written=tuple(unique))

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
                    value = await anyio.to_thread.run_sync(handler, ctx, ctx.args)
                    if inspect.isawaitable(value):
                        value = await value
        except ToolError as exc:
            return ToolResult.error(str(exc))
        except ImportError as exc:  # a dependency the plugin imports when called is missing
            origin = self._tool_origin.get(spec.name, "?")
            module = exc.name or str(exc)
            return ToolResult.error(
                f"{spec.name} cannot run: plugin {origin!r} needs module {module!r}, which is "
                f"not installed ({type(exc).__name__}: {exc})"
            )
        if scope.cancelled_caught:
            return ToolResult.error(f"{spec.name} timed out after {timeout:g} s and was cancelled")
        return as_result(value)

    # --- closing ----------------------------------------------------------------------------

    async def _close(self) -> None:
        self.closed = True
        for name in reversed(list(self.resources)):
            resource = self.resources[name]
            closer = getattr(resource, "aclose", None)
            if closer is None or not inspect.iscoroutinefunction(closer):
                continue
            with anyio.move_on_after(self.core.close_timeout_s) as scope:
                try:
                    await closer()
                except Exception as exc:
                    self.problems.append(
                        f"closing resource {name!r} failed: {type(exc).__name__}: {exc}"
                    )
            if scope.cancelled_caught:
                self.problems.append(
                    f"closing resource {name!r} took over {self.core.close_timeout_s:g} s"
                )
        self._processes_closed = True
        async with anyio.create_task_group() as tg:
            for proc in self._processes:
                tg.start_soon(proc.terminate, 0.5)
        for pid in self._adopted:
            _process.kill_tree(pid)
        # daemons that left every tree still carry the run's marker
        for pid in _process.owned_by(f"{self.owner}/", prefix=True):
            _process.kill_tree(pid)
        for problem in self.problems:
            log.warning("tether: %s", problem)


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
) -> AsyncIterator[Run]:
    """Open a run on ``workdir``: wire resources, register tools; on exit close every resource
    and kill every child process tree the run started (shielded, time-bounded).

    ``plugins`` are the harness's own plugin objects (hooks such as ``tether_resources`` for a
    question port or an approver). ``entry_points=False`` loads no installed plugin (tests).
    ``config`` is the harness layer (it may set anything); ``workdir_config`` the checkout's own
    (``tether.config.load_workdir_config``): it may set only timeouts and caps and make approval
    and surfaces stricter — every other key is ignored and noted. ``trust_workdir`` lets
    read-tier servers run from the workdir's ``.venv/bin``, ``venv/bin`` and ``node_modules/.bin``.
    """
    root = Path(workdir).resolve()
    if not root.is_dir():
        raise ToolError(f"workdir: {str(root)!r} is not a directory")
    if _journal.pending(root):  # a change whose process died: finish or undo it first
        for line in _journal.recover(root):
            log.warning("tether: recovered %s", line)
    pm = make_plugin_manager(entry_points_group="tether" if entry_points else None, plugins=plugins)
    try:
        async with anyio.create_task_group() as tg:
            run = Run(
                workdir=root,
                conversation_id=conversation_id,
                pm=pm,
                config=config or {},
                vibe=vibe,
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
                for proc in run._processes:
                    proc.kill()
                _watchdog.stop(watchdog)
                tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # the run's task group is an implementation detail: give the harness its own exception
        raise _single(group) from None


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    while isinstance(group, BaseExceptionGroup) and len(group.exceptions) == 1:
        group = group.exceptions[0]  # type: ignore[assignment]
    return group


def _schema_problem(spec: ToolSpec) -> str | None:
    """Why ``spec``'s argument class cannot be described as a JSON Schema, or its per-action
    table names fields the class lacks; or None."""
    try:
        object_schema(spec.args)
    except Exception as exc:
        return f"argument class {getattr(spec.args, '__name__', spec.args)!r}: {exc}"
    if spec.actions is not None and (unknown := spec.actions.unknown_fields(spec.args)):
        return f"actions name fields the argument class lacks: {', '.join(unknown)}"
    return None


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

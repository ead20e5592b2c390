"""Typed run resources: keys declared by whoever defines an interface, values wired by plugins.

A key names a resource and says what its value must be::

    QUESTION_PORT: ResourceKey[QuestionPort] = ResourceKey("question_port", QuestionPort)
    port = run.resource(QUESTION_PORT)          # typed; ToolError naming the key when absent

A plugin's ``tether_resources`` hook returns ``{key: value}`` (a :class:`ResourceKey` or its
name) or ``{key: Default(make, after=(...))}``. The core wires every direct value first, then the
defaults in dependency order: ``make(run)`` runs only when nobody wired the key directly, after
the defaults of the keys in ``after``, and returns the value or None (not provided). So a
question port made from the session's card stream never depends on which hook ran last.

A value may be :class:`PerConversation` (``make(run)`` per calling conversation): a run served to
several conversations (``tether serve``) gives each its own (one debug session, one set of
kernels per conversation) while the rest — language servers, caches — is shared. ``require``
returns the calling conversation's (:func:`calling_conversation`), made on first use.

A value of the wrong kind is dropped and its plugin reported ``failed``; when it comes from the
harness's own plugin objects it fails the run's opening instead (it is the harness's input, like
its configuration).
"""

from __future__ import annotations

import contextvars
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar, overload

import anyio
import attrs

from tether.contributions import call_each, report_failure
from tether.errors import ConfigError, ToolError

T = TypeVar("T")
D = TypeVar("D")
K = TypeVar("K")
HOOK = "tether_resources"


def forget_entry(table: dict[K, T], key: K, value: T) -> bool:
    """Remove ``key`` from a resource's table of live things (servers, kernels) only if it still
    maps to ``value``: a reload or the run's close may have replaced the entry or emptied the
    table while its owner awaited (a start, a close). True if it was removed."""
    if key in table and table[key] is value:
        del table[key]
        return True
    return False


@attrs.frozen
class ResourceKey(Generic[T]):
    """The name of a run resource and what its value must be.

    ``kind`` is a class or a ``runtime_checkable`` protocol the value is checked against when it
    is wired (None: anything), or its ``"module:QualName"``, imported only then: a key declared
    where its class would be too costly to import at start-up (a plugin's tool module, loaded
    by every start, naming a resource only a run builds). Declare the key beside the interface
    it stands for.
    """

    name: str
    kind: type[Any] | str | None = attrs.field(default=None, eq=False)
    doc: str = attrs.field(default="", eq=False)

    def __attrs_post_init__(self) -> None:
        _DECLARED.setdefault(self.name, self)  # a bare name wired later is checked against it

    def kind_class(self) -> type[Any] | None:
        """``kind``, imported when it was given by name."""
        if not isinstance(self.kind, str):
            return self.kind
        import importlib

        module, _, qualname = self.kind.partition(":")
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
        return found

    def __str__(self) -> str:
        return self.name


#: every key declared in this process, by name (the first declaration of a name wins)
_DECLARED: dict[str, ResourceKey[Any]] = {}


@attrs.frozen
class Default(Generic[T]):
    """A resource made only when nobody wires its key directly.

    ``make(run)`` is called after every direct resource and after the defaults of the keys in
    ``after`` (those that someone provides); it returns the value, or None to provide nothing.
    """

    make: Callable[[Any], T | None]
    after: tuple[ResourceKey[Any] | str, ...] = ()


#: the conversation a call is made for (:meth:`tether.Run.call`'s ``conversation``); None: the
#: run's own
_calling_conversation: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "tether_calling_conversation", default=None
)


def calling_conversation(run: Any) -> str | None:
    """The conversation of the call being made: the caller's when it named one, else the run's."""
    return _calling_conversation.get() or getattr(run, "conversation_id", None)


class PerConversation(Generic[T]):
    """A resource each conversation of a run gets its own of: ``make(run)`` is called on a
    conversation's first use; :meth:`close` ends one conversation's, ``aclose`` every one."""

    def __init__(self, make: Callable[[Any], T], run: Any) -> None:
        self._make = make
        self._run = run
        self._kind: type[Any] | None = None
        self._name = ""
        self.instances: dict[str | None, T] = {}

    def get(self) -> T:
        conversation = calling_conversation(self._run)
        if conversation not in self.instances:
            value = self._make(self._run)
            if self._kind is not None and not isinstance(value, self._kind):
                raise ToolError(
                    f"{self._name}: expected a {self._kind.__qualname__}, "
                    f"got {type(value).__qualname__}"
                )
            self.instances[conversation] = value
        return self.instances[conversation]

    async def close(self, conversation: str | None) -> None:
        """Close ``conversation``'s (its debug session, its kernels), if it has one."""
        value = self.instances.pop(conversation, None)
        closer = getattr(value, "aclose", None)
        if closer is not None and inspect.iscoroutinefunction(closer):
            await closer()

    async def aclose(self) -> None:
        for conversation in list(self.instances):
            await self.close(conversation)


def key_name(key: ResourceKey[Any] | str) -> str:
    return key.name if isinstance(key, ResourceKey) else key


_MISSING: Any = object()


class Resources(Mapping[str, Any]):
    """The resources of one run, by name, in wiring order (they close all at once).

    A read-only mapping of name to value (``run.resources["lsp_supervisor"]``,
    ``run.resources.get(name)``), plus :meth:`require` for typed access by key.
    """

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}
        self._origin: dict[str, str] = {}

    def __getitem__(self, key: ResourceKey[Any] | str) -> Any:
        value = self._values[key_name(key)]
        return value.get() if isinstance(value, PerConversation) else value

    def every(self, key: ResourceKey[T] | str) -> list[T]:
        """Every conversation's value of ``key`` made so far (one for a shared resource; none
        when nothing is wired): what a change seen by every conversation must reach."""
        value = self._values.get(key_name(key))
        if value is None:
            return []
        return list(value.instances.values()) if isinstance(value, PerConversation) else [value]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, ResourceKey | str) and key_name(key) in self._values

    @overload
    def require(self, key: ResourceKey[T]) -> T: ...
    @overload
    def require(self, key: ResourceKey[T], default: D) -> T | D: ...

    def require(self, key: ResourceKey[Any], default: Any = _MISSING) -> Any:
        """The value wired for ``key``; ``default`` when given and nothing is wired, else a
        ToolError naming the key and what is wired."""
        if key.name in self._values:
            value = self._values[key.name]
            return value.get() if isinstance(value, PerConversation) else value
        if default is not _MISSING:
            return default
        wired = ", ".join(self._values) or "none"
        raise ToolError(f"resource {key.name!r} is not wired for this run (wired: {wired})")

    def origin(self, key: ResourceKey[Any] | str) -> str | None:
        """The plugin that wired ``key``, or None."""
        return self._origin.get(key_name(key))

    # --- wiring -------------------------------------------------------------------------------

    def wire(self, pm: Any, run: Any, core: Mapping[ResourceKey[Any], Any] = {}) -> None:
        """The core's own resources (``core``), then every plugin's ``tether_resources``,
        through the core's collector: direct values in the collector's order, then the defaults
        in dependency order."""
        harness = {i.name for i in getattr(pm, "report", ()) if i.version is None}
        for core_key, core_value in core.items():
            self._add(pm, "tether", core_key, core_value, harness=True)
        defaults: dict[str, list[tuple[str, ResourceKey[Any] | str, Default[Any]]]] = {}
        for plugin, wired in call_each(pm, HOOK, run=run):
            if not isinstance(wired, Mapping):
                report_failure(
                    pm,
                    plugin,
                    HOOK,
                    f"must return a dict, got {type(wired).__name__}; nothing wired from it",
                )
                continue
            for key, value in wired.items():
                if not isinstance(key, ResourceKey | str):
                    report_failure(
                        pm, plugin, HOOK, f"key {key!r} dropped: expected a ResourceKey or a str"
                    )
                elif isinstance(value, Default):
                    defaults.setdefault(key_name(key), []).append((plugin, key, value))
                else:
                    self._add(pm, plugin, key, value, harness=plugin in harness)
        for name in _dependency_order(pm, defaults):
            if name in self._values:
                continue  # wired directly: the default is not made
            plugin, key, default = defaults[name][0]
            try:
                value = default.make(run)
            except (ConfigError, ToolError):
                raise
            except Exception as exc:
                report_failure(
                    pm, plugin, HOOK, f"default for {name!r} raised {type(exc).__name__}: {exc}"
                )
                continue
            if value is not None:
                self._add(pm, plugin, key, value, harness=plugin in harness)

    def _add(
        self, pm: Any, plugin: str, key: ResourceKey[Any] | str, value: Any, *, harness: bool
    ) -> None:
        name = key_name(key)
        if name in self._values:
            report_failure(
                pm,
                plugin,
                HOOK,
                f"resource {name!r} dropped: already wired by {self._origin[name]!r}",
            )
            return
        declared = key if isinstance(key, ResourceKey) else _DECLARED.get(name)
        kind = declared.kind_class() if declared is not None else None
        if isinstance(value, PerConversation):
            value._kind, value._name = kind, name  # each conversation's value is checked when made
        elif kind is not None and not isinstance(value, kind):
            problem = (
                f"{name}: expected a {kind.__module__}.{kind.__qualname__}, "
                f"got {type(value).__qualname__}"
            )
            if harness:  # the harness's own input: it fails the opening, like its configuration
                raise ConfigError(problem)
            report_failure(pm, plugin, HOOK, f"resource {name!r} dropped: {problem}")
            return
        self._values[name] = value
        self._origin[name] = plugin

    # --- closing ------------------------------------------------------------------------------

    async def close_conversation(self, conversation: str, timeout_s: float) -> list[str]:
        """Close what each :class:`PerConversation` resource holds for ``conversation``; the
        problems, as text."""
        problems: list[str] = []
        for name, value in reversed(list(self._values.items())):
            if not isinstance(value, PerConversation):
                continue
            with anyio.move_on_after(timeout_s) as scope:
                try:
                    await value.close(conversation)
                except Exception as exc:
                    problems.append(f"closing {name!r} of {conversation}: {exc}")
            if scope.cancelled_caught:
                problems.append(f"closing {name!r} of {conversation} took over {timeout_s:g} s")
        return problems

    async def aclose(
        self,
        timeout_s: float,
        problems: list[str],
        on_overdue: Callable[[], object] | None = None,
    ) -> None:
        """Close every resource with ``async def aclose()`` at once, all of them under one
        budget of ``timeout_s`` (five slow resources do not take five budgets: a signal ends a
        run in bounded time). When the budget is spent, ``on_overdue()`` runs (the run kills its
        process trees: a close waiting on a process that is still starting then sees it gone)
        and every close still running is cancelled. What went wrong is appended to
        ``problems``, last wired first."""
        closers = [
            (name, closer)
            for name in reversed(list(self._values))
            if inspect.iscoroutinefunction(closer := getattr(self._values[name], "aclose", None))
        ]
        if not closers:
            return
        outcome: dict[str, str] = {}
        all_done = anyio.Event()

        async def close_one(name: str, closer: Callable[[], Any]) -> None:
            try:
                await closer()
            except Exception as exc:
                outcome[name] = f"closing resource {name!r} failed: {type(exc).__name__}: {exc}"
            else:
                outcome[name] = ""
            finally:
                if len(outcome) == len(closers):
                    all_done.set()

        async with anyio.create_task_group() as tg:
            for name, closer in closers:
                tg.start_soon(close_one, name, closer)
            with anyio.move_on_after(timeout_s):
                await all_done.wait()
            overdue = [name for name, _ in closers if name not in outcome]
            if overdue:
                if on_overdue is not None:
                    on_overdue()
                tg.cancel_scope.cancel()
        for name, _ in closers:
            if name in overdue:
                problems.append(f"closing resource {name!r} took over {timeout_s:g} s")
            elif outcome.get(name):
                problems.append(outcome[name])


def _dependency_order(
    pm: Any, defaults: Mapping[str, list[tuple[str, ResourceKey[Any] | str, Default[Any]]]]
) -> Iterator[str]:
    """Names of ``defaults`` so that each comes after the defaults it names in ``after``; a
    cycle is reported against every plugin in it and those defaults are not made."""
    for name, offers in defaults.items():
        for plugin, _, _ in offers[1:]:
            report_failure(
                pm, plugin, HOOK, f"default for {name!r} dropped: also offered by {offers[0][0]!r}"
            )
    done: set[str] = set()
    visiting: list[str] = []
    cyclic: set[str] = set()
    order: list[str] = []

    def visit(name: str) -> None:
        if name in done or name in cyclic:
            return
        if name in visiting:
            cycle = visiting[visiting.index(name) :]
            for member in cycle:
                cyclic.add(member)
                plugin = defaults[member][0][0]
                report_failure(
                    pm,
                    plugin,
                    HOOK,
                    f"default for {member!r} not made: its `after` forms a cycle "
                    f"({' -> '.join([*cycle, name])})",
                )
            return
        visiting.append(name)
        for needed in defaults[name][0][2].after:
            if key_name(needed) in defaults:
                visit(key_name(needed))
        visiting.pop()
        if name not in cyclic:
            done.add(name)
            order.append(name)

    for name in defaults:
        visit(name)
    yield from order


__all__ = ["Default", "ResourceKey", "Resources", "forget_entry"]

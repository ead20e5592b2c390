"""One collector for everything plugins contribute through hooks: resources, tools, language
servers, debug adapters, grammars, kernels, worker runners.

Every family calls :func:`collect` instead of walking hook implementations itself, so every
contribution gets the same rules:

- **Traced**: each plugin's implementation is called on its own, but through pluggy's hook
  caller, so ``TETHER_TRACE_PLUGINS=1`` shows it.
- **One order**: pluggy's call order — ``tryfirst`` implementations, then plugins registered
  later before those registered earlier (a harness's ``open_run(plugins=[...])`` come after the
  installed ones, so they are asked first), then ``trylast``. On a duplicate key the first one
  in that order is kept.
- **Typed**: every item must be an instance of the declared kind, and an attrs item's fields
  must hold values of their declared types (``extensions=(".py",)`` where a mapping is declared
  is caught here, not at the first use).
- **Isolated**: a hook that raises, an item of the wrong kind or shape, a duplicate key — the
  contribution is dropped, its plugin is reported ``failed`` in ``pm.report`` with the hook and
  the reason, and every other contribution keeps working.
"""

from __future__ import annotations

import collections.abc
import types
import typing
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from pathlib import PurePath
from typing import Any, Generic, TypeVar

import attrs
import pluggy

from tether.errors import ConfigError, ToolError

T = TypeVar("T")


@attrs.frozen
class Contribution(Generic[T]):
    """One collected item and the plugin it came from."""

    item: T
    plugin: str


def plugin_name(pm: pluggy.PluginManager, plugin: object) -> str:
    return pm.get_name(plugin) or repr(plugin)


def report_failure(pm: pluggy.PluginManager, plugin: str, hook: str, reason: str) -> None:
    """Mark ``plugin`` as ``failed`` in ``pm.report`` (when the manager keeps one), adding the
    hook and the reason to what is already said."""
    report = getattr(pm, "report", None)
    if report is None:
        return
    from tether.plugins import PluginInfo

    line = f"{hook}: {reason}"
    for info in report:
        if info.name == plugin:
            info.status = "failed"
            if not info.reason:
                info.reason = line
            elif line not in info.reason:  # a hook called per call reports a problem once
                info.reason = f"{info.reason}; {line}"
            return
    report.append(PluginInfo(plugin, None, "failed", line))


def call_each(pm: pluggy.PluginManager, hook: str, **kwargs: Any) -> Iterator[tuple[str, Any]]:
    """``(plugin, value)`` for every implementation of ``hook`` that returned something, in
    pluggy's call order; an implementation that raises is reported and skipped.

    :class:`~tether.errors.ConfigError` and :class:`~tether.errors.ToolError` still propagate:
    they are the harness's configuration or the user's input, not a broken plugin.
    """
    caller = getattr(pm.hook, hook)
    plugins = pm.get_plugins()
    for impl in reversed(caller.get_hookimpls()):
        name = plugin_name(pm, impl.plugin)
        if impl.wrapper or impl.hookwrapper:
            report_failure(
                pm,
                name,
                hook,
                "implemented as a wrapper, which this hook does not take; not called",
            )
            continue
        alone = pm.subset_hook_caller(
            hook, remove_plugins=[p for p in plugins if p is not impl.plugin]
        )
        try:
            values = alone(**{k: v for k, v in kwargs.items() if k in impl.argnames})
        except (ConfigError, ToolError):
            raise
        except Exception as exc:
            report_failure(pm, name, hook, f"raised {type(exc).__name__}: {exc}")
            continue
        if values and values[0] is not None:
            yield name, values[0]


def collect(
    pm: pluggy.PluginManager,
    hook: str,
    kind: type[T],
    key: Callable[[T], str] | None,
    *,
    label: str,
    check: Callable[[T], str | None] | None = None,
    keys: Collection[str] | None = None,
    **kwargs: Any,
) -> dict[str, Contribution[T]]:
    """Every item that implementations of ``hook`` return, keyed; see the module docstring for
    the rules.

    A hook returns one item or a list/tuple of them, keyed by ``key(item)``; or, when ``key`` is
    None, a mapping of key to item (``{"fast": runner}``). ``label`` names one item in messages
    (``"language server"``); ``check`` may return a problem with an item's values; ``keys``, when
    given, are the only keys allowed.
    """
    out: dict[str, Contribution[T]] = {}
    for plugin, value in call_each(pm, hook, **kwargs):
        pairs: list[tuple[str | None, Any]]
        if key is None:
            if not isinstance(value, Mapping):
                report_failure(
                    pm,
                    plugin,
                    hook,
                    f"must return a mapping of key to {label}, got {type(value).__name__}",
                )
                continue
            pairs = list(value.items())
        else:
            items = list(value) if isinstance(value, list | tuple) else [value]
            pairs = [(None, item) for item in items]
        for given, item in pairs:
            problem = shape_problem(item, kind)
            if problem is None and check is not None:
                problem = check(item)
            name = given if key is None else (key(item) if problem is None else None)
            if problem is None and keys is not None and name not in keys:
                problem = f"unknown key {name!r}; expected one of {', '.join(sorted(keys))}"
            if problem is not None:
                what = f"{label} {given!r}" if given is not None else label
                report_failure(pm, plugin, hook, f"{what} dropped: {problem}")
                continue
            assert name is not None
            if name in out:
                report_failure(
                    pm,
                    plugin,
                    hook,
                    f"{label} {name!r} dropped: already contributed by {out[name].plugin!r}",
                )
                continue
            out[name] = Contribution(item, plugin)
    return out


def shape_problem(item: object, kind: type) -> str | None:
    """Why ``item`` is not a well-formed ``kind`` (wrong class, or an attrs field holding a value
    of another type), or None."""
    if not isinstance(item, kind):
        return f"expected a {kind.__qualname__}, got {type(item).__qualname__}: {item!r:.80}"
    hints = _field_hints(type(item))
    if hints is None:
        return None
    for field in attrs.fields(type(item)):  # type: ignore[arg-type]
        hint = hints.get(field.name)
        if hint is None:
            continue
        value = getattr(item, field.name)
        if not _matches(value, hint):
            return f"{field.name}: expected {_describe(hint)}, got {value!r:.80}"
    return None


_HINTS: weakref.WeakKeyDictionary[type, dict[str, Any] | None] = weakref.WeakKeyDictionary()


def _field_hints(cls: type) -> dict[str, Any] | None:
    """The resolved annotations of an attrs class (None: not attrs, or they cannot be resolved
    here, so there is nothing to check against). Once per class: resolving the string
    annotations compiles each of them, which for every item of every run was a third of the
    cost of opening one."""
    if cls not in _HINTS:
        hints = None
        if attrs.has(cls):
            try:
                hints = typing.get_type_hints(cls)
            except Exception:
                pass
        _HINTS[cls] = hints
    return _HINTS[cls]


def _matches(value: Any, hint: Any) -> bool:
    if hint is Any or hint is object:
        return True
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, a) for a in args)
    if origin is typing.Literal:
        return value in args
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is None:
        if isinstance(hint, type):
            if issubclass(hint, PurePath):
                return isinstance(value, PurePath)
            return isinstance(value, hint)
        return True  # a TypeVar, a forward reference we could not resolve…: accept
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return _all_match(value, args[0])
        return len(args) == len(value) and all(
            _matches(v, a) for v, a in zip(value, args, strict=True)
        )
    if origin in (list, collections.abc.Sequence):
        if not isinstance(value, list | tuple) or (origin is list and not isinstance(value, list)):
            return False
        return not args or _all_match(value, args[0])
    if origin in (set, frozenset, collections.abc.Set):
        return isinstance(value, set | frozenset) and _all_match(value, args[0])
    if origin in (dict, Mapping, collections.abc.Mapping):
        if not isinstance(value, Mapping):
            return False
        return not args or all(
            _matches(k, args[0]) and _matches(v, args[1]) for k, v in value.items()
        )
    if origin is collections.abc.Callable:
        return callable(value)
    return isinstance(value, origin) if isinstance(origin, type) else True


def _all_match(values: Iterable[Any], hint: Any) -> bool:
    """Every one of ``values`` matches ``hint``; a plain ``str`` element type is checked without
    the general walk (grammars' keyword sets have hundreds of them)."""
    if hint is str:
        return all(isinstance(v, str) for v in values)
    return all(_matches(v, hint) for v in values)


def _describe(hint: Any) -> str:
    if isinstance(hint, type) and typing.get_origin(hint) is None:
        return hint.__name__
    return str(hint).replace("typing.", "").replace("collections.abc.", "")


__all__ = ["Contribution", "call_each", "collect", "report_failure", "shape_problem"]

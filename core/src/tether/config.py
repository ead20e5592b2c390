"""Configuration: the ``[core]`` table, per-family tables, reading them from files, and the two
layers they come in.

The harness layer (``open_run(config=…)``, ``tether … --config FILE``, ``--approve``) may set
anything. The workdir layer (the checkout's ``[tool.tether]`` in ``pyproject.toml``, else its
``tether.toml``) is written by whoever can write the checkout — a write-tier tool call among
them — so it may set only what each field allows (an allowlist the fields declare themselves):

- :func:`workdir_may_set` — a timeout or a cap: the workdir may only lower it below the
  harness's value (or the default), down to the field's floor; zero, a negative number, a
  value under the floor or a larger value is ignored;
- :func:`workdir_may_tighten` — an approval policy, a surface's tier: the workdir may only make it
  stricter than the harness's value (or the default);
- a field without either is harness-only: a workdir value is ignored, and said so.

A workdir file never stops a run: one that is not valid TOML, a key no table knows, a value of
the wrong type or out of bounds — each is ignored and said (stderr, ``meta.config_ignored``,
``lsp status``), and the run goes on with the harness's configuration. The harness's own
configuration stays strict: an unknown key there is an error naming it.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs

from tether.args import _CONSTRAINTS, bounds
from tether.errors import ConfigError
from tether.tiers import BUILTIN_SURFACES

PolicyName = Literal["auto", "ask", "deny"]

_WORKDIR = "tether_workdir"  # field metadata: "set" or "tighten"
_ORDER = "tether_workdir_order"  # "tighten": the values, loosest first
_BASELINE = "tether_workdir_baseline"  # "tighten" of a dict: entries that exist without config
_NO_LIMIT = "tether_workdir_no_limit"  # "set": the value that means "no limit" (0: no timeout)
_FLOOR = "tether_workdir_floor"  # "set": the lowest value a workdir may set

HARNESS_ONLY_HINT = "harness-only: set it with --config FILE or open_run(config=…)"


def config_field(
    default: Any = attrs.NOTHING, *, factory: Any = None, **limits: float | None
) -> Any:
    """A harness-only configuration field with bounds (``minimum``, ``maximum``, ``above``,
    ``min_length``, ``max_length``), enforced by the core like an argument's."""
    metadata = {_CONSTRAINTS: bounds(**limits)}
    if factory is not None:
        return attrs.field(factory=factory, metadata=metadata)
    return attrs.field(default=default, metadata=metadata)


def workdir_may_set(
    default: Any = attrs.NOTHING,
    *,
    floor: float | None = None,
    factory: Any = None,
    no_limit: float | None = None,
    **limits: float | None,
) -> Any:
    """A field a workdir file may lower (a timeout, a cap): below the harness's value, or the
    default, but never below ``floor`` ("tighten only" must not mean "lock out": a workdir value
    under it is ignored and said, and the harness's value stands); never to zero or below
    (unless the bounds allow zero and it is not ``no_limit``, the value that means "none"). On
    a field whose type is an attrs class, its own fields decide, one by one; on a dict field,
    ``floor`` bounds every entry. ``limits`` are bounds as in :func:`config_field`.

    ``floor`` is required for every number (and dict of numbers) a workdir may lower."""
    default_value = default.factory() if isinstance(default, attrs.Factory) else default  # type: ignore[arg-type]
    if floor is None and not attrs.has(type(default_value)):
        raise TypeError(
            "workdir_may_set: floor= is required: the lowest value a workdir file may set "
            "(below it the harness's value stands)"
        )
    metadata: dict[str, Any] = {
        _WORKDIR: "set",
        _CONSTRAINTS: bounds(**limits),
        _NO_LIMIT: no_limit,
        _FLOOR: floor,
    }
    if factory is not None:
        return attrs.field(factory=factory, metadata=metadata)
    return attrs.field(default=default, metadata=metadata)


def workdir_floor(field: Any) -> float | None:
    """The lowest value a workdir file may give ``field`` (an attrs field made by
    :func:`workdir_may_set`), or None when it has none (a nested table)."""
    return field.metadata.get(_FLOOR)


def workdir_may_tighten(
    default: Any = attrs.NOTHING,
    *,
    order: Sequence[Any],
    baseline: Mapping[str, Any] | None = None,
    factory: Any = None,
    **limits: float | None,
) -> Any:
    """A field a workdir file may only make stricter: ``order`` lists its values loosest first.
    On a dict field each entry is tightened on its own, against the harness's entry or
    ``baseline``'s; an entry neither has is harness-only."""
    metadata = {
        _WORKDIR: "tighten",
        _ORDER: tuple(order),
        _BASELINE: dict(baseline or {}),
        _CONSTRAINTS: bounds(**limits),
    }
    if factory is not None:
        return attrs.field(factory=factory, metadata=metadata)
    return attrs.field(default=default, metadata=metadata)


_POLICY_ORDER = ("auto", "ask", "deny")


@attrs.frozen
class ApprovalPolicy:
    """``[core.approval]``: a policy per tier, and more specific ones per tool and per action.

    A call's policy is its action's entry (``[core.approval.actions.debug] evaluate = "auto"``),
    else its tool's (``[core.approval.tools] eval = "auto"``), else its tier's. Tools have a
    table of their own because a tool's name may be a tier's (tether-files' ``read``, ``write``).
    A workdir file may make any existing entry stricter, never looser, and add none.
    """

    read: PolicyName = workdir_may_tighten("auto", order=_POLICY_ORDER)
    write: PolicyName = workdir_may_tighten("ask", order=_POLICY_ORDER)
    exec: PolicyName = workdir_may_tighten("ask", order=_POLICY_ORDER)
    tools: dict[str, PolicyName] = workdir_may_tighten(factory=dict, order=_POLICY_ORDER)
    actions: dict[str, dict[str, PolicyName]] = workdir_may_tighten(
        factory=dict, order=_POLICY_ORDER
    )

    def policy_for(self, tool: str, tier: str, action: str | None = None) -> tuple[PolicyName, str]:
        """The policy of one call, and the configuration key it comes from."""
        by_action = self.actions.get(tool, {})
        if action is not None and action in by_action:
            return by_action[action], f"[core.approval.actions.{tool}] {action}"
        if tool in self.tools:
            return self.tools[tool], f"[core.approval.tools] {tool}"
        return getattr(self, tier), f"[core.approval] {tier}"


@attrs.frozen
class ResultBudget:
    """``[core.result_budget]``: how many characters of text a result may give the model
    (:mod:`tether.budget`); 0 means no limit. The tool's entry replaces ``max_chars``; a surface's
    entry lowers either. The default stays under what clients pass on (Claude Code cuts an MCP
    result at about 25,000 tokens, silently). A workdir file may lower any of them."""

    # a workdir file lowering the budget under 2,000 characters would leave the model nothing
    # readable: below that floor the harness's value stands
    max_chars: int = workdir_may_set(60_000, floor=2000, minimum=0, no_limit=0)
    tools: dict[str, int] = workdir_may_set(factory=dict, floor=2000)
    surfaces: dict[str, int] = workdir_may_set(factory=dict, floor=2000)


@attrs.frozen
class CoreConfig:
    """The ``[core]`` table."""

    approval: ApprovalPolicy = workdir_may_set(ApprovalPolicy())  # each policy: tighten only
    call_timeout_s: float = workdir_may_set(120.0, floor=5, minimum=0, no_limit=0)  # 0: none
    close_timeout_s: float = workdir_may_set(10.0, floor=1, above=0)
    #: how long each result post-processor (``tether_process_result``) may take for one call
    post_process_timeout_s: float = workdir_may_set(60.0, floor=5, above=0)
    surfaces: dict[str, Literal["read", "write", "exec"]] = workdir_may_tighten(
        factory=dict,
        order=("exec", "write", "read"),
        baseline={name: tier.value for name, tier in BUILTIN_SURFACES.items()},
    )
    #: the most text one result gives the model (:mod:`tether.budget`)
    result_budget: ResultBudget = workdir_may_set(ResultBudget())


def layer_config(
    harness: Mapping[str, Any], workdir: Mapping[str, Any], cls: type, table: str
) -> tuple[dict[str, Any], list[str]]:
    """One table of both layers combined for ``cls``: the harness's keys, plus what the workdir
    may set or tighten. Returns the combined raw table (load it with ``structure_config``) and
    a note for every workdir key that was ignored (a key ``cls`` does not know among them)."""
    merged = dict(harness)
    notes: list[str] = []
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in attrs.fields(cls)}
    for key, value in workdir.items():
        name = f"{table}.{key}"
        field = fields.get(key)
        if field is None:
            notes.append(f"{name}: ignored (unknown key: not in the [{table}] table)")
            continue
        mode = field.metadata.get(_WORKDIR)
        if mode is None:
            notes.append(f"{name}: ignored ({HARNESS_ONLY_HINT})")
        elif attrs.has(hints[key]):
            if not isinstance(value, Mapping):
                notes.append(f"{name}: ignored (expected a table, got {type(value).__name__})")
                continue
            inner = merged.get(key, {})
            sub, sub_notes = layer_config(
                inner if isinstance(inner, Mapping) else {}, value, hints[key], name
            )
            merged[key] = sub
            notes += sub_notes
        elif mode == "set":
            current = merged.get(key, _default(field))
            if isinstance(value, Mapping) and isinstance(current, Mapping):
                out = dict(current)
                for entry, entry_value in value.items():
                    if entry not in current:
                        notes.append(
                            f"{name}.{entry}: ignored (a workdir file may lower an existing "
                            f"entry, not add one; {HARNESS_ONLY_HINT})"
                        )
                        continue
                    out[entry] = _lower(
                        current[entry], entry_value, field, f"{name}.{entry}", notes
                    )
                merged[key] = out
            else:
                merged[key] = _lower(current, value, field, name, notes)
        elif isinstance(value, Mapping):  # a dict field, tightened entry by entry
            current = {**field.metadata[_BASELINE], **(merged.get(key) or {})}
            merged[key] = {
                **(merged.get(key) or {}),
                **_tighten_entries(current, value, field, name, notes),
            }
        else:
            merged[key] = _stricter(merged.get(key, _default(field)), value, field, name, notes)
    return merged, notes


def _tighten_entries(
    current: Mapping[str, Any], value: Mapping[str, Any], field: Any, name: str, notes: list[str]
) -> dict[str, Any]:
    """A dict field's entries tightened one by one (a dict of dicts, level by level); an entry
    the harness (or the baseline) does not have is ignored, and said. Returns the entries
    ``value`` tightened."""
    out: dict[str, Any] = {}
    for entry, entry_value in value.items():
        if entry not in current:
            notes.append(
                f"{name}.{entry}: ignored (a workdir file may tighten an existing entry, "
                f"not add one; {HARNESS_ONLY_HINT})"
            )
        elif isinstance(current[entry], Mapping) != isinstance(entry_value, Mapping):
            want = "a table" if isinstance(current[entry], Mapping) else "a value"
            notes.append(f"{name}.{entry}: ignored (expected {want}, as the harness set it)")
        elif isinstance(current[entry], Mapping):
            out[entry] = {
                **current[entry],
                **_tighten_entries(current[entry], entry_value, field, f"{name}.{entry}", notes),
            }
        else:
            out[entry] = _stricter(current[entry], entry_value, field, f"{name}.{entry}", notes)
    return out


def _default(field: Any) -> Any:
    default = field.default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        default = default.factory()
    return default


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _lower(current: Any, value: Any, field: Any, name: str, notes: list[str]) -> Any:
    """The workdir's ``value`` if it lowers ``current`` (a timeout, a cap), else ``current``
    and a note. A value of another type passes on: the strict load judges it."""
    if not _is_number(value) or not _is_number(current):
        return value
    metadata = field.metadata if field is not None else {}
    no_limit = metadata.get(_NO_LIMIT)
    zero_allowed = metadata.get(_CONSTRAINTS, {}).get("minimum") == 0 and no_limit != 0
    if value < 0 or (value == 0 and not zero_allowed):
        notes.append(
            f"{name}: ignored {value!r} (a workdir file may only lower it, to a value above 0; "
            f"it stays {current!r})"
        )
        return current
    floor = metadata.get(_FLOOR)
    if floor is not None and value < floor and value < current:
        notes.append(
            f"{name}: ignored {value!r} (a workdir file may lower it to {floor:g} at the least, "
            f"so that it cannot lock the run out; it stays {current!r})"
        )
        return current
    if current == no_limit or value <= current:
        return value
    notes.append(
        f"{name}: ignored {value!r} (a workdir file may only lower it; it stays {current!r})"
    )
    return current


def _stricter(current: Any, value: Any, field: Any, name: str, notes: list[str]) -> Any:
    order = field.metadata[_ORDER]
    if value not in order or current not in order:
        return value  # not a known value: the strict load names the key and what it expects
    if order.index(value) >= order.index(current):
        return value
    notes.append(
        f"{name}: ignored {value!r} (a workdir file may only make it stricter than {current!r})"
    )
    return current


def read_config_file(path: Path) -> dict[str, Any]:
    """A harness configuration file (``--config FILE``): the whole TOML document."""
    return _read_toml(path)


class WorkdirConfig(dict[str, Any]):
    """The workdir layer: a plain table (pass it as ``open_run(workdir_config=…)``), plus
    ``notes``: what was wrong with the file and was ignored (the run reports them), and
    ``source``: the file it came from (a refusal names it)."""

    def __init__(
        self,
        table: Mapping[str, Any] | None = None,
        notes: Sequence[str] = (),
        source: str | None = None,
    ) -> None:
        super().__init__(table or {})
        self.notes: list[str] = list(notes)
        self.source = source


HARNESS_ORIGIN = "the harness's configuration (--config FILE, open_run(config=…))"


class HarnessConfig(dict[str, Any]):
    """The harness layer: a plain table (``open_run(config=…)``), plus where its keys came from,
    so a refusal can name the setting to change: ``origin`` for the whole table (``--config
    /etc/h.toml``), ``set_by`` for a dotted key set another way (``core.approval.write`` →
    ``--approve exec``). A plain dict is described as :data:`HARNESS_ORIGIN`."""

    def __init__(
        self,
        table: Mapping[str, Any] | None = None,
        origin: str = HARNESS_ORIGIN,
        set_by: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(table or {})
        self.origin = origin
        self.set_by: dict[str, str] = dict(set_by or {})


def load_workdir_config(workdir: Path) -> WorkdirConfig:
    """The workdir layer: ``[tool.tether]`` in the workdir's ``pyproject.toml``, else its
    ``tether.toml``, else empty. It never raises: a file that cannot be read or is not valid
    TOML gives an empty layer and a note (the harness did not choose that file, and the edit
    that fixes it must still run)."""
    pyproject = workdir / "pyproject.toml"
    if pyproject.is_file():
        data, problem = _try_toml(pyproject)
        if problem is not None:
            return WorkdirConfig({}, [problem])
        tool = data.get("tool", {})
        section = tool.get("tether") if isinstance(tool, Mapping) else None
        if section is not None:
            if not isinstance(section, Mapping):
                return WorkdirConfig({}, [f"{pyproject}: ignored [tool.tether]: not a table"])
            return _tables_only(dict(section), f"{pyproject} [tool.tether]")
    tether_toml = workdir / "tether.toml"
    if tether_toml.is_file():
        data, problem = _try_toml(tether_toml)
        if problem is not None:
            return WorkdirConfig({}, [problem])
        return _tables_only(data, str(tether_toml))
    return WorkdirConfig()


def _tables_only(data: dict[str, Any], where: str) -> WorkdirConfig:
    tables = {k: v for k, v in data.items() if isinstance(v, Mapping)}
    notes = [
        f"{where}: ignored `{k}`: expected a table such as [core], got {type(v).__name__}"
        for k, v in data.items()
        if not isinstance(v, Mapping)
    ]
    return WorkdirConfig(tables, notes, source=where)


def _try_toml(path: Path) -> tuple[dict[str, Any], str | None]:
    try:
        return _read_toml(path), None
    except ConfigError as exc:
        return {}, f"ignored the whole file, the harness's configuration applies: {exc}"


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib  # only a run with a configuration file pays for the parser

    from tether.workdir.reading import UnreadableFile, read_outside

    try:
        # never blocks: a FIFO or a device named pyproject.toml is refused, not opened
        data = read_outside(path, field="config", max_bytes=4 * 1024 * 1024)
        return tomllib.loads(data.decode("utf-8"))
    except UnreadableFile as exc:
        raise ConfigError(f"cannot read configuration {path}: {exc.expected}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None

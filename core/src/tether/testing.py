"""pytest helpers for plugin authors: a pytest plugin a test suite asks for, never loaded on its
own — ``pytest_plugins = ["tether.testing"]`` in the suite's top ``conftest.py``, or
``pytest -p tether.testing``.

Fixtures: ``tether_pm`` (a fresh plugin manager), ``tether_workdir`` (a temp checkout),
``open_test_run`` (an async factory of runs). Helpers: :func:`require_real`, :func:`call_ok`,
:func:`call_error`, ``AUTO_APPROVE``, :func:`check_plugin_contract` (awaited),
:func:`check_plugin_contract_sync` and :func:`check_schema_agreement`.

Loaded, it adds fixtures of its own and overrides none (in particular not anyio's
``anyio_backend``, whose default — asyncio, module-scoped — applies as it would without tether),
and makes a forgotten ``await check_plugin_contract(run)`` fail its test (:func:`pytest_configure`).
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tether.args import object_schema, value_schema
from tether.plugins import TetherPluginManager, make_plugin_manager
from tether.run import Run, open_run
from tether.tools import ToolResult, ToolSpec

REQUIRE_REAL_ENV = "TETHER_REQUIRE_REAL"


def require_real(ok: bool, what: str) -> None:
    """Skip when a real component is missing on a developer's machine; fail in CI.

    CI sets ``TETHER_REQUIRE_REAL=1``, which turns the skip into a failure, so a missing install
    step cannot hide behind a green run.
    """
    if ok:
        return
    if os.environ.get(REQUIRE_REAL_ENV, "") not in ("", "0"):
        pytest.fail(f"required real component missing: {what} ({REQUIRE_REAL_ENV} is set)")
    pytest.skip(f"real component missing: {what}")


def default_signals() -> None:
    """``preexec_fn`` for a child a test will signal: SIGHUP, SIGTERM and SIGINT at their default
    action. A child inherits an ignored signal (a CI step started under ``nohup`` ignores
    SIGHUP), and such a child does not end on it: the test is of tether's close, not of the
    dispositions of whatever started pytest."""
    for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)


@pytest.fixture
def tether_pm() -> TetherPluginManager:
    """A plugin manager holding only the core's specs (no entry points)."""
    return make_plugin_manager(entry_points_group=None)


@pytest.fixture
def tether_workdir(tmp_path: Path) -> Path:
    workdir = tmp_path / "work"
    workdir.mkdir()
    return workdir


@pytest.fixture
def open_test_run(tether_workdir: Path) -> Callable[..., AbstractAsyncContextManager[Run]]:
    """``async with open_test_run(plugins=[...], config={...}) as run`` on ``tether_workdir``.

    Installed plugins load too (``entry_points=True``) unless ``entry_points=False`` is given.
    """

    @asynccontextmanager
    async def factory(**kwargs: Any) -> AsyncIterator[Run]:
        kwargs.setdefault("conversation_id", "test-conversation")
        workdir = kwargs.pop("workdir", tether_workdir)
        async with open_run(workdir, **kwargs) as run:
            yield run

    return factory


def _valid_value(prop: dict[str, Any]) -> Any:
    """Some value the schema property accepts (to isolate one wrong field per check)."""
    prop = value_schema(prop)
    if "enum" in prop:
        return prop["enum"][0]
    kind = prop.get("type")
    if kind == "string":
        return "x" * max(1, prop.get("minLength", 1))
    if kind in ("integer", "number"):
        return prop.get("minimum", 1)
    if kind == "boolean":
        return False
    if kind == "array":
        return [_valid_value(prop.get("items", {})) for _ in range(prop.get("minItems", 0))]
    if kind == "object":
        required = prop.get("required", [])
        return {k: _valid_value(prop["properties"][k]) for k in required}
    return None


def _names_field(text: str, field: str) -> bool:
    return any(line.startswith(f"{field}: ") for line in text.splitlines())


def _wrong_value(prop: dict[str, Any]) -> Any:
    kind = value_schema(prop).get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "string" in kinds:
        return 12345
    if "integer" in kinds or "number" in kinds:
        return "not-a-number"
    if "boolean" in kinds:
        return "maybe"
    if "array" in kinds:
        return "not-a-list"
    if "object" in kinds:
        return [1, 2]
    return None


AUTO_APPROVE: dict[str, Any] = {
    "core": {"approval": {"read": "auto", "write": "auto", "exec": "auto"}}
}
"""A run config that auto-approves every tier: ``open_test_run(config=AUTO_APPROVE)``."""


async def call_ok(run: Run, tool: str, args: dict[str, Any] | None = None, **kw: Any) -> ToolResult:
    """Call ``tool`` and assert it succeeded; the assertion shows the tool's own error text."""
    result = await run.call(tool, args or {}, **kw)
    assert not result.is_error, f"{tool} failed: {result.text_content}"
    return result


async def call_error(
    run: Run, tool: str, args: dict[str, Any] | None = None, *, match: str = "", **kw: Any
) -> str:
    """Call ``tool``, assert it gave an error result containing ``match``; return its text."""
    result = await run.call(tool, args or {}, **kw)
    assert result.is_error, f"{tool} was expected to fail but returned: {result.text_content}"
    assert match in result.text_content, f"{match!r} not in {tool}'s error: {result.text_content}"
    return result.text_content


def pytest_configure(config: pytest.Config) -> None:
    """A contract check called without ``await`` fails its test instead of passing with a
    warning: Python's "coroutine was never awaited" warning, for this coroutine only, is made an
    error (pytest reports it as the test's failure)."""
    never_awaited = "coroutine '_check_plugin_contract' was never awaited"
    config.addinivalue_line("filterwarnings", f"error:{never_awaited}:RuntimeWarning")
    config.addinivalue_line(
        "filterwarnings",
        "error:Exception ignored in. <coroutine object _check_plugin_contract"
        ":pytest.PytestUnraisableExceptionWarning",
    )


def check_plugin_contract(
    run: Run, tools: list[str] | None = None, *, schemas: bool = True
) -> Coroutine[Any, Any, list[str]]:
    """Check every registered tool (or those named): a valid tier, a description, a strict object
    schema, and errors whose lines start with the field they are about — for an unknown key, for
    each missing required field, and for a wrong type in each field while every other field holds a
    valid value (so another field's error cannot satisfy the check).

    Await it: ``assert await check_plugin_contract(run) == ["mytool"]`` (with this pytest plugin
    loaded, a test that forgets the ``await`` fails). Approval is bypassed for
    the check (the run's policy is auto for every tier for its duration). Returns the tools
    checked; raises AssertionError on the first broken rule. With ``schemas`` (the default) each
    tool's schema and converter are also property-tested against each other
    (:func:`check_schema_agreement`, which needs ``tether[testing]``).
    """
    from tether.run import SyncRun

    if isinstance(run, SyncRun):
        raise TypeError(
            "check_plugin_contract takes a Run; use check_plugin_contract_sync(sync_run)"
        )
    return _check_plugin_contract(run, tools, schemas)


def check_plugin_contract_sync(
    run: Any, tools: list[str] | None = None, *, schemas: bool = True
) -> list[str]:
    """:func:`check_plugin_contract` for a :class:`tether.SyncRun` (``open_run_sync``)."""
    checked: list[str] = run.portal.call(_check_plugin_contract, run.run, tools, schemas)
    return checked


def _assert_names(name: str, result: Any, field: str, what: str) -> None:
    assert result.is_error and _names_field(result.text_content, field), (
        f"{name}: {what} must give an error line starting with '{field}: ', got: "
        f"{result.text_content!r}"
    )


async def _check_plugin_contract(run: Run, tools: list[str] | None, schemas: bool) -> list[str]:
    from tether.config import ApprovalPolicy

    names = tools if tools is not None else sorted(run.tools)
    assert names, "no tool is registered on this run"
    saved = run.core
    import attrs

    run.core = attrs.evolve(saved, approval=ApprovalPolicy(read="auto", write="auto", exec="auto"))
    try:
        for name in names:
            spec = run.tools[name]
            assert spec.tier.value in ("read", "write", "exec"), f"{name}: bad tier {spec.tier!r}"
            assert spec.description.strip(), f"{name}: empty description"
            schema = object_schema(spec.args)
            assert schema["type"] == "object" and schema["additionalProperties"] is False, name
            properties = schema["properties"]
            required = schema.get("required", [])
            valid = {f: _valid_value(properties[f]) for f in required}
            result = await run.call(name, {**valid, "__unknown_key__": 1})
            _assert_names(name, result, "__unknown_key__", "an unknown key")
            for field in required:
                result = await run.call(name, {f: v for f, v in valid.items() if f != field})
                _assert_names(name, result, field, f"a missing required {field!r}")
            for field, prop in properties.items():
                wrong = _wrong_value(prop)
                if wrong is None:
                    continue
                result = await run.call(name, {**valid, field: wrong})
                _assert_names(name, result, field, f"{field}={wrong!r}")
            if schemas:
                check_schema_agreement(spec)
    finally:
        run.core = saved
    return names


def _json_values(st: Any) -> Any:
    """Small arbitrary JSON values: a hypothesis strategy."""
    return st.recursive(
        st.none()
        | st.booleans()
        | st.integers(-3, 3)
        | st.floats(-3, 3, allow_nan=False)
        | st.text(max_size=4),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
        ),
        max_leaves=6,
    )


def _from_schema(st: Any, schema: dict[str, Any], json_values: Any) -> Any:
    """A hypothesis strategy of instances of ``schema`` (JSON values where it says little)."""
    if "anyOf" in schema:
        return st.one_of([_from_schema(st, branch, json_values) for branch in schema["anyOf"]])
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds] if kinds else []
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    options: list[Any] = []
    for kind in kinds:
        if kind == "null":
            options.append(st.none())
        elif kind == "boolean":
            options.append(st.booleans())
        elif kind == "string":
            low, high = schema.get("minLength", 0), schema.get("maxLength", 12)
            options.append(st.text(min_size=low, max_size=max(low, high)))
        elif kind in ("integer", "number"):
            low, high = schema.get("minimum", -1000), schema.get("maximum", 1000)
            ints = st.integers(int(low), int(high))
            options.append(
                ints if kind == "integer" else ints | st.floats(low, high, allow_nan=False)
            )
        elif kind == "array":
            low = schema.get("minItems", 0)
            options.append(
                st.lists(
                    _from_schema(st, schema.get("items", {}), json_values),
                    min_size=low,
                    max_size=low + 3,
                )
            )
        elif kind == "object" and "properties" in schema:
            props = schema["properties"]
            required = set(schema.get("required", []))
            options.append(
                st.fixed_dictionaries(
                    {
                        k: _from_schema(st, v, json_values)
                        for k, v in props.items()
                        if k in required
                    },
                    optional={
                        k: _from_schema(st, v, json_values)
                        for k, v in props.items()
                        if k not in required
                    },
                )
            )
        elif kind == "object":
            options.append(st.dictionaries(st.text(max_size=5), json_values, max_size=3))
    return st.one_of(options) if options else json_values


def check_schema_agreement(spec: ToolSpec, examples: int = 60) -> None:
    """Property test: every instance valid against ``spec``'s JSON Schema is accepted by the
    core's converter, and every JSON value the converter accepts is schema-valid (arbitrary JSON
    under the tool's own keys and a stranger, so most candidates are near misses).

    Needs hypothesis and jsonschema: ``tether[testing]`` (imported only when called, so tether's
    pytest plugin costs nothing in test runs that do not use it).
    """
    try:
        import jsonschema
        from hypothesis import HealthCheck, given, settings
        from hypothesis import strategies as st
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise AssertionError(
            f"check_schema_agreement needs {exc.name}: add 'tether[testing]' to your test extra"
        ) from exc
    import json

    from tether.args import structure_args
    from tether.errors import ArgumentErrors

    json_values = _json_values(st)

    def from_schema(schema: dict[str, Any]) -> Any:
        return _from_schema(st, schema, json_values)

    def loads(raw: Any) -> bool:
        try:
            structure_args(raw, spec.args)
        except ArgumentErrors:
            return False
        return True

    schema = object_schema(spec.args)
    validator = jsonschema.Draft202012Validator(schema)
    quiet = settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))

    @quiet
    @given(from_schema(schema))
    def valid_instances_load(instance: Any) -> None:
        assert loads(instance), f"{spec.name}: schema-valid arguments refused: {instance!r}"

    near_misses = st.fixed_dictionaries(
        {}, optional={**{k: json_values for k in schema["properties"]}, "stranger": json_values}
    ) | from_schema(schema)

    @quiet
    @given(near_misses)
    def loaded_instances_are_valid(raw: Any) -> None:
        raw = json.loads(json.dumps(raw))
        assert validator.is_valid(raw) == loads(raw), (
            f"{spec.name}: schema says {validator.is_valid(raw)}, converter says {loads(raw)}: "
            f"{raw!r}"
        )

    valid_instances_load()
    loaded_instances_are_valid()


def check_hookspecs(module: Any, docs: str, tests: Path) -> list[str]:
    """Every hook specified in ``module`` (a family's ``hookspecs``) is documented in ``docs``
    with its real signature (``tether_eval_enclosure(run)``) and has a ``test_hook_<name>`` somewhere
    under ``tests`` — so the docs and tests cannot drift from the specs (datasette's rule).
    Returns the hook names checked."""
    import inspect
    import re

    names = [
        name
        for name, fn in vars(module).items()
        if name.startswith("tether_") and callable(fn) and hasattr(fn, "tether_spec")
    ]
    assert names, f"{module.__name__} specifies no hook"
    test_text = "\n".join(path.read_text() for path in sorted(tests.rglob("test_*.py")))
    for name in names:
        params = [p for p in inspect.signature(getattr(module, name)).parameters if p != "self"]
        signature = f"{name}({', '.join(params)})"
        assert signature in docs, f"{signature} is not documented (with that signature)"
        assert re.search(rf"def test_hook_{name}\b", test_text), f"{name} has no test_hook_{name}"
    return names

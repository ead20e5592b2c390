"""pytest helpers for plugin authors (loaded automatically as a pytest plugin).

Fixtures: ``tether_pm`` (a fresh plugin manager), ``tether_workdir`` (a temp checkout),
``open_test_run`` (an async factory of runs). Helpers: :func:`require_real` and
:func:`check_plugin_contract`.

Loaded in every pytest run of an environment where tether is installed, so it is harmless
there: it only adds fixtures of its own and overrides none (in particular not anyio's
``anyio_backend``, whose default — asyncio, module-scoped — applies as it would without tether).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tether.args import object_schema
from tether.plugins import TetherPluginManager, make_plugin_manager
from tether.run import Run, open_run

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
    if "enum" in prop:
        return prop["enum"][0]
    kind = prop.get("type")
    kind = next((k for k in kind if k != "null"), None) if isinstance(kind, list) else kind
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
    kind = prop.get("type")
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


async def check_plugin_contract(run: Run, tools: list[str] | None = None) -> list[str]:
    """Check every registered tool (or those named): a valid tier, a strict object schema, and
    errors naming the field for an unknown key, a missing required field and a wrong type.

    Approval is bypassed for the check (the run's policy is set to auto for every tier for the
    duration). Returns the tools checked; raises AssertionError on the first broken rule.
    """
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
            result = await run.call(name, {"__unknown_key__": 1})
            assert result.is_error and "__unknown_key__" in result.text_content, (
                name,
                result.text_content,
            )
            required = schema.get("required", [])
            if required:
                result = await run.call(name, {})
                assert result.is_error, (name, result.text_content)
                assert all(f in result.text_content for f in required), (name, result.text_content)
            for field, prop in schema["properties"].items():
                wrong = _wrong_value(prop)
                if wrong is None:
                    continue
                args = {f: "" for f in required}
                args[field] = wrong
                result = await run.call(name, args)
                assert result.is_error and field in result.text_content, (
                    name,
                    field,
                    result.text_content,
                )
    finally:
        run.core = saved
    return names

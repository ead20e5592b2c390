"""Every installed tool's JSON Schema and the core's converter agree (property tests)."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tether
from tether.errors import ArgumentErrors
from tether_ask import CallbackPort


class QuestionPort:
    @tether.hookimpl
    def tether_resources(self, run):
        async def nobody(card):
            raise tether.NoPerson("a schema test")

        return {"question_port": CallbackPort(nobody)}


def every_tool() -> list[tether.ToolSpec]:
    import anyio

    async def collect():
        async with tether.open_run(
            ".", conversation_id="schemas", vibe=True, plugins=[QuestionPort()]
        ) as run:
            return list(run.tools.values())

    return anyio.run(collect)


TOOLS = every_tool()
json_values = st.recursive(
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


def from_schema(schema: dict) -> st.SearchStrategy:
    """Instances valid against the JSON Schema subset tether emits (hypothesis-jsonschema does
    not work with current hypothesis)."""
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds] if kinds else []
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    options = []
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
                st.lists(from_schema(schema.get("items", {})), min_size=low, max_size=low + 3)
            )
        elif kind == "object" and "properties" in schema:
            props = schema["properties"]
            required = set(schema.get("required", []))
            options.append(
                st.fixed_dictionaries(
                    {k: from_schema(v) for k, v in props.items() if k in required},
                    optional={k: from_schema(v) for k, v in props.items() if k not in required},
                )
            )
        elif kind == "object":
            options.append(st.dictionaries(st.text(max_size=5), json_values, max_size=3))
    if not options:
        return json_values
    return st.one_of(options)


def loads(raw, spec) -> bool:
    try:
        tether.structure_args(raw, spec.args)
    except ArgumentErrors:
        return False
    return True


def test_all_families_are_covered():
    names = {t.name for t in TOOLS}
    assert {
        "lsp",
        "lsp_rename",
        "ast_grep",
        "ast_edit",
        "resolve",
        "debug",
        "eval",
        "ask_user",
        "vibe_spawn",
        "read",
    } <= names


@pytest.mark.parametrize("spec", TOOLS, ids=lambda s: s.name)
def test_every_schema_valid_instance_loads(spec):
    schema = tether.object_schema(spec.args)

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(from_schema(schema))
    def check(instance):
        assert loads(instance, spec), instance

    check()


@pytest.mark.parametrize("spec", TOOLS, ids=lambda s: s.name)
def test_every_loaded_instance_is_schema_valid(spec):
    schema = tether.object_schema(spec.args)
    validator = jsonschema.Draft202012Validator(schema)
    props = schema["properties"]
    # arbitrary JSON under the tool's own keys (and a stranger), so many are near-misses
    candidates = st.fixed_dictionaries(
        {}, optional={**{k: json_values for k in props}, "stranger": json_values}
    ) | from_schema(schema)

    @settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
    @given(candidates)
    def check(raw):
        raw = json.loads(json.dumps(raw))
        assert validator.is_valid(raw) == loads(raw, spec), raw

    check()

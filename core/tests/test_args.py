"""Strict argument validation and the JSON Schema it exports."""

from __future__ import annotations

import json
from typing import Any, Literal

import attrs
import jsonschema
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import tether
from tether.args import object_schema, structure_args
from tether.errors import ArgumentErrors


@attrs.frozen
class Option:
    label: str = tether.arg(description="label", min_length=1)
    description: str | None = tether.arg(None, description="more")


@attrs.frozen
class Args:
    name: str = tether.arg(description="a string")
    line: int | None = tether.arg(None, description="an int", minimum=1)
    ratio: float = tether.arg(0.5, description="a number")
    flag: bool = tether.arg(False, description="a boolean")
    items: list[str] = tether.arg(factory=list, description="a list")
    mode: Literal["a", "b"] = tether.arg("a", description="a choice")
    options: list[Option] = tether.arg(factory=list, description="objects")
    extra: dict[str, Any] = tether.arg(factory=dict, description="free object")


def errors_of(raw: Any) -> str:
    with pytest.raises(ArgumentErrors) as info:
        structure_args(raw, Args)
    return str(info.value)


def test_valid_arguments_load():
    args = structure_args(
        {"name": "x", "line": 3, "ratio": 2, "items": ["a"], "options": [{"label": "L"}]}, Args
    )
    assert args.line == 3 and args.ratio == 2.0 and args.options[0].label == "L"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"name": 12345}, "name: expected string, got 12345"),
        ({"name": "x", "flag": "maybe"}, 'flag: expected boolean, got "maybe"'),
        ({"name": "x", "items": "abc"}, 'items: expected a list, got "abc"'),
        ({"name": "x", "line": "3"}, 'line: expected integer, got "3"'),
        ({"name": "x", "line": "3a"}, 'line: expected integer, got "3a"'),
        ({"name": "x", "line": 3.5}, "line: expected integer, got 3.5"),
        ({"name": "x", "line": True}, "line: expected integer, got true"),
        ({"name": "x", "ratio": "1"}, 'ratio: expected number, got "1"'),
        ({"name": "x", "mode": "c"}, 'mode: expected one of "a", "b", got "c"'),
        ({"name": "x", "items": [1]}, "items[0]: expected string, got 1"),
        ({"name": "x", "options": [{"label": 5}]}, "options[0].label: expected string, got 5"),
        ({"name": "x", "options": [{"label": "a", "zzz": 1}]}, "options[0].zzz: unknown argument"),
        ({"name": "x", "extra": [1, 2]}, "extra: expected an object, got [1, 2]"),
        ({"name": "x", "line": 0}, "line: expected at least 1, got 0"),
        (
            {"name": "x", "options": [{"label": ""}]},
            "options[0].label: expected length at least 1, got 0",
        ),
        ({}, "name: required"),
        ({"name": "x", "bogus": 1}, "bogus: unknown argument"),
    ],
)
def test_every_error_names_its_field(raw, expected):
    assert expected in errors_of(raw)


def test_an_integral_json_number_is_an_integer():
    # JSON Schema's "integer" accepts 3.0; the converter agrees, and refuses 3.5
    assert structure_args({"name": "x", "line": 3.0}, Args).line == 3
    assert VALIDATOR.is_valid({"name": "x", "line": 3.0})


def test_all_errors_are_reported_together():
    text = errors_of({"name": 1, "flag": "no", "surprise": 0})
    assert "name:" in text and "flag:" in text and "surprise:" in text


def test_non_object_arguments():
    assert "arguments: expected an object" in errors_of([1, 2])


def test_schema_is_strict_and_described():
    schema = object_schema(Args)
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["name"]
    # one type per schema (portable to single-type dialects): an optional field is anyOf
    assert schema["properties"]["line"] == {
        "anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}],
        "description": "an int",
        "default": None,
    }
    assert schema["properties"]["mode"]["enum"] == ["a", "b"]
    option = schema["properties"]["options"]["items"]
    assert option["additionalProperties"] is False and option["required"] == ["label"]
    jsonschema.Draft202012Validator.check_schema(schema)


# --- the schema and the converter agree (property tests) ------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(-5, 5, allow_nan=False)
    | st.text(max_size=3),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=8,
)
field_values = {
    "name": st.text(max_size=4),
    "line": st.none() | st.integers(-2, 5),
    "ratio": st.floats(-3, 3, allow_nan=False) | st.integers(-3, 3),
    "flag": st.booleans(),
    "items": st.lists(st.text(max_size=2), max_size=3),
    "mode": st.sampled_from(["a", "b"]),
    "options": st.lists(
        st.fixed_dictionaries(
            {"label": st.text(max_size=3)},
            optional={"description": st.none() | st.text(max_size=3)},
        ),
        max_size=2,
    ),
    "extra": st.dictionaries(st.text(max_size=3), json_values, max_size=2),
}
# a mix of well-typed values and arbitrary JSON per field, plus unknown keys sometimes
candidate = st.fixed_dictionaries(
    {},
    optional={k: v | json_values for k, v in field_values.items()} | {"unknown": json_values},
)
VALIDATOR = jsonschema.Draft202012Validator(object_schema(Args))


def accepted_by_converter(raw: dict[str, Any]) -> bool:
    try:
        structure_args(raw, Args)
    except ArgumentErrors:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(candidate)
@example({"line": 2.0, "name": ""})
@example({"ratio": True, "name": ""})
@example({"name": "", "options": [{"label": ""}]})
def test_schema_and_converter_agree(raw):
    # JSON round trip first: the pipeline only ever sees decoded JSON
    raw = json.loads(json.dumps(raw))
    assert VALIDATOR.is_valid(raw) == accepted_by_converter(raw), raw


@settings(max_examples=200, deadline=None)
@given(
    st.fixed_dictionaries(
        {"name": field_values["name"]},
        optional={k: v for k, v in field_values.items() if k != "name"},
    )
)
def test_every_schema_valid_instance_loads(raw):
    assume(VALIDATOR.is_valid(raw))
    assert accepted_by_converter(raw)


def test_a_bound_is_named_even_when_a_required_argument_is_missing():
    @attrs.frozen
    class Args:
        message: str = tether.arg(description="m")
        delay_s: float = tether.arg(0.0, description="d", minimum=0, maximum=60)
        label: str = tether.arg("x", description="l", min_length=1)

    with pytest.raises(ArgumentErrors) as info:
        structure_args({"delay_s": -1, "label": ""}, Args)
    assert str(info.value).splitlines() == [
        "message: required",
        "delay_s: expected at least 0, got -1",
        "label: expected length at least 1, got 0",
    ]


@attrs.frozen
class Optionals:
    text: str | None = tether.arg(None, description="a string")
    count: int | None = tether.arg(None, description="an int")
    ratio: float | None = tether.arg(None, description="a number")
    flag: bool | None = tether.arg(None, description="a boolean")
    names: list[str] | None = tether.arg(None, description="a list")
    table: dict[str, int] | None = tether.arg(None, description="an object")


#: a value of each optional field's type, and one of another type it must refuse
OPTIONAL_VALUES = {
    "text": ("s", 1),
    "count": (2, "s"),
    "ratio": (0.5, "s"),
    "flag": (True, "s"),
    "names": (["a"], "s"),
    "table": ({"k": 1}, "s"),
}


def test_each_optional_field_takes_its_own_type_call_after_call() -> None:
    # every field of one class structured again and again (what each call of a tool does)
    for _ in range(2):
        for name, (good, bad) in OPTIONAL_VALUES.items():
            assert getattr(structure_args({name: good}, Optionals), name) == good
            assert getattr(structure_args({name: None}, Optionals), name) is None
            with pytest.raises(ArgumentErrors, match=name):
                structure_args({name: bad}, Optionals)

"""ToolResult in the model SDKs' request formats, validated against the real ``anthropic`` and
``openai`` packages' request types (offline: built and checked, nothing is sent)."""

from __future__ import annotations

import base64
import collections.abc
import types
import typing
from typing import Any

import pytest
import typing_extensions

import tether
from tether import Image, Text, ToolResult

anthropic_types = pytest.importorskip("anthropic.types")
openai_chat = pytest.importorskip("openai.types.chat")
openai_responses = pytest.importorskip("openai.types.responses")

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def conforms(value: Any, tp: Any, path: str = "$") -> list[str]:
    """Strictly check ``value`` against an SDK request type (TypedDicts all the way down):
    required keys present, no unknown key, literals, unions, lists. The problems, or []."""
    origin = typing.get_origin(tp)
    if tp is Any or tp is object:
        return []
    wrappers = (typing.Annotated, typing.Required, typing.NotRequired)
    if origin in wrappers or origin in (typing_extensions.Required, typing_extensions.NotRequired):
        return conforms(value, typing.get_args(tp)[0], path)
    if origin in (typing.Union, types.UnionType):
        options = [conforms(value, arg, path) for arg in typing.get_args(tp)]
        if any(not problems for problems in options):
            return []
        return [f"{path}: matches no alternative ({min(options, key=len)[0]})"]
    if origin is typing.Literal:
        return (
            []
            if value in typing.get_args(tp)
            else [f"{path}: {value!r} not in {typing.get_args(tp)}"]
        )
    if tp is type(None):
        return [] if value is None else [f"{path}: expected null"]
    if origin in (list, collections.abc.Iterable, collections.abc.Sequence):
        if not isinstance(value, list):
            return [f"{path}: expected a list"]
        (item,) = typing.get_args(tp)
        return [p for i, v in enumerate(value) for p in conforms(v, item, f"{path}[{i}]")]
    if typing_extensions.is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path}: expected an object"]
        hints = typing.get_type_hints(tp, include_extras=True)
        problems = [f"{path}.{k}: unknown key" for k in value if k not in hints]
        problems += [f"{path}.{k}: required" for k in _required(tp, hints) if k not in value]
        for key, v in value.items():
            if key in hints:
                problems += conforms(v, hints[key], f"{path}.{key}")
        return problems
    if tp in (str, bool, int, float):
        ok = isinstance(value, tp) and not (tp is int and isinstance(value, bool))
        return [] if ok else [f"{path}: expected {tp.__name__}, got {value!r}"]
    if origin in (dict, collections.abc.Mapping):
        return [] if isinstance(value, dict) else [f"{path}: expected an object"]
    return [f"{path}: the checker does not know the type {tp!r}"]


def _required(tp: Any, hints: dict[str, Any]) -> list[str]:
    # computed from the hints: with postponed annotations __required_keys__ misses Required[]
    required = []
    for key, hint in hints.items():
        origin = typing.get_origin(hint)
        if origin in (typing.Required, typing_extensions.Required):
            required.append(key)
        elif tp.__total__ and origin not in (typing.NotRequired, typing_extensions.NotRequired):
            required.append(key)
    return required


RESULTS = {
    "text": ToolResult.text("3 matches", paths=["a.py"]),
    "image": ToolResult(content=[Text("a chart"), Image(PNG, "image/png")]),
    "error": ToolResult.error('line: expected int, got "3a"'),
}


def test_the_checker_can_fail():
    # tether's own image block is not Anthropic's: the check must say so
    tether_shaped = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [RESULTS["image"].to_json()["content"][1]],
    }
    assert conforms(tether_shaped, anthropic_types.ToolResultBlockParam)
    assert conforms({"role": "tool", "content": "x"}, openai_chat.ChatCompletionToolMessageParam)


@pytest.mark.parametrize("kind", RESULTS)
def test_gemini_function_response_part(kind):
    """Validated by google-genai's own ``Part`` (strict: an unknown key is refused)."""
    genai = google_genai_types()
    part = RESULTS[kind].to_gemini("read", call_id="fc_1")
    parsed = genai.Part.model_validate(part)
    response = parsed.function_response
    assert response.name == "read" and response.id == "fc_1"
    if kind == "error":
        assert response.response == {"error": 'line: expected int, got "3a"'}
    else:
        assert set(response.response) == {"output"}
    if kind == "image":
        assert response.response == {"output": "a chart"}
        assert response.parts[0].inline_data.mime_type == "image/png"
        assert response.parts[0].inline_data.data == PNG
    else:
        assert not response.parts
    assert "paths" not in str(part)  # meta is for the harness, never the model
    with pytest.raises(Exception, match=r"(?i)extra"):  # the check can fail
        genai.Part.model_validate({"function_response": {"name": "x", "output": "y"}})


def test_gemini_image_of_another_type_becomes_a_note():
    result = ToolResult(content=[Image(b"GIF89a", "image/gif")])
    response = result.to_gemini("shot")["function_response"]
    assert "parts" not in response
    assert "the Gemini API does not take" in response["response"]["output"]


@pytest.mark.parametrize("kind", RESULTS)
def test_anthropic_tool_result_block(kind):
    block = RESULTS[kind].to_anthropic("toolu_1")
    assert conforms(block, anthropic_types.ToolResultBlockParam) == []
    message = {"role": "user", "content": [block]}
    assert conforms(message, anthropic_types.MessageParam) == []
    assert block["is_error"] is (kind == "error")
    if kind == "image":
        image = block["content"][1]
        assert image["source"] == {
            "type": "base64",
            "media_type": "image/png",
            "data": base64.b64encode(PNG).decode(),
        }
    assert "paths" not in str(block)  # meta is for the harness, never the model


def test_anthropic_image_of_another_type_becomes_a_note():
    block = ToolResult(content=[Image(b"<svg/>", "image/svg+xml")]).to_anthropic("t")
    assert conforms(block, anthropic_types.ToolResultBlockParam) == []
    assert "image/svg+xml" in block["content"][0]["text"]


@pytest.mark.parametrize("kind", RESULTS)
def test_openai_chat_messages(kind):
    messages = RESULTS[kind].to_openai("call_1")
    assert conforms(messages[0], openai_chat.ChatCompletionToolMessageParam) == []
    for message in messages:
        assert conforms(message, openai_chat.ChatCompletionMessageParam) == []
    if kind == "image":
        assert len(messages) == 2 and messages[1]["role"] == "user"
        assert messages[1]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    else:
        assert len(messages) == 1
    text = messages[0]["content"][0]["text"]
    assert text.startswith("Error: ") is (kind == "error")


@pytest.mark.parametrize("kind", RESULTS)
def test_openai_responses_function_call_output(kind):
    item = RESULTS[kind].to_openai_responses("call_1")
    from openai.types.responses import response_input_param

    assert conforms(item, response_input_param.FunctionCallOutput) == []
    assert conforms(item, openai_responses.ResponseInputItemParam) == []
    kinds = [part["type"] for part in item["output"]]
    assert kinds == (["input_text", "input_image"] if kind == "image" else ["input_text"])
    assert item["output"][0]["text"].startswith("Error: ") is (kind == "error")


def test_an_error_without_text_still_says_it_failed():
    bare = ToolResult(content=[], is_error=True)
    assert bare.to_openai_responses("c")["output"][0]["text"].startswith("Error:")
    assert bare.to_openai("c")[0]["content"][0]["text"].startswith("Error:")
    assert tether.ToolResult is ToolResult


def _doc_loops() -> list[str]:
    import re
    from pathlib import Path

    here = Path(__file__).resolve()
    # docs/ at the repository's root; in the core's sdist, docs/ beside tests/
    page = next(
        p
        for p in (
            here.parents[1] / "docs" / "model-sdks.md",
            here.parents[2] / "docs" / "model-sdks.md",
        )
        if p.is_file()
    ).read_text()
    return re.findall(r"```python\n(.*?)```", page, flags=re.S)


@pytest.mark.parametrize(
    "index", range(4), ids=["anthropic", "openai-chat", "openai-responses", "gemini"]
)
def test_the_agent_loops_in_the_docs_run_offline(index, tmp_path):
    import subprocess
    import sys

    loops = _doc_loops()
    assert len(loops) == 4
    out = subprocess.run(
        [sys.executable, "-c", loops[index]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "TETHER_LOAD_PLUGINS": "files"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "The notes say hello."


# --- tool schemas every provider's dialect takes ---------------------------------------------


def type_arrays(schema: Any, path: str = "$") -> list[str]:
    """Where ``schema`` (or a subschema) has a ``type`` array: what single-type dialects reject."""
    if isinstance(schema, list):
        return [p for i, s in enumerate(schema) for p in type_arrays(s, f"{path}[{i}]")]
    if not isinstance(schema, dict):
        return []
    found = [path] if isinstance(schema.get("type"), list) else []
    for key, value in schema.items():
        if key not in ("enum", "default", "required"):
            found += type_arrays(value, f"{path}.{key}")
    return found


def google_genai_types() -> Any:
    """google-genai's types (the core's test extra brings it): a skip on a developer's machine
    without it, a failure in CI, where a missing install step must not pass green."""
    import importlib

    from tether.testing import require_real

    try:
        return importlib.import_module("google.genai.types")
    except ImportError:
        require_real(False, "google-genai (the core's test extra)")


@pytest.fixture(scope="module")
def schemas_in_every_format() -> dict[str, list[dict[str, Any]]]:
    import anyio

    async def collect() -> dict[str, list[dict[str, Any]]]:
        async with tether.open_run(".", conversation_id="formats") as run:
            return {f: run.schemas(format=f) for f in ("json", "openai", "anthropic", "gemini")}

    return anyio.run(collect)


def test_every_schema_has_one_type_per_subschema(schemas_in_every_format):
    tools = schemas_in_every_format["json"]
    assert any(t["name"] == "read" for t in tools)  # tether-files' read has optional ints
    assert {t["name"]: type_arrays(t["input_schema"]) for t in tools} == {
        t["name"]: [] for t in tools
    }
    read = next(t for t in tools if t["name"] == "read")["input_schema"]
    assert read["properties"]["limit"]["anyOf"][1] == {"type": "null"}


def test_gemini_function_declarations_are_accepted_by_google_genai(schemas_in_every_format):
    genai = google_genai_types()
    declarations = schemas_in_every_format["gemini"]
    assert declarations
    for declaration in declarations:
        parsed = genai.FunctionDeclaration.model_validate(declaration)
        assert parsed.name == declaration["name"] and parsed.parameters is not None
    read = next(d for d in declarations if d["name"] == "read")["parameters"]
    assert read["properties"]["limit"]["nullable"] is True
    assert read["properties"]["limit"]["type"] == "integer"


def test_the_gemini_check_can_fail_and_what_the_dialect_lacks_is_said():
    """google-genai refuses what tether's JSON Schema says beyond OpenAPI 3.0; the gemini form
    moves it into the description instead of dropping it."""
    genai = google_genai_types()
    import attrs
    from pydantic import ValidationError

    from tether.args import object_schema, openapi_schema

    @attrs.frozen
    class Args:
        delay_s: float = tether.arg(description="delay", above=0)
        level: typing.Literal[1, 2] | None = tether.arg(None, description="level")

    schema = object_schema(Args)
    with pytest.raises(ValidationError):
        genai.Schema.model_validate(schema)
    gemini = openapi_schema(schema)
    genai.Schema.model_validate(gemini)
    assert gemini["properties"]["delay_s"] == {
        "type": "number",
        "minimum": 0,
        "description": "delay; must be greater than 0",
    }
    level = gemini["properties"]["level"]
    assert level["nullable"] is True and "enum" not in level
    assert level["description"] == "level; one of 1, 2"
    assert "additionalProperties" not in gemini


def test_the_dialect_checkers_can_fail():
    """Each checker refuses what its API refuses: the shapes tether emitted before (a rule
    object without properties, an empty OBJECT for a tool without arguments), a type array."""
    from tether.dialects import dialect_problems

    free_rule = {
        "name": "ast_grep",
        "description": "d",
        "parameters": {
            "type": "object",
            "properties": {"rule": {"type": "object", "nullable": True}},
        },
    }
    assert dialect_problems(free_rule, "gemini") == [
        "parameters.properties.rule: an OBJECT without properties (Gemini refuses it)"
    ]
    empty = {
        "name": "vibe_list",
        "description": "d",
        "parameters": {"type": "object", "properties": {}},
    }
    assert dialect_problems(empty, "gemini") == [
        "parameters: an OBJECT without properties (Gemini refuses it)"
    ]
    extra = {
        "name": "x",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "string", "additionalProperties": False}},
        },
    }
    assert dialect_problems(extra, "gemini") == [
        "parameters.properties.a.additionalProperties: not in Gemini's schema"
    ]
    typed = {
        "type": "object",
        "properties": {"a": {"type": ["string", "null"]}, "b": {"type": "array"}},
    }
    assert dialect_problems({"name": "bad name", "input_schema": typed}, "anthropic") == [
        "name: 'bad name' does not match ^[a-zA-Z0-9_-]{1,64}$",
        "input_schema.properties.a: a type array; one type per subschema (anyOf)",
        "input_schema.properties.b: an array schema without items",
    ]
    top = {"type": "function", "function": {"name": "x", "parameters": {"anyOf": [typed]}}}
    assert dialect_problems(top, "openai")[:2] == [
        "function.parameters: the top level must be type object, got None",
        "function.parameters: no anyOf at the top level",
    ]


def test_a_union_with_a_free_object_keeps_its_text_form_in_gemini():
    """``str | dict[str, Any] | None`` (an ast-grep rule): JSON Schema offers both, Gemini's
    dialect the text, which the converter takes as well."""
    import attrs

    from tether.args import object_schema, openapi_schema

    @attrs.frozen
    class Args:
        rule: str | dict[str, Any] | None = tether.arg(None, description="a rule")

    schema = object_schema(Args)
    assert schema["properties"]["rule"]["anyOf"] == [
        {"type": "string"},
        {"type": "object"},
        {"type": "null"},
    ]
    gemini = openapi_schema(schema)["properties"]["rule"]
    assert gemini == {"type": "string", "nullable": True, "default": None, "description": "a rule"}
    assert tether.structure_args({"rule": "kind: call"}, Args).rule == "kind: call"
    assert tether.structure_args({"rule": {"kind": "call"}}, Args).rule == {"kind": "call"}
    with pytest.raises(tether.ArgumentErrors, match="rule: expected string or an object, got 3"):
        tether.structure_args({"rule": 3}, Args)

"""What each model API accepts in a tool declaration, written down as checkers: one function per
schema format of :meth:`tether.Run.schemas`, returning the problems of one declaration (``[]``:
none). The rules are those the providers document or are known to enforce by refusing a
request; a test runs them over every tool of every installed family.

- **json** (MCP ``inputSchema``, the plain list): JSON Schema whose top level is ``type:
  object``; one ``type`` per subschema (clients mapping to a single-type dialect drop a type
  array); every ``array`` has ``items``.
- **openai** (Chat Completions / Responses function tools): a name of ``[a-zA-Z0-9_-]{1,64}``;
  ``parameters`` is an object schema (no top-level ``anyOf``/``oneOf``/``allOf``/``enum``/``not``);
  every ``array`` has ``items`` ("array schema missing items" is refused).
- **anthropic** (Messages ``tools``): a name of ``[a-zA-Z0-9_-]{1,64}``; ``input_schema`` has
  ``type: object`` and no ``oneOf``/``allOf``/``anyOf`` at its top level.
- **gemini** (``FunctionDeclaration``, an OpenAPI 3.0 subset): only the keywords google-genai's
  ``Schema`` has; one ``type`` of six; an ``object`` has non-empty ``properties`` (the API
  refuses "properties: should be non-empty for OBJECT type"); an ``array`` has ``items``; an
  ``enum`` is of strings; ``required`` names properties that exist; a function without
  arguments has no ``parameters``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_GEMINI_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$")
_GEMINI_TYPES = {"string", "number", "integer", "boolean", "array", "object"}
_GEMINI_KEYS = {
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
}
_COMPOSITES = ("anyOf", "oneOf", "allOf")


def _subschemas(schema: dict[str, Any], path: str) -> list[tuple[str, dict[str, Any]]]:
    """``schema`` and every subschema under it, with its path."""
    found = [(path, schema)]
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, dict):
            found += _subschemas(sub, f"{path}.properties.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            found += _subschemas(schema[key], f"{path}.{key}")
    for key in _COMPOSITES:
        for index, sub in enumerate(schema.get(key) or []):
            if isinstance(sub, dict):
                found += _subschemas(sub, f"{path}.{key}[{index}]")
    return found


def _json_schema_problems(schema: Any, path: str) -> list[str]:
    if not isinstance(schema, dict):
        return [f"{path}: expected an object schema"]
    problems = []
    if schema.get("type") != "object":
        problems.append(f"{path}: the top level must be type object, got {schema.get('type')!r}")
    problems += [
        f"{path}: no {key} at the top level"
        for key in (*_COMPOSITES, "enum", "not")
        if key in schema
    ]
    for where, sub in _subschemas(schema, path):
        if isinstance(sub.get("type"), list):
            problems.append(f"{where}: a type array; one type per subschema (anyOf)")
        if sub.get("type") == "array" and "items" not in sub:
            problems.append(f"{where}: an array schema without items")
    return problems


def _name_problems(name: Any, pattern: re.Pattern[str]) -> list[str]:
    if isinstance(name, str) and pattern.match(name):
        return []
    return [f"name: {name!r} does not match {pattern.pattern}"]


def json_problems(tool: dict[str, Any]) -> list[str]:
    return _json_schema_problems(tool.get("input_schema"), "input_schema")


def openai_problems(tool: dict[str, Any]) -> list[str]:
    if tool.get("type") != "function" or not isinstance(tool.get("function"), dict):
        return ['expected {"type": "function", "function": {...}}']
    function = tool["function"]
    return _name_problems(function.get("name"), _NAME) + _json_schema_problems(
        function.get("parameters"), "function.parameters"
    )


def anthropic_problems(tool: dict[str, Any]) -> list[str]:
    return _name_problems(tool.get("name"), _NAME) + _json_schema_problems(
        tool.get("input_schema"), "input_schema"
    )


def _gemini_schema_problems(schema: dict[str, Any], path: str) -> list[str]:
    problems = []
    for where, sub in _subschemas(schema, path):
        problems += [
            f"{where}.{key}: not in Gemini's schema" for key in sub if key not in _GEMINI_KEYS
        ]
        kind = sub.get("type")
        if kind is None:
            if "anyOf" not in sub:
                problems.append(f"{where}: no type")
            continue
        if not isinstance(kind, str) or kind.lower() not in _GEMINI_TYPES:
            problems.append(f"{where}: type {kind!r} is none of {sorted(_GEMINI_TYPES)}")
            continue
        kind = kind.lower()
        if kind == "object":
            properties = sub.get("properties")
            if not properties:
                problems.append(f"{where}: an OBJECT without properties (Gemini refuses it)")
            missing = [r for r in sub.get("required", []) if r not in (properties or {})]
            if missing:
                problems.append(f"{where}.required: names no property: {', '.join(missing)}")
        if kind == "array" and not isinstance(sub.get("items"), dict):
            problems.append(f"{where}: an ARRAY without items")
        if "enum" in sub and kind != "string":
            problems.append(f"{where}.enum: only a string enum")
    return problems


def gemini_problems(declaration: dict[str, Any]) -> list[str]:
    problems = _name_problems(declaration.get("name"), _GEMINI_NAME)
    problems += [
        f"{key}: not a FunctionDeclaration field"
        for key in declaration
        if key not in ("name", "description", "parameters")
    ]
    if "parameters" in declaration:
        parameters = declaration["parameters"]
        if not isinstance(parameters, dict) or parameters.get("type") != "object":
            problems.append("parameters: expected an OBJECT schema")
        else:
            problems += _gemini_schema_problems(parameters, "parameters")
    return problems


#: each schema format's checker, by the format's name in :meth:`tether.Run.schemas`
CHECKERS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "json": json_problems,
    "openai": openai_problems,
    "anthropic": anthropic_problems,
    "gemini": gemini_problems,
}


def dialect_problems(declaration: dict[str, Any], format: str) -> list[str]:
    """The problems of one tool declaration in ``format`` (``[]``: the API takes it)."""
    return CHECKERS[format](declaration)


__all__ = ["CHECKERS", "dialect_problems"]

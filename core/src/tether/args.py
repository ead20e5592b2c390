"""Tool arguments: attrs classes checked by one strict cattrs converter, exported as JSON Schema.

The converter takes JSON types only: a string field refuses ``12345``, a boolean refuses
``"maybe"``, a list refuses a string, an integer refuses ``"3"`` and ``3.5``. Unknown keys are
refused. Every error names its field: ``line: expected int, got "3a"``.

cattrs is imported when the first value is loaded: ``import tether`` and a plugin's argument
classes need only attrs, and cattrs is a tenth of the start-up budget.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union, get_args, get_origin

import attrs

from tether.errors import ArgumentError, ArgumentErrors

if TYPE_CHECKING:
    import cattrs

T = TypeVar("T")

_DESCRIPTION = "tether_description"
_CONSTRAINTS = "tether_constraints"


def bounds(
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    min_length: float | None = None,
    max_length: float | None = None,
) -> dict[str, float]:
    """The constraint metadata of a field (arguments and configuration share it)."""
    given = {
        "minimum": minimum,
        "maximum": maximum,
        "above": above,
        "min_length": min_length,
        "max_length": max_length,
    }
    return {k: v for k, v in given.items() if v is not None}


def arg(
    default: Any = attrs.NOTHING,
    *,
    description: str,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    factory: Any = None,
) -> Any:
    """An attrs field for a tool argument; ``description`` reaches the JSON Schema.

    ``minimum``/``maximum`` bound numbers (``above``: strictly greater), ``min_length``/
    ``max_length`` bound strings and lists; both the schema and the converter enforce them. No
    default means the field is required.
    """
    metadata = {
        _DESCRIPTION: description,
        _CONSTRAINTS: bounds(minimum, maximum, above, min_length, max_length),
    }
    if factory is not None:
        return attrs.field(factory=factory, metadata=metadata)
    return attrs.field(default=default, metadata=metadata)


class _Mismatch(Exception):
    """A leaf type error: what was expected and what came."""

    def __init__(self, expected: str, value: Any) -> None:
        self.expected = expected
        self.value = value
        super().__init__(f"expected {expected}, got {show_value(value)}")


def show_value(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _type_name(tp: Any) -> str:
    if tp is str:
        return "string"
    if tp is bool:
        return "boolean"
    if tp is int:
        return "integer"
    if tp is float:
        return "number"
    origin = get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(json.dumps(a) for a in get_args(tp))
    if origin in (list, tuple):
        return "a list"
    if origin is dict or tp is dict:
        return "an object"
    if attrs.has(tp):
        return "an object"
    if _union_members(tp):
        return " or ".join(_type_name(member) for member in _union_members(tp))
    return getattr(tp, "__name__", str(tp))


def _union_members(tp: Any) -> list[Any]:
    """The non-null members of a union of two or more JSON types (``str | dict[str, Any]``:
    an ast-grep rule as YAML text or as an object), else []."""
    if get_origin(tp) not in (Union, types.UnionType):
        return []
    members = [a for a in get_args(tp) if a is not type(None)]
    return members if len(members) > 1 else []


#: :func:`_is_optional` of each type asked about (every call structures its optional fields)
_OPTIONAL: dict[Any, tuple[bool, Any]] = {}


def _is_optional(tp: Any) -> tuple[bool, Any]:
    try:
        return _OPTIONAL[tp]
    except KeyError:
        found = _OPTIONAL[tp] = _optional_member(tp)
        return found
    except TypeError:  # a type that cannot be a key
        return _optional_member(tp)


def _optional_member(tp: Any) -> tuple[bool, Any]:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(tp) if a is not type(None)]
        if len(members) == 1 and len(get_args(tp)) == 2:
            return True, members[0]
    return False, tp


def _make_converter() -> cattrs.Converter:
    import cattrs
    from cattrs.errors import IterableValidationError
    from cattrs.gen import make_dict_structure_fn

    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)

    def structure_str(value: Any, _: Any) -> str:
        if not isinstance(value, str):
            raise _Mismatch("string", value)
        return value

    def structure_bool(value: Any, _: Any) -> bool:
        if not isinstance(value, bool):
            raise _Mismatch("boolean", value)
        return value

    def structure_int(value: Any, _: Any) -> int:
        # JSON has one number type: 3.0 is the integer 3 (as JSON Schema says), 3.5 is not
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Mismatch("integer", value)
        return value

    def structure_float(value: Any, _: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Mismatch("number", value)
        return float(value)

    conv.register_structure_hook(str, structure_str)
    conv.register_structure_hook(bool, structure_bool)
    conv.register_structure_hook(int, structure_int)
    conv.register_structure_hook(float, structure_float)

    def is_literal(tp: Any) -> bool:
        return get_origin(tp) is Literal

    def structure_literal(value: Any, tp: Any) -> Any:
        for choice in get_args(tp):
            if type(value) is type(choice) and value == choice:
                return value
        raise _Mismatch(_type_name(tp), value)

    conv.register_structure_hook_func(is_literal, structure_literal)

    def is_optional(tp: Any) -> bool:
        return _is_optional(tp)[0]

    def structure_optional(value: Any, tp: Any) -> Any:
        if value is None:
            return None
        return conv.structure(value, _is_optional(tp)[1])

    conv.register_structure_hook_func(is_optional, structure_optional)

    def is_union(tp: Any) -> bool:
        return bool(_union_members(tp))

    def structure_union(value: Any, tp: Any) -> Any:
        # the member whose JSON type the value has; members are distinct JSON types
        if value is None and type(None) in get_args(tp):
            return None
        for member in _union_members(tp):
            try:
                return conv.structure(value, member)
            except _Mismatch:
                continue
        raise _Mismatch(_type_name(tp), value)

    conv.register_structure_hook_func(is_union, structure_union)

    def is_sequence(tp: Any) -> bool:
        return get_origin(tp) in (list, tuple)

    def structure_sequence(value: Any, tp: Any) -> Any:
        if not isinstance(value, list):
            raise _Mismatch("a list", value)
        args = get_args(tp)
        item_type = args[0] if args else Any
        items = []
        errors = []
        for index, item in enumerate(value):
            try:
                items.append(conv.structure(item, item_type) if item_type is not Any else item)
            except Exception as exc:  # collected and re-raised with the index
                exc.__notes__ = [*getattr(exc, "__notes__", []), f"@index {index}"]
                errors.append(exc)
        if errors:
            raise IterableValidationError("invalid items", errors, tp)
        return tuple(items) if get_origin(tp) is tuple else items

    conv.register_structure_hook_func(is_sequence, structure_sequence)

    def is_mapping(tp: Any) -> bool:
        return tp is dict or get_origin(tp) is dict or tp is typing.Any

    def structure_mapping(value: Any, tp: Any) -> Any:
        if tp is typing.Any:
            return value
        if not isinstance(value, dict):
            raise _Mismatch("an object", value)
        args = get_args(tp)
        if not args or args[1] is Any:
            return value
        out = {}
        errors = []
        for key, item in value.items():
            try:
                out[key] = conv.structure(item, args[1])
            except Exception as exc:  # collected and re-raised with the key in the path
                exc.__notes__ = [*getattr(exc, "__notes__", []), f"@key {key}"]
                errors.append(exc)
        if errors:
            raise IterableValidationError("invalid entries", errors, tp)
        return out

    conv.register_structure_hook_func(is_mapping, structure_mapping)

    def attrs_factory(cls: type) -> Any:
        inner: Any = make_dict_structure_fn(cls, conv, _cattrs_forbid_extra_keys=True)

        def structure(value: Any, _: Any) -> Any:
            if not isinstance(value, Mapping):
                raise _Mismatch("an object", value)
            return inner(value, cls)

        return structure

    conv.register_structure_hook_factory(attrs.has, attrs_factory)
    return conv


_converters: list[cattrs.Converter] = []  # the one converter, made on first use


def _converter() -> cattrs.Converter:
    if not _converters:
        _converters.append(_make_converter())
    return _converters[0]


def _flatten(
    exc: BaseException, path: str, unknown: str = "unknown argument (not in the schema)"
) -> list[ArgumentError]:
    """Turn a cattrs validation tree into one ArgumentError per bad field."""
    from cattrs.errors import (
        AttributeValidationNote,
        ClassValidationError,
        ForbiddenExtraKeysError,
        IterableValidationError,
        IterableValidationNote,
    )

    def join(base: str, name: str) -> str:
        return f"{base}.{name}" if base else name

    out: list[ArgumentError] = []
    if isinstance(exc, ClassValidationError | IterableValidationError):
        for sub in exc.exceptions:
            sub_path = path
            for note in getattr(sub, "__notes__", []):
                if isinstance(note, AttributeValidationNote):
                    sub_path = join(path, note.name)
                elif isinstance(note, IterableValidationNote):
                    sub_path = f"{path}[{note.index}]"
                elif isinstance(note, str) and note.startswith("@index "):
                    sub_path = f"{path}[{note[7:]}]"
                elif isinstance(note, str) and note.startswith("@key "):
                    sub_path = join(path, note[5:])
            out.extend(_flatten(sub, sub_path, unknown))
        return out
    if isinstance(exc, ForbiddenExtraKeysError):
        for key in sorted(exc.extra_fields):
            out.append(ArgumentError(join(path, key), unknown))
        return out
    if isinstance(exc, KeyError):
        return [ArgumentError(path or str(exc), "required")]
    if isinstance(exc, _Mismatch):
        return [ArgumentError(path or "arguments", str(exc))]
    return [ArgumentError(path or "arguments", str(exc))]


def _bounds(name: str, value: Any, constraints: Mapping[str, float]) -> list[ArgumentError]:
    """``value`` against a field's bounds; a value of a type the bound does not apply to is
    left to the type check."""
    errors: list[ArgumentError] = []
    number = isinstance(value, int | float) and not isinstance(value, bool)
    sized = isinstance(value, str | list | tuple)
    for key, bound in constraints.items():
        if key == "minimum" and number and value < bound:
            errors.append(
                ArgumentError(name, f"expected at least {bound:g}, got {show_value(value)}")
            )
        elif key == "above" and number and not value > bound:
            errors.append(
                ArgumentError(name, f"expected a number above {bound:g}, got {show_value(value)}")
            )
        elif key == "maximum" and number and value > bound:
            errors.append(
                ArgumentError(name, f"expected at most {bound:g}, got {show_value(value)}")
            )
        elif key == "min_length" and sized and len(value) < bound:
            errors.append(
                ArgumentError(name, f"expected length at least {bound}, got {len(value)}")
            )
        elif key == "max_length" and sized and len(value) > bound:
            errors.append(ArgumentError(name, f"expected length at most {bound}, got {len(value)}"))
    return errors


def _check_constraints(obj: Any, path: str = "") -> list[ArgumentError]:
    errors: list[ArgumentError] = []
    for f in attrs.fields(type(obj)):
        value = getattr(obj, f.name)
        name = f"{path}.{f.name}" if path else f.name
        if value is not None:
            errors.extend(_bounds(name, value, f.metadata.get(_CONSTRAINTS, {})))
        if attrs.has(type(value)):
            errors.extend(_check_constraints(value, name))
        elif isinstance(value, list | tuple):
            for index, item in enumerate(value):
                if attrs.has(type(item)):
                    errors.extend(_check_constraints(item, f"{name}[{index}]"))
        elif isinstance(value, Mapping):
            for key, item in value.items():
                if attrs.has(type(item)):
                    errors.extend(_check_constraints(item, f"{name}.{key}"))
    return errors


def _raw_bounds(raw: Mapping[str, Any], cls: type, named: set[str]) -> list[ArgumentError]:
    """Bounds of the top-level values given, when the arguments could not be loaded at all (a
    required one missing): every bad value is named in the same answer, not the next."""
    errors: list[ArgumentError] = []
    for f in attrs.fields(cls):
        if f.name in raw and f.name not in named and raw[f.name] is not None:
            errors.extend(_bounds(f.name, raw[f.name], f.metadata.get(_CONSTRAINTS, {})))
    return errors


def _load(raw: Mapping[str, Any], cls: type[T], path: str, unknown: str) -> T:
    """``raw`` into ``cls`` with every type and bound checked; ArgumentErrors names each field
    under ``path`` (``""`` for arguments, the table for configuration)."""
    if not raw and attrs.has(cls):
        # Nothing given (most configuration tables of most runs): the defaults, as the converter
        # would make them, without building it at every start. A required field falls through
        # to the converter, which names it.
        try:
            made = typing.cast(T, cls())
        except TypeError:
            pass
        else:
            if errors := _check_constraints(made, path):
                raise ArgumentErrors(errors)
            return made
    converter = _converter()
    from cattrs.errors import (
        ClassValidationError,
        ForbiddenExtraKeysError,
        IterableValidationError,
    )

    try:
        obj = converter.structure(dict(raw), cls)
    except (
        ClassValidationError,
        IterableValidationError,
        _Mismatch,
        ForbiddenExtraKeysError,
    ) as exc:
        errors = _flatten(exc, path, unknown)
        if attrs.has(cls):
            prefix = f"{path}." if path else ""
            named = {e.field.removeprefix(prefix).split("[")[0].split(".")[0] for e in errors}
            errors += [
                ArgumentError(prefix + e.field, e.expected) for e in _raw_bounds(raw, cls, named)
            ]
        raise ArgumentErrors(errors) from None
    errors = _check_constraints(obj, path)
    if errors:
        raise ArgumentErrors(errors)
    return obj


def structure_args(raw: Any, cls: type[T]) -> T:
    """Load ``raw`` (decoded JSON) into ``cls`` strictly; raise ArgumentErrors naming each field."""
    if not isinstance(raw, Mapping):
        raise ArgumentErrors(
            [ArgumentError("arguments", f"expected an object, got {show_value(raw)}")]
        )
    return _load(raw, cls, "", "unknown argument (not in the schema)")


def structure_config(raw: Any, cls: type[T], table: str) -> T:
    """Load a configuration table strictly, with the same bounds as arguments; errors name the
    whole key path (``lsp.servers.python``) and say "unknown key" for a key the table lacks."""
    from tether.errors import ConfigError

    try:
        if not isinstance(raw, Mapping):
            raise ArgumentErrors([ArgumentError(table, f"expected a table, got {show_value(raw)}")])
        return _load(raw, cls, table, "unknown key (not in this table)")
    except ArgumentErrors as exc:
        raise ConfigError(str(exc)) from None


# --- JSON Schema -------------------------------------------------------------------------------


def _type_schema(tp: Any) -> dict[str, Any]:
    if members := _union_members(tp):
        branches = [_type_schema(member) for member in members]
        if type(None) in get_args(tp):
            branches.append({"type": "null"})
        return {"anyOf": branches}
    optional, inner = _is_optional(tp)
    if optional:
        # one `type` per schema: a type array (["string", "null"]) is legal JSON Schema, but
        # clients that map tool schemas onto a single-type dialect (Gemini's OpenAPI subset)
        # reject or weaken it; `anyOf` with single-type branches says the same thing portably
        return {"anyOf": [_type_schema(inner), {"type": "null"}]}
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    origin = get_origin(tp)
    if origin is Literal:
        choices = list(get_args(tp))
        kinds = {type(c) for c in choices}
        kind = "string" if kinds == {str} else "integer" if kinds == {int} else None
        if kind:
            return {"type": kind, "enum": choices}
        return {"enum": choices}
    if origin in (list, tuple):
        args = get_args(tp)
        item = args[0] if args else Any
        return {"type": "array", "items": _type_schema(item) if item is not Any else {}}
    if tp is dict or origin is dict:
        args = get_args(tp)
        schema: dict[str, Any] = {"type": "object"}
        if args and args[1] is not Any:
            schema["additionalProperties"] = _type_schema(args[1])
        return schema
    if attrs.has(tp):
        return object_schema(tp)
    if tp is Any:
        return {}
    raise TypeError(f"tether cannot describe {tp!r} in JSON Schema")


def value_schema(prop: dict[str, Any]) -> dict[str, Any]:
    """The branch of a property's schema that describes its values: ``prop`` itself, or the
    non-null branch of an optional one (``{"anyOf": [VALUE, {"type": "null"}]}``)."""
    branches = prop.get("anyOf")
    if isinstance(branches, list):
        return next((b for b in branches if b.get("type") != "null"), prop)
    return prop


def openapi_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` in the OpenAPI 3.0 subset Gemini's function declarations take: an optional
    field's ``anyOf`` becomes its value schema with ``nullable: true``; what the dialect has no
    keyword for (``additionalProperties``, ``exclusiveMinimum``, a non-string ``enum``) leaves
    the schema and is said in the description instead. The converter still enforces all of it:
    a call that breaks a rule the dialect could not carry gets the same error as anywhere."""
    out: dict[str, Any] = {}
    said: list[str] = []
    branches = schema.get("anyOf")
    if isinstance(branches, list):
        # `null` is `nullable`; an object without properties is no OBJECT the dialect takes
        # (Gemini refuses one): a union offering another form (an ast-grep rule as YAML text)
        # keeps only that one
        kept = [b for b in branches if b.get("type") != "null" and not _free_object(b)]
        nullable = len(kept) < len(branches) and any(b.get("type") == "null" for b in branches)
        if len(kept) == 1:
            out = openapi_schema(kept[0])
            said = [out.pop("description")] if "description" in out else []
        elif kept:
            out = {"anyOf": [openapi_schema(b) for b in kept]}
        if nullable:
            out["nullable"] = True
    for key, value in schema.items():
        if key == "anyOf" and isinstance(branches, list):
            continue
        if key == "properties":
            out[key] = {name: openapi_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            if key == "items":
                out[key] = openapi_schema(value)
            else:
                said.append(f"values: {value.get('type', 'any')}")
        elif key == "additionalProperties":
            continue  # `false`: the converter refuses unknown keys by name
        elif key == "exclusiveMinimum":
            out["minimum"] = value
            said.append(f"must be greater than {value}")
        elif key == "enum" and schema.get("type") != "string":
            said.append("one of " + ", ".join(json.dumps(v) for v in value))
        elif key == "description":
            said.insert(0, value)
        else:
            out[key] = value
    if said:
        out["description"] = "; ".join(said)
    return out


def _free_object(schema: dict[str, Any]) -> bool:
    """An object schema that names no property (``dict[str, Any]``)."""
    return schema.get("type") == "object" and not schema.get("properties")


def object_schema(cls: type) -> dict[str, Any]:
    """The flat JSON Schema of an attrs argument class (``additionalProperties: false``)."""
    hints = typing.get_type_hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in attrs.fields(cls):
        prop = _type_schema(hints[f.name])
        description = f.metadata.get(_DESCRIPTION)
        if description:
            prop["description"] = description
        constraints = f.metadata.get(_CONSTRAINTS, {})
        typed = value_schema(prop)  # bounds go beside the type they bound, not beside `null`
        if "minimum" in constraints:
            typed["minimum"] = constraints["minimum"]
        if "above" in constraints:
            typed["exclusiveMinimum"] = constraints["above"]
        if "maximum" in constraints:
            typed["maximum"] = constraints["maximum"]
        for key, json_key in (("min_length", "min"), ("max_length", "max")):
            if key in constraints:
                suffix = "Items" if typed.get("type") == "array" else "Length"
                typed[f"{json_key}{suffix}"] = constraints[key]
        if f.default is attrs.NOTHING:
            required.append(f.name)
        elif not isinstance(f.default, attrs.Factory):  # type: ignore[arg-type]
            default = f.default
            if isinstance(default, tuple):
                default = list(default)
            if default is None or isinstance(default, str | int | float | bool | list):
                prop["default"] = default
        properties[f.name] = prop
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema

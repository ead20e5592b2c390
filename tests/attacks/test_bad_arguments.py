"""Bad arguments: for every tool a session registers (``--vibe`` included), bad values are
generated from its own JSON Schema — the wrong type for every property, out of range, not one of
the choices, too short, an unknown key, a missing required one — and sent through one real
``tether session``. Each must be answered with an error that names its field (issue 11)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from attack_cli import TETHER, utf8_json_lines

from tether.args import value_schema

WRONG = {
    "string": [12345, ["a"]],
    "integer": ["3a", 3.5, True],
    "number": ["x", False],
    "boolean": ["maybe", 0],
    "array": ["not a list", {"a": 1}],
    "object": [[1], "x"],
}


def kinds(schema: dict[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, list):
        return [k for k in kind if k != "null"]
    return [kind] if isinstance(kind, str) else []


def bad_values(name: str, schema: dict[str, Any]) -> list[tuple[str, Any]]:
    """(the field the error must name, a bad value for ``name``)."""
    out: list[tuple[str, Any]] = []
    schema = value_schema(schema)  # an optional field: its non-null branch
    types = kinds(schema)
    for kind in types:
        for value in WRONG.get(kind, []):
            if any(_is(value, other) for other in types):
                continue  # e.g. 0 is fine where a number is also allowed
            out.append((name, value))
    if "enum" in schema:
        out.append((name, "definitely-not-a-choice"))
    if "minimum" in schema:
        out.append((name, schema["minimum"] - 1))
    if "maximum" in schema:
        out.append((name, schema["maximum"] + 1))
    if schema.get("minLength", 0) >= 1:
        out.append((name, ""))
    if schema.get("minItems", 0) >= 1:
        out.append((name, []))
    items = value_schema(schema.get("items") or {})
    for kind in kinds(items):
        for value in WRONG.get(kind, [])[:1]:
            out.append((f"{name}[0]", [value]))
    for sub, sub_schema in (items.get("properties") or {}).items():
        for field, value in bad_values(sub, sub_schema):
            out.append((f"{name}[0].{field}", [{sub: value}]))
    return out


def _is(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return {
        "string": str,
        "boolean": bool,
        "array": list,
        "object": dict,
    }.get(kind, type(None)) is type(value)


def test_every_bad_argument_is_answered_with_its_field(tally, tmp_path: Path) -> None:
    listed = subprocess.run(
        [*TETHER, "tools", "--vibe", "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    tools = json.loads(listed.stdout)
    assert len(tools) >= 20, [t["name"] for t in tools]
    cases: list[tuple[str, str, dict[str, Any]]] = []  # (tool, field, args)
    for tool in tools:
        schema = tool["input_schema"]
        for name, prop in schema["properties"].items():
            for field, value in bad_values(name, prop):
                cases.append((tool["name"], field, {name: value}))
        cases.append((tool["name"], "bogus_key_xyz", {"bogus_key_xyz": 1}))
        for name in schema.get("required", []):
            cases.append((tool["name"], name, {}))
    lines = [
        json.dumps({"id": index, "tool": tool, "args": args})
        for index, (tool, _, args) in enumerate(cases)
    ]
    out = subprocess.run(
        [*TETHER, "session", "--vibe", "--workdir", str(tmp_path)],
        input=("\n".join(lines) + "\n").encode(),
        capture_output=True,
        timeout=600,
    )
    replies = {r["id"]: r for r in utf8_json_lines(out.stdout)}
    unnamed = []
    for index, (tool, field, args) in enumerate(cases):
        reply = replies.get(index)
        text = reply["content"][0]["text"] if reply else "(no reply)"
        named = bool(reply and reply["is_error"] and f"\n{field}: " in f"\n{text}")
        tally.record("bad-input", held=named, named_field=int(named))
        if not named:
            unnamed.append((tool, field, args, text[:300]))
    assert out.returncode == 0, out.stderr[-2000:]
    assert not unnamed, "\n".join(repr(u) for u in unnamed)

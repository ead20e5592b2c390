"""The tool registry of a run: which tools exist, which surface sees which, and their schemas."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, get_args

from tether.args import object_schema, openapi_schema
from tether.errors import PluginError, ToolError
from tether.tiers import BUILTIN_SURFACES, Tier
from tether.tools import ToolSpec

SchemaFormat = Literal["json", "openai", "anthropic", "gemini"]


class ToolRegistry:
    """Tools by name with the plugin that declared each; surfaces by name with their tier.

    A tool whose required resources are not wired is kept aside with the reason
    (:attr:`skipped`), so "unknown tool" can say why.
    """

    def __init__(self, surfaces: Mapping[str, str]) -> None:
        self._tools: dict[str, ToolSpec] = {}
        self.origin: dict[str, str] = {}
        self._skipped: dict[str, str] = {}
        self.surfaces: dict[str, Tier] = dict(BUILTIN_SURFACES)
        for name, tier in surfaces.items():
            self.surfaces[name] = Tier(tier)

    def add(self, spec: ToolSpec, origin: str, wired: Callable[[str], bool]) -> bool:
        """Register ``spec`` from ``origin``; False (and kept in :attr:`skipped`) when a resource
        it requires is not ``wired``. PluginError for a duplicate name or a bad schema."""
        if not isinstance(spec, ToolSpec):
            raise PluginError(
                f"plugin {origin!r} declared {spec!r}, which is not a tether.ToolSpec"
            )
        if spec.name in self._tools or spec.name in self._skipped:
            raise PluginError(
                f"tool name {spec.name!r} is declared by both {self.origin[spec.name]!r} and {origin!r}"
            )
        problem = schema_problem(spec)
        if problem is not None:
            raise PluginError(f"tool {spec.name!r} from {origin!r}: {problem}")
        missing = [r for r in spec.requires if not wired(r)]
        self.origin[spec.name] = origin
        if missing:
            self._skipped[spec.name] = (
                f"needs resource(s) {', '.join(missing)} (not wired for this run)"
            )
            return False
        self._tools[spec.name] = spec
        return True

    def get(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    @property
    def tools(self) -> Mapping[str, ToolSpec]:
        return dict(self._tools)

    @property
    def skipped(self) -> Mapping[str, str]:
        return dict(self._skipped)

    def surface_tier(self, surface: str) -> Tier:
        try:
            return self.surfaces[surface]
        except KeyError:
            known = ", ".join(sorted(self.surfaces))
            raise ToolError(f"surface: unknown surface {surface!r} (known: {known})") from None

    def tools_for(self, surface: str = "default") -> list[ToolSpec]:
        limit = self.surface_tier(surface)
        return [spec for _, spec in sorted(self._tools.items()) if spec.tier <= limit]

    def schemas(
        self, surface: str = "default", format: SchemaFormat = "json"
    ) -> list[dict[str, Any]]:
        if format not in get_args(SchemaFormat):
            known = ", ".join(get_args(SchemaFormat))
            raise ValueError(f"format: expected one of {known}, got {format!r}")
        return [_schema(spec, format) for spec in self.tools_for(surface)]

    def not_on_surface(self, name: str, surface: str, failed: list[str]) -> str:
        """Why ``name`` cannot be called on ``surface``: its tier, or that it is unknown (with
        the tools that surface has, why a declared tool was skipped, and plugins that failed)."""
        limit = self.surface_tier(surface)
        spec = self._tools.get(name)
        if spec is not None:
            return (
                f"tool {name!r} ({spec.tier.value} tier) is not available on surface {surface!r}, "
                f"which allows {limit.value}-tier tools at most"
            )
        visible = ", ".join(s.name for s in self.tools_for(surface)) or "none"
        hint = f" ({name!r} {self._skipped[name]})" if name in self._skipped else ""
        if failed:  # the tool may be one of theirs: say which plugin and what it lacks
            hint += f"; plugins that failed to load: {'; '.join(failed)}"
        return f"unknown tool {name!r}; tools on surface {surface!r}: {visible}{hint}"


def _schema(spec: ToolSpec, format: SchemaFormat) -> dict[str, Any]:
    schema = object_schema(spec.args)
    if format == "openai":
        return {
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.full_description,
                "parameters": schema,
            },
        }
    if format == "anthropic":
        return {"name": spec.name, "description": spec.full_description, "input_schema": schema}
    if format == "gemini":  # a FunctionDeclaration: OpenAPI 3.0's schema subset
        declaration: dict[str, Any] = {"name": spec.name, "description": spec.full_description}
        if schema["properties"]:  # a tool without arguments has no OBJECT to declare
            declaration["parameters"] = openapi_schema(schema)
        return declaration
    return {
        "name": spec.name,
        "tier": spec.tier.value,
        "description": spec.full_description,
        "input_schema": schema,
    }


def schema_problem(spec: ToolSpec) -> str | None:
    """Why ``spec``'s argument class cannot be described as a JSON Schema, or its per-action
    table names fields the class lacks; or None."""
    try:
        object_schema(spec.args)
    except Exception as exc:
        return f"argument class {getattr(spec.args, '__name__', spec.args)!r}: {exc}"
    if spec.actions is not None and (unknown := spec.actions.unknown_fields(spec.args)):
        return f"actions name fields the argument class lacks: {', '.join(unknown)}"
    return None


__all__ = ["SchemaFormat", "ToolRegistry", "schema_problem"]

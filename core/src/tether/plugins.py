"""Plugin discovery and loading: entry-point group ``tether``, with env-var controls.

- ``TETHER_LOAD_PLUGINS=a,b``: load only these entry points (empty: none).
- ``TETHER_DISABLE_PLUGINS=a,b``: never load these (reported as ``blocked``).
- ``TETHER_TRACE_PLUGINS=1``: print every hook call to stderr.

A plugin built for another core (its distribution's ``tether`` requirement excludes the running
core's version), one that fails to import, or one that implements a hook nobody specified (a
misspelling) is reported as ``failed`` with its reason and skipped; the host keeps working. The
core check runs before the plugin is imported, so a version mismatch is named as one.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Any, Literal

import attrs
import pluggy

from tether import hookspecs

if TYPE_CHECKING:
    from importlib.metadata import Distribution

ENTRY_POINT_GROUP = "tether"
#: an index for the CLI: ``<command> = "<a plugin's module>"`` names the plugin whose
#: ``tether_cli_commands`` adds ``tether <command>``, so that command starts with that plugin
#: alone (``tether mcp`` answers its client before every other plugin is imported)
COMMANDS_GROUP = "tether.commands"
CORE_DISTRIBUTION = "tether"
#: the name at the head of a PEP 508 requirement: only a requirement whose name is the core's is
#: handed to ``packaging`` (a plugin's other requirements are never parsed)
_REQUIREMENT_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@attrs.define
class PluginInfo:
    """One plugin as ``tether plugins`` reports it."""

    name: str
    version: str | None
    status: Literal["loaded", "blocked", "failed"]
    reason: str | None = None
    hooks: list[str] = attrs.field(factory=list)
    #: the range of core versions its distribution declares (``"<0.3,>=0.2"``), if any
    accepts_core: str | None = None
    #: ``installed`` (an entry point of an installed distribution) or ``harness`` (an object the
    #: harness passed, e.g. the CLI's own): what a transport shows its user is the installed ones
    origin: Literal["installed", "harness"] = "installed"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "status": self.status,
            "reason": self.reason,
            "hooks": self.hooks,
            "accepts_core": self.accepts_core,
        }


class TetherPluginManager(pluggy.PluginManager):
    """A pluggy manager that remembers how each plugin fared (:attr:`report`)."""

    def __init__(self) -> None:
        super().__init__("tether")
        self.add_hookspecs(hookspecs)
        self.report: list[PluginInfo] = []

    def hooks_of(self, plugin: object) -> list[str]:
        """The names of the hooks ``plugin`` implements."""
        return sorted(caller.name for caller in (self.get_hookcallers(plugin) or []))


def _env_list(name: str) -> list[str] | None:
    value = os.environ.get(name)
    if value is None:
        return None
    return [item.strip() for item in value.split(",") if item.strip()]


def make_plugin_manager(
    *,
    entry_points_group: str | None = ENTRY_POINT_GROUP,
    plugins: Iterable[object] = (),
    only: Collection[str] | None = None,
) -> TetherPluginManager:
    """A fresh plugin manager: entry-point plugins (unless ``entry_points_group`` is None;
    only those named in ``only`` when given, within what ``TETHER_LOAD_PLUGINS`` allows) and
    the given plugin objects (a harness's own hooks). Never a global."""
    pm = TetherPluginManager()
    if entry_points_group:
        _load_entry_points(pm, entry_points_group, only)
    for index, plugin in enumerate(plugins):
        name = getattr(plugin, "__name__", None) or f"{type(plugin).__name__}-{index}"
        try:
            pm.register(plugin, name=name)
        except (ValueError, pluggy.PluginValidationError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
            pm.report.append(PluginInfo(name, None, "failed", reason, origin="harness"))
            continue
        pm.report.append(PluginInfo(name, None, "loaded", None, origin="harness"))
    pm.hook.tether_addhooks.call_historic(kwargs={"pluginmanager": pm})
    _drop_unknown_hooks(pm)
    for info in pm.report:
        if info.status == "loaded":
            plugin = pm.get_plugin(info.name)
            if plugin is not None:
                info.hooks = pm.hooks_of(plugin)
    if os.environ.get("TETHER_TRACE_PLUGINS"):
        from tether.terminal import for_terminal

        # a hook's arguments carry the checkout's and the model's text
        pm.trace.root.setwriter(
            lambda text: sys.stderr.write(f"[tether] {for_terminal(text, newlines=True)}")
        )
        pm.enable_tracing()
    return pm


def indexed_command_plugins(command: str) -> set[str]:
    """The plugins (entry-point names) the ``tether.commands`` index names for ``command``:
    those whose ``tether`` entry point is the module the index gives (empty: not indexed)."""
    import importlib.metadata

    found = importlib.metadata.entry_points()
    modules = {ep.value for ep in found.select(group=COMMANDS_GROUP, name=command)}
    if not modules:
        return set()
    return {ep.name for ep in found.select(group=ENTRY_POINT_GROUP) if ep.value in modules}


def _load_entry_points(
    pm: TetherPluginManager, group: str, subset: Collection[str] | None = None
) -> None:
    import importlib.metadata

    only = _env_list("TETHER_LOAD_PLUGINS")
    blocked = set(_env_list("TETHER_DISABLE_PLUGINS") or [])
    seen: set[str] = set()
    core = core_version()
    for ep in sorted(importlib.metadata.entry_points(group=group), key=lambda e: e.name):
        if ep.name in seen:
            continue
        seen.add(ep.name)
        if (only is not None and ep.name not in only) or (
            subset is not None and ep.name not in subset
        ):
            continue
        dist: Distribution | None = ep.dist
        # the metadata is parsed once (each of Distribution's properties parses it again)
        meta = dist.metadata if dist is not None else None
        version = (meta["Version"] or None) if meta is not None else None
        accepts = core_requirement(_requires(dist, meta)) or None
        if ep.name in blocked:
            pm.report.append(
                PluginInfo(ep.name, version, "blocked", "TETHER_DISABLE_PLUGINS", [], accepts)
            )
            pm.set_blocked(ep.name)
            continue
        if core is not None and accepts is not None and _excludes(accepts, core):
            name = (meta["Name"] if meta is not None else None) or ep.name
            reason = (
                f"built for another core: {name} {version} requires "
                f"{CORE_DISTRIBUTION}{accepts}, the running core is {CORE_DISTRIBUTION} {core}"
            )
            pm.report.append(PluginInfo(ep.name, version, "failed", reason, [], accepts))
            continue
        try:
            plugin = ep.load()
        except Exception as exc:
            reason = f"import failed: {type(exc).__name__}: {exc}"
            pm.report.append(PluginInfo(ep.name, version, "failed", reason, [], accepts))
            continue
        try:
            pm.register(plugin, name=ep.name)
        except (ValueError, pluggy.PluginValidationError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
            pm.report.append(PluginInfo(ep.name, version, "failed", reason, [], accepts))
            continue
        pm.report.append(PluginInfo(ep.name, version, "loaded", None, [], accepts))


def _requires(dist: Distribution | None, meta: Any) -> list[str]:
    if dist is None:
        return []
    return list(meta.get_all("Requires-Dist") or dist.requires or [])


def core_version() -> str | None:
    """The version of the running core's distribution (None when run from bare sources)."""
    import importlib.metadata

    try:
        return importlib.metadata.version(CORE_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def core_requirement(requires: Iterable[str]) -> str | None:
    """The range a distribution's requirements (``Requires-Dist``) put on the core, as
    ``packaging`` writes it (``"<0.3,>=0.2"``); "" when they require the core with no range;
    None when they do not require it here (an extra's requirement, a marker that does not hold,
    a URL). ``packaging`` is imported only when a requirement names the core."""
    for text in requires:
        head = _REQUIREMENT_NAME.match(text)
        if head is None or head[1].lower() != CORE_DISTRIBUTION:
            continue  # "tether" has no separator to normalise: any other spelling is another name
        from packaging.requirements import InvalidRequirement, Requirement

        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            return None
        if requirement.url or (
            requirement.marker is not None and not requirement.marker.evaluate({"extra": ""})
        ):
            continue
        return str(requirement.specifier)
    return None


def _excludes(accepts: str, core: str) -> bool:
    """Whether the range ``accepts`` excludes core version ``core`` (pre-releases admitted); a
    version ``packaging`` cannot read is not judged."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return not SpecifierSet(accepts).contains(Version(core), prereleases=True)
    except InvalidVersion:
        return False


def _drop_unknown_hooks(pm: TetherPluginManager) -> None:
    """``check_pending`` per plugin: a hook implemented with no spec (a typo) fails its plugin."""
    for info in pm.report:
        if info.status != "loaded":
            continue
        plugin = pm.get_plugin(info.name)
        if plugin is None:
            continue
        unknown = [
            caller.name
            for caller in (pm.get_hookcallers(plugin) or [])
            if not caller.has_spec()
            and any(
                impl.plugin is plugin and not impl.optionalhook for impl in caller.get_hookimpls()
            )
        ]
        if unknown:
            pm.unregister(plugin)
            info.status = "failed"
            info.reason = "implements hooks nobody specifies (misspelled?): " + ", ".join(
                sorted(unknown)
            )
    pm.check_pending()

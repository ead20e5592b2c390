"""Configuration: the ``[core]`` table, per-family tables and reading them from files."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import attrs

from tether.errors import ConfigError

PolicyName = Literal["auto", "ask", "deny"]


@attrs.frozen
class ApprovalPolicy:
    read: PolicyName = "auto"
    write: PolicyName = "ask"
    exec: PolicyName = "ask"


@attrs.frozen
class CoreConfig:
    """The ``[core]`` table."""

    approval: ApprovalPolicy = ApprovalPolicy()
    call_timeout_s: float = 120.0
    close_timeout_s: float = 10.0
    #: how long each result post-processor (``tether_process_result``) may take for one call
    post_process_timeout_s: float = 60.0
    surfaces: dict[str, Literal["read", "write", "exec"]] = attrs.field(factory=dict)


def load_config_file(workdir: Path, explicit: Path | None = None) -> dict[str, Any]:
    """The CLI's configuration: ``--config FILE``, else ``[tool.tether]`` in the workdir's
    ``pyproject.toml``, else ``tether.toml``, else empty."""
    if explicit is not None:
        return _read_toml(explicit, table=None)
    pyproject = workdir / "pyproject.toml"
    if pyproject.is_file():
        data = _read_toml(pyproject, table=None)
        section = data.get("tool", {}).get("tether")
        if section is not None:
            if not isinstance(section, Mapping):
                raise ConfigError(f"{pyproject}: [tool.tether] must be a table")
            return dict(section)
    tether_toml = workdir / "tether.toml"
    if tether_toml.is_file():
        return _read_toml(tether_toml, table=None)
    return {}


def _read_toml(path: Path, table: str | None) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read configuration {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None

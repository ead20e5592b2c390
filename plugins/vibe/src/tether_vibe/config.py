"""The ``[vibe]`` configuration table."""

from __future__ import annotations

from typing import Literal

import attrs

import tether
from tether.config import config_field, workdir_may_set

TIERS: tuple[str, ...] = ("fast", "good")

ResultMode = Literal["auto", "stream-json", "last-line", "file"]


@attrs.frozen
class CommandRunnerConfig:
    """``[vibe.runners.<tier>]``: an agent CLI run headless, one process per worker attempt."""

    command: tuple[str, ...] = config_field(min_length=1)
    result: ResultMode = "auto"
    result_file: str | None = None
    env: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class VibeConfig:
    runners: dict[str, CommandRunnerConfig] = attrs.field(factory=dict)
    max_concurrent: int = workdir_may_set(4, floor=1, above=0)
    idle_timeout_s: float = workdir_may_set(300.0, floor=30, above=0)
    isolation: Literal["none", "worktree"] = "none"
    worktree_root: str | None = None
    default_tier: Literal["fast", "good"] = "fast"
    default_wait_s: float = workdir_may_set(600.0, floor=0, minimum=0)
    max_wait_s: float = workdir_may_set(3600.0, floor=10, above=0)
    kill_grace_s: float = workdir_may_set(2.0, floor=0, minimum=0, maximum=60)
    output_tail_bytes: int = workdir_may_set(16_000, floor=1000, above=0)
    result_chars: int = workdir_may_set(20_000, floor=1000, above=0)


def validate(config: VibeConfig) -> VibeConfig:
    """What bounds on one key cannot say (the core checks each key's bounds when the table is
    loaded): a default wait within the maximum, known tiers, a result file when one is read."""
    if config.default_wait_s > config.max_wait_s:
        raise tether.ConfigError(
            f"vibe.default_wait_s: expected at most max_wait_s ({config.max_wait_s:g}), "
            f"got {config.default_wait_s!r}"
        )
    for tier, runner in config.runners.items():
        if tier not in TIERS:
            raise tether.ConfigError(
                f"vibe.runners.{tier}: unknown tier; expected one of {', '.join(TIERS)}"
            )
        if runner.result == "file" and not runner.result_file:
            raise tether.ConfigError(
                f'vibe.runners.{tier}.result_file: required with result = "file"'
            )
    return config

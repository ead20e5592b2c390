"""The ``[vibe]`` configuration table."""

from __future__ import annotations

from typing import Literal

import attrs

import tether
from tether.config import workdir_may_set

TIERS: tuple[str, ...] = ("fast", "good")

ResultMode = Literal["auto", "stream-json", "last-line", "file"]


@attrs.frozen
class CommandRunnerConfig:
    """``[vibe.runners.<tier>]``: an agent CLI run headless, one process per worker attempt."""

    command: tuple[str, ...]
    result: ResultMode = "auto"
    result_file: str | None = None
    env: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class VibeConfig:
    runners: dict[str, CommandRunnerConfig] = attrs.field(factory=dict)
    max_concurrent: int = workdir_may_set(4)
    idle_timeout_s: float = workdir_may_set(300.0)
    isolation: Literal["none", "worktree"] = "none"
    worktree_root: str | None = None
    default_tier: Literal["fast", "good"] = "fast"
    default_wait_s: float = workdir_may_set(600.0)
    max_wait_s: float = workdir_may_set(3600.0)
    kill_grace_s: float = workdir_may_set(2.0)
    output_tail_bytes: int = workdir_may_set(16_000)
    result_chars: int = workdir_may_set(20_000)


def validate(config: VibeConfig) -> VibeConfig:
    """Range checks the type conversion cannot express; the error names the key."""
    positive = {
        "max_concurrent": config.max_concurrent,
        "idle_timeout_s": config.idle_timeout_s,
        "max_wait_s": config.max_wait_s,
        "output_tail_bytes": config.output_tail_bytes,
        "result_chars": config.result_chars,
    }
    for key, value in positive.items():
        if not value > 0:
            raise tether.ConfigError(f"vibe.{key}: expected a number > 0, got {value!r}")
    if not 0 <= config.kill_grace_s <= 60:
        raise tether.ConfigError(
            f"vibe.kill_grace_s: expected 0 to 60 seconds, got {config.kill_grace_s!r}"
        )
    if not 0 <= config.default_wait_s <= config.max_wait_s:
        raise tether.ConfigError(
            f"vibe.default_wait_s: expected 0 to max_wait_s ({config.max_wait_s:g}), got {config.default_wait_s!r}"
        )
    for tier, runner in config.runners.items():
        if tier not in TIERS:
            raise tether.ConfigError(
                f"vibe.runners.{tier}: unknown tier; expected one of {', '.join(TIERS)}"
            )
        if not runner.command:
            raise tether.ConfigError(f"vibe.runners.{tier}.command: expected a non-empty list")
        if runner.result == "file" and not runner.result_file:
            raise tether.ConfigError(
                f'vibe.runners.{tier}.result_file: required with result = "file"'
            )
    return config

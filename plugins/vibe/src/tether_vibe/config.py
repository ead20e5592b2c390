"""The ``[vibe]`` configuration table."""

from __future__ import annotations

from typing import Literal

import attrs

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
    max_concurrent: int = 4
    idle_timeout_s: float = 300.0
    isolation: Literal["none", "worktree"] = "none"
    worktree_root: str | None = None
    default_tier: Literal["fast", "good"] = "fast"
    default_wait_s: float = 600.0
    max_wait_s: float = 3600.0
    kill_grace_s: float = 2.0
    output_tail_bytes: int = 16_000
    result_chars: int = 20_000

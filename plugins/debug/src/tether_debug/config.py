"""The ``[debug]`` configuration table."""

from __future__ import annotations

import attrs

from tether import ConfigError


@attrs.frozen
class DebugConfig:
    """``[debug]``: limits of the one debug session a conversation may hold."""

    #: Hard lifetime of a session (seconds from launch/attach); then both process trees are killed.
    ttl_s: float = 1800.0
    #: Bound on every single DAP request.
    request_timeout_s: float = 15.0
    #: How long launch/continue/step/pause wait for the program to stop or end before answering
    #: "still running".
    stop_timeout_s: float = 30.0
    #: How long the adapter has to start and answer ``initialize`` (TCP adapters: to listen).
    start_timeout_s: float = 20.0
    #: Adapters that build the program before launching it (delve): the extra time ``launch``
    #: may take for that build (a cold Go build compiles the standard library too).
    build_timeout_s: float = 300.0
    #: Bytes of program output kept per session (older output is dropped and counted).
    output_buffer_bytes: int = 1_000_000
    #: Characters of output one ``output`` call returns at most.
    output_chunk_chars: int = 8000
    #: Exception filters per adapter id, replacing the adapter's defaults
    #: (e.g. ``{debugpy = ["uncaught", "userUnhandled"]}``).
    exception_filters: dict[str, list[str]] = attrs.field(factory=dict)


def check_config(config: DebugConfig) -> DebugConfig:
    """Refuse limits that cannot work (the converter checks types, this checks ranges)."""
    for field in attrs.fields(DebugConfig):
        value = getattr(config, field.name)
        if isinstance(value, int | float) and not value > 0:
            raise ConfigError(f"debug.{field.name}: expected a positive number, got {value!r}")
    return config

"""The ``[debug]`` configuration table."""

from __future__ import annotations

import attrs

from tether.config import workdir_may_set


@attrs.frozen
class DebugConfig:
    """``[debug]``: limits of the one debug session a conversation may hold."""

    #: Hard lifetime of a session (seconds from launch/attach); then both process trees are killed.
    ttl_s: float = workdir_may_set(1800.0, floor=60, above=0)
    #: Bound on every single DAP request.
    request_timeout_s: float = workdir_may_set(15.0, floor=2, above=0)
    #: How long launch/continue/step/pause wait for the program to stop or end before answering
    #: "still running".
    stop_timeout_s: float = workdir_may_set(30.0, floor=2, above=0)
    #: How long the adapter has to start and answer ``initialize`` (TCP adapters: to listen).
    start_timeout_s: float = workdir_may_set(20.0, floor=5, above=0)
    #: Adapters that build the program before launching it (delve): the extra time ``launch``
    #: may take for that build (a cold Go build compiles the standard library too).
    build_timeout_s: float = workdir_may_set(300.0, floor=10, above=0)
    #: Bytes of program output kept per session (older output is dropped and counted).
    output_buffer_bytes: int = workdir_may_set(1_000_000, floor=10_000, above=0)
    #: Characters of output one ``output`` call returns at most.
    output_chunk_chars: int = workdir_may_set(8000, floor=1000, above=0)
    #: Requests in a row that time out while the adapter looks hung (its process stopped, or the
    #: session's processes using under 2 % of one core since the first; ``tether.processes.hang``) before
    #: the session is ended: adapter and debuggee killed, said in that call's result. A busy
    #: session is never ended.
    restart_after_timeouts: int = workdir_may_set(2, floor=1, minimum=1)
    #: Exception filters per adapter id, replacing the adapter's defaults
    #: (e.g. ``{debugpy = ["uncaught", "userUnhandled"]}``).
    exception_filters: dict[str, list[str]] = attrs.field(factory=dict)

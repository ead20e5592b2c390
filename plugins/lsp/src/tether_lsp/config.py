"""The ``[lsp]`` configuration table."""

from __future__ import annotations

from typing import Any

import attrs

from tether.config import workdir_may_set


@attrs.frozen
class LspConfig:
    """``[lsp]``: every key is optional; unknown keys are refused by the core."""

    #: removed in 0.2 (diagnostics follow every call whose result says it wrote files); a value
    #: here is refused with a message saying so
    write_tools: tuple[str, ...] | None = None
    #: preferred server order per language, e.g. {"python": ["pylsp", "basedpyright"]}
    servers: dict[str, tuple[str, ...]] = attrs.field(factory=dict)
    #: per-server settings merged over the spec's own, e.g. {"pylsp": {"pylsp": {...}}}
    settings: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    request_timeout_s: float = workdir_may_set(10.0, floor=2, above=0)
    start_timeout_s: float = workdir_may_set(30.0, floor=5, above=0)
    #: how long a query waits for indexing to finish before answering "still indexing"
    ready_timeout_s: float = workdir_may_set(15.0, floor=2, above=0)
    #: how long a write waits for the server's diagnostics of the new version
    diagnostics_timeout_s: float = workdir_may_set(5.0, floor=1, above=0)
    #: after a write, how many of the files that use a changed name have their diagnostics
    #: asked for (the others are named as not checked); 0 checks none
    dependents_limit: int = workdir_may_set(8, floor=2, minimum=0)
    #: how long a write waits for those files' diagnostics, beyond its own
    dependents_timeout_s: float = workdir_may_set(4.0, floor=1, above=0)
    #: below the core's default call timeout (120 s), so the checker's own limit speaks first
    checker_timeout_s: float = workdir_may_set(100.0, floor=10, above=0)
    #: crashes within a minute after which a server is no longer restarted
    max_restarts: int = workdir_may_set(3, floor=1, minimum=0)
    #: requests in a row that time out while the server looks hung (stopped, no CPU used)
    #: before the next query restarts it; a busy server is never restarted
    restart_after_timeouts: int = workdir_may_set(2, floor=1, minimum=1)

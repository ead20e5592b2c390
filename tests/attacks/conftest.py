"""The attack suite's bookkeeping: every attack records what it tried and whether the promise
held, and the run ends with one table of the figures (so they stay true, not remembered).

Tests use the ``tally`` fixture::

    def test_something(tally):
        ...
        tally.record("kills", held=not orphans, orphans=len(orphans))

Categories and the counters they sum (any keyword passed to ``record`` is summed per category):
``escapes`` (policy/confinement attacks), ``bad-input`` (bad arguments: ``named_field``),
``hostile-lines`` (session deaths: ``deaths``), ``config-tolerance`` (a bad workdir file), ``kills`` (``orphans``, ``partial``,
``bytes_lost``), ``hangs`` (a stopped debug adapter or language server: ``orphans``),
``reads: <variant>`` (a FIFO, a device, a socket, a huge file, an overlong path or a symlink
swap against every tool that reads; ``leaked`` in the swap race). ``survivors(marker)`` lists live processes whose environment carries a marker.
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

# the attack modules import their helpers (attack_cli) as siblings, whichever of them a run
# collects (the portable CI step runs only the kill/orphan files)
sys.path.insert(0, str(Path(__file__).parent))


class Tally:
    def __init__(self) -> None:
        self.rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    def record(self, category: str, *, held: bool, **counters: int) -> None:
        row = self.rows[category]
        row["tried"] += 1
        row["held"] += int(held)
        for key, value in counters.items():
            row[key] += int(value)


_TALLY = Tally()


@pytest.fixture
def tally() -> Tally:
    return _TALLY


def survivors(marker: str) -> list[int]:
    """Pids of live processes (zombies excluded) whose environment contains ``marker``."""
    needle = marker.encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / "environ").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _TALLY.rows:
        return
    write = terminalreporter.write_line
    write("")
    write("attack suite                tried   held  other figures")
    for category in sorted(_TALLY.rows):
        row = dict(_TALLY.rows[category])
        tried, held = row.pop("tried"), row.pop("held")
        extra = ", ".join(f"{k} {v}" for k, v in sorted(row.items()))
        write(f"{category:<26} {tried:>6} {held:>6}  {extra}")


@pytest.fixture(name="survivors")
def survivors_fixture() -> Any:
    """:func:`survivors` for tests (a conftest cannot be imported under --import-mode=importlib)."""
    return survivors

"""The index behind every coverage check (``tether_lsp.coverage.NameIndex``): a whole-word
search that reads only the files that may hold the name, kept current by the watch — a file
another process writes, adds or removes between two searches is searched as it is now — and
that names what it did not read (a FIFO, a file over the cap, the budget spent) instead of
opening it."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from tether.workdir.reading import Reader
from tether_lsp.coverage import FILE_CAP, NameIndex

PY = frozenset({".py"})


def test_the_index_follows_other_processes_and_names_what_it_did_not_read(
    tmp_path: Path,
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("def asdict(x):\n    return x\n")
    (tmp_path / "pkg" / "b.py").write_text("asdictionary = 1\n# asdict here\n")
    (tmp_path / "big.py").write_text("asdict = 1\n" + "#" * FILE_CAP)
    os.mkfifo(tmp_path / "fifo.py")
    index = NameIndex(tmp_path, PY)
    done: list[Any] = []

    def search(name: str, budget_s: float = 30.0) -> None:
        with Reader(tmp_path) as reader:
            done.append(index.search(reader, name, PY, budget_s))

    try:
        thread = threading.Thread(target=search, args=("asdict",), daemon=True)
        thread.start()
        thread.join(30)
        assert done, "the search blocked (on the FIFO?)"
        found = done.pop()
        assert found.lines == {tmp_path / "pkg" / "a.py": (1,), tmp_path / "pkg" / "b.py": (2,)}
        assert found.unsearched == {tmp_path / "big.py": "too large"}
        # another process: a new file, a changed one, a removed one
        (tmp_path / "pkg" / "c.py").write_text("x = asdict(1)\n")
        (tmp_path / "pkg" / "b.py").write_text("nothing = 1\n")
        (tmp_path / "pkg" / "a.py").unlink()
        search("asdict")
        found = done.pop()
        assert found.lines == {tmp_path / "pkg" / "c.py": (1,)}
        # a name nowhere: every indexed file searched, none read again
        search("nowhere_at_all")
        assert done.pop().lines == {}
        # a file not indexed yet, past the budget: named, not searched
        (tmp_path / "pkg" / "d.py").write_text("asdict\n")
        search("asdict", 0.0)
        found = done.pop()
        assert found.unsearched[tmp_path / "pkg" / "d.py"] == "not read within 0 s"
    finally:
        index.close()


def test_the_background_build_indexes_in_chunks_and_a_search_then_reads_only_holders(
    tmp_path: Path,
) -> None:
    for n in range(5):
        (tmp_path / f"m{n}.py").write_text(f"value_{n} = {n}\n")
    index = NameIndex(tmp_path, PY)
    try:
        with Reader(tmp_path) as reader:
            assert not index.index_some(reader, 2)  # 3 left
            assert not index.index_some(reader, 2)  # 1 left
            assert index.index_some(reader, 2)
            # every file indexed: a budget of 0 s names none unsearched
            found = index.search(reader, "value_3", PY, 0.0)
        assert found.lines == {tmp_path / "m3.py": (1,)} and not found.unsearched
    finally:
        index.close()

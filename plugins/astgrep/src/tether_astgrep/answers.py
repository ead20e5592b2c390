"""The whole answers of a run's last searches, kept: the same search over the same unchanged
files is answered by the run's process alone, without a round trip to its workers.

What is compared is every searched file's ``lstat`` (reached as the reader reaches it: no link
followed), taken before the search reads anything: ``engine.file_stamp``. A file changed since
makes the kept answer stale, and the search runs (in the workers, which match again only the
files that changed: ``engine.ProcessState``). Only a pattern's search is kept (an edit must
read what is on disk; a rule's parts never compare equal again), and only a whole one (never a
search that stopped early). Of an answer, only the files that say something are kept (matches,
a skip, a syntax error): the others are rebuilt from the list of files.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import attrs

from tether.workdir.reading import Reader, UnreadableFile, off_loop
from tether_astgrep.engine import FileResult, Task, file_stamp
from tether_astgrep.pattern import CompiledPattern

#: searches whose answer the run keeps (the most recent ones)
KEPT_ANSWERS = 4


@attrs.frozen
class _Answer:
    stamps: bytes  # digest of the files searched and their stamps, before the search
    said: dict[str, FileResult]  # the files whose result says something
    others: list[tuple[str, int]]  # other readings that find something (a search that did not)


def _stamp(reader: Reader, path: str) -> object:
    try:
        st = reader.stat(path)
    except UnreadableFile as exc:
        return exc.reason
    return file_stamp(st)


def _says_something(result: FileResult) -> bool:
    return bool(result.count or result.skipped or result.parse_errors or result.unsearchable_lines)


class KeptAnswers:
    """One per run (the astgrep service's)."""

    def __init__(self) -> None:
        self._answers: dict[Task, _Answer] = {}

    @staticmethod
    def keeps(task: Task) -> bool:
        return task.mode == "search" and isinstance(task.pattern, CompiledPattern)

    @staticmethod
    async def stamped(root: str, files: Sequence[str]) -> bytes:
        """A digest of `files` and each one's stamp now (off the event loop)."""

        def work(reader: Reader) -> bytes:
            digest = hashlib.blake2b(digest_size=16)
            for path in files:
                reader.check()
                digest.update(repr((path, _stamp(reader, path))).encode())
            return digest.digest()

        return await off_loop(root, work)

    def get(
        self, task: Task, stamps: bytes, files: Sequence[str]
    ) -> tuple[list[FileResult], list[tuple[str, int]]] | None:
        """The kept answer of `task`, if its files are those and unchanged: (each file's
        result, marked reused, in `files` order; the other readings)."""
        kept = self._answers.get(task)
        if kept is None or kept.stamps != stamps:
            return None
        said = kept.said
        results = [
            attrs.evolve(said[f], parsed=False, reused=True)
            if f in said
            else FileResult(f, reused=True)
            for f in files
        ]
        return results, kept.others

    def put(
        self,
        task: Task,
        stamps: bytes,
        results: Sequence[FileResult],
        others: list[tuple[str, int]],
    ) -> None:
        said = {r.path: r for r in results if _says_something(r)}
        self._answers.pop(task, None)
        self._answers[task] = _Answer(stamps, said, others)
        while len(self._answers) > KEPT_ANSWERS:
            del self._answers[next(iter(self._answers))]

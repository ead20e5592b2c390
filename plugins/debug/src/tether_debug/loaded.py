"""The text each source file had when the debugged program loaded it, so that a live session's
line numbers mean what the program runs: a breakpoint given on the file's text now is moved to
the loaded text's line (or refused), and a stop in a file changed since is said in both texts.

What is knowable, and so what is assumed: the program is taken to have loaded a file as it was
when the session started (launch/attach). A file's text is taken the first time the session
needs it (its breakpoints sent at launch, a stop in it, a breakpoint set later) if the file has
not been modified since the session started; otherwise the text before tether's first write of
it during the session (tether's writers know it), else it is unknown and its lines are refused
rather than guessed. A Python module first imported after an edit runs the edited text: the
session cannot see the import, so such a file reads as "changed since the program started"."""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from tether_debug.anchors import follow, read_text


@attrs.frozen
class Placed:
    """A line of the file now, in the text the program runs: ``line`` (None: it has none there,
    and ``why`` says so)."""

    line: int | None
    why: str = ""


def _stat_key(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


@attrs.define
class LoadedTexts:
    """One session's record of what its program loaded (see the module docstring)."""

    workdir: Path
    #: when the program is taken to have loaded its files (wall clock, ns)
    since_ns: int
    #: per file, the text the program loaded; None: the file changed before tether saw it
    texts: dict[Path, str | None] = attrs.field(factory=dict)
    #: per file, the text now as last read, with the (mtime, size) it was read at
    _now: dict[Path, tuple[tuple[int, int] | None, str | None]] = attrs.field(factory=dict)
    #: the real path of each name asked about (asked at every stop: resolved once)
    _keys: dict[Path | str, Path] = attrs.field(factory=dict)

    def key(self, path: Path | str) -> Path:
        key = self._keys.get(path)
        if key is None:
            if len(self._keys) > 4096:
                self._keys.clear()
            key = self._keys[path] = Path(os.path.realpath(path))
        return key

    def saw_before_write(self, path: Path, before: bytes | None) -> None:
        """A tether write is about to change, or has just changed, ``path``: what it held before
        is the loaded text if the session had not taken one (the earliest text tether saw)."""
        key = self.key(path)
        if key not in self.texts and before is not None:
            self.texts[key] = before.decode("utf-8", errors="surrogateescape")

    def loaded(self, path: Path | str) -> str | None:
        """The text the program loaded (taken now if the file is unmodified since the session
        started); None when unknown."""
        key = self.key(path)
        if key in self.texts:
            return self.texts[key]
        stat = _stat_key(key)
        if stat is None:
            return None  # gone or unreadable: nothing to record, nothing to map
        if stat[0] > self.since_ns:
            self.texts[key] = None
            return None
        text = read_text(key, self.workdir)
        self.texts[key] = text
        self._now[key] = (stat, text)
        return text

    def now(self, path: Path | str) -> str | None:
        """The file's text now (read again only when its mtime or size moved)."""
        key = self.key(path)
        stat = _stat_key(key)
        known = self._now.get(key)
        if known is not None and known[0] == stat and stat is not None:
            return known[1]
        text = read_text(key, self.workdir) if stat is not None else None
        self._now[key] = (stat, text)
        return text

    def changed(self, path: Path | str) -> bool:
        """Whether the file differs from what the program loaded (an unknown text counts)."""
        loaded = self.loaded(path)
        key = self.key(path)
        if key not in self.texts:
            return False  # not readable at all: nothing is known either way
        return loaded is None or self.now(path) != loaded

    def to_loaded(self, path: Path | str, line: int, symbol: str | None = None) -> Placed:
        """Where line ``line`` of the file now is in the text the program runs."""
        if not self.changed(path):
            return Placed(line)
        loaded, now = self.loaded(path), self.now(path)
        if loaded is None or now is None:
            return Placed(
                None,
                "the file changed since the program started and tether has no copy of the text "
                "it runs, so the line cannot be placed in it",
            )
        move = follow(now, loaded, line, symbol)
        if move.new is not None:
            return Placed(move.new)
        lines = now.splitlines()
        shown = f"`{lines[line - 1].strip()[:60]}`" if line <= len(lines) else "the line"
        if "ambiguous" in move.why:
            return Placed(
                None,
                f"{shown} is on several lines of the text the program runs (the file changed "
                "since it started)",
            )
        return Placed(
            None, f"{shown} did not exist when the program started (the file changed since)"
        )

    def to_now(self, path: Path | str, line: int) -> Placed:
        """Where line ``line`` of the text the program runs is in the file now."""
        if not self.changed(path):
            return Placed(line)
        loaded, now = self.loaded(path), self.now(path)
        if loaded is None:
            return Placed(None, "the file changed since the program started")
        if now is None:
            return Placed(None, "the file is gone")
        move = follow(loaded, now, line)
        return Placed(move.new, move.why)

    def line_text(self, path: Path | str, line: int) -> str | None:
        """Line ``line`` of the text the program runs (None when unknown or past its end)."""
        loaded = self.loaded(path)
        if loaded is None:
            return None
        lines = loaded.split("\n")
        return lines[line - 1].rstrip("\r") if 0 < line <= len(lines) else None

    def note(self, path: Path | str, line: int) -> str:
        """What a location ``path:line`` reported by the program means in the file now: '' when
        the file is unchanged, else both line numbers (or why there is none now)."""
        if not self.changed(path):
            return ""
        placed = self.to_now(path, line)
        runs = f"line {line} in the text the program runs"
        if placed.line is None and self.loaded(path) is None:
            return f" ({runs}; the file changed since the program started, tether has no copy)"
        if placed.line is None:
            return f" ({runs}; the file changed since and that line is not in it now)"
        if placed.line == line:
            return ""  # the edits left this line where it was
        return f" ({runs}; line {placed.line} in the file now)"

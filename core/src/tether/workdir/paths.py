"""Workspace path confinement for every tool that takes a path."""

from __future__ import annotations

import os
from pathlib import Path, PurePath

from tether.errors import PathError
from tether.text import show_path

_NAME_MAX = 255  # bytes of one path component (Linux, macOS and the common file systems)
PATH_MAX = 4096  # bytes of a whole path, its terminating NUL included (Linux)


def confine(workdir: Path | str, path: str, field: str = "path") -> Path:
    """Resolve ``path`` (relative to ``workdir``) and refuse anything that leaves the workdir.

    ``..`` segments that climb out, absolute paths elsewhere and symlinks pointing outside are all
    refused with a :class:`PathError` naming ``field``. The returned path is absolute and resolved
    (it need not exist).
    """
    return confine_in(Path(workdir).resolve(), path, field)


def confine_in(root: Path, path: str, field: str = "path") -> Path:
    """:func:`confine` in a workdir already resolved (a run's: resolved once when it opened,
    not on every call)."""
    if not isinstance(path, str) or not path:
        raise PathError(field, "expected a non-empty path")
    if "\x00" in path:
        raise PathError(field, "path contains a NUL byte")
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        raise PathError(field, "path contains a lone surrogate, which no file name holds") from None
    size = len(os.fsencode(path))
    if size >= PATH_MAX:
        raise PathError(
            field, f"the path is {size:,} bytes long; a path holds at most {PATH_MAX - 1:,}"
        )
    for part in Path(path).parts:
        if len(os.fsencode(part)) > _NAME_MAX:
            raise PathError(
                field,
                f"the name {part[:40]!r}… is {len(os.fsencode(part))} bytes long; a file name "
                f"holds at most {_NAME_MAX}",
            )
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    lexical = Path(os.path.normpath(candidate))
    if len(os.fsencode(str(lexical))) >= PATH_MAX:
        raise PathError(
            field,
            f"{path[:60]!r}… is {len(os.fsencode(str(lexical))):,} bytes long inside the "
            f"workdir; a path holds at most {PATH_MAX - 1:,}",
        )
    if not _inside(lexical, root):
        raise PathError(field, f"{path!r} is outside the workdir {str(root)!r}")
    try:
        resolved = lexical.resolve()
    except OSError as exc:  # a symlink on the way changed while it was read (realpath races)
        raise PathError(field, f"{path!r} changed while it was resolved ({exc.strerror})") from None
    except RuntimeError:  # Python 3.11's resolve() on a symlink loop
        raise PathError(field, f"{path!r} is a symlink loop") from None
    if not _inside(resolved, root):
        raise PathError(
            field, f"{path!r} leads outside the workdir through a symlink (to {str(resolved)!r})"
        )
    return resolved


def _inside(path: Path, root: Path) -> bool:
    return is_within(path, root)


def is_within(path: PurePath, root: PurePath) -> bool:
    """``path`` is ``root`` or lies under it, compared by their parts: lexical, for paths both
    absolute and normalised as resolved ones are (``path == root or root in path.parents``
    without building each parent)."""
    parts = root.parts
    return path.parts[: len(parts)] == parts


def relative(workdir: Path | str, path: Path | str) -> str:
    """``path`` relative to the workdir when inside it, else as given — as shown to the model
    (:func:`tether.text.show_path`: control characters escaped)."""
    try:
        return show_path(Path(path).resolve().relative_to(Path(workdir).resolve()))
    except ValueError:
        return show_path(path)


def is_inside(workdir: Path | str, path: Path | str) -> bool:
    """``path`` (resolved) lies in the workdir."""
    try:
        Path(path).resolve().relative_to(Path(workdir).resolve())
    except (ValueError, OSError):
        return False
    return True


#: the mark a location outside the workdir carries where it is shown (a definition in a
#: library, a stack frame in the interpreter): its text is not the checkout's
OUTSIDE = " (outside the workdir)"

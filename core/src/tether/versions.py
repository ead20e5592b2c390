"""Which core a plugin was built for: the ``tether`` requirement in its distribution metadata,
checked against the running core before the plugin is imported.

This is a small PEP 440 subset of our own rather than a dependency on ``packaging``: importing
``packaging.requirements`` costs about as much as a third of the CLI's whole start-up, and the
check runs on every start for every plugin. What it cannot parse it does not judge
(:func:`satisfies` returns None and the plugin loads); what it judges agrees with ``packaging``
(``core/tests/test_versions.py`` compares the two on generated versions and ranges).

The installed distributions and their entry points are read here too (:func:`entry_points`,
:func:`distribution`), from the ``*.dist-info`` / ``*.egg-info`` directories of ``sys.path``, as
``importlib.metadata`` finds them (first on ``sys.path`` wins; ``core/tests/test_versions.py``
compares the two on the real environment). Not through ``importlib.metadata`` itself: importing
it brings ``email``, ``zipfile``, ``csv``… — a fifth of the start-up budget — and it parses every
plugin's whole metadata (README included) with the ``email`` parser. A ``sys.path`` entry that is
a file (a zip) is still read through ``importlib.metadata``.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from typing import Protocol

CORE_DISTRIBUTION = "tether"

_VERSION = re.compile(
    r"""^v?(?:(?P<epoch>\d+)!)?(?P<release>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre_l>a|b|rc|alpha|beta|c|pre|preview)[-_.]?(?P<pre_n>\d*))?
    (?:[-_.]?(?:post|rev|r)[-_.]?(?P<post_n>\d*))?
    (?:[-_.]?dev[-_.]?(?P<dev_n>\d*))?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?$""",
    re.X | re.I,
)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_SPEC = re.compile(r"^(~=|===|==|!=|<=|>=|<|>)\s*(\S+)$")
_NAME = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[^\]]*\])?\s*(.*)$")


class _Version:
    """A parsed PEP 440 version, ordered as PEP 440 orders them."""

    def __init__(self, text: str) -> None:
        m = _VERSION.match(text.strip())
        if m is None:
            raise ValueError(text)
        self.epoch = int(m["epoch"] or 0)
        self.release = tuple(int(p) for p in m["release"].split("."))
        self.pre = (_PRE[m["pre_l"].lower()], int(m["pre_n"] or 0)) if m["pre_l"] else None
        self.post = int(m["post_n"] or 0) if m.group("post_n") is not None else None
        self.dev = int(m["dev_n"] or 0) if m.group("dev_n") is not None else None
        self.local = m["local"]

    @property
    def is_prerelease(self) -> bool:
        return self.pre is not None or self.dev is not None

    @property
    def base(self) -> tuple[int, tuple[int, ...]]:
        return (self.epoch, _trim(self.release))

    def key(self) -> tuple[object, ...]:
        if self.pre is None and self.post is None and self.dev is not None:
            pre: tuple[int, int] = (-1, 0)  # 1.0.dev0 sorts before 1.0a0
        else:
            pre = self.pre if self.pre is not None else (3, 0)
        post = self.post if self.post is not None else -1
        dev = (0, self.dev) if self.dev is not None else (1, 0)
        return (self.epoch, _trim(self.release), pre, post, dev)


def _trim(release: tuple[int, ...]) -> tuple[int, ...]:
    end = len(release)
    while end > 1 and release[end - 1] == 0:
        end -= 1
    return release[:end]


def _padded(release: tuple[int, ...], n: int) -> tuple[int, ...]:
    return (release + (0,) * n)[:n]


def _matches(op: str, spec: str, candidate: _Version, raw: str) -> bool:
    """One clause; raises ValueError for what this subset does not understand."""
    if op == "===":
        return raw.strip().lower() == spec.lower()
    if spec.endswith(".*"):
        if op not in ("==", "!="):
            raise ValueError(spec)
        prefix = _Version(spec[:-2])
        if prefix.pre is not None or prefix.post is not None or prefix.dev is not None:
            raise ValueError(spec)
        same = candidate.epoch == prefix.epoch and _padded(
            candidate.release, len(prefix.release)
        ) == _padded(prefix.release, len(prefix.release))
        return same if op == "==" else not same
    wanted = _Version(spec)
    if op == "~=":
        if len(wanted.release) < 2 or wanted.local:
            raise ValueError(spec)
        stem = ".".join(str(p) for p in wanted.release[:-1])
        epoch = f"{wanted.epoch}!" if wanted.epoch else ""
        return _matches(">=", spec, candidate, raw) and _matches(
            "==", f"{epoch}{stem}.*", candidate, raw
        )
    if op in ("==", "!="):
        if wanted.local is not None:
            same = candidate.key() == wanted.key() and candidate.local == wanted.local
        else:
            same = candidate.key() == wanted.key()
        return same if op == "==" else not same
    if wanted.local is not None:
        raise ValueError(spec)
    c, w = candidate.key(), wanted.key()
    if op == ">=":
        return c >= w
    if op == "<=":
        return c <= w
    if candidate.base != wanted.base:
        return c < w if op == "<" else c > w
    # <V and >V carve out V's own family: its pre-releases, its post-releases
    if op == "<":
        if wanted.is_prerelease:
            return c < w
        if wanted.post is None:
            return False
        return c < w and not (candidate.post == wanted.post and candidate.dev is not None)
    if wanted.dev is not None or wanted.post is not None:
        return c > w
    return c > w and candidate.pre != wanted.pre


def satisfies(candidate: str, specifier: str) -> bool | None:
    """Whether version ``candidate`` is in ``specifier`` (e.g. ``">=0.2,<0.3"``), pre-releases
    admitted; None when either is outside the PEP 440 subset this module understands."""
    try:
        parsed = _Version(candidate)
        clauses = [c.strip() for c in specifier.split(",") if c.strip()]
        result = True
        for clause in clauses:
            m = _SPEC.match(clause)
            if m is None:
                return None
            result = _matches(m[1], m[2], parsed, candidate) and result
        return result
    except ValueError:
        return None


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class HasMetadata(Protocol):
    """What is read of a distribution: its files (``importlib.metadata.Distribution`` fits)."""

    def read_text(self, filename: str) -> str | None: ...


class InstalledDistribution(HasMetadata, Protocol):
    """An installed distribution: :class:`Distribution`, or ``importlib.metadata``'s."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...


def _headers(dist: HasMetadata, wanted: str) -> list[str]:
    """The values of the ``wanted`` header in a distribution's metadata. Read from the header
    block only: ``importlib.metadata`` parses the whole file, long description (the README)
    included, which costs more than the rest of the check for every plugin on every start."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    found = []
    for line in text.splitlines():
        if not line.strip():
            break  # the headers end at the first blank line
        name, _, value = line.partition(":")
        if name.strip().lower() == wanted:
            found.append(value.strip())
    return found


def _requires_dist(dist: HasMetadata) -> list[str]:
    return _headers(dist, "requires-dist")


class Distribution:
    """An installed distribution: its ``*.dist-info`` (or ``*.egg-info``) directory."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._read: dict[str, str | None] = {}  # name, version and requirements read one file

    def read_text(self, filename: str) -> str | None:
        if filename not in self._read:
            try:
                with open(os.path.join(self.path, filename), encoding="utf-8") as f:
                    self._read[filename] = f.read()
            except (OSError, UnicodeDecodeError):
                self._read[filename] = None
        return self._read[filename]

    @property
    def name(self) -> str:
        names = _headers(self, "name")
        return names[0] if names else _stem_name(os.path.basename(self.path))

    @property
    def version(self) -> str:
        versions = _headers(self, "version")
        return versions[0] if versions else ""

    def __repr__(self) -> str:
        return f"Distribution({self.path!r})"


class EntryPoint:
    """One ``[group]`` line of a distribution's ``entry_points.txt``: ``name = module:attr``."""

    def __init__(
        self, name: str, value: str, group: str, dist: InstalledDistribution | None
    ) -> None:
        self.name = name
        self.value = value
        self.group = group
        self.dist = dist

    def load(self) -> object:
        """Import the module and return the object the entry point names."""
        import importlib

        target = self.value.partition("[")[0]  # extras do not change what is loaded
        module_name, _, attr = (part.strip() for part in target.partition(":"))
        obj: object = importlib.import_module(module_name)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
        return obj

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"


_SUFFIXES = (".dist-info", ".egg-info")


def _stem_name(dirname: str) -> str:
    """``tether_lsp-0.2.0.dist-info`` -> ``tether-lsp`` (the name part, normalised)."""
    return _canonical(dirname.rpartition(".")[0].partition("-")[0])


def _distributions() -> Iterator[tuple[str, InstalledDistribution]]:
    """(normalised name, distribution) of every installed distribution, in ``sys.path`` order,
    each name once (the first one found shadows later ones, as for ``importlib.metadata``)."""
    seen: set[str] = set()
    for entry in sys.path:
        root = entry or "."
        try:
            names = os.listdir(root)
        except NotADirectoryError:  # a zip on sys.path: rare, read the standard way
            import importlib.metadata

            for found in importlib.metadata.distributions(path=[entry]):
                key = _canonical(found.metadata["Name"] or "")
                if key and key not in seen:
                    seen.add(key)
                    yield key, found
            continue
        except OSError:
            continue
        for dirname in sorted(names):
            if not dirname.lower().endswith(_SUFFIXES):
                continue
            path = os.path.join(root, dirname)
            if not os.path.isdir(path):
                continue
            key = _stem_name(dirname)
            if key in seen:
                continue
            seen.add(key)
            yield key, Distribution(path)


def _parse_entry_points(text: str, group: str) -> Iterator[tuple[str, str]]:
    """``(name, value)`` of the ``[group]`` section of an ``entry_points.txt`` (an INI file)."""
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1].strip()
            continue
        if current == group and "=" in line:
            name, _, value = line.partition("=")
            yield name.strip(), value.strip()


def entry_points(group: str) -> list[EntryPoint]:
    """Every installed entry point of ``group``, in ``sys.path`` order of their distributions."""
    found = []
    for _key, dist in _distributions():
        text = dist.read_text("entry_points.txt")
        if text and f"[{group}]" in text.replace(" ", ""):
            found += [EntryPoint(n, v, group, dist) for n, v in _parse_entry_points(text, group)]
    return found


def distribution(name: str) -> InstalledDistribution | None:
    """The installed distribution called ``name`` (any spelling: ``tether_lsp``, ``Tether-LSP``)."""
    wanted = _canonical(name)
    return next((dist for key, dist in _distributions() if key == wanted), None)


def core_requirement(dist: HasMetadata | None) -> str | None:
    """The specifier (``">=0.2,<0.3"``) a distribution puts on the core, from its metadata;
    "" when it requires the core with no range, None when it does not require it (or its
    requirement has a marker or a URL, which this check does not judge)."""
    if dist is None:
        return None
    for requirement in _requires_dist(dist):
        body, _, marker = requirement.partition(";")
        m = _NAME.match(body)
        if m is None or _canonical(m[1]) != CORE_DISTRIBUTION:
            continue
        rest = m[2].strip()
        if marker.strip() or rest.startswith("@"):
            return None
        if rest.startswith("(") and rest.endswith(")"):
            rest = rest[1:-1].strip()
        return rest.replace(" ", "")
    return None


def core_version() -> str | None:
    """The version of the running core's distribution (None when run from bare sources)."""
    dist = distribution(CORE_DISTRIBUTION)
    return dist.version or None if dist is not None else None

"""Write routes: a read-tier call on a workdir the harness does not trust writes no file, in the
workdir or outside it (issue 37, item 1). Generated variants: every server and checker × every
setting of the checkout that names a path (build info, cache, baseline, index, a fix) × every
place it can point (the workdir, its parent, the home directory, /tmp, and a symlink planted in
the workdir that leads outside). The filesystem is watched — a listing with sizes and mtimes of
the workdir, its parent, and a box in the home directory and in /tmp that the settings name —
before and after each call, made on the plan surface.

Each layer is attacked on its own: the declared pins (``Untrusted.writes_closed_by``) with the
confinement off (``TETHER_CONFINEMENT=none``), and the confinement (Landlock, then bwrap) with a
program whose declaration says it writes nothing but writes where a workdir file tells it.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

import tether
from tether.processes.launch import SAFE

#: how the harness picks the confinement (tether.processes.confine.CHOICE_ENV)
CHOICE_ENV = "TETHER_CONFINEMENT"

Snapshot = dict[str, tuple[bool, int, int]]


def snapshot(roots: list[Path]) -> Snapshot:
    """Every entry beneath ``roots`` (symlinks not followed): (is a link, size, mtime)."""
    seen: Snapshot = {}
    for root in roots:
        for directory, dirs, files in os.walk(root):
            for name in [*dirs, *files]:
                path = os.path.join(directory, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                seen[path] = (os.path.islink(path), st.st_size, st.st_mtime_ns)
    return seen


def changes(before: Snapshot, after: Snapshot) -> list[str]:
    made = [f"created {p}" for p in sorted(after.keys() - before.keys())]
    gone = [f"removed {p}" for p in sorted(before.keys() - after.keys())]
    changed = [
        f"changed {p}"
        for p in sorted(before.keys() & after.keys())
        if before[p] != after[p] and not os.path.isdir(p)  # a directory's mtime: its entries
    ]
    return made + gone + changed


@attrs.frozen
class Places:
    workdir: Path
    parent: Path
    home: Path
    tmp: Path

    def watched(self) -> list[Path]:
        return [self.workdir, self.parent, self.home, self.tmp]


@pytest.fixture
def places(tmp_path: Path) -> Iterator[Places]:
    token = uuid.uuid4().hex[:10]
    found = Places(
        workdir=tmp_path / "w",
        parent=tmp_path,
        home=Path.home() / f".tether-write-attack-{token}",
        tmp=Path("/tmp") / f"tether-write-attack-{token}",
    )
    for path in (found.workdir, found.home, found.tmp):
        path.mkdir(parents=True)
    yield found
    shutil.rmtree(found.home, ignore_errors=True)
    shutil.rmtree(found.tmp, ignore_errors=True)


#: where a setting points: a path (not created) for a file or directory named ``name``
TARGETS: dict[str, Callable[[Places, str], Path]] = {
    "workdir": lambda p, name: p.workdir / "out" / name,
    "parent": lambda p, name: p.parent / "outside" / name,
    "home": lambda p, name: p.home / name,
    "/tmp": lambda p, name: p.tmp / name,
    # a path inside the workdir whose directory is a symlink to /tmp
    "symlink": lambda p, name: _via_link(p) / name,
}


def _via_link(p: Places) -> Path:
    link = p.workdir / "link"
    if not link.is_symlink():
        (p.tmp / "via-link").mkdir(exist_ok=True)
        link.symlink_to(p.tmp / "via-link")
    return link


def plant(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def need(binary: str) -> None:
    if shutil.which(binary) is None and not (Path(sys.executable).parent / binary).exists():
        if os.environ.get("TETHER_REQUIRE_REAL"):
            pytest.fail(f"{binary} is required (TETHER_REQUIRE_REAL)")
        pytest.skip(f"{binary} not installed")


# --- declared routes: each checker's settings that name a path ----------------------------------
#
# Every (route, target) pair is a root of its own in one workdir (siblings, so each checker runs
# in each): one `diagnostics "*"` call per family attacks them all, and a write is traced back
# to its pair by the path it touched.

# A baseline that lists an error in a file that no longer exists: basedpyright's default mode
# ("auto") rewrites it when it runs, since the error count went down.
_BASELINE = (
    '{"files": {"./gone.py": [{"code": "reportAttributeAccessIssue", '
    '"range": {"startColumn": 0, "endColumn": 1, "lineCount": 1}}]}}'
)


def _python(root: Path, pyproject_extra: str = "") -> None:
    plant(root / "pyproject.toml", '[project]\nname = "p"\nversion = "0"\n' + pyproject_extra)
    plant(root / "a.py", "x: int = 1\n")


def _ts(root: Path, options: str) -> None:
    plant(root / "tsconfig.json", '{"compilerOptions": {"strict": true, ' + options + "}}\n")
    plant(root / "a.ts", "export const polite: number = 1;\n")


def _tsc_incremental(root: Path, target: Path) -> None:
    _ts(root, f'"incremental": true, "tsBuildInfoFile": "{target}"')


def _tsc_composite(root: Path, target: Path) -> None:
    _ts(root, f'"composite": true, "tsBuildInfoFile": "{target}"')


def _tsc_out_dir(root: Path, target: Path) -> None:
    # build info goes beside outDir when tsBuildInfoFile is not given
    _ts(root, f'"incremental": true, "outDir": "{target}"')


def _ruff_pyproject_cache(root: Path, target: Path) -> None:
    _python(root, f'[tool.ruff]\ncache-dir = "{target}"\n')


def _ruff_toml_cache(root: Path, target: Path) -> None:
    _python(root)
    plant(root / "ruff.toml", f'cache-dir = "{target}"\n')


def _basedpyright_pyproject(root: Path, target: Path) -> None:
    _python(root, f'[tool.basedpyright]\nbaselineFile = "{target}"\n')
    plant(target, _BASELINE)


def _basedpyright_config(root: Path, target: Path) -> None:
    _python(root)
    plant(root / "pyrightconfig.json", f'{{"baselineFile": "{target}"}}\n')
    plant(target, _BASELINE)


@attrs.frozen
class Family:
    """Checkers attacked together in one workdir: their routes, and what the answer says."""

    binaries: tuple[str, ...]
    routes: dict[str, Callable[[Path, Path], None]]
    #: each checker's line in the answer, proving it ran
    ran: tuple[str, ...]


FAMILIES = {
    "tsc": Family(
        ("tsc",),
        {
            "incremental + tsBuildInfoFile": _tsc_incremental,
            "composite + tsBuildInfoFile": _tsc_composite,
            "incremental + outDir": _tsc_out_dir,
        },
        ("(checker of typescript-language-server)",),
    ),
    "ruff check + basedpyright": Family(
        ("ruff", "basedpyright"),
        {
            "ruff [tool.ruff] cache-dir": _ruff_pyproject_cache,
            "ruff ruff.toml cache-dir": _ruff_toml_cache,
            "basedpyright [tool.basedpyright] baselineFile": _basedpyright_pyproject,
            "basedpyright pyrightconfig.json baselineFile": _basedpyright_config,
        },
        ("(checker of ruff)", "(checker of basedpyright)"),
    ),
}


def _answered(text: str) -> bool:
    return bool(text.strip()) and "internal error" not in text and "Traceback" not in text


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text).strip("-")


@pytest.mark.parametrize("family", list(FAMILIES))
def test_no_checker_writes_where_a_setting_points(
    tally: Any, places: Places, monkeypatch: pytest.MonkeyPatch, family: str
) -> None:
    """The declared pins alone (no confinement) keep ``diagnostics "*"`` from writing: every
    route of the family × every target, each in a root of its own."""
    spec = FAMILIES[family]
    for binary in spec.binaries:
        need(binary)
    monkeypatch.setenv(CHOICE_ENV, "none")
    pairs: dict[tuple[str, str], Path] = {}
    names = list(TARGETS)
    for index, (route, make) in enumerate(spec.routes.items()):
        # each route at two of the places, every place by some route of the family (a tsc
        # run costs seconds: all five for each would not fit the suite's budget)
        for target in (names[index % len(names)], names[(index + 3) % len(names)]):
            name = f"{_slug(route)}-{_slug(target)}"
            pairs[(route, target)] = TARGETS[target](places, name)
            make(places.workdir / name, pairs[(route, target)])
    before = snapshot(places.watched())
    config = {
        "core": {"call_timeout_s": 300},
        "lsp": {"servers": {"python": ["basedpyright"]}, "checker_timeout_s": 120},
    }
    with tether.open_run_sync(places.workdir, config=config) as run:
        text = run.call("lsp", {"action": "diagnostics", "file": "*"}, surface="plan").text_content
    written = changes(before, snapshot(places.watched()))
    answered = _answered(text) and all(line in text for line in spec.ran)
    failed = []
    for (route, target), path in pairs.items():
        name = f"{_slug(route)}-{_slug(target)}"
        hits = [w for w in written if str(path) in w or f"/{name}/" in w or w.endswith(name)]
        tally.record("writes: declared", held=not hits and answered, writes=len(hits))
        if hits:
            failed.append(f"{route} → {target}: " + "; ".join(hits))
    assert not written, "\n".join(failed or written) + f"\n\n{text}"
    assert answered, text


def test_ruff_fix_in_the_checkouts_configuration_rewrites_no_file(
    tally: Any, places: Places, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fix = true`` in [tool.ruff] would make ``ruff check`` rewrite the files it checks."""
    need("ruff")
    monkeypatch.setenv(CHOICE_ENV, "none")
    _python(places.workdir, "[tool.ruff]\nfix = true\n[tool.ruff.lint]\nselect = ['F401']\n")
    plant(places.workdir / "a.py", "import os\n")
    before = snapshot(places.watched())
    config = {"lsp": {"servers": {"python": ["basedpyright"]}}}
    with tether.open_run_sync(places.workdir, config=config) as run:
        text = run.call("lsp", {"action": "diagnostics", "file": "*"}, surface="plan").text_content
    written = changes(before, snapshot(places.watched()))
    held = not written and "F401" in text
    tally.record("writes: declared", held=held, writes=len(written))
    assert not written, "\n".join(written) + f"\n\n{text}"
    assert "F401" in text, text  # still reported, not fixed


# --- a server's route: clangd's background index --------------------------------------------------

_C_FILES = {
    "util.h": "int add(int a, int b);\n",
    "util.c": '#include "util.h"\nint add(int a, int b) { return a + b; }\n',
    "main.c": '#include "util.h"\nint main(void) { return add(1, 2); }\n',
}
CLANGD_VARIANTS = [
    *[(target, "landlock") for target in ("workdir", "parent", "home", "/tmp")],
    *[(target, "none") for target in ("workdir", "/tmp")],
]


@pytest.mark.parametrize(
    ("target", "confinement"),
    CLANGD_VARIANTS,
    ids=[f"clangd --background-index .cache→{t}:{c}" for t, c in CLANGD_VARIANTS],
)
def test_clangds_index_is_written_nowhere(
    tally: Any, places: Places, monkeypatch: pytest.MonkeyPatch, target: str, confinement: str
) -> None:
    """The index goes to ``.cache/clangd/index`` beside the project; a planted ``.cache``
    symlink sends it outside. Off where nothing confines, denied (kept in memory) where
    Landlock does — and references across files still answer there."""
    need("clangd")
    monkeypatch.setenv(CHOICE_ENV, confinement)
    for name, text in _C_FILES.items():
        plant(places.workdir / name, text)
    # the background index covers what a compilation database lists (compile_flags.txt: none)
    entries = [
        f'{{"directory": "{places.workdir}", "file": "{name}", "command": "cc -c {name}"}}'
        for name in ("util.c", "main.c")
    ]
    plant(places.workdir / "compile_commands.json", "[" + ", ".join(entries) + "]\n")
    if target != "workdir":
        outside = TARGETS[target](places, "cache")
        outside.mkdir(parents=True)
        (places.workdir / ".cache").symlink_to(outside)
    before = snapshot(places.watched())
    with tether.open_run_sync(places.workdir) as run:
        args = {"action": "references", "file": "util.h", "line": 1, "symbol": "add"}
        text = run.call("lsp", args, surface="plan").text_content
        # the background index writes its shards a moment after the answer (on today's code
        # they were there after this wait, every time)
        time.sleep(2.0)
    written = changes(before, snapshot(places.watched()))
    # the index may not be built yet when the answer comes (then it names main.c as "also
    # found"); test_clangd shows cross-file references under the confinement
    answered = "of `add` at util.h:1" in text and "main.c:2" in text
    held = not written and answered
    tally.record("writes: declared", held=held, writes=len(written))
    assert not written, "\n".join(written) + f"\n\n{text}"
    assert answered, text


# --- the confinement: a route nobody declared -----------------------------------------------------

#: a checker that says it writes nothing, and writes every path scribble.txt names
SCRIBBLER = (
    "import os, pathlib\n"
    "for line in pathlib.Path('scribble.txt').read_text().split():\n"
    "    try:\n"
    "        os.makedirs(os.path.dirname(line), exist_ok=True)\n"
    "        pathlib.Path(line).write_text('scribbled')\n"
    "        print('wrote', line)\n"
    "    except OSError as error:\n"
    "        print('refused', line, error.strerror)\n"
    "print('scribbler done')\n"
)


class Scribbler:
    """A third party's checker whose declaration is wrong: it claims to write nothing."""

    @tether.hookimpl
    def tether_lsp_servers(self) -> list[Any]:
        from tether_lsp import ServerSpec

        return [
            ServerSpec(
                id="scribbler",
                language="scribble",
                extensions={".scribble": "scribble"},
                command=(sys.executable,),
                root_markers=("scribble.txt",),
                checker=(sys.executable, "-c", SCRIBBLER),
                untrusted=SAFE,
                checker_untrusted=SAFE,
            )
        ]


@pytest.mark.parametrize("confinement", ["landlock", "bwrap"])
def test_an_undeclared_route_is_closed_by_the_confinement(
    tally: Any, places: Places, monkeypatch: pytest.MonkeyPatch, confinement: str
) -> None:
    """Every target at once: the checker tries each path scribble.txt names."""
    if confinement == "bwrap":
        need("bwrap")
    monkeypatch.setenv(CHOICE_ENV, confinement)
    paths = {target: where(places, "scribbled") for target, where in TARGETS.items()}
    plant(places.workdir / "scribble.txt", "".join(f"{path}\n" for path in paths.values()))
    before = snapshot(places.watched())
    with tether.open_run_sync(places.workdir, plugins=[Scribbler()]) as run:
        confined = run.process_owner.confinement.kind
        text = run.call("lsp", {"action": "diagnostics", "file": "*"}, surface="plan").text_content
    written = changes(before, snapshot(places.watched()))
    ran = "scribbler done" in text
    for target, path in paths.items():
        hit = any(str(path) in line for line in written) or (
            target == "symlink" and any("via-link" in line for line in written)
        )
        tally.record("writes: confined", held=not hit and ran, writes=int(hit))
    assert confined == confinement
    assert not written, "\n".join(written) + f"\n\n{text}"
    refused = [line for line in text.splitlines() if line.startswith("refused ")]
    assert ran and len(refused) == len(paths), text


def test_lsp_status_names_the_confinement_in_force(places: Places) -> None:
    plant(places.workdir / "scribble.txt", "")
    with tether.open_run_sync(places.workdir, plugins=[Scribbler()]) as run:
        kind = run.process_owner.confinement.kind
        status = run.call("lsp", {"action": "status"}, surface="plan").text_content
    line = next((ln for ln in status.splitlines() if ln.startswith("Write confinement: ")), "")
    assert line.startswith(f"Write confinement: {kind}"), status
    assert "left open:" in line, line

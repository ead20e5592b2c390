"""The read rule (issue 22, item 2): every workdir file is read through the core's reader,
:mod:`tether.workdir.reading` (off the event loop, no symlink followed, regular files only, capped,
cancellable). An AST walk over every distribution's sources finds each ``open(...)``,
``os.open(...)``, ``io.open(...)``, ``X.open("r…")`` / ``X.open()``, ``.read_text(...)`` and
``.read_bytes(...)``; each must be in a module of :data:`ALLOWED` (with the reason it reads no
workdir file) or read ``/proc`` or ``os.devnull``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: modules that may open files themselves, each with why it is not a read of a workdir file
ALLOWED = {
    "core/src/tether/workdir/reading.py": "the reader itself",
    "core/src/tether/workdir/journal.py": "the write path: its journal lives outside the workdir, and its "
    "reads of workdir files are the writes' own O_NOFOLLOW | O_NONBLOCK walk",
    "core/src/tether/workdir/writing.py": "the write path: creates temp files O_EXCL | O_NOFOLLOW beside "
    "their targets, never reads one",
    "core/src/tether/testing.py": "the plugin author's own test sources (the contract check)",
    "plugins/eval/src/tether_eval/ipython.py": "the plugin's own package data "
    "(importlib.resources)",
    "core/src/_tether_attach.py": "a served run's lock file in the per-user runtime directory "
    "(O_NOFOLLOW, locked, never read), never in the workdir",
    "core/src/tether/cli/serve.py": "a served run's own files in the per-user runtime directory "
    "(lock, record, log: 0600, O_NOFOLLOW), never in the workdir",
    "core/src/tether/cli/serve_http.py": "the HTTP endpoint's bearer-token files it creates "
    "(0600, O_EXCL | O_NOFOLLOW) beside the served run's socket in the runtime directory, never "
    "in the workdir",
    "core/src/tether/processes/_landlock_exec.py": "an O_PATH handle on the run's own directory and the "
    "device files a confined program may write (Landlock rules), never a workdir file's content",
}


def _sources() -> list[Path]:
    roots = [ROOT / "core" / "src"]
    roots += sorted((ROOT / "plugins").glob("*/src")) + sorted((ROOT / "contrib").glob("*/src"))
    return sorted(p for root in roots for p in root.rglob("*.py"))


def _not_workdir(arg: ast.expr | None) -> bool:
    """A first argument that names ``/proc`` or ``os.devnull``: never a workdir file."""
    if arg is None:
        return False
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value.startswith("/proc/")
    if isinstance(arg, ast.JoinedStr) and arg.values:
        head = arg.values[0]
        return isinstance(head, ast.Constant) and str(head.value).startswith("/proc/")
    return isinstance(arg, ast.Attribute) and ast.unparse(arg) == "os.devnull"


def _is_read_mode_open(call: ast.Call) -> bool:
    """``X.open()`` or ``X.open("r…")``: pathlib's open, not ``session.open(attach_port=…)``."""
    if not call.args:
        return not call.keywords
    mode = call.args[0]
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and "r" in mode.value


def violations(source: str, name: str) -> list[str]:
    """Each file read in ``source`` that does not go through the reader: ``name:line: code``."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        first = node.args[0] if node.args else None
        flagged = False
        if isinstance(func, ast.Name) and func.id == "open":
            flagged = not _not_workdir(first)
        elif isinstance(func, ast.Attribute):
            target = ast.unparse(func.value)
            if func.attr == "open" and target in ("os", "io"):
                flagged = not _not_workdir(first)
            elif func.attr in ("read_text", "read_bytes"):
                # the reader's own API (``reading.read_text``, ``reader.read_text``) is the rule
                flagged = target != "reading" and not target.endswith("reader")
            elif func.attr == "open" and target not in ("os", "io"):
                flagged = _is_read_mode_open(node)
        if flagged:
            found.append(f"{name}:{node.lineno}: {ast.unparse(node)[:100]}")
    return found


def test_every_workdir_read_goes_through_the_core_reader() -> None:
    sources = _sources()
    assert len(sources) > 100, "the walk found too few modules: the layout changed"
    found = []
    for path in sources:
        rel = path.relative_to(ROOT).as_posix()
        if rel not in ALLOWED:
            found += violations(path.read_text("utf-8"), rel)
    assert not found, (
        "files opened outside tether.workdir.reading (read workdir files through it, or add the module "
        "to ALLOWED with the reason it reads no workdir file):\n" + "\n".join(found)
    )


def test_every_allowed_module_exists_and_still_opens_something() -> None:
    """An allow-list entry that no longer opens anything is stale: remove it."""
    for rel in ALLOWED:
        path = ROOT / rel
        assert path.is_file(), rel
        assert violations(path.read_text("utf-8"), rel), f"{rel} opens nothing now"


@pytest.mark.parametrize(
    "planted",
    [
        "open(path)",
        "open(path, 'rb')",
        "os.open(name, os.O_RDONLY)",
        "io.open(path)",
        "path.read_text()",
        "Path(x).read_bytes()",
        "path.open('rb')",
        "path.open()",
        "fh = open(f'{root}/x.py')",
    ],
)
def test_the_rule_catches_a_planted_read(planted: str) -> None:
    """The check can fail: each way of opening a file, planted in a module, is reported."""
    module = (
        f"import io, os\nfrom pathlib import Path\n\ndef f(path, name, x, root):\n    {planted}\n"
    )
    assert violations(module, "planted.py") == [f"planted.py:5: {planted.split(' = ')[-1]}"]


@pytest.mark.parametrize(
    "fine",
    [
        "open('/proc/self/stat', 'rb')",
        "open(f'/proc/{pid}/stat')",
        "os.open(os.devnull, os.O_RDWR)",
        "await session.open(attach_port=port)",
        "reading.read_text(root, path)",
    ],
)
def test_the_rule_leaves_reads_that_are_not_of_the_workdir(fine: str) -> None:
    module = f"import os\n\nasync def f(path, pid, session, port, reading, root):\n    {fine}\n"
    assert violations(module, "fine.py") == []

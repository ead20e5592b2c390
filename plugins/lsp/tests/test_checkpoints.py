"""Checkpoints (issue 25): a harness marks one per turn and asks ``lsp diagnostics`` for what
was introduced, fixed and already there since it — whoever wrote the files meanwhile.

Each row is one real server. The run sees two files' diagnostics, a checkpoint is marked, then
one file is written through tether and the other by a separate process, and a third file is
created by that process. The answer must sort every diagnostic right, and call the third file's
"baseline unknown", never new — as well as a fourth file's, seen by the run but then changed by
another process before the checkpoint (its last seen diagnostics are not its text's).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from lsp_testkit import Caller, need, open_lsp_run


@attrs.frozen
class Project:
    server: str
    binary: str
    #: file name -> text, written before the run
    files: dict[str, str]
    #: the file written through tether, its new text
    written: str
    written_text: str
    #: the file a separate process writes, its new text
    other: str
    other_text: str
    #: a file a separate process creates, with one error
    created: str
    created_text: str
    #: a message fragment of each diagnostic: the one left, the one fixed, the one introduced in
    #: the written file, the one introduced in the other file
    stays: str
    fixed: str
    new_written: str
    new_other: str


PYTHON = Project(
    "basedpyright",
    "basedpyright-langserver",
    {
        "pyproject.toml": '[project]\nname = "cp"\nversion = "0"\n',
        "a.py": (
            'def f(x: int) -> int:\n    return x\n\n\nstays: int = "old"\nfixed_later: str = 1\n'
        ),
        "b.py": "from a import f\n\ny = f(1)\n",
    },
    "a.py",
    (
        "def f(x: int) -> int:\n    return x\n\n\n"
        'stays: int = "old"\nfixed_later: str = "now"\nbroken: bytes = 3.5\n'
    ),
    "b.py",
    'from a import f\n\ny = f("one")\n',
    "c.py",
    "gone: int = None\n",
    '"Literal[\'old\']" is not assignable to declared type "int"',
    '"Literal[1]" is not assignable to declared type "str"',
    '"float" is not assignable to declared type "bytes"',
    '"Literal[\'one\']" cannot be assigned to parameter "x"',
)

TYPESCRIPT = Project(
    "typescript-language-server",
    "typescript-language-server",
    {
        "package.json": '{"name": "cp", "version": "0.0.0", "private": true}\n',
        "tsconfig.json": (
            '{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs", '
            '"noEmit": true}, "include": ["src"]}\n'
        ),
        "src/a.ts": (
            "export function f(x: number): number {\n  return x;\n}\n\n"
            'export const stays: number = "old";\nexport const fixedLater: string = 1;\n'
        ),
        "src/b.ts": 'import { f } from "./a";\n\nexport const y = f(1);\n',
    },
    "src/a.ts",
    (
        "export function f(x: number): number {\n  return x;\n}\n\n"
        'export const stays: number = "old";\nexport const fixedLater: string = "now";\n'
        "export const broken: boolean = 3.5;\n"
    ),
    "src/b.ts",
    'import { f } from "./a";\n\nexport const y = f("one");\n',
    "src/c.ts",
    "export const gone: number = null;\n",
    "Type 'string' is not assignable to type 'number'",
    "Type 'number' is not assignable to type 'string'",
    "Type 'number' is not assignable to type 'boolean'",
    "Argument of type 'string' is not assignable to parameter of type 'number'",
)


_WRITE_ONE = "import pathlib, sys\npathlib.Path(sys.argv[1]).write_text(sys.argv[2])\n"


def _section(text: str, rel: str) -> str:
    """The block of ``rel`` in a ``since`` answer (up to the next file's block)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{rel} ("))
    end = next(
        (i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines)
    )
    return "\n".join(lines[start:end])


def _part(block: str, kind: str) -> str:
    """The rows of one kind ("introduced", "fixed", "already there", "now") in a block."""
    lines = block.splitlines()
    out: list[str] = []
    inside = False
    for line in lines[1:]:
        if line.startswith("  ") and not line.startswith("    "):
            inside = line.strip().startswith(kind)
            continue
        if inside:
            out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("project", [PYTHON, TYPESCRIPT], ids=lambda p: p.server)
def test_diagnostics_since_a_checkpoint_count_every_writer(
    tmp_path: Path, project: Project
) -> None:
    need(project.binary)
    for rel, text in project.files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    other = Path(project.other)
    stale = str(other.with_name("d" + other.suffix))
    (tmp_path / stale).write_text(project.files[project.other])
    with open_lsp_run(tmp_path) as run:
        caller = Caller(run)
        # the run sees the files' diagnostics before the turn
        assert project.stays in caller.ok(action="diagnostics", file=project.written)
        caller.ok(action="diagnostics", file=project.other)
        caller.ok(action="diagnostics", file=stale)
        # ... and one changes behind its back before the checkpoint
        subprocess.run(
            [sys.executable, "-c", _WRITE_ONE, str(tmp_path / stale), project.other_text],
            check=True,
        )
        marked = caller.ok(action="checkpoint", name="turn1")
        assert 'checkpoint "turn1" marked: a baseline for 2 files' in marked, marked
        assert "1 changed on disk since they were seen" in marked, marked
        caller.ok("write", path=project.written, content=project.written_text)
        # the harness's own shell writes one file and creates another
        script = (
            "import pathlib, sys\n"
            "pathlib.Path(sys.argv[1]).write_text(sys.argv[2])\n"
            "pathlib.Path(sys.argv[3]).write_text(sys.argv[4])\n"
        )
        subprocess.run(
            [
                sys.executable,
                "-c",
                script,
                str(tmp_path / project.other),
                project.other_text,
                str(tmp_path / project.created),
                project.created_text,
            ],
            check=True,
        )
        answer = caller.ok(action="diagnostics", since="turn1")
        one_file = caller.ok(action="diagnostics", since="turn1", file=project.other)
    written = _section(answer, project.written)
    assert "1 introduced, 1 fixed, 1 already there" in written, answer
    assert project.new_written in _part(written, "introduced"), answer
    assert project.fixed in _part(written, "fixed"), answer
    assert project.stays in _part(written, "already there"), answer
    other = _section(answer, project.other)
    assert "1 introduced, 0 fixed, 0 already there" in other, answer
    assert project.new_other in _part(other, "introduced"), answer
    created = _section(answer, project.created)
    assert "baseline unknown (the run had not seen" in created, answer
    assert "introduced" not in created, answer
    changed_before = _section(answer, stale)
    assert "baseline unknown (it changed on disk after the run last saw" in changed_before, answer
    assert "introduced" not in changed_before, answer
    assert "2 introduced, 1 fixed, 1 already there; 2 with baseline unknown" in answer, answer
    # the same answer for one file, asked again: the checkpoint is not used up
    assert "1 introduced, 0 fixed, 0 already there" in one_file, one_file


def test_an_unknown_checkpoint_is_refused_naming_the_field(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    with open_lsp_run(tmp_path) as run:
        caller = Caller(run)
        refused = caller.err(action="diagnostics", since="nope")
        caller.ok(action="checkpoint")
        still = caller.err(action="diagnostics", since="nope")
        neither = caller.err(action="diagnostics")
    assert "since:" in refused and "none yet" in refused, refused
    assert "'cp1'" in still, still
    assert "file:" in neither and "since" in neither, neither


def test_a_checkpoint_through_tether_session(tmp_path: Path) -> None:
    """The action is the `lsp` tool's, so every transport has it: here `tether session`'s JSON
    lines, with a write by another process between the mark and the question."""
    need("basedpyright-langserver")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "s"\nversion = "0"\n')
    (tmp_path / "a.py").write_text('x: int = "old"\n')
    session = subprocess.Popen(
        [sys.executable, "-m", "tether.cli", "session", "--workdir", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert session.stdin is not None and session.stdout is not None

    def ask(request_id: int, args: dict[str, str]) -> str:
        assert session.stdin is not None and session.stdout is not None
        session.stdin.write(json.dumps({"id": request_id, "tool": "lsp", "args": args}) + "\n")
        session.stdin.flush()
        while True:
            reply = json.loads(session.stdout.readline())
            if reply.get("id") == request_id:
                assert not reply["is_error"], reply
                return "".join(block.get("text", "") for block in reply["content"])

    try:
        ask(1, {"action": "diagnostics", "file": "a.py"})
        assert 'checkpoint "cp1" marked' in ask(2, {"action": "checkpoint"})
        subprocess.run(
            [
                sys.executable,
                "-c",
                _WRITE_ONE,
                str(tmp_path / "a.py"),
                'x: int = "old"\ny: str = 2\n',
            ],
            check=True,
        )
        answer = ask(3, {"action": "diagnostics", "since": "cp1"})
    finally:
        session.stdin.close()
        session.wait(timeout=60)
    assert "a.py (basedpyright): 1 introduced, 0 fixed, 1 already there" in answer, answer

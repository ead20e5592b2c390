"""Launch: a read-tier call on a workdir the harness does not trust runs none of the checkout's
code (issue 22, item 1). Generated variants: every payload a checkout can carry for a program
tether starts (a language server's interpreter or toolchain, git's repository configuration) ×
every read-tier entry point that starts it (`lsp status`, `lsp hover`, `lsp diagnostics "*"`,
`ast_grep`, `vibe_spawn` with worktree isolation), all on the plan surface. Each variant plants
a payload that leaves a marker file if it ever runs; it holds when the marker never appears and
the call still answers (the normal answer, or the server/git unavailable with the reason)."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

import tether


# what a payload looks like when it runs: it leaves the marker and fails
@pytest.fixture(autouse=True)
def _code_routes_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The code routes' closure is attacked on its own: under the write confinement
    (tether.processes.confine) a payload that ran could not leave its mark outside the workdir, and the
    attack would pass unseen."""
    monkeypatch.setenv("TETHER_CONFINEMENT", "none")


PAYLOAD = "#!/bin/sh\ntouch {mark}\nexit 1\n"


def plant(path: Path, text: str, executable: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def payload(path: Path, mark: Path) -> Path:
    return plant(path, PAYLOAD.format(mark=mark), executable=True)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=a@b", "-c", "user.name=n", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


# --- projects ---------------------------------------------------------------------------------


def python_project(workdir: Path) -> None:
    plant(workdir / "pyproject.toml", '[project]\nname = "p"\nversion = "0"\n')
    plant(workdir / "a.py", "def square(x):\n    return x * x\n\n\nsquare(2)\n")


def rust_project(workdir: Path) -> None:
    plant(workdir / "Cargo.toml", '[package]\nname = "p"\nversion = "0.1.0"\nedition = "2021"\n')
    plant(workdir / "src" / "main.rs", "fn main() {\n    let answer = 42;\n}\n")


def ts_project(workdir: Path) -> None:
    plant(workdir / "tsconfig.json", '{"compilerOptions": {"strict": true}}\n')
    plant(workdir / "a.ts", "export const polite = 1;\n")


def git_repo(workdir: Path) -> None:
    python_project(workdir)
    git(workdir, "init", "-q")
    git(workdir, "add", ".")
    git(workdir, "commit", "-qm", "init")


# --- payloads: what a checkout carries for each program ----------------------------------------


@attrs.frozen
class Payload:
    name: str
    #: the server (or program) whose configuration it is
    target: str
    project: Callable[[Path], None]
    plant: Callable[[Path, Path], None]
    #: the file and symbol a hover asks about
    hover: tuple[str, int, str] = ("a.py", 5, "square")


def _toolchain_path(w: Path, mark: Path) -> None:
    for name in ("rust-analyzer", "cargo", "rustc"):
        payload(w / "tc" / "bin" / name, mark)
    plant(w / "rust-toolchain.toml", f'[toolchain]\npath = "{w / "tc"}"\n')


def _toolchain_cwd(w: Path, mark: Path) -> None:
    for name in ("rust-analyzer", "cargo", "rustc"):
        payload(w / "tc" / "bin" / name, mark)
    plant(w / "rust-toolchain.toml", '[toolchain]\npath = "/proc/self/cwd/tc"\n')


def _cargo_config(w: Path, mark: Path) -> None:
    wrapper = payload(w / "tools" / "wrap", mark)
    plant(w / ".cargo" / "config.toml", f'[build]\nrustc-wrapper = "{wrapper}"\n')


def _build_script(w: Path, mark: Path) -> None:
    plant(w / "build.rs", f'fn main() {{ std::fs::write("{mark}", "x").unwrap(); }}\n')


def _venv(w: Path, mark: Path) -> None:
    payload(w / ".venv" / "bin" / "python", mark)
    plant(w / ".venv" / "pyvenv.cfg", "home = /usr/bin\nversion = 3.11.7\n")


def _pyrefly_toml(w: Path, mark: Path) -> None:
    evil = payload(w / "tools" / "python", mark)
    plant(w / "pyrefly.toml", f'python-interpreter-path = "{evil}"\n')


def _pyproject_pyrefly(w: Path, mark: Path) -> None:
    evil = payload(w / "tools" / "python", mark)
    with (w / "pyproject.toml").open("a") as fh:
        fh.write(f'\n[tool.pyrefly]\npython-interpreter-path = "{evil}"\n')


def _pyproject_ty(w: Path, mark: Path) -> None:
    payload(w / "env" / "bin" / "python", mark)
    plant(w / "env" / "pyvenv.cfg", "home = /usr/bin\nversion = 3.11.7\n")
    with (w / "pyproject.toml").open("a") as fh:
        fh.write('\n[tool.ty.environment]\npython = "env"\n')


def _pyrightconfig_venv(w: Path, mark: Path) -> None:
    payload(w / "envs" / "evil" / "bin" / "python", mark)
    plant(w / "envs" / "evil" / "pyvenv.cfg", "home = /usr/bin\nversion = 3.11.7\n")
    plant(w / "pyrightconfig.json", '{"venvPath": "envs", "venv": "evil"}\n')


def _tsserver(w: Path, mark: Path) -> None:
    typescript = w / "node_modules" / "typescript"
    plant(typescript / "package.json", '{"name": "typescript", "version": "5.9.9"}')
    plant(
        typescript / "lib" / "tsserver.js",
        f"require('fs').writeFileSync({str(mark)!r}, 'x'); process.exit(1);\n",
    )


def _tsconfig_plugin(w: Path, mark: Path) -> None:
    plant(
        w / "tsconfig.json",
        '{"compilerOptions": {"strict": true, "plugins": [{"name": "evil-plugin"}]}}\n',
    )
    plugin = w / "node_modules" / "evil-plugin"
    plant(plugin / "package.json", '{"name": "evil-plugin", "main": "index.js"}')
    plant(
        plugin / "index.js",
        f"require('fs').writeFileSync({str(mark)!r}, 'x');\n"
        "module.exports = () => ({create: (info) => info.languageService});\n",
    )


def _git_fsmonitor(w: Path, mark: Path) -> None:
    git(w, "config", "core.fsmonitor", str(payload(w.parent / "fsmonitor", mark)))


def _git_hooks_path(w: Path, mark: Path) -> None:
    payload(w / "hooks" / "post-checkout", mark)
    git(w, "config", "core.hooksPath", "hooks")


def _git_default_hook(w: Path, mark: Path) -> None:
    payload(w / ".git" / "hooks" / "post-checkout", mark)


def _git_filter(w: Path, mark: Path) -> None:
    plant(w / ".gitattributes", "*.py filter=evil\n")
    git(w, "add", ".gitattributes")
    git(w, "commit", "-qm", "attributes")
    smudge = plant(w.parent / "smudge", f"#!/bin/sh\ntouch {mark}\ncat\n", executable=True)
    git(w, "config", "filter.evil.smudge", str(smudge))
    git(w, "config", "filter.evil.clean", str(smudge))


def _git_include(w: Path, mark: Path) -> None:
    included = plant(
        w.parent / "evil.gitconfig", f"[core]\n\tfsmonitor = {payload(w.parent / 'fsm', mark)}\n"
    )
    git(w, "config", "include.path", str(included))


def _git_worktree_config(w: Path, mark: Path) -> None:
    git(w, "config", "extensions.worktreeConfig", "true")
    git(w, "config", "--worktree", "core.fsmonitor", str(payload(w.parent / "fsm", mark)))


def _bare_shaped(repo: Path, mark: Path) -> None:
    """``repo`` becomes a bare-repository-shaped directory whose config names a work tree (itself)
    and an fsmonitor: git discovers it as a repository when it runs there."""
    source = repo.parent / f"{repo.name}-source"
    source.mkdir(parents=True)
    python_project(source)
    git(source, "init", "-q")
    git(source, "add", ".")
    git(source, "commit", "-qm", "init")
    shutil.copytree(source / ".git", repo, dirs_exist_ok=True)
    shutil.rmtree(source)
    git(repo, "--git-dir", str(repo), "config", "core.bare", "false")
    git(repo, "--git-dir", str(repo), "config", "core.worktree", str(repo))
    fsmonitor = payload(repo.parent / f"{repo.name}-fsmonitor", mark)
    git(repo, "--git-dir", str(repo), "config", "core.fsmonitor", str(fsmonitor))
    plant(repo / "b.py", "def cube(x):\n    return x * x * x\n")


def _bare_workdir(w: Path, mark: Path) -> None:
    shutil.rmtree(w / ".git")
    _bare_shaped(w, mark)


def _vendor_bare(w: Path, mark: Path) -> None:
    _bare_shaped(w / "vendor" / "lib.git", mark)


LSP_PAYLOADS = [
    Payload("rust-toolchain.toml path", "rust-analyzer", rust_project, _toolchain_path,
            ("src/main.rs", 2, "answer")),
    Payload("rust-toolchain.toml /proc/self/cwd", "rust-analyzer", rust_project, _toolchain_cwd,
            ("src/main.rs", 2, "answer")),
    Payload(".cargo/config.toml rustc-wrapper", "rust-analyzer", rust_project, _cargo_config,
            ("src/main.rs", 2, "answer")),
    Payload("build.rs", "rust-analyzer", rust_project, _build_script, ("src/main.rs", 2, "answer")),
    *[
        Payload(".venv + pyvenv.cfg", server, python_project, _venv)
        for server in ("basedpyright", "pyright", "pylsp", "jedi-language-server", "ty", "pyrefly")
    ],
    Payload("pyrefly.toml python-interpreter-path", "pyrefly", python_project, _pyrefly_toml),
    Payload("[tool.pyrefly] python-interpreter-path", "pyrefly", python_project,
            _pyproject_pyrefly),
    Payload("[tool.ty.environment] python", "ty", python_project, _pyproject_ty),
    *[
        Payload("pyrightconfig.json venv", server, python_project, _pyrightconfig_venv)
        for server in ("basedpyright", "pyright")
    ],
    Payload("node_modules/typescript tsserver.js", "typescript-language-server", ts_project,
            _tsserver, ("a.ts", 1, "polite")),
    Payload("tsconfig.json plugins", "typescript-language-server", ts_project, _tsconfig_plugin,
            ("a.ts", 1, "polite")),
]  # fmt: skip

GIT_PAYLOADS = [
    Payload(".git/config core.fsmonitor", "git", git_repo, _git_fsmonitor),
    Payload(".git/config core.hooksPath", "git", git_repo, _git_hooks_path),
    Payload(".git/hooks/post-checkout", "git", git_repo, _git_default_hook),
    Payload(".git/config filter smudge", "git", git_repo, _git_filter),
    Payload(".git/config include.path", "git", git_repo, _git_include),
    Payload("config.worktree core.fsmonitor", "git", git_repo, _git_worktree_config),
    Payload("bare-repository-shaped workdir", "git", git_repo, _bare_workdir),
    Payload("vendor/ bare repository", "git", git_repo, _vendor_bare),
]

LSP_ENTRIES = ("lsp status", "lsp hover", 'lsp diagnostics "*"')
GIT_ENTRIES = ("ast_grep", "vibe_spawn worktree")

#: servers nothing closes on an untrusted workdir (their spec says so)
UNAVAILABLE = frozenset({"pyrefly", "rust-analyzer"})
SERVER_LANGUAGE = {"rust-analyzer": "rust", "typescript-language-server": "typescript"}


def _config(target: str, entry: str) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if target not in ("git",):  # the harness prefers the attacked server, so queries reach it
        language = SERVER_LANGUAGE.get(target, "python")
        config["lsp"] = {"servers": {language: [target]}}
    if entry.startswith("vibe_spawn"):
        config["vibe"] = {
            "isolation": "worktree",
            "runners": {"fast": {"command": [sys.executable, "-c", "pass"]}},
        }
    return config


def _call(run: Any, entry: str, item: Payload) -> Any:
    if entry == "lsp status":
        return run.call("lsp", {"action": "status"}, surface="plan")
    if entry == "lsp hover":
        file, line, symbol = item.hover
        args = {"action": "hover", "file": file, "line": line, "symbol": symbol}
        return run.call("lsp", args, surface="plan")
    if entry == 'lsp diagnostics "*"':
        return run.call("lsp", {"action": "diagnostics", "file": "*"}, surface="plan")
    if entry == "ast_grep":
        path = "vendor/lib.git" if "vendor" in item.name else "."
        return run.call(
            "ast_grep",
            {"pattern": "square($X)", "path": path, "language": "python"},
            surface="plan",
        )
    assert entry == "vibe_spawn worktree"
    spawned = run.call("vibe_spawn", {"brief": "look", "label": "l"}, surface="plan")
    if spawned.is_error:
        return spawned
    worker = spawned.meta.get("worker_id", "w1")
    run.call("vibe_wait", {"worker_id": worker}, surface="plan")
    return spawned


VARIANTS = [(item, entry) for item in LSP_PAYLOADS for entry in LSP_ENTRIES] + [
    (item, entry) for item in GIT_PAYLOADS for entry in GIT_ENTRIES
]


@pytest.mark.parametrize(
    ("item", "entry"),
    VARIANTS,
    ids=[f"{item.target}:{item.name}:{entry}" for item, entry in VARIANTS],
)
def test_no_read_tier_call_runs_the_checkouts_code(
    tally: Any, tmp_path: Path, item: Payload, entry: str
) -> None:
    workdir = tmp_path / "w"
    workdir.mkdir()
    mark = tmp_path / "PAYLOAD-RAN"
    item.project(workdir)
    item.plant(workdir, mark)
    with tether.open_run_sync(
        workdir, config=_config(item.target, entry), vibe=entry.startswith("vibe")
    ) as run:
        result = _call(run, entry, item)
    text = result.text_content
    answered = bool(text.strip()) and "internal error" not in text and "Traceback" not in text
    if entry == "lsp status" and item.target in UNAVAILABLE:  # says why, and how to allow it
        answered = answered and f"{item.target} is unavailable on an untrusted workdir" in text
        answered = answered and "--trust-workdir" in text
    held = not mark.exists() and answered
    tally.record("launch", held=held, ran=int(mark.exists()))
    assert not mark.exists(), f"the checkout's code ran: {text}"
    assert answered, text

"""``tether call --attach ast_grep`` from a shell, one process per call, on a served run (issue
32): the run ``tether serve`` opens keeps the trees of its first search in its search workers,
and the same call again gives each unchanged file's matches without matching its tree again.
Real processes: the server is ``python -m tether serve``, the client the installed ``tether``
command (the core and the astgrep plugin together, hence here)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = shutil.which("tether", path=str(Path(sys.executable).parent))
PATTERN = "def $F($$$A): $$$B"


def _call(env: dict[str, str], workdir: Path, config: Path, args: dict[str, Any]) -> dict[str, Any]:
    if SCRIPT is None:
        if os.environ.get("TETHER_REQUIRE_REAL"):
            pytest.fail("the tether console script is not installed beside this interpreter")
        pytest.skip("the tether console script is not installed beside this interpreter")
    where = ["--workdir", str(workdir), "--config", str(config)]
    argv = [SCRIPT, "call", "ast_grep", json.dumps(args), *where, "--attach"]
    done = subprocess.run(argv, capture_output=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
    reply: dict[str, Any] = json.loads(done.stdout)
    assert not reply["is_error"], reply
    return reply


def test_a_served_runs_second_call_parses_and_matches_nothing_again(tmp_path) -> None:
    runtime, workdir = tmp_path / "rt", tmp_path / "wd"
    runtime.mkdir(mode=0o700)
    workdir.mkdir()
    for i in range(30):
        body = "".join(f"def f{i}_{j}(a):\n    return a * {j}\n\n" for j in range(4))
        (workdir / f"m{i:02}.py").write_text(body)
    config = tmp_path / "tether.toml"  # the search goes to the workers, as on a large project
    config.write_text("[astgrep]\nworkers = 2\nparallel_min_files = 10\n")
    env = {**os.environ, "TETHER_LOAD_PLUGINS": "astgrep", "TETHER_RUNTIME_DIR": str(runtime)}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tether",
            "serve",
            "--workdir",
            str(workdir),
            "--config",
            str(config),
        ],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        assert json.loads(server.stdout.readline())["ready"] is True
        args = {"pattern": PATTERN, "language": "python", "max_results": 5}
        first, again = (_call(env, workdir, config, args) for _ in range(2))
        assert first["meta"]["total"] == again["meta"]["total"] == 120
        assert (first["meta"]["files_parsed"], first["meta"]["files_reused"]) == (30, 0)
        assert (again["meta"]["files_parsed"], again["meta"]["files_reused"]) == (0, 30)
        assert again["content"] == first["content"]
        assert again["meta"]["matches"] == first["meta"]["matches"]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)

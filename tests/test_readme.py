"""The README's promises, checked with everything installed."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_the_harness_example_runs_and_stays_short(tmp_path):
    code = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    assert len(code.strip().splitlines()) <= 20
    (tmp_path / "README.md").write_text("# a checkout\nline 2\nline 3\nline 4\n")
    script = tmp_path / "example.py"
    script.write_text(code)
    out = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "False # a checkout" in out.stdout


def test_every_documented_plugin_entry_point_is_installed():
    out = subprocess.run(
        [sys.executable, "-m", "tether.cli", "plugins", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    plugins = {p["name"]: p for p in json.loads(out.stdout)}
    assert all(p["status"] == "loaded" for p in plugins.values()), plugins
    for name in plugins:
        assert f"tether-{name}" in README, f"plugin {name} is not in the README's table"


def test_the_main_job_command_answers_on_this_checkout():
    block = next(b for b in re.findall(r"```sh\n(.*?)```", README, re.S) if "uv sync" in b)
    call = block.split("uv run ", 1)[1].strip()
    assert call.startswith("tether call ")
    args = shlex.split(call)[1:]
    out = subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    result = json.loads(out.stdout)
    assert out.returncode == 0 and not result["is_error"], out.stdout + out.stderr
    assert "function open_run — core/src/tether/run.py:" in result["content"][0]["text"]


def test_the_shared_run_block_runs_as_written(tmp_path):
    """The shared-run block, line by line in the checkout: a plan connection's answers from one
    warm server, which --list shows and --stop ends (a private runtime dir: no other server)."""
    import os

    block = README.split("<!-- shared-run:", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    env = {**os.environ, "TETHER_RUNTIME_DIR": str(tmp_path / "rt")}
    outs = []
    try:
        for line in block.strip().splitlines():
            out = subprocess.run(
                ["bash", "-ec", line],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=300,
                env=env,
            )
            assert out.returncode == 0, f"{line}\n{out.stdout}{out.stderr}"
            outs.append(out.stdout)
    finally:
        subprocess.run(
            [sys.executable, "-m", "tether", "serve", "--stop"],
            cwd=ROOT,
            env=env,
            timeout=60,
            capture_output=True,
        )
    symbols, grep, listed, stopped = outs
    assert (
        "function open_run — core/src/tether/run.py:" in json.loads(symbols)["content"][0]["text"]
    )
    assert "core/src/tether/run.py" in json.loads(grep)["content"][0]["text"]
    assert [s["workdir"] for s in json.loads(listed)] == [str(ROOT)]
    assert json.loads(stopped)["stopped"] == json.loads(listed)[0]["pid"]


def test_the_shared_run_http_block_runs_as_written(tmp_path):
    """The HTTP block as one script in the checkout, its last line (--stop) held back until the
    `mcp` SDK's streamable HTTP client, with the plan file's token, saw the plan tools."""
    import os

    import anyio
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    block = README.split("<!-- shared-run-http:", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    *lines, last = block.strip().splitlines()
    assert last == "uv run tether serve --stop"
    env = {**os.environ, "TETHER_RUNTIME_DIR": str(tmp_path / "rt")}
    try:
        with open(tmp_path / "stderr", "w") as stderr:  # the server inherits it, not a pipe
            out = subprocess.run(
                ["bash", "-ec", "\n".join(lines)],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                timeout=300,
                env=env,
            )
        assert out.returncode == 0, (tmp_path / "stderr").read_text()
        ready = json.loads(out.stdout)
        http = ready["endpoints"]["http"]
        assert http["url"] == "http://127.0.0.1:8765/mcp"
        token = Path(http["token_files"]["plan"]).read_text().strip()

        async def tools() -> set[str]:
            client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with client, Client(streamable_http_client(http["url"], http_client=client)) as c:
                return {tool.name for tool in (await c.list_tools()).tools}

        names = anyio.run(tools)
        assert "lsp" in names and "ast_grep" in names and "edit" not in names
    finally:
        stopped = subprocess.run(
            ["bash", "-ec", last], cwd=ROOT, env=env, timeout=60, capture_output=True, text=True
        )
    assert json.loads(stopped.stdout)["stopped"] == ready["pid"]
    assert not any(Path(f).exists() for f in http["token_files"].values())

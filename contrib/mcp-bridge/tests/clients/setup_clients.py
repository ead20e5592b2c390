#!/usr/bin/env python3
"""Create the MCP clients the end-to-end tests drive, each in its own environment OUTSIDE the
workspace (their pins may conflict with ours): run by ci/install.sh and by the test fixtures.

    python3 tests/clients/setup_clients.py [NAME ...]   # default: all

Root: $TETHER_MCP_CLIENTS (default /tmp/tether-mcp-clients). Idempotent: an environment whose
`.ready` file matches its spec is kept. Prints the root.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(os.environ.get("TETHER_MCP_CLIENTS", "/tmp/tether-mcp-clients"))

#: name -> (kind, requirement)
CLIENTS: dict[str, tuple[str, str]] = {
    "mcp1": ("python", "mcp<2"),  # 2025-11-25: initialize, elicitation/create
    "mcp2": ("python", "mcp>=2.3,<3"),  # 2026-07-28: stateless, input_required
    "pydantic-ai": ("python", "pydantic-ai-slim[mcp]"),
    # its MCPServerStdio keeps the SDK's default 5 s session timeout in tests/test_attach.py
    "openai-agents": ("python", "openai-agents"),
    "ts-sdk": ("node", "@modelcontextprotocol/sdk@^1"),
    # its CLI's `--strict` schema-portability check runs in tests/test_schemas.py (node >= 22)
    "inspector": ("node", "@modelcontextprotocol/inspector@^2"),
    # the `mcp add` and `mcp list` of their pages run in tests/test_client_configs.py
    "claude-code": ("node", "@anthropic-ai/claude-code@^2"),
    "codex": ("node", "@openai/codex@0"),
    "gemini-cli": ("node", "@google/gemini-cli@0"),
}


def ensure(name: str) -> Path:
    kind, requirement = CLIENTS[name]
    env = ROOT / name
    ready = env / ".ready"
    if ready.is_file() and ready.read_text() == requirement:
        return env
    shutil.rmtree(env, ignore_errors=True)
    env.mkdir(parents=True)
    if kind == "python":
        subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(env)], check=True)
        subprocess.run(
            ["uv", "pip", "install", "-q", "--python", str(env / "bin" / "python"), requirement],
            check=True,
        )
    else:
        (env / "package.json").write_text(
            json.dumps({"name": "tether-mcp-ts-client", "private": True, "type": "module"})
        )
        subprocess.run(
            ["npm", "install", "--silent", "--no-audit", "--no-fund", requirement],
            cwd=env,
            check=True,
        )
    ready.write_text(requirement)
    return env


def main() -> None:
    for name in sys.argv[1:] or list(CLIENTS):
        ensure(name)
    print(ROOT)


if __name__ == "__main__":
    main()

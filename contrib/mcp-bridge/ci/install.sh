#!/bin/sh
# The MCP clients the end-to-end tests drive, each in its own environment outside the
# workspace (mcp<2, mcp 2.x, pydantic-ai-slim[mcp], openai-agents, the TypeScript SDK from npm).
set -eu
here=$(dirname "$0")
python3 "$here/../tests/clients/setup_clients.py"

#!/usr/bin/env bash
# System packages the tether-vibe tests need: git (worktree isolation tests) and the agent CLIs
# the bundled runner setups are tested with (Claude Code, Codex; from npm, pinned, run offline
# against a scripted model server). Idempotent, quiet.
set -euo pipefail
if ! command -v git >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends git >/dev/null
fi
CLAUDE_CODE_VERSION=2.1.332
CODEX_VERSION=0.171.0
need=()
if [ "$(claude --version 2>/dev/null | cut -d' ' -f1)" != "$CLAUDE_CODE_VERSION" ]; then
    need+=("@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION")
fi
if [ "$(codex --version 2>/dev/null | cut -d' ' -f2)" != "$CODEX_VERSION" ]; then
    need+=("@openai/codex@$CODEX_VERSION")
fi
if [ ${#need[@]} -gt 0 ]; then
    if ! command -v npm >/dev/null 2>&1; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null
        apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
    fi
    npm install -g --silent --no-fund --no-audit "${need[@]}" >/dev/null
fi

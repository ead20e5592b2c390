#!/usr/bin/env bash
# System packages the tether-vibe tests need: git (worktree isolation tests). Idempotent, quiet.
set -euo pipefail
if ! command -v git >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends git >/dev/null
fi

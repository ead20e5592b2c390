#!/usr/bin/env bash
# System packages the tether-astgrep tests need: git (the file listing of a git checkout is
# tested against a real repository). Idempotent and quiet; run as root on Debian 12.
set -euo pipefail
if ! command -v git >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends git >/dev/null
fi

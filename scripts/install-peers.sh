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
log "ok"

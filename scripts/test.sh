#!/usr/bin/env bash
# The test command: every test of the workspace, then the official conformance suite.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# The end-to-end tests run the real server and client binaries.
cargo build --workspace --bins
cargo test --workspace --no-fail-fast
scripts/conformance.sh

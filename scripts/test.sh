#!/usr/bin/env bash
# The test command: every test of the workspace, then the official conformance suite.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# One format (rustfmt.toml): the workspace and the fuzz workspace beside it.
cargo fmt --all --check
(cd fuzz && cargo fmt --all --check)
# No lint warnings anywhere (workspace lints in the root Cargo.toml).
cargo clippy --workspace --all-targets -- -D warnings
# The interop tests run the official TypeScript and Python SDKs (pinned, into .tools/peers/).
scripts/install-peers.sh
# The end-to-end tests run the real server and client binaries.
cargo build --workspace --bins
# The benchmarks must keep building; nothing is timed here (scripts/bench.sh runs them).
cargo bench --no-run -p elicit-benches
cargo test --workspace --no-fail-fast
# The dependency contract: the derive alone, in few crates, without crypto, tokio or IDNA.
scripts/check-features.sh
scripts/conformance.sh

#!/usr/bin/env bash
# Packages the three publishable crates as crates.io would receive them and builds each package
# from its own tarball (the derive and the runtime through a temporary local registry), so a
# missing file, a path-only dependency or a bad manifest fails here rather than at publish time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cargo package -p elicit-derive -p elicit-runtime -p elicit-cli "$@"
for crate in elicit-derive elicit-runtime elicit-cli; do
  list=$(cargo package -p "$crate" --list --allow-dirty 2>/dev/null)
  for file in README.md LICENSE-MIT LICENSE-APACHE Cargo.toml; do
    grep -qx "$file" <<<"$list" || { echo "package.sh: $crate does not ship $file"; exit 1; }
  done
done
echo "package.sh: elicit-derive, elicit-runtime and elicit-cli packaged and verified"

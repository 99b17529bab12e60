#!/usr/bin/env bash
# Packages the three publishable crates as crates.io would receive them and builds each package
# from its own tarball (the derive and the runtime through a temporary local registry), so a
# missing file, a path-only dependency or a bad manifest fails here rather than at publish time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# Verification builds each tarball against a temporary local registry whose packages cargo unpacks
# under $CARGO_HOME/registry/src/<hash of the registry path>/. An unpacked copy is reused, never
# compared with the new tarball, so a clone at a path that was packaged before (a CI machine keeps
# its CARGO_HOME) built elicit-cli against the previous run's elicit-runtime. Remove our crates'
# unpacked copies and cached tarballs first; nothing else under CARGO_HOME is touched.
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
for crate in elicit-derive elicit-runtime elicit-cli; do
  rm -rf "$cargo_home"/registry/src/*/"$crate"-[0-9]* "$cargo_home"/registry/cache/*/"$crate"-[0-9]*.crate
done
cargo package -p elicit-derive -p elicit-runtime -p elicit-cli "$@"
for crate in elicit-derive elicit-runtime elicit-cli; do
  list=$(cargo package -p "$crate" --list --allow-dirty 2>/dev/null)
  for file in README.md LICENSE-MIT LICENSE-APACHE Cargo.toml; do
    grep -qx "$file" <<<"$list" || { echo "package.sh: $crate does not ship $file"; exit 1; }
  done
done
echo "package.sh: elicit-derive, elicit-runtime and elicit-cli packaged and verified"

#!/usr/bin/env bash
# The dependency contract (issue 13, point 6): a crate that depends on
#   elicit-runtime = { default-features = false, features = ["derive"] }
# gets the derive and the answer parser in at most 30 crates, with no AEAD crypto, no tokio and no
# IDNA tables. Builds that combination, then counts its normal dependency graph.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
max=30
forbidden=(chacha20poly1305 tokio idna)
args=(-p elicit-runtime --no-default-features --features derive)

cargo build "${args[@]}"
cargo test "${args[@]}" --lib

# One line per crate (name and version), whatever the depth it appears at.
crates=$(cargo tree -e normal "${args[@]}" --prefix none | sed 's/ (\*)$//' | sort -u)
count=$(grep -c . <<<"$crates")
status=0
if (( count > max )); then
  echo "check-features.sh: the derive-only build pulls $count crates (at most $max):"
  echo "$crates"
  status=1
fi
for name in "${forbidden[@]}"; do
  if grep -q "^$name v" <<<"$crates"; then
    echo "check-features.sh: the derive-only build pulls $name:"
    cargo tree -e normal "${args[@]}" -i "$name" || true
    status=1
  fi
done
if (( status == 0 )); then
  echo "check-features.sh: derive-only elicit-runtime builds in $count crates (at most $max), without ${forbidden[*]}"
fi
exit "$status"

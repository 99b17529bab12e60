#!/usr/bin/env bash
# The dependency contract, for the two builds users are told to name:
# - a crate that declares forms and parses answers,
#     elicit-runtime = { default-features = false, features = ["derive"] }
#   gets them in at most 30 crates, with no AEAD crypto, no tokio and no IDNA tables;
# - a server on rmcp (the README's server recipe),
#     elicit-runtime = { default-features = false, features = ["derive", "rmcp"] }
#   gets the engine and the adapter in at most 125 crates, with none of the client's crates (no
#   url, no IDNA, no ICU tables).
# Builds each combination, then counts its normal dependency graph.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
status=0

# check NAME FEATURES MAX FORBIDDEN...: builds elicit-runtime with FEATURES only and checks its graph.
check() {
  local name="$1" features="$2" max="$3"
  shift 3
  local args=(-p elicit-runtime --no-default-features --features "$features")
  cargo build "${args[@]}"
  cargo test "${args[@]}" --lib
  # One line per crate (name and version), whatever the depth it appears at.
  local crates count bad=0
  crates=$(cargo tree -e normal "${args[@]}" --prefix none | sed 's/ (\*)$//' | sort -u)
  count=$(grep -c . <<<"$crates")
  if (( count > max )); then
    echo "check-features.sh: the $name build pulls $count crates (at most $max):"
    echo "$crates"
    bad=1
  fi
  for pattern in "$@"; do
    if grep -Eq "^$pattern v" <<<"$crates"; then
      echo "check-features.sh: the $name build pulls $pattern:"
      grep -E "^$pattern v" <<<"$crates" | while read -r crate _; do
        cargo tree -e normal "${args[@]}" -i "$crate" || true
      done
      bad=1
    fi
  done
  if (( bad == 0 )); then
    echo "check-features.sh: the $name build of elicit-runtime has $count crates (at most $max), without $*"
  fi
  return "$bad"
}

check derive-only derive 30 chacha20poly1305 tokio idna || status=1
check server derive,rmcp 125 url idna 'icu_[a-z_]+' reqwest || status=1
exit "$status"

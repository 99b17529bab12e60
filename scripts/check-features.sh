#!/usr/bin/env bash
# The dependency contract, for the two builds users are told to name:
# - a crate that declares forms and parses answers,
#     elicit-runtime = { default-features = false, features = ["derive"] }
#   gets them in at most 30 crates, with no AEAD crypto, no tokio and no IDNA tables, and syn
#   without its `full` feature;
# - a server on rmcp (the README's server recipe),
#     elicit-runtime = { default-features = false, features = ["derive", "rmcp"] }
#   gets the engine and the adapter in at most 125 crates, with none of the client's crates (no
#   url, no IDNA, no ICU tables).
# Checks that each combination compiles (`cargo check`: the crate and exactly its normal
# dependencies, no dev-dependencies), runs the library's unit tests with the derive alone (the
# build where the most code is configured out; the test command runs them with every feature),
# then counts each normal dependency graph.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
status=0

# check NAME FEATURES UNIT_TESTS MAX FORBIDDEN...: checks elicit-runtime with FEATURES only, runs
# its unit tests with them if UNIT_TESTS is `unit-tests`, and checks its graph.
check() {
  local name="$1" features="$2" unit_tests="$3" max="$4"
  shift 4
  local args=(-p elicit-runtime --no-default-features --features "$features")
  cargo check "${args[@]}"
  if [[ "$unit_tests" == unit-tests ]]; then
    cargo test "${args[@]}" --lib
  fi
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

check derive-only derive unit-tests 30 chacha20poly1305 tokio idna || status=1
# The derive reads attributes with syn's derive-input grammar: in the derive-only build syn (3)
# compiles without its `full` feature. (The server build gets `full` from rmcp's own macros.)
derive_syn=$(cargo tree -e normal,build,features -p elicit-runtime --no-default-features --features derive \
  -i syn@3 --prefix none)
if grep -q 'syn feature "full"' <<<"$derive_syn"; then
  echo "check-features.sh: the derive-only build turns on syn's full feature:"
  echo "$derive_syn"
  status=1
else
  echo "check-features.sh: the derive-only build compiles syn without its full feature"
fi
# Without the `metrics` feature nothing of the metrics facade is compiled in.
check server derive,rmcp no-unit-tests 125 url idna 'icu_[a-z_]+' reqwest metrics || status=1
# The hooks compile to nothing without it: every use of the facade and every span is in the two
# modules of `server/observe` compiled only with the feature (the rest calls empty functions).
stray=$(grep -rnE 'metrics::|_span!|Instrument|tracing::Span|tracing::instrument' elicit-runtime/src --include='*.rs' \
  | grep -vE '^elicit-runtime/src/server/observe/(on|timed)\.rs:' || true)
if [[ -n "$stray" ]]; then
  echo "check-features.sh: metrics or spans outside server/observe/{on,timed}.rs (compiled without the feature):"
  echo "$stray"
  status=1
fi
# Every module with a hook builds without the feature (the pages, the stores, tasks).
cargo check -p elicit-runtime --no-default-features --features derive,pages,sqlite || status=1
if cargo tree -e normal -p elicit-runtime --no-default-features --features derive,pages,sqlite --prefix none \
  | grep -Eq '^metrics v'; then
  echo "check-features.sh: the server build without the metrics feature pulls the metrics crate"
  status=1
fi
# The draft app-rendered forms (`apps`) compile on the engine alone and on the rmcp server.
for features in apps derive,rmcp,apps; do
  cargo check -p elicit-runtime --no-default-features --features "$features" || status=1
done
exit "$status"

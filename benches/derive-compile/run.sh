#!/bin/sh
# Compile time of this crate's own code (its dependencies built beforehand), with each derive,
# alternating, several times: `sh run.sh [ROUNDS]`. Prints one line per build, then the medians.
set -eu
cd "$(dirname "$0")"
rounds=${1:-5}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
for feature in elicit serde-schemars; do
  cargo build --quiet --features "$feature"
done
measure() {
  touch src/lib.rs
  start=$(date +%s%N)
  cargo build --quiet --features "$1"
  end=$(date +%s%N)
  echo "$1 $(( (end - start) / 1000000 ))"
}
results=$(for _ in $(seq 1 "$rounds"); do measure elicit; measure serde-schemars; done)
echo "$results"
for feature in elicit serde-schemars; do
  median=$(echo "$results" | awk -v f="$feature" '$1 == f { print $2 }' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  echo "median $feature: ${median} ms"
done

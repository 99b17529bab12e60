#!/usr/bin/env bash
# The test command: every test of the workspace, then the official conformance suite. It installs
# what the tests need first (as root with apt-get; otherwise it names the exact command and stops),
# and ends with one tally line: passed, failed, skipped (each skipped test named on the line above).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# What the tests take from the system: a private redis-server (scale-out and store tests), a
# headless Chromium (the browser test), npm (it installs Node 22 and the SDK peers, see
# install-tools.sh and install-peers.sh) and Python's venv (the Python SDK peers).
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v npm >/dev/null 2>&1 || missing+=(npm)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "test.sh: installing ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update
        apt-get install -y --no-install-recommends "${missing[@]}"
    else
        echo "test.sh: the tests need ${missing[*]}; install them, then run this again:" >&2
        echo "    sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
        exit 1
    fi
fi

# Each step's wall time, on stderr as it ends and again at the end, so that a slow step is seen.
started=$SECONDS
timings=()
step() {
    local name=$1 began=$SECONDS rc=0
    shift
    "$@" || rc=$?
    timings+=("$name $((SECONDS - began)) s")
    echo "test.sh: $name took $((SECONDS - began)) s" >&2
    return "$rc"
}

# Every crate of Cargo.lock, whatever features name it, downloaded before anything builds: a test
# runs `cargo tree --all-features --offline`, which needs crates no default build downloads.
step fetch cargo fetch --locked

# One format (rustfmt.toml): the workspace and the fuzz workspace beside it.
cargo fmt --all --check
(cd fuzz && cargo fmt --all --check)
# The interop tests run the official TypeScript and Python SDKs (pinned, into .tools/peers/). Their
# download waits on the network, not the CPU: it runs while clippy compiles, its output kept and
# shown when it ends, and the step below waits for it.
peers_log="$(mktemp "${TMPDIR:-/tmp}/elicit-peers.XXXXXX")"
scripts/install-peers.sh >"$peers_log" 2>&1 &
peers_pid=$!
trap 'kill "$peers_pid" 2>/dev/null || true; rm -f "$peers_log"' EXIT
peers() {
    local rc=0
    wait "$peers_pid" || rc=$?
    cat "$peers_log"
    return "$rc"
}
# No lint warnings anywhere (workspace lints in the root Cargo.toml).
step clippy cargo clippy --workspace --all-targets -- -D warnings
# The API docs as docs.rs builds them: every intra-doc link resolves, none reaches a private item.
step docs env RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features
step install-peers peers
# The end-to-end tests run the real server and client binaries: built with the one build command
# of lib.sh, which the tests and conformance.sh run again (a no-op after this step).
. scripts/lib.sh
step build "${workspace_build[@]}"
# The benchmarks must keep building; nothing is timed here (scripts/bench.sh runs them, in
# release). With the dev profile, on the build above: the same code compiles and links, without a
# second, optimised build of every dependency.
step bench-build cargo bench --no-run --workspace --profile dev

# The tests: their output is kept for the tally; a failure does not stop the steps after it.
log="$(mktemp "${TMPDIR:-/tmp}/elicit-test.XXXXXX")"
trap 'rm -f "$log" "$peers_log"' EXIT
status=0
tests() { cargo test --workspace --no-fail-fast 2>&1 | tee "$log"; }
step tests tests || status=1
# The dependency contract: the derive alone, in few crates, without crypto, tokio or IDNA.
step check-features scripts/check-features.sh || status=1
step conformance scripts/conformance.sh || status=1

# The tally, over every test binary and doctest run: the harness's own counts, and the tests that
# skipped themselves for a missing tool (their `SKIPPED NAME: WHY` lines) or are ignored.
read -r passed failed ignored < <(awk '/^test result: /{
        for (i = 1; i <= NF; i++) {
            if ($(i+1) ~ /^passed;?$/) p += $i
            if ($(i+1) ~ /^failed;?$/) f += $i
            if ($(i+1) ~ /^ignored;?$/) g += $i
        }
    } END { print p + 0, f + 0, g + 0 }' "$log")
# (grep finds no line when nothing skipped: that is not a failure of the tally.)
skipped_names="$( { { grep -o 'SKIPPED [^ ]*:' "$log" || true; } | sed 's/^SKIPPED //; s/:$//'; sed -n 's/^test \(.*\) \.\.\. ignored.*/\1/p' "$log"; } | sort -u | paste -sd, - | sed 's/,/, /g')"
skipped_self="$(grep -c 'SKIPPED [^ ]*:' "$log" || true)"
skipped=$((skipped_self + ignored))
# A test that skipped itself also counted as passed with the harness: count it once, as skipped.
passed=$((passed - skipped_self))
[ "$failed" -eq 0 ] || status=1
if [ -n "$skipped_names" ]; then
    echo "skipped: $skipped_names"
fi
printf 'steps:'; printf ' %s,' "${timings[@]}"; echo " total $((SECONDS - started)) s"
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit "$status"

#!/usr/bin/env bash
# The cargo-fuzz targets of fuzz/ (its own workspace, outside the main one).
#
#   scripts/fuzz.sh smoke                  every target for 20 s (CI); installs cargo-fuzz if missing
#   scripts/fuzz.sh long [SECONDS]         every target for SECONDS (default 600), one after another
#   scripts/fuzz.sh run TARGET [SECONDS]   one target (default 600 s)
#
# Exits non-zero when any target crashes, times out or runs out of memory; the input that did it is
# in fuzz/artifacts/TARGET/ (replay: RUSTC_BOOTSTRAP=1 cargo fuzz run -a TARGET ARTIFACT, in fuzz/).
#
# Environment: FUZZ_SANITIZER (address, the default, or none), FUZZ_LOG_DIR (keep each target's
# output in $FUZZ_LOG_DIR/fuzz-TARGET.log), FUZZ_NICE (niceness, default 15: shared machines).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/fuzz"

targets=(open_state input_responses typed_content client_parse legacy_push exactly_once form_post)
sanitizer="${FUZZ_SANITIZER:-address}"
niceness="${FUZZ_NICE:-15}"
# cargo-fuzz passes nightly-only flags (-Zsanitizer, sancov passes); the one toolchain here is
# stable, and RUSTC_BOOTSTRAP=1 lets it accept them.
export RUSTC_BOOTSTRAP=1

usage() {
    sed -n '2,12p' "$root/scripts/fuzz.sh" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

ensure_cargo_fuzz() {
    if ! cargo fuzz --version >/dev/null 2>&1; then
        cargo install cargo-fuzz --locked
    fi
}

# -a: debug assertions on (cargo-fuzz's default, stated so it stays), so an arithmetic overflow is
# a crash, not a silent wrap.
build() {
    nice -n "$niceness" cargo fuzz build -a --sanitizer "$sanitizer"
}

# Runs one target for $2 seconds. New corpus units go to a scratch directory under target/ (ignored
# by git); the committed seeds in corpus/TARGET are read only.
run_target() {
    local target="$1" seconds="$2" scratch="target/corpus/$1" status=0
    mkdir -p "$scratch"
    local -a command=(nice -n "$niceness" cargo fuzz run -a --sanitizer "$sanitizer" "$target" "$scratch" "corpus/$target"
        -- -max_total_time="$seconds" -timeout=10 -print_final_stats=1)
    echo "== $target: ${seconds}s"
    if [[ -n "${FUZZ_LOG_DIR:-}" ]]; then
        mkdir -p "$FUZZ_LOG_DIR"
        "${command[@]}" >"$FUZZ_LOG_DIR/fuzz-$target.log" 2>&1 || status=$?
        grep -aE '^#[0-9]+[[:space:]]+DONE|^Done [0-9]+ runs|SUMMARY|panicked|Test unit written' "$FUZZ_LOG_DIR/fuzz-$target.log" || true
    else
        "${command[@]}" || status=$?
    fi
    if [[ $status -ne 0 ]]; then
        echo "!! $target failed (exit $status); see fuzz/artifacts/$target/" >&2
    fi
    return "$status"
}

run_all() {
    local seconds="$1" failed=()
    for target in "${targets[@]}"; do
        run_target "$target" "$seconds" || failed+=("$target")
    done
    if [[ ${#failed[@]} -ne 0 ]]; then
        echo "!! failing targets: ${failed[*]}" >&2
        exit 1
    fi
    echo "all ${#targets[@]} targets ran ${seconds}s without a crash"
}

case "${1:-}" in
    smoke)
        ensure_cargo_fuzz
        build
        run_all 20
        ;;
    long)
        ensure_cargo_fuzz
        build
        run_all "${2:-600}"
        ;;
    run)
        [[ -n "${2:-}" ]] || usage
        ensure_cargo_fuzz
        run_target "$2" "${3:-600}"
        ;;
    *) usage ;;
esac

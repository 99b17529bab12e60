#!/usr/bin/env bash
# The flow ledger's cost (BENCHMARKS.md, "The flow ledger's cost"): the engine's bookkeeping per
# replayed round and per flow, in-process and on Redis, and flows/s and server CPU per flow end to
# end, for an older version of the engine (BEFORE, default 9f1871b: main just before the flow
# ledger merged) and for this checkout, measured interleaved so that the load of the machine falls
# on both alike.
#
#   scripts/ledger-cost.sh [BEFORE]      # ~25 minutes on a 2-core machine, builds included
#
# BEFORE is exported with `git archive` into $SCRATCH/before, outside the repository (SCRATCH
# defaults to ${TMPDIR:-/tmp}/elicit-ledger-cost; a tree already there for the same commit is
# reused). benches/src/bin/ledger-cost.rs and the flow it runs (benches/src/ledger_flow.rs) are
# copied into it and, for a version from before the store traits were split, the two lines of
# ledger-cost.rs marked `ledger-cost: store` are rewritten to the older names. Both versions are built in release into $SCRATCH/target (one target directory, so the
# dependencies build once; delete $SCRATCH when done). Needs redis-server and valgrind.
#
# What runs, for each version:
# 1. callgrind: `ledger-cost` with two iteration counts; the difference of the instructions over
#    the difference of the counts is the cost of one iteration, setup excluded. On Redis, the
#    commands the server executed per iteration likewise (INFO commandstats).
# 2. REPS interleaved repetitions (the order of the versions alternates) of: each case of
#    `ledger-cost` (CPU time per iteration of the process, all threads), then `bench-server` under
#    `bench-loadgen --mode flow` (this checkout's load generator for both): flows/s and the
#    server's CPU time per flow; and (4b) the server's instructions per flow under callgrind.
# Tunables (environment): REPS (5), TRIALS (3) and TRIAL_SECONDS (3) of each load run,
# CONCURRENCY (32); LEDGER_BUILT=1 skips the builds; BEFORE_TREE and LEDGER_TARGET put the older tree and the target directory
# elsewhere than under $SCRATCH. Output: Markdown on stdout; raw results in $SCRATCH/results/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

before_commit="${1:-9f1871b}"
scratch="${SCRATCH:-${TMPDIR:-/tmp}/elicit-ledger-cost}"
reps="${REPS:-5}"
trials="${TRIALS:-3}"
trial_seconds="${TRIAL_SECONDS:-3}"
concurrency="${CONCURRENCY:-32}"
before="${BEFORE_TREE:-$scratch/before}"
out="$scratch/results"
export CARGO_TARGET_DIR="${LEDGER_TARGET:-$scratch/target}" CARGO_INCREMENTAL=0

log() { echo "ledger-cost.sh: $*" >&2; }
for tool in redis-server redis-cli valgrind python3; do
    command -v "$tool" >/dev/null || { log "$tool is not installed"; exit 1; }
done

# 1. The older tree, with this bench copied in.
commit=$(git rev-parse "$before_commit^{commit}")
if [[ "$(cat "$before/.ledger-cost-commit" 2>/dev/null)" != "$commit" ]]; then
    log "exporting $commit into $before"
    rm -rf "$before"
    mkdir -p "$before"
    git archive "$commit" | tar -x -C "$before"
    echo "$commit" >"$before/.ledger-cost-commit"
fi
cp benches/src/bin/ledger-cost.rs "$before/benches/src/bin/ledger-cost.rs"
cp benches/src/ledger_flow.rs "$before/benches/src/ledger_flow.rs"
if ! grep -q 'pub trait Store\b' -r "$before/elicit-runtime/src/server/"; then
    sed -i -e 's|^use elicit_runtime::server::Store as BenchStore; // ledger-cost: store$|use elicit_runtime::server::CompletionStore as BenchStore; // ledger-cost: store|' \
        -e 's|^    builder.store(store) // ledger-cost: store$|    builder.completion_store(store) // ledger-cost: store|' \
        "$before/benches/src/bin/ledger-cost.rs"
fi

# 2. Both builds, in release, one after the other into one target directory (LEDGER_BUILT=1: the
# binaries an earlier run left in $SCRATCH/bin are measured again). The workspace's own crates of
# the two trees share names and the hashes cargo gives their artifacts, and the sources of one tree
# are no newer than the artifacts of the other: cargo would take one tree's artifacts as fresh for
# the other. They are removed before each build (the dependencies stay).
own_crates=(-p elicit-derive -p elicit-runtime -p elicit-tests -p elicit-examples -p elicit-benches)
mkdir -p "$scratch/bin/before" "$scratch/bin/after" "$out"
if [[ "${LEDGER_BUILT:-0}" != 1 ]]; then
    log "building $commit (release)"
    (cd "$before" && cargo clean --release "${own_crates[@]}" &&
        cargo build --release -p elicit-benches --bin ledger-cost --bin bench-server)
    cp "$CARGO_TARGET_DIR/release/ledger-cost" "$CARGO_TARGET_DIR/release/bench-server" "$scratch/bin/before/"
    log "building this checkout (release)"
    cargo clean --release "${own_crates[@]}"
    cargo build --release -p elicit-benches --bin ledger-cost --bin bench-server --bin bench-loadgen
    cp "$CARGO_TARGET_DIR/release/ledger-cost" "$CARGO_TARGET_DIR/release/bench-server" \
        "$CARGO_TARGET_DIR/release/bench-loadgen" "$scratch/bin/after/"
fi
loadgen="$scratch/bin/after/bench-loadgen"

# 3. One redis-server on loopback for every Redis run.
redis_port="${REDIS_PORT:-6391}"
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no >"$out/redis.log" 2>&1 &
redis_pid=$!
bench_pid=""
cleanup() {
    [[ -n "$bench_pid" ]] && kill "$bench_pid" 2>/dev/null
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
}
trap cleanup EXIT
redis="redis://127.0.0.1:$redis_port"
for _ in $(seq 50); do
    redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
    sleep 0.1
done
# The commands the server has executed so far (every command's `calls`, those a script ran
# included), then the script calls among them (EVAL, EVALSHA: one round trip each).
redis_calls() {
    redis-cli -p "$redis_port" info commandstats | tr -d '\r' |
        sed -n 's/^cmdstat_\([^:]*\):calls=\([0-9]*\),.*/\1 \2/p' |
        awk '{n += $2} $1 ~ /^eval/ {e += $2} END {print n + 0, e + 0}'
}

cases="once_round final_round flow_once flow_plain"
# iterations STORE CASE: the count of a timed run (a second or more each: CPU time is counted in
# ticks of 10 ms).
iterations() {
    case "$1:$2" in
        memory:*_round) echo 60000 ;;
        memory:flow_once) echo 20000 ;;
        memory:*) echo 40000 ;;
        redis:*_round) echo 10000 ;;
        redis:flow_once) echo 3000 ;;
        *) echo 10000 ;;
    esac
}
# callgrind_counts STORE CASE: the two counts of the instruction runs.
callgrind_counts() {
    case "$1:$2" in
        memory:*_round) echo "200 1200" ;;
        memory:*) echo "50 550" ;;
        *_round) echo "50 300" ;;
        *) echo "20 120" ;;
    esac
}

# 4. Instructions (and Redis commands) per iteration, each version once: they do not drift.
echo "version store case n1 n2 instructions1 instructions2 redis_calls1 redis_calls2 scripts1 scripts2" >"$out/callgrind.txt"
for version in before after; do
    for store in memory "$redis"; do
        label=$([[ "$store" == memory ]] && echo memory || echo redis)
        for case in $cases; do
            read -r n1 n2 <<<"$(callgrind_counts "$label" "$case")"
            line="$version $label $case $n1 $n2"
            calls="" scripts=""
            for n in "$n1" "$n2"; do
                log "callgrind: $version $label $case × $n"
                read -r c0 e0 <<<"$(redis_calls)"
                valgrind --tool=callgrind --callgrind-out-file=/dev/null \
                    "$scratch/bin/$version/ledger-cost" --store "$store" --case "$case" --iterations "$n" \
                    >/dev/null 2>"$out/callgrind-$version-$label-$case-$n.log"
                read -r c1 e1 <<<"$(redis_calls)"
                line="$line $(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/callgrind-$version-$label-$case-$n.log")"
                calls="$calls $((c1 - c0))" scripts="$scripts $((e1 - e0))"
            done
            echo "$line$calls$scripts" >>"$out/callgrind.txt"
        done
    done
done

# 4b. Instructions per flow end to end: `bench-server` (1 thread) under callgrind, driven by
# `bench-loadgen` for two durations; the difference of the instructions over the difference of the
# flows finished (setup and idle time cancel out, up to the idle instructions of the extra seconds).
echo "version seconds flows instructions" >"$out/callgrind-e2e.txt"
for version in before after; do
    for seconds in 3 15; do
        log "callgrind: $version end to end, $seconds s"
        port=8977
        valgrind --tool=callgrind --callgrind-out-file=/dev/null "$scratch/bin/$version/bench-server" \
            --listen "127.0.0.1:$port" --threads 1 >"$out/callgrind-e2e-$version-$seconds.log" 2>&1 &
        bench_pid=$!
        for _ in $(seq 300); do
            (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
            sleep 0.1
        done
        "$loadgen" --url "http://127.0.0.1:$port/mcp" --mode flow --concurrency 4 --trials 1 \
            --seconds "$seconds" --warmup-seconds 0 >"$out/callgrind-e2e-$version-$seconds.json"
        kill -TERM "$bench_pid"
        wait "$bench_pid" 2>/dev/null || true
        bench_pid=""
        echo "$version $seconds $(python3 -c "import json; print(json.load(open('$out/callgrind-e2e-$version-$seconds.json'))['finished'])")" \
            "$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/callgrind-e2e-$version-$seconds.log")" >>"$out/callgrind-e2e.txt"
    done
done

# 5. CPU time per iteration and the end-to-end load, interleaved.
echo "rep version store case iterations cpu_ns wall_ns" >"$out/cpu.txt"
echo "rep version flows_per_s finished server_cpu_s" >"$out/e2e.txt"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for rep in $(seq "$reps"); do
    order="before after"
    (( rep % 2 == 0 )) && order="after before"
    for version in $order; do
        for store in memory "$redis"; do
            label=$([[ "$store" == memory ]] && echo memory || echo redis)
            for case in $cases; do
                n=$(iterations "$label" "$case")
                log "rep $rep: $version $label $case × $n"
                "$scratch/bin/$version/ledger-cost" --store "$store" --case "$case" --iterations "$n" |
                    python3 -c "import json,sys; r=json.load(sys.stdin); print('$rep $version $label $case', r['iterations'], r['cpu_ns_per_iteration'], r['wall_ns_per_iteration'])" \
                        >>"$out/cpu.txt"
            done
        done
    done
    for version in $order; do
        port=$((8960 + rep % 2))
        log "rep $rep: $version end to end"
        "$scratch/bin/$version/bench-server" --listen "127.0.0.1:$port" --threads 2 >"$out/server-$version-$rep.log" 2>&1 &
        bench_pid=$!
        for _ in $(seq 100); do
            (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
            sleep 0.1
        done
        t0=$(cpu_ticks "$bench_pid")
        "$loadgen" --url "http://127.0.0.1:$port/mcp" --mode flow --concurrency "$concurrency" \
            --trials "$trials" --seconds "$trial_seconds" --warmup-seconds 1 >"$out/e2e-$version-$rep.json"
        t1=$(cpu_ticks "$bench_pid")
        kill "$bench_pid"
        wait "$bench_pid" 2>/dev/null || true
        bench_pid=""
        python3 -c "import json; r=json.load(open('$out/e2e-$version-$rep.json')); print('$rep $version', r['median_rate'], r['finished'], ($t1 - $t0) / $(getconf CLK_TCK))" \
            >>"$out/e2e.txt"
    done
done

# 6. The tables.
python3 - "$out" "$commit" <<'EOF'
import statistics, sys
out, commit = sys.argv[1], sys.argv[2]
rows = lambda name: [l.split() for l in open(f"{out}/{name}").read().splitlines()[1:]]
names = {"once_round": "a replayed round that reaches a `once`", "final_round": "a replayed finishing round",
         "flow_once": "a whole flow: form, `once`, form (3 rounds)", "flow_plain": "a whole flow: one form, no `once` (2 rounds)"}
grind = {(r[0], r[1], r[2]): r for r in rows("callgrind.txt")}
cpu, wall = {}, {}
for r in rows("cpu.txt"):
    cpu.setdefault((r[1], r[2], r[3]), []).append(float(r[5]))
    wall.setdefault((r[1], r[2], r[3]), []).append(float(r[6]))
print(f"before: {commit[:7]}; after: this checkout\n")
for store in ("memory", "redis"):
    print(f"### {'In-process store' if store == 'memory' else 'Redis store (one redis-server on loopback)'}\n")
    head = "| per iteration | instructions before | after | after ÷ before | CPU µs before (median) | after | after ÷ before |"
    if store == "redis":
        head += " Redis commands (scripts) before | after | wall µs before (median) | after |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for case in names:
        b, a = grind[("before", store, case)], grind[("after", store, case)]
        ins = lambda r: (int(r[6]) - int(r[5])) / (int(r[4]) - int(r[3]))
        calls = lambda r: (int(r[8]) - int(r[7])) / (int(r[4]) - int(r[3]))
        scripts = lambda r: (int(r[10]) - int(r[9])) / (int(r[4]) - int(r[3]))
        cb, ca = statistics.median(cpu[("before", store, case)]) / 1e3, statistics.median(cpu[("after", store, case)]) / 1e3
        line = f"| {names[case]} | {ins(b):,.0f} | {ins(a):,.0f} | {ins(a) / ins(b):.2f}× | {cb:.1f} | {ca:.1f} | {ca / cb:.2f}× |"
        if store == "redis":
            wb = statistics.median(wall[("before", store, case)]) / 1e3
            wa = statistics.median(wall[("after", store, case)]) / 1e3
            line += f" {calls(b):.1f} ({scripts(b):.1f}) | {calls(a):.1f} ({scripts(a):.1f}) | {wb:.0f} | {wa:.0f} |"
        print(line)
    print()
print("### End to end: `bench-server` (2 threads) under `bench-loadgen --mode flow`\n")
print("| rep | before flows/s | after flows/s | before server CPU µs/flow | after server CPU µs/flow |")
print("|---|---:|---:|---:|---:|")
e2e = {}
for r in rows("e2e.txt"):
    e2e.setdefault(r[0], {})[r[1]] = (float(r[2]), float(r[4]) * 1e6 / float(r[3]))
for rep in sorted(e2e, key=int):
    b, a = e2e[rep]["before"], e2e[rep]["after"]
    print(f"| {rep} | {b[0]:.0f} | {a[0]:.0f} | {b[1]:.0f} | {a[1]:.0f} |")
med = lambda v, i: statistics.median(e2e[r][v][i] for r in e2e)
print(f"| median | {med('before', 0):.0f} | {med('after', 0):.0f} | {med('before', 1):.0f} | {med('after', 1):.0f} |")
print(f"\nafter ÷ before: flows/s {med('after', 0) / med('before', 0):.2f}×, server CPU per flow {med('after', 1) / med('before', 1):.2f}×")
# Each rep runs the two versions back to back, so the ratio within a rep cancels most of the
# machine's drift between reps: its median is the steadier figure.
pairs = lambda i: sorted(e2e[r]["after"][i] / e2e[r]["before"][i] for r in e2e)
for label, i in (("flows/s", 0), ("server CPU per flow", 1)):
    p = pairs(i)
    print(f"after ÷ before within each rep, {label}: median {statistics.median(p):.3f}× ({p[0]:.2f}–{p[-1]:.2f}×)")
grind_e2e = {}
for r in rows("callgrind-e2e.txt"):
    grind_e2e.setdefault(r[0], []).append((int(r[2]), int(r[3])))
per_flow = {v: (p[1][1] - p[0][1]) / (p[1][0] - p[0][0]) for v, p in grind_e2e.items()}
print(f"\nserver instructions per flow (callgrind, 1 thread): before {per_flow['before']:,.0f}, "
      f"after {per_flow['after']:,.0f}, after ÷ before {per_flow['after'] / per_flow['before']:.3f}×")
EOF

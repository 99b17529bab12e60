#!/usr/bin/env bash
# Every benchmark of BENCHMARKS.md in one run, then its tables (Markdown on stdout).
#
#   scripts/bench.sh                 # ~10 minutes on a 2-core machine once built
#   scripts/bench.sh --only tasks    # just the task against MRTR, same flow (~1 minute once built)
#
# 1. criterion micro-benchmarks (schema, parse, request_state) with criterion's default timings;
# 2. allocations per call and sealed sizes (`alloc_count`);
# 3. end to end over loopback HTTP: the same load generator, concurrency and trials against our
#    bench server (tokio's default 2 worker threads, and 1 thread), the official Python SDK and the
#    official TypeScript SDK serving the same two tools; and ours again with one request in flight;
#    then the 2025 wire: the same flow on 2025-11-25 sessions (ask pushed as `elicitation/create`),
#    ours against the official TypeScript SDK v1 (benches/peers/typescript_v1_server.mjs), and the
#    memory our server holds per parked 2025-era flow (`bench-park`, $PARKED flows parked at once);
#    and a task of the Tasks extension with one input request against the same flow as Multi
#    Round-Trip Requests, on one server in one load run, their trials alternating;
# 4. `bench-report`: every figure, and every goal as a ratio of two figures of this run.
#
# The peer SDKs are installed with pip and npm into a scratch folder outside the repository
# ($ELICIT_BENCH_PEERS, default ${TMPDIR:-/tmp}/elicit-bench-peers); their server sources are
# benches/peers/. Results go to target/bench-results/ (report.md is the printed report); with
# `--only tasks`, to target/bench-results/tasks/ (report.md and ours-tasks.json), nothing else run.
# Tunables (environment): CONCURRENCY (32), TRIALS (5), TRIAL_SECONDS (3), PARKED (10000).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

only=""
case "${1:-}" in
    "") ;;
    --only)
        [[ "${2:-}" == tasks ]] || { echo "usage: scripts/bench.sh [--only tasks]" >&2; exit 2; }
        only=tasks
        ;;
    *) echo "usage: scripts/bench.sh [--only tasks]" >&2; exit 2 ;;
esac

peers="${ELICIT_BENCH_PEERS:-${TMPDIR:-/tmp}/elicit-bench-peers}"
out="$root/target/bench-results"
concurrency="${CONCURRENCY:-32}"
trials="${TRIALS:-5}"
trial_seconds="${TRIAL_SECONDS:-3}"
parked="${PARKED:-10000}"
# The peer releases measured: the newest that serve protocol 2026-07-28 (input_required results).
mcp_py_version="2.3.0"
ts_server_version="2.4.0"
ts_node_version="2.1.2"
# The 2025-era peer: the TypeScript SDK v1 most hosts and servers are built on.
ts_v1_version="1.32.2"

log() { echo "bench.sh: $*" >&2; }

if pgrep -f 'cargo-fuzz|libfuzzer|/fuzz/target/' >/dev/null 2>&1; then
    log "WARNING: fuzzers are running on this machine; the figures will be noisy"
fi

. scripts/lib.sh

# run_tasks DIR PORT: our bench server (2 threads) and one load run of `--mode task`: the flow of
# `ask_name` as a task (`ask_name_task`, tools/call → tasks/get polls → tasks/update → tasks/get
# polls) and as Multi Round-Trip Requests (`ask_name`), their trials alternating; the load
# generator reads the server's CPU time around each trial from /proc (`--pid`).
run_tasks() {
    local dir="$1" port="$2"
    log "end to end: a task with one input request against MRTR, same flow"
    start_server ours-tasks "$dir/ours-tasks-server.log" \
        target/release/bench-server --listen "127.0.0.1:$port" --threads 2
    wait_for_port "$port"
    target/release/bench-loadgen --url "http://127.0.0.1:$port/mcp" --mode task --pid "$server_pid" \
        --concurrency "$concurrency" --trials "$trials" --seconds "$trial_seconds" --warmup-seconds 1 \
        >"$dir/ours-tasks.json" || { log "tasks failed: $(cat "$dir/ours-tasks.json")"; tasks_failed=1; }
    stop_server
}

if [[ "$only" == tasks ]]; then
    out="$out/tasks"
    rm -rf "$out"
    mkdir -p "$out"
    log "building (release)"
    cargo build --release -p elicit-benches --bins
    tasks_failed=0
    run_tasks "$out" 8951
    target/release/bench-report --only tasks --e2e "$out" | tee "$out/report.md"
    exit "$tasks_failed"
fi

rm -rf "$out" target/criterion/schema target/criterion/parse target/criterion/request_state
mkdir -p "$out/e2e"

log "building (release)"
cargo build --release -p elicit-benches --bins
cargo bench --no-run -p elicit-benches

log "installing the peer SDKs into $peers"
mkdir -p "$peers"
if [[ ! -x "$peers/py/bin/python" ]]; then
    python3 -m venv "$peers/py"
fi
if ! "$peers/py/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$mcp_py_version')" 2>/dev/null; then
    "$peers/py/bin/pip" install --quiet --disable-pip-version-check "mcp==$mcp_py_version"
fi
mkdir -p "$peers/ts"
if [[ ! -f "$peers/ts/package.json" ]]; then
    echo '{"name": "elicit-bench-peer-ts", "private": true, "type": "module"}' >"$peers/ts/package.json"
fi
# The installed version of an npm package (its package.json is not among its exports).
npm_version() {
    node -p "JSON.parse(require('fs').readFileSync('$peers/ts/node_modules/$1/package.json', 'utf8')).version" 2>/dev/null || true
}
if [[ "$(npm_version @modelcontextprotocol/server)" != "$ts_server_version" ]] ||
    [[ "$(npm_version @modelcontextprotocol/node)" != "$ts_node_version" ]]; then
    (cd "$peers/ts" && npm install --silent --no-audit --no-fund \
        "@modelcontextprotocol/server@$ts_server_version" "@modelcontextprotocol/node@$ts_node_version")
fi
# ESM resolves packages next to the script: run a copy from the install folder, with the module
# the two TypeScript servers share.
cp benches/peers/typescript_server.mjs benches/peers/peer_http.mjs "$peers/ts/"
# The SDK v1 in a folder of its own (its package name differs, but keep the two trees apart).
mkdir -p "$peers/ts-v1"
if [[ ! -f "$peers/ts-v1/package.json" ]]; then
    echo '{"name": "elicit-bench-peer-ts-v1", "private": true, "type": "module"}' >"$peers/ts-v1/package.json"
fi
ts_v1_have=$(node -p "JSON.parse(require('fs').readFileSync('$peers/ts-v1/node_modules/@modelcontextprotocol/sdk/package.json', 'utf8')).version" 2>/dev/null || true)
if [[ "$ts_v1_have" != "$ts_v1_version" ]]; then
    (cd "$peers/ts-v1" && npm install --silent --no-audit --no-fund --save-exact "@modelcontextprotocol/sdk@$ts_v1_version")
fi
cp benches/peers/typescript_v1_server.mjs benches/peers/peer_http.mjs "$peers/ts-v1/"
{
    echo "mcp $("$peers/py/bin/python" -c "import importlib.metadata as m; print(m.version('mcp'))") (PyPI) on $("$peers/py/bin/python" --version), 1 uvicorn worker"
    echo "@modelcontextprotocol/server $(npm_version @modelcontextprotocol/server) + @modelcontextprotocol/node $(npm_version @modelcontextprotocol/node) (npm) on Node $(node --version), 1 process"
    echo "@modelcontextprotocol/sdk $(node -p "JSON.parse(require('fs').readFileSync('$peers/ts-v1/node_modules/@modelcontextprotocol/sdk/package.json', 'utf8')).version") (npm, TypeScript SDK v1) on Node $(node --version), 1 process, stateful sessions"
} >"$out/e2e/versions.txt"

log "micro-benchmarks (criterion)"
cargo bench -p elicit-benches --bench schema --bench parse --bench request_state 2>&1 | tee "$out/criterion.log" >&2
target/release/alloc_count >"$out/allocs.json"

# The store benchmark (BENCHMARKS.md, "Completion store and exactly-once bookkeeping"): the in-process store
# with 500,000 live records, and one replayed round with a `once` on it; then the same on a
# redis-server started here on loopback (skipped when redis-server is not installed). Its figures
# are criterion's (target/criterion/{store,round,redis_store,redis_round}), not in bench-report.
log "completion store and exactly-once bookkeeping (criterion)"
rm -rf target/criterion/store target/criterion/round target/criterion/redis_store target/criterion/redis_round
if command -v redis-server >/dev/null 2>&1; then
    redis_port=6390
    redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no >"$out/redis.log" 2>&1 &
    redis_pid=$!
    sleep 1
    ELICIT_BENCH_REDIS="redis://127.0.0.1:$redis_port" cargo bench -p elicit-benches --bench store 2>&1 | tee "$out/store.log" >&2 || true
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
else
    cargo bench -p elicit-benches --bench store 2>&1 | tee "$out/store.log" >&2
fi

# cpu_ticks PID: user + system CPU time of a process, in clock ticks.
cpu_ticks() {
    awk '{print $14 + $15}' "/proc/$1/stat"
}

# run_e2e NAME PORT CONCURRENCY COMMAND...: serve, measure each of $modes (default: flows then
# plain calls), stop.
run_e2e() {
    local name="$1" port="$2" concurrency="$3"
    shift 3
    log "end to end: $name"
    start_server "$name" "$out/e2e/$name-server.log" "$@"
    wait_for_port "$port"
    for mode in ${modes:-flow plain}; do
        local before after
        before=$(cpu_ticks "$server_pid")
        target/release/bench-loadgen --url "http://127.0.0.1:$port/mcp" --mode "$mode" \
            --concurrency "$concurrency" --trials "$trials" --seconds "$trial_seconds" --warmup-seconds 1 \
            >"$out/e2e/$name-$mode.json" || log "$name $mode failed: $(cat "$out/e2e/$name-$mode.json")"
        after=$(cpu_ticks "$server_pid")
        # The server process's CPU time (all its threads) over that load run, in seconds.
        echo "$(( after - before )) $(getconf CLK_TCK)" | awk '{print $1 / $2}' >"$out/e2e/$name-$mode.cpu"
    done
    stop_server
}

run_e2e ours 8941 "$concurrency" target/release/bench-server --listen 127.0.0.1:8941 --threads 2
run_e2e ours1 8942 "$concurrency" target/release/bench-server --listen 127.0.0.1:8942 --threads 1
run_e2e rmcp 8946 "$concurrency" target/release/bench-server --listen 127.0.0.1:8946 --threads 2 --server rmcp
run_e2e python 8943 "$concurrency" "$peers/py/bin/python" benches/peers/python_server.py 8943
run_e2e typescript 8944 "$concurrency" node "$peers/ts/typescript_server.mjs" 8944
# One request in flight: the flow against the plain call where round trips, not CPU, set the pace.
run_e2e ours-c1 8945 1 target/release/bench-server --listen 127.0.0.1:8945 --threads 2
# The same flow as a task of the Tasks extension, against MRTR in the same load run.
run_tasks "$out/e2e" 8951

# The 2025 wire: each worker keeps one 2025-11-25 session; a flow is a call whose ask is pushed.
modes=legacy run_e2e ours-legacy 8947 "$concurrency" target/release/bench-server --listen 127.0.0.1:8947 --threads 2
modes=legacy run_e2e typescript-v1 8948 "$concurrency" node "$peers/ts-v1/typescript_v1_server.mjs" 8948

# Memory per parked 2025-era flow: $parked flows parked at once, 16 per session (our default bound
# on outstanding asks per session), on a fresh server; RSS sampled from /proc. Each parked call
# holds one loopback connection on both sides, hence the file limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
# run_park NAME PORT COMMAND...: serve, park, stop.
run_park() {
    local name="$1" port="$2"
    shift 2
    log "parked flows: $name ($parked)"
    start_server "$name" "$out/e2e/$name-park-server.log" "$@"
    wait_for_port "$port"
    target/release/bench-park --url "http://127.0.0.1:$port/mcp" --pid "$server_pid" --flows "$parked" --per-session 16 \
        >"$out/e2e/$name-park.json" || log "$name park failed"
    stop_server
}
run_park ours 8949 target/release/bench-server --listen 127.0.0.1:8949 --threads 2
run_park typescript-v1 8950 node "$peers/ts-v1/typescript_v1_server.mjs" 8950

target/release/bench-report --criterion target/criterion --allocs "$out/allocs.json" --e2e "$out/e2e" | tee "$out/report.md"

#!/usr/bin/env bash
# Every benchmark of BENCHMARKS.md in one run, then its tables (Markdown on stdout).
#
#   scripts/bench.sh                 # ~17 minutes on a 2-core machine once built (a few more for
#                                    # the first release build and the peer installs)
#   scripts/bench.sh --only tasks    # just the task against MRTR, same flow (~1 minute once built)
#
# 1. criterion micro-benchmarks (schema, parse, request_state, and the form page: rendering it and
#    reading its POST, form_page) with criterion's default timings;
# 2. allocations per call and sealed sizes (`alloc_count`; a seal + open counted together);
# 3. the store bench (benches/benches/store.rs): the in-process store with 500,000 live records,
#    replayed rounds, and a replayed round that reaches a `once` with $GROWTH_RECORDS live ledger
#    records in the store (written through the store's own `FlowLedger::finish`, many at a time:
#    1,000,000 take a few seconds in-process and about half a minute on Redis here; the times are
#    in growth/prefill.json); the replayed rounds on a SQLite file too; then all of it again on a
#    redis-server started here on loopback; then one Redis against a Redis Cluster of three masters
#    started here (benches/benches/cluster.rs: the replayed `once` round, flows/s through the
#    engine, and a completion's wake-up, PUBLISH against SPUBLISH, with redis-benchmark);
# 4. end to end over loopback HTTP: the same load generator, concurrency and trials against our
#    bench server (tokio's default 2 worker threads, and 1 thread), rmcp by hand, the official
#    Python SDK v2 and TypeScript SDK v2 serving the same two tools; ours and rmcp by hand again
#    with one request in flight; ours against rmcp by hand (flows, plain calls) and against each
#    SDK v2 (flows) again, paired: both servers up, one load run whose trials alternate between
#    them (`bench-loadgen --against`), each round's ratio compared on the machine as it was for
#    both (the goals against these peers are judged on these rounds); a task of the Tasks
#    extension with one input request against the same flow as Multi Round-Trip Requests, on
#    one server in one load run, their trials
#    alternating; our two-round flows on the in-process store and on a SQLite file, back to back;
#    then the 2025 wire: the same flow on 2025-11-25 sessions (ask pushed as
#    `elicitation/create`), ours against the official TypeScript SDK v1
#    (benches/peers/typescript_v1_server.mjs) and rmcp by hand (the form pushed with rmcp's own
#    peer), and the memory each holds per parked 2025-era flow (`bench-park`, $PARKED flows parked
#    at once, a fresh server); then what heartbeats cost parked flows: ours with $HEARTBEAT_PARKED
#    flows parked whose calls carry a progressToken, held $HEARTBEAT_HOLD s, heartbeats every
#    $HEARTBEAT_MS ms against none, a fresh server each (server CPU over the hold, RSS);
# 5. cost growth (about 1.5 minutes more): two-round flows/s and server CPU per flow of ours
#    (2 threads) at concurrency $GROWTH_CONCURRENCY, a fresh server per point, $GROWTH_TRIALS trials
#    of $GROWTH_SECONDS s each (a curve: fewer and shorter trials than the rows above); and our
#    server's RSS with $GROWTH_PARKED 2025-era flows parked, 16 per session, a fresh server per size
#    (a size the open-file limit does not allow fails loudly and the report says why; the largest
#    size the limit allows, in thousands, is then measured too: 19,000 under a limit of 20,000);
# 6. `bench-report`: every figure, every goal (each a ratio of two figures of this run, but the
#    store's Redis round, an absolute figure), then the growth curves.
#
# The peer SDKs are installed with pip and npm into a scratch folder outside the repository
# ($ELICIT_BENCH_PEERS, default ${TMPDIR:-/tmp}/elicit-bench-peers); their server sources are
# benches/peers/. Results go to target/bench-results/ (report.md is the printed report, growth/
# the growth curves' reports); with `--only tasks`, to target/bench-results/tasks/ (report.md and
# ours-tasks.json), nothing else run.
# Tunables (environment): CONCURRENCY (32), TRIALS (5), TRIAL_SECONDS (3), PARKED (10000),
# HEARTBEAT_PARKED (2000), HEARTBEAT_MS (1000), HEARTBEAT_HOLD (10),
# GROWTH_CONCURRENCY ("1 8 32 128"), GROWTH_TRIALS (3), GROWTH_SECONDS (3),
# GROWTH_PARKED ("1000 10000 50000"), GROWTH_RECORDS ("10000,1000000").
#
# A parked flow holds a loopback connection, a file on each side: the script raises the open-file
# limit as far as it may (to the hard limit; the hard limit itself only with CAP_SYS_RESOURCE).
# 50,000 parked flows need 50,320 files on each side. bench-park spreads its connections
# over several loopback source addresses (one address reaches one port from about 28,000
# ephemeral ports), each run its own range.
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
heartbeat_parked="${HEARTBEAT_PARKED:-2000}"
heartbeat_ms="${HEARTBEAT_MS:-1000}"
heartbeat_hold="${HEARTBEAT_HOLD:-10}"
growth_concurrency="${GROWTH_CONCURRENCY:-1 8 32 128}"
growth_trials="${GROWTH_TRIALS:-3}"
growth_seconds="${GROWTH_SECONDS:-3}"
growth_parked="${GROWTH_PARKED:-1000 10000 50000}"
growth_records="${GROWTH_RECORDS:-10000,1000000}"
# bench-server's caps on 2025-era sessions for the parking runs (one session per 16 flows).
park_sessions=100000
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

rm -rf "$out" target/criterion/schema target/criterion/parse target/criterion/request_state target/criterion/form_page
mkdir -p "$out/e2e" "$out/growth"

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
cargo bench -p elicit-benches --bench schema --bench parse --bench request_state --bench form_page 2>&1 |
    tee "$out/criterion.log" >&2
target/release/alloc_count >"$out/allocs.json"

# The store benchmark (BENCHMARKS.md, "Completion store and exactly-once bookkeeping"): the in-process store
# with 500,000 live records, and one replayed round with a `once` on it; the round that reaches a
# `once` with $growth_records live ledger records in the store; then the same on a redis-server
# started here on loopback (skipped when redis-server is not installed). Its figures are
# criterion's (target/criterion/{store,round,round_growth} and their redis_ twins), read by
# bench-report; how long writing the ledger records took, growth/prefill.json.
log "completion store and exactly-once bookkeeping (criterion)"
rm -rf target/criterion/store target/criterion/round target/criterion/redis_store target/criterion/redis_round \
    target/criterion/round_growth target/criterion/redis_round_growth
export ELICIT_BENCH_GROWTH_RECORDS="$growth_records" ELICIT_BENCH_PREFILL_OUT="$out/growth/prefill.json"
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

# One Redis against a Redis Cluster (benches/benches/cluster.rs): the replayed `once` round
# (criterion, target/criterion/cluster_round) and two-round flows/s through the engine
# ($out/cluster.json), on a redis-server and on a cluster of three masters (no replicas: on this
# machine a replica's CPU would be taken from the masters, and one Redis has none either), all
# started here on loopback in the same run; then the cost of a completion's wake-up on the cluster, a
# `PUBLISH` (every node relays it: what the store uses) against a sharded `SPUBLISH`
# (redis-benchmark, $out/e2e/cluster-publish.txt). Skipped without redis-server.
if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
    log "one Redis against a Redis Cluster"
    cluster_dir="$(mktemp -d)"
    cluster_pids=()
    redis-server --port 6391 --bind 127.0.0.1 --save "" --appendonly no >"$out/cluster-one.log" 2>&1 &
    cluster_pids+=($!)
    cluster_nodes=()
    for port in 7301 7302 7303; do
        redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$cluster_dir" \
            --cluster-enabled yes --cluster-config-file "nodes-$port.conf" --cluster-node-timeout 1000 \
            >"$out/cluster-$port.log" 2>&1 &
        cluster_pids+=($!)
        cluster_nodes+=("127.0.0.1:$port")
    done
    for port in 6391 7301 7302 7303; do
        for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    done
    redis-cli --cluster create "${cluster_nodes[@]}" --cluster-replicas 0 --cluster-yes >"$out/cluster-create.log" 2>&1
    for _ in $(seq 1 200); do
        redis-cli -p 7301 cluster info | grep -q cluster_state:ok && break
        sleep 0.1
    done
    ELICIT_BENCH_REDIS="redis://127.0.0.1:6391" \
        ELICIT_BENCH_REDIS_CLUSTER="redis+cluster://$(IFS=,; echo "${cluster_nodes[*]}")" \
        ELICIT_BENCH_CLUSTER_OUT="$out/e2e/cluster.json" CONCURRENCY="$concurrency" TRIALS=3 TRIAL_SECONDS="$trial_seconds" \
        cargo bench -p elicit-benches --bench cluster 2>&1 | tee "$out/cluster.log" >&2 || true
    # SPUBLISH is answered by the master of the channel's slot only (the others answer MOVED).
    channel=elicit:url-completed
    owner=7301
    for port in 7301 7302 7303; do
        [[ "$(redis-cli -p "$port" spublish "$channel" x)" =~ ^[0-9]+$ ]] && owner=$port && break
    done
    publish() { redis-benchmark -p "$1" -n 100000 -c 8 --csv "$2" "$channel" 0123456789abcdefghijkl | tail -1; }
    {
        echo "PUBLISH on one Redis (requests/s and latencies, ms): $(publish 6391 PUBLISH)"
        echo "PUBLISH on the cluster: $(publish "$owner" PUBLISH)"
        echo "SPUBLISH on the cluster: $(publish "$owner" SPUBLISH)"
    } >"$out/e2e/cluster-publish.txt" 2>&1 || true
    kill "${cluster_pids[@]}" 2>/dev/null || true
    wait "${cluster_pids[@]}" 2>/dev/null || true
    rm -rf "$cluster_dir"
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
# run_paired PEER MODE PORT PEER_PORT PEER_COMMAND...: ours (2 threads) on PORT and PEER_COMMAND
# (listening on PEER_PORT) both up, one load run of MODE whose trials alternate between them, each
# server's CPU read around each of its trials (`--pid`, `--against-pid`): paired-PEER-MODE.json.
run_paired() {
    local peer="$1" mode="$2" port="$3" peer_port="$4"
    shift 4
    log "end to end, paired: ours against $peer ($mode)"
    # The peer first, waited for as every server is; then ours, which `stop_server` stops.
    start_server "paired-$peer-peer" "$out/e2e/paired-$peer-$mode-peer.log" "$@"
    wait_for_port "$peer_port"
    local peer_pid=$server_pid
    start_server "paired-$peer" "$out/e2e/paired-$peer-$mode-server.log" \
        target/release/bench-server --listen "127.0.0.1:$port" --threads 2
    wait_for_port "$port"
    target/release/bench-loadgen --url "http://127.0.0.1:$port/mcp" --pid "$server_pid" \
        --against "http://127.0.0.1:$peer_port/mcp" --against-pid "$peer_pid" --mode "$mode" \
        --concurrency "$concurrency" --trials "$trials" --seconds "$trial_seconds" --warmup-seconds 1 \
        >"$out/e2e/paired-$peer-$mode.json" || log "paired $peer $mode failed: $(cat "$out/e2e/paired-$peer-$mode.json")"
    stop_server
    kill "$peer_pid" 2>/dev/null || true
    wait "$peer_pid" 2>/dev/null || true
}

run_paired rmcp flow 8921 8922 target/release/bench-server --listen 127.0.0.1:8922 --threads 2 --server rmcp
run_paired rmcp plain 8923 8924 target/release/bench-server --listen 127.0.0.1:8924 --threads 2 --server rmcp
run_paired python flow 8925 8926 "$peers/py/bin/python" benches/peers/python_server.py 8926
run_paired typescript flow 8927 8928 node "$peers/ts/typescript_server.mjs" 8928
# One request in flight: the flow against the plain call where round trips, not CPU, set the pace.
run_e2e ours-c1 8945 1 target/release/bench-server --listen 127.0.0.1:8945 --threads 2
run_e2e rmcp-c1 8954 1 target/release/bench-server --listen 127.0.0.1:8954 --threads 2 --server rmcp
# The same flow as a task of the Tasks extension, against MRTR in the same load run.
run_tasks "$out/e2e" 8951

# ---- The durable store (SQLite) against the in-process one ----
# Two-round flows/s of ours (2 threads) on the in-process store and on a SQLite file
# (`--store sqlite:…`, its defaults: WAL, synchronous NORMAL), back to back in this run, the same
# load; bench-report's goal row reads e2e/store-memory-flow.json and e2e/store-sqlite-flow.json.
# (The replayed `once` round on SQLite is the store bench's `sqlite_round/once_round`, above.)
sqlite_dir=$(mktemp -d)
modes=flow run_e2e store-memory 8955 "$concurrency" \
    target/release/bench-server --listen 127.0.0.1:8955 --threads 2 --store memory
modes=flow run_e2e store-sqlite 8956 "$concurrency" \
    target/release/bench-server --listen 127.0.0.1:8956 --threads 2 --store "sqlite:$sqlite_dir/bench.db"
rm -rf "$sqlite_dir"
# ---- end of the durable store's block ----

# The 2025 wire: each worker keeps one 2025-11-25 session; a flow is a call whose ask is pushed.
modes=legacy run_e2e ours-legacy 8947 "$concurrency" target/release/bench-server --listen 127.0.0.1:8947 --threads 2
modes=legacy run_e2e typescript-v1 8948 "$concurrency" node "$peers/ts-v1/typescript_v1_server.mjs" 8948
# rmcp by hand, pushing the form (`--server rmcp-pushed`): what any server on rmcp starts from.
modes=legacy run_e2e rmcp-legacy 8952 "$concurrency" \
    target/release/bench-server --listen 127.0.0.1:8952 --threads 2 --server rmcp-pushed

# Memory per parked 2025-era flow: $parked flows parked at once, 16 per session (our default bound
# on outstanding asks per session), on a fresh server; RSS sampled from /proc. Each parked call
# holds one loopback connection on both sides, hence the file limit: the hard limit raised first
# as far as the kernel allows (only with CAP_SYS_RESOURCE), then the soft limit to it.
ulimit -Hn "$(cat /proc/sys/fs/nr_open 2>/dev/null || echo 1048576)" 2>/dev/null || true
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
log "open-file limit: $(ulimit -n)"
# run_park NAME PORT FLOWS FIRST_SOURCE REPORT COMMAND...: serve, park FLOWS flows with connections
# from loopback addresses from FIRST_SOURCE on (a range per run, so that no run meets the ports
# another left in TIME_WAIT), stop. REPORT gets bench-park's JSON; on failure REPORT is removed,
# and REPORT's .err says why. $park_options (if set) go to bench-park as they are.
run_park() {
    local name="$1" port="$2" flows="$3" source="$4" report="$5"
    shift 5
    local err="${report%.json}.err"
    log "parked flows: $name ($flows)"
    start_server "$name" "${report%.json}-server.log" "$@"
    wait_for_port "$port"
    if target/release/bench-park --url "http://127.0.0.1:$port/mcp" --pid "$server_pid" --flows "$flows" \
        --per-session 16 --first-source "$source" ${park_options:-} >"$report" 2>"$err"; then
        rm -f "$err"
    else
        rm -f "$report"
        log "$name: parking $flows flows FAILED: $(cat "$err")"
    fi
    stop_server
}
run_park ours 8949 "$parked" 127.0.1.1 "$out/e2e/ours-park.json" \
    target/release/bench-server --listen 127.0.0.1:8949 --threads 2 --max-sessions "$park_sessions"
run_park typescript-v1 8950 "$parked" 127.0.2.1 "$out/e2e/typescript-v1-park.json" \
    node "$peers/ts-v1/typescript_v1_server.mjs" 8950
run_park rmcp 8953 "$parked" 127.0.3.1 "$out/e2e/rmcp-park.json" \
    target/release/bench-server --listen 127.0.0.1:8953 --threads 2 --server rmcp-pushed

# What heartbeats cost parked flows (docs/server.md, "A person slower than the host's timeout"):
# ours with $heartbeat_parked flows parked, each call carrying a progressToken, held
# $heartbeat_hold s after the RSS is sampled; the server's CPU over the hold, heartbeats every
# $heartbeat_ms ms against none (period 0), a fresh server each.
echo "{\"period_ms\": $heartbeat_ms}" >"$out/e2e/heartbeat.json"
park_options="--progress --hold $heartbeat_hold" run_park heartbeat-on 8957 "$heartbeat_parked" 127.0.4.1 \
    "$out/e2e/heartbeat-on-park.json" target/release/bench-server --listen 127.0.0.1:8957 --threads 2 \
    --max-sessions "$park_sessions" --heartbeat-ms "$heartbeat_ms"
park_options="--progress --hold $heartbeat_hold" run_park heartbeat-off 8958 "$heartbeat_parked" 127.0.5.1 \
    "$out/e2e/heartbeat-off-park.json" target/release/bench-server --listen 127.0.0.1:8958 --threads 2 \
    --max-sessions "$park_sessions" --heartbeat-ms 0

# Cost growth: two-round flows/s and server CPU per flow against concurrency, a fresh server per
# point (no point inherits the ledger records an earlier one left), the load generator reading the
# server's CPU time around its warm-up and trials (`--pid`).
{
    echo "Flows against concurrency: ours (\`bench-server --threads 2\`), a fresh server per point; \`bench-loadgen --mode flow\` (one thread), $growth_trials trials of $growth_seconds s after 1 s of warm-up (a curve: fewer and shorter trials than the end-to-end rows)."
    echo "Parked flows: ours, a fresh server per size, 16 flows per session, the connections spread over loopback source addresses; open-file limit $(ulimit -n) (a parked flow holds a connection, a file on each side)."
    echo "Ledger records: the store bench, $growth_records live flow records."
} >"$out/growth/settings.txt"
port=8960
for c in $growth_concurrency; do
    log "growth: flows at concurrency $c"
    start_server "growth-c$c" "$out/growth/flow-c$c-server.log" \
        target/release/bench-server --listen "127.0.0.1:$port" --threads 2
    wait_for_port "$port"
    target/release/bench-loadgen --url "http://127.0.0.1:$port/mcp" --mode flow --pid "$server_pid" \
        --concurrency "$c" --trials "$growth_trials" --seconds "$growth_seconds" --warmup-seconds 1 \
        >"$out/growth/flow-c$c.json" || log "growth: concurrency $c failed: $(cat "$out/growth/flow-c$c.json")"
    stop_server
    port=$((port + 1))
done
# Memory against parked flows: each size on a fresh server, from its own source addresses. A size
# the open-file limit cannot hold (bench-park needs FLOWS + 320 files on each side) fails loudly
# and the report says why; the largest size it can hold, in thousands, is then measured too, so
# the line still has a point beyond the others.
fits=$(( ($(ulimit -n) - 320) / 1000 * 1000 ))
sizes="$growth_parked"
for flows in $growth_parked; do
    if (( flows > fits && fits >= 1000 )) && ! grep -qw "$fits" <<<"$sizes"; then
        log "growth: $flows parked flows need $((flows + 320)) open files, the limit is $(ulimit -n): also parking $fits"
        echo "The open-file limit $(ulimit -n) cannot hold $flows parked flows: $fits, the most it holds in thousands, measured too." \
            >>"$out/growth/settings.txt"
        sizes="$sizes $fits"
    fi
done
range=10
for flows in $(tr ' ' '\n' <<<"$sizes" | sort -n | uniq); do
    run_park "growth-park-$flows" "$port" "$flows" "127.0.$range.1" "$out/growth/park-$flows.json" \
        target/release/bench-server --listen "127.0.0.1:$port" --threads 2 --max-sessions "$park_sessions"
    port=$((port + 1))
    range=$((range + 1))
done

target/release/bench-report --criterion target/criterion --allocs "$out/allocs.json" --e2e "$out/e2e" \
    --growth "$out/growth" | tee "$out/report.md"

#!/usr/bin/env bash
# Instructions per unit of the end-to-end bench server under callgrind (BENCHMARKS.md, the
# callgrind profiles under "Goals"): a plain call, a two-round MRTR flow and a task flow with one
# input request, each a fixed number of times, one request at a time, on one server thread.
# Counts of instructions do not depend on the load of the machine, so two builds compare within
# about 0.1% where CPU times do not.
#
#   scripts/callgrind-units.sh [N]     # N units of each (default 300); ~3 minutes per server
#
# Uses target/release/bench-server (`cargo build --release -p elicit-benches --bins` first; with
# CARGO_PROFILE_RELEASE_DEBUG=line-tables-only the profiles name inlined functions) or $BIN.
# The driver is a stdlib Python client sending what bench-loadgen sends, a fixed count rather than
# for a time: a run's counts then do not depend on how many units a slow (instrumented) server
# got through, which moves the allocator's share (task records accumulate in the server).
# For each server (ours, then rmcp by hand, which serves no task tool): 30 units of each kind
# to warm up, then per kind the counters zeroed, N units, a dump. Output: one line per kind;
# the dumps in $OUT (default ${TMPDIR:-/tmp}/elicit-callgrind), for callgrind_annotate.
# Needs valgrind and python3.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
n="${1:-300}"
bin="${BIN:-$root/target/release/bench-server}"
out="${OUT:-${TMPDIR:-/tmp}/elicit-callgrind}"
mkdir -p "$out"
driver="$out/drive.py"
cat > "$driver" <<'PY'
# drive.py PORT KIND N: N units of KIND (plain, flow, task), one at a time, every answer checked.
import http.client, json, sys, time
port, kind, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
conn = http.client.HTTPConnection("127.0.0.1", port)
count = 0
def meta(tasks):
    caps = {"elicitation": {"form": {}}}
    if tasks:
        caps["extensions"] = {"io.modelcontextprotocol/tasks": {}}
    return {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps,
            "io.modelcontextprotocol/clientInfo": {"name": "elicit-bench-loadgen", "version": "0.1.0"}}
def post(method, params, name):
    global count
    count += 1
    body = json.dumps({"jsonrpc": "2.0", "id": count, "method": method, "params": params})
    conn.request("POST", "/mcp", body, {"Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
                 "Mcp-Method": method, "Mcp-Name": name})
    reply = conn.getresponse()
    message = json.loads(reply.read())
    if "result" not in message:
        sys.exit(f"{method}: HTTP {reply.status}: {message}")
    return message["result"]
def poll(task, answered):
    pause = 0.001
    while True:
        got = post("tasks/get", {"taskId": task, "_meta": meta(True)}, task)
        if got["status"] == "working" or (answered and answered in got.get("inputRequests", {})):
            time.sleep(pause)
            pause = min(pause * 2, 0.004)
            continue
        return got
answer = lambda key: {key: {"action": "accept", "content": {"name": "Ada"}}}
for _ in range(n):
    if kind == "plain":
        assert post("tools/call", {"name": "plain", "arguments": {}, "_meta": meta(False)}, "plain")["content"]
    elif kind == "flow":
        first = post("tools/call", {"name": "ask_name", "arguments": {}, "_meta": meta(False)}, "ask_name")
        key = next(iter(first["inputRequests"]))
        second = post("tools/call", {"name": "ask_name", "arguments": {}, "_meta": meta(False),
                      "inputResponses": answer(key), "requestState": first["requestState"]}, "ask_name")
        assert "Ada" in second["content"][0]["text"], second
    else:
        task = post("tools/call", {"name": "ask_name_task", "arguments": {}, "_meta": meta(True)},
                    "ask_name_task")["taskId"]
        asked = poll(task, None)
        assert asked["status"] == "input_required", asked
        key = next(iter(asked["inputRequests"]))
        post("tasks/update", {"taskId": task, "inputResponses": answer(key), "_meta": meta(True)}, task)
        done = poll(task, key)
        assert done["status"] == "completed" and "Ada" in done["result"]["content"][0]["text"], done
print(count)
PY
port=18790
for server in ours rmcp; do
  kinds="plain flow task"
  [ "$server" = rmcp ] && kinds="plain flow"
  log="$out/$server.server.log"
  valgrind --tool=callgrind --callgrind-out-file="$out/$server.%p.cg" "$bin" --listen "127.0.0.1:$port" \
    --threads 1 --server "$server" > "$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 150); do grep -q listening "$log" && break; sleep 0.2; done
  for kind in $kinds; do python3 "$driver" "$port" "$kind" 30 > /dev/null; done
  for kind in $kinds; do
    callgrind_control -z "$pid" > /dev/null
    requests=$(python3 "$driver" "$port" "$kind" "$n")
    callgrind_control -d "$kind" "$pid" > /dev/null
    sleep 1
    dump=$(ls -t "$out/$server.$pid.cg."* | head -1)
    mv "$dump" "$out/$server-$kind.cg"
    ir=$(awk '/^summary:/ {print $2}' "$out/$server-$kind.cg")
    echo "$server $kind: $((ir / n)) instructions per unit ($n units, $requests requests)"
  done
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  port=$((port + 1))
done

#!/usr/bin/env bash
# Instructions per unit of the end-to-end bench server under callgrind (BENCHMARKS.md, the
# callgrind profiles under "Goals"): a plain call, a two-round MRTR flow and a task flow with one
# input request, each a fixed number of times, one request at a time, on one server thread.
# Counts of instructions do not depend on the load of the machine, so two builds compare within
# about 0.1% where CPU times do not.
#
# Each line also gives what counts of instructions hide:
# - the first-level cache misses callgrind's cache model sees (`--cache-sim=yes`; instruction
#   fetches, data reads, data writes), per unit: code spread over more lines, and writes to
#   memory not in cache (a large future moved into a fresh allocation), cost time at equal
#   instructions;
# - the instructions outside SHA-256's compression function. valgrind does not emulate the SHA
#   extensions, so under it `sha2` runs its portable code (about 3,400 instructions a block)
#   where the host's CPU takes a few dozen; rmcp by hand's HMAC hashes about ten blocks a flow,
#   ours two, so the raw counts flatter rmcp by hand's side by about 27,000 a flow.
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
counts="$out/counts.py"
cat > "$counts" <<'PY'
# counts.py DUMP LABEL N REQUESTS: one line of per-unit figures from a callgrind dump.
import re, sys
dump, label, n, requests = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
names, fn, in_call, sha, events, total = {}, "", False, 0, [], []
for line in open(dump):
    if line.startswith("events:"):
        events = line.split()[1:]
    elif line.startswith("summary:"):
        total = [int(x) for x in line.split()[1:]]
    elif m := re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n")):
        kind, number, name = m.groups()
        names.setdefault(number, name or number)
        if kind == "fn":
            fn = names[number]
    elif line.startswith("calls="):
        in_call = True  # the next cost line is a call's inclusive cost, not this function's own
    elif line[:1].isdigit() or line[:1] in "+-*":
        if not in_call and fn.startswith("sha2::"):
            sha += int(line.split()[1])
        in_call = False
per = dict(zip(events, (x / n for x in total)))
print(f"{label}: {per['Ir']:.0f} instructions per unit ({per['Ir'] - sha / n:.0f} outside SHA-256 blocks); "
      f"L1 misses per unit: {per['I1mr']:.0f} instruction, {per['D1mr']:.0f} data read, {per['D1mw']:.0f} data write "
      f"({n} units, {requests} requests)")
PY
port=18790
for server in ours rmcp; do
  kinds="plain flow task"
  [ "$server" = rmcp ] && kinds="plain flow"
  log="$out/$server.server.log"
  valgrind --tool=callgrind --cache-sim=yes --callgrind-out-file="$out/$server.%p.cg" "$bin" --listen "127.0.0.1:$port" \
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
    python3 "$counts" "$out/$server-$kind.cg" "$server $kind" "$n" "$requests"
  done
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  port=$((port + 1))
done

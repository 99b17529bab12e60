#!/usr/bin/env bash
# Runs the official MCP conformance suite against conformance-server: the 14 SEP-2322
# input-required-result scenarios, server-stateless and the ten tasks-* scenarios of the Tasks
# extension must pass with no FAILURE and no WARNING;
# the 2025-era scenarios (clients opening with `initialize`) must pass with no FAILURE.
# Usage: scripts/conformance.sh [--full]   (--full also runs every scenario of --requirements 2026-07-28
# and prints the summary; that run's failures are reported, not fatal: see docs/conformance.md).
# CONFORMANCE_JOBS (default 4): how many scenarios run at once.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
eval "$(scripts/install-tools.sh)"
out="$root/target/conformance"
mkdir -p "$out"

. scripts/lib.sh
# conformance-server, and `elicit` for the client scenarios: lib.sh's one build command (a no-op
# after the test command's build step).
"${workspace_build[@]}" --quiet
log="$out/conformance-server.log"
ELICIT_STATE_KEYS="${ELICIT_STATE_KEYS:-$(head -c 32 /dev/urandom | base64)}" \
  start_server conformance-server "$log" target/debug/conformance-server --listen 127.0.0.1:0
wait_for_url "$log"
url="$server_url"

scenarios=(basic-elicitation basic-sampling basic-list-roots request-state multiple-input-requests
  multi-round missing-input-response non-tool-request result-type unsupported-methods tampered-state
  capability-check ignore-extra-params validate-input)
# The scenarios run a few at a time (CONFORMANCE_JOBS, default 4): each is a client of its own (and
# the client scenarios start mock servers on ports of their own), and most of a run is waiting.
# Each job writes its lines to a file of its own; they are printed in the order queued.
jobs_dir="$out/jobs"
rm -rf "$jobs_dir"
mkdir -p "$jobs_dir"
pids=()
queue() {
  local file pid running
  file=$(printf '%s/%03d' "$jobs_dir" "${#pids[@]}")
  while :; do
    running=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && running=$((running + 1)); done
    [ "$running" -lt "${CONFORMANCE_JOBS:-4}" ] && break
    wait -n || true
  done
  "$@" >"$file" 2>&1 &
  pids+=("$!")
}
run() {
  local name=$1 result
  if ! result=$(timeout 120 conformance server --url "$url" --scenario "$name" -o "$out" 2>&1); then
    echo "FAIL $name"; echo "$result" | grep -E "FAILURE|WARNING" || true; return
  fi
  local summary
  summary=$(echo "$result" | grep -E "^Passed: " | tail -n1)
  if ! echo "$summary" | grep -q " 0 failed, 0 warnings"; then
    echo "FAIL $name: $summary"; echo "$result" | grep -E "FAILURE|WARNING" || true; return
  fi
  echo "ok   $name: $summary"
}
for s in "${scenarios[@]}"; do queue run "input-required-result-$s"; done
queue run server-stateless

# ---- The Tasks extension (io.modelcontextprotocol/tasks): its ten server scenarios ----
# Extension scenarios are off the spec timeline: run without --spec-version (any value skips them).
# tasks-status-notifications is a placeholder of the suite (one SKIPPED check, nothing scored).
task_scenarios=(tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal
  tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-status-notifications
  tasks-required-task-error tasks-mrtr-composition)
for s in "${task_scenarios[@]}"; do queue run "$s"; done
# ---- end of the Tasks extension block ----

# ---- 2025-era server scenarios: the same fixture, clients opening with `initialize` ----
# Each runs at the revision(s) the suite defines it for; any FAILURE fails the run.
legacy_scenarios=(
  "2025-06-18 server-initialize" "2025-06-18 ping" "2025-06-18 tools-call-elicitation" "2025-06-18 tools-call-sampling"
  "2025-11-25 server-initialize" "2025-11-25 ping" "2025-11-25 tools-call-elicitation" "2025-11-25 tools-call-sampling"
  "2025-11-25 elicitation-sep1034-defaults" "2025-11-25 elicitation-sep1330-enums"
  "2025-11-25 server-session-lifecycle" "2025-11-25 server-sse-multiple-streams" "2025-11-25 tools-list"
  "2025-11-25 tools-call-simple-text" "2025-11-25 tools-call-image" "2025-11-25 tools-call-audio"
  "2025-11-25 tools-call-embedded-resource" "2025-11-25 tools-call-mixed-content" "2025-11-25 tools-call-error"
  "2025-11-25 tools-call-with-progress" "2025-11-25 completion-complete" "2025-11-25 resources-list"
  "2025-11-25 resources-read-text" "2025-11-25 resources-read-binary" "2025-11-25 resources-templates-read"
  "2025-11-25 prompts-list" "2025-11-25 prompts-get-simple" "2025-11-25 prompts-get-with-args"
  "2025-11-25 prompts-get-embedded-resource" "2025-11-25 prompts-get-with-image" "2025-11-25 dns-rebinding-protection"
)
run_legacy() {
  local version=$1 name=$2 result summary
  if ! result=$(timeout 120 conformance server --url "$url" --scenario "$name" --spec-version "$version" -o "$out" 2>&1) \
     || echo "$result" | grep -q "FAILURE"; then
    echo "FAIL $name @ $version"; echo "$result" | grep -E "FAILURE|WARNING|rror" | head -n 20 || true; return
  fi
  summary=$(echo "$result" | grep -E "^Passed: " | tail -n1)
  echo "ok   $name @ $version: $summary"
}
for entry in "${legacy_scenarios[@]}"; do queue run_legacy $entry; done
# ---- end of the 2025-era block ----

# The client side: elicit against the suite's mock servers, every 2026-07-28 client scenario (the
# 25 scored auth/* ones included) and json-schema-2020-12-preservation (added after the release).
client_scenarios=(tools_call request-metadata sep-2322-client-request-state http-standard-headers
  http-custom-headers http-invalid-tool-headers json-schema-ref-no-deref json-schema-2020-12-preservation
  auth/metadata-default auth/metadata-var1 auth/metadata-var2 auth/metadata-var3 auth/basic-cimd
  auth/scope-from-www-authenticate auth/scope-from-scopes-supported auth/scope-omitted-when-undefined
  auth/scope-step-up auth/scope-retry-limit auth/token-endpoint-auth-basic auth/token-endpoint-auth-post
  auth/token-endpoint-auth-none auth/pre-registration auth/resource-mismatch auth/offline-access-scope
  auth/offline-access-not-supported auth/authorization-server-migration auth/iss-supported
  auth/iss-not-advertised auth/iss-supported-missing auth/iss-wrong-issuer auth/iss-unexpected
  auth/iss-normalized auth/metadata-issuer-mismatch)
# The token folder of each client scenario is a scratch one of its own: nothing of the user's is
# read or written, and scenarios running side by side share nothing.
run_client() {
  local name=$1 result
  if result=$(ELICIT_CONFIG_DIR="$out/elicit-config/${name//\//-}" timeout 120 conformance client \
      --command "$root/target/debug/elicit --conformance" --scenario "$name" -o "$out" 2>&1) \
     && echo "$result" | grep -q " 0 failed, 0 warnings"; then
    echo "ok   $name: $(echo "$result" | grep -E '^Passed: ' | tail -n1)"
  else
    echo "FAIL $name"; echo "$result" | grep -E "FAILURE|WARNING|^Passed" | tail -n 20
  fi
}
for name in "${client_scenarios[@]}"; do queue run_client "$name"; done

# ---- 2025-era client scenarios: elicit against the suite's 2025-11-25 fixtures ----
# Twice: following MCP_CONFORMANCE_PROTOCOL_VERSION as the suite asks, and with it unset, so the
# probe alone (server/discover, then initialize) must find the era against each fixture.
legacy_client=(initialize tools_call elicitation-sep1034-client-defaults)
run_legacy_client() {
  local name=$1 how=$2 label result
  label="$name (2025-11-25${how:+, probe only})"
  if result=$(ELICIT_CONFIG_DIR="$out/elicit-config/legacy-$name${how:+-probe}" timeout 120 conformance client \
      --command "${how:+$how }$root/target/debug/elicit --conformance" \
      --scenario "$name" --spec-version 2025-11-25 -o "$out" 2>&1) \
     && echo "$result" | grep -q " 0 failed, 0 warnings"; then
    echo "ok   $label: $(echo "$result" | grep -E '^Passed: ' | tail -n1)"
  else
    echo "FAIL $label"; echo "$result" | grep -E "FAILURE|WARNING|^Passed" | tail -n 20
  fi
}
for name in "${legacy_client[@]}"; do
  for how in "" "env -u MCP_CONFORMANCE_PROTOCOL_VERSION"; do queue run_legacy_client "$name" "$how"; done
done
wait "${pids[@]}" || true
cat "$jobs_dir"/*
# A scenario passed only if its job says so on its first line: a job that died without a word
# counts as failed, as does a job that never ran.
failed=0
for file in "$jobs_dir"/*; do head -n1 "$file" | grep -q '^ok   ' || failed=1; done
[ "$(find "$jobs_dir" -type f | wc -l)" -eq "${#pids[@]}" ] || failed=1
# ---- end of 2025-era client scenarios ----

if [ "${1:-}" = "--full" ]; then
  timeout 900 conformance server --url "$url" --requirements 2026-07-28 -o "$out/full" >"$out/full.txt" 2>&1 || true
  grep -E "^(✓|✗)|^Total" "$out/full.txt" || true
fi

if [ "$failed" -ne 0 ]; then echo "conformance: FAILED"; exit 1; fi
n=$(( ${#scenarios[@]} + 1 + ${#task_scenarios[@]} + ${#client_scenarios[@]} + ${#legacy_scenarios[@]} + 2 * ${#legacy_client[@]} ))
echo "conformance: $n passed, 0 failed"

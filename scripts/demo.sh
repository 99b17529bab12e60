#!/usr/bin/env bash
# The main job: the showcase server and the elicit client against it, on embedded defaults.
# travel-server starts on a free loopback port; elicit books a trip (a form with every schema kind,
# a payment page approved out of band while elicit shows it pending, a confirmation), then rates it
# (two forms in one round). Answers come from examples/demo/answers.json; run
#   target/debug/elicit call --url <printed URL> book_trip
# yourself to answer in the terminal instead.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cargo build --quiet -p elicit-examples -p elicit-cli --bins
. scripts/lib.sh
log=$(mktemp)
start_server travel-server "$log" target/debug/travel-server --listen 127.0.0.1:0
trap 'stop_server; rm -f "$log"' EXIT
wait_for_url "$log"
url="$server_url"
echo "travel-server is at $url"
echo
echo "== elicit tools"
target/debug/elicit tools --url "$url"
echo
echo "== elicit call book_trip"
target/debug/elicit call --url "$url" book_trip \
  --answers examples/demo/answers.json --browser examples/demo/approve-later.sh
echo
echo "== elicit call rate_trip"
target/debug/elicit call --url "$url" rate_trip --answers examples/demo/answers.json

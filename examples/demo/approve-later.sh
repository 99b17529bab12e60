#!/usr/bin/env bash
# The demo's "browser": it is handed the payment page URL, and approves the payment a few seconds
# later, the way a person would after reading the page. Meanwhile elicit shows the step as pending.
# Uses bash's /dev/tcp so the demo needs no HTTP client installed.
set -euo pipefail
url=$1
delay=${DEMO_APPROVE_DELAY:-3}
rest=${url#http://}
hostport=${rest%%/*}
path=/${rest#*/}
(
  sleep "$delay"
  exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}"
  printf 'POST %s/approve HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n' "$path" "$hostport" >&3
  cat <&3 >/dev/null
) >/dev/null 2>&1 &

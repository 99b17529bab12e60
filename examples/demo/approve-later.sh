#!/usr/bin/env bash
# The demo's "browser": it is handed the payment page URL, and approves the payment a few seconds
# later, the way a person would after reading the page. Meanwhile elicit shows the step as pending.
# Like a browser it loads the page first, keeps the nonce cookie it sets and the form's hidden
# token, and sends both back with the Approve form: the page refuses a submission without them.
# Uses bash's /dev/tcp (and sed) so the demo needs no HTTP client installed.
set -euo pipefail
url=$1
delay=${DEMO_APPROVE_DELAY:-3}
rest=${url#http://}
hostport=${rest%%/*}
path=/${rest#*/}

# exchange FORMAT ARGS...: sends one printf-formatted request on a fresh connection and prints
# the whole answer.
exchange() {
  exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}"
  # shellcheck disable=SC2059 # the format is ours, the arguments are the variable parts
  printf "$@" >&3
  cat <&3
  exec 3<&-
}

(
  sleep "$delay"
  page=$(exchange 'GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$path" "$hostport")
  cookie=$(printf '%s\n' "$page" | tr -d '\r' | sed -n 's/^[Ss]et-[Cc]ookie: *\(pay_nonce=[^;]*\).*/\1/p')
  token=$(printf '%s\n' "$page" | sed -n 's/.*name="csrf" value="\([^"]*\)".*/\1/p')
  body="csrf=${token%%$'\n'*}"
  exchange 'POST %s/approve HTTP/1.1\r\nHost: %s\r\nCookie: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
    "$path" "$hostport" "${cookie%%$'\n'*}" "${#body}" "$body" >/dev/null
) >/dev/null 2>&1 &

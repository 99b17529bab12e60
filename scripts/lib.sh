# Shell helpers shared by the scripts: source it, do not run it.
#
#   . "$root/scripts/lib.sh"
#   start_server travel-server "$log" target/debug/travel-server --listen 127.0.0.1:0
#   wait_for_url "$log"            # sets server_url from the server's "listening on URL" line
#   ...
#   stop_server                    # also run on EXIT once start_server has been called
#
# One server at a time: start_server sets server_pid and server_name. Waits are bounded
# (START_TRIES tries 0.1 s apart, default 100); on failure they print the server's log and return 1.

# The build of every binary the tests and the conformance run start: the test command's build
# step, conformance.sh, and the tests themselves (`process::BUILD_ARGS` in tests/support, whose
# unit test holds this line to it) run this one command. `--benches` turns dev-dependencies on, so
# cargo unifies features as it does for the tests, and one build of every dependency serves all;
# any other selection would build the runtime and its dependencies again with another feature set.
workspace_build=(cargo build --workspace --bins --benches)

server_pid=""
server_name=""
server_log=""
server_url=""

lib_fail() {
    echo "${server_name:-server}: $*" >&2
    if [[ -n "$server_log" && -f "$server_log" ]]; then
        echo "--- ${server_log} ---" >&2
        cat "$server_log" >&2
    fi
    return 1
}

# free_port: prints a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
    local port
    for _ in $(seq 50); do
        port=$((20000 + RANDOM % 40000))
        if ! (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    echo "lib.sh: no free port found on 127.0.0.1" >&2
    return 1
}

# start_server NAME LOG COMMAND...: runs COMMAND in the background, stdout and stderr to LOG.
start_server() {
    server_name="$1" server_log="$2"
    shift 2
    "$@" >"$server_log" 2>&1 &
    server_pid=$!
    trap stop_server EXIT
}

# wait_for_url LOG: waits for the "listening on URL" line our servers print; sets server_url.
wait_for_url() {
    local log="$1"
    server_url=""
    for _ in $(seq "${START_TRIES:-100}"); do
        server_url=$(sed -n 's|^listening on \(http://[^ ]*\)$|\1|p' "$log" | head -n1)
        [[ -n "$server_url" ]] && return 0
        kill -0 "$server_pid" 2>/dev/null || lib_fail "exited before listening" || return 1
        sleep 0.1
    done
    lib_fail "did not print \"listening on\" in time"
}

# wait_for_port PORT: waits until something accepts connections on 127.0.0.1:PORT.
wait_for_port() {
    local port="$1"
    for _ in $(seq "${START_TRIES:-100}"); do
        (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        kill -0 "$server_pid" 2>/dev/null || lib_fail "exited before listening on port $port" || return 1
        sleep 0.1
    done
    lib_fail "did not listen on port $port in time"
}

# stop_server: stops the server start_server started, if it still runs.
stop_server() {
    if [[ -n "$server_pid" ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}

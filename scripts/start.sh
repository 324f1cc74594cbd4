#!/usr/bin/env bash
# npm start: set up, build, then run two local agents and print the one URL
# to open. Agent A serves the page on 127.0.0.1:7800; the page also drives
# agent B on 127.0.0.1:7801. Ctrl-C stops both.
#
#   MESHPERF_PORT_A / MESHPERF_PORT_B   control ports (default 7800 / 7801)
#   MESHPERF_SKIP_BUILD=1               start the already built binary
set -euo pipefail
SCRIPT_NAME=start
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT_A="${MESHPERF_PORT_A:-7800}"
PORT_B="${MESHPERF_PORT_B:-7801}"
HOST=127.0.0.1
VITE_ORIGIN="http://$HOST:5173"   # npm run dev -w web

if [ "${MESHPERF_SKIP_BUILD:-0}" != 1 ]; then
    bash "$ROOT/scripts/setup.sh"
    bash "$ROOT/scripts/build.sh"
fi
[ -x "$AGENT_BIN" ] || die "$AGENT_BIN not found: run npm run build"

TOKEN_A="$(random_token)"
TOKEN_B="$(random_token)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/meshperf-start.XXXXXX")"
pids=()

cleanup() {
    trap - EXIT INT TERM
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo; log "stopping both agents"; exit 0' INT TERM

# start_agent NAME PORT TOKEN ARGS...: starts an agent with its output in
# $tmp/NAME.log and waits for its ready line. The token goes through the
# environment, never argv (argv is visible to every user in ps).
start_agent() {
    local name="$1" port="$2" token="$3"; shift 3
    # setsid: Ctrl-C reaches this script only, which stops the agents itself,
    # so an agent that exits on its own is always worth reporting.
    MESHPERF_TOKEN="$token" setsid "$AGENT_BIN" agent --listen "$HOST:$port" "$@" \
        >"$tmp/$name.log" 2>&1 </dev/null &
    local pid=$!
    pids+=("$pid")
    local i
    for i in $(seq 1 100); do
        if grep -q ' ready: http' "$tmp/$name.log"; then
            eval "PID_$name=$pid"
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            local rc=0
            wait "$pid" || rc=$?
            sed "s/^/[agent $name] /" "$tmp/$name.log" >&2
            [ "$name" = A ] && log "hint: MESHPERF_PORT_A=NNNN npm start uses another port for agent A"
            [ "$name" = B ] && log "hint: MESHPERF_PORT_B=NNNN npm start uses another port for agent B"
            die "agent $name (port $port) exited with status $rc before it was ready"
        fi
        sleep 0.1
    done
    sed "s/^/[agent $name] /" "$tmp/$name.log" >&2
    die "agent $name (port $port) printed no ready line within 10 s"
}

start_agent A "$PORT_A" "$TOKEN_A" --allow-origin "$VITE_ORIGIN"
start_agent B "$PORT_B" "$TOKEN_B" --allow-origin "http://$HOST:$PORT_A" --allow-origin "$VITE_ORIGIN"

# The agents' own log lines, prefixed; their ready lines (URLs without the
# token, which they were given) are left out so that exactly one URL is
# printed: the paired one.
for name in A B; do
    pid_var="PID_$name"
    tail --pid="${!pid_var}" -n +1 -f "$tmp/$name.log" 2>/dev/null | grep --line-buffered -v ' ready: http' \
        | sed -u "s/^/[agent $name] /" >&2 &
done

echo
echo "meshperf: two agents running (A on $HOST:$PORT_A, B on $HOST:$PORT_B). Open:"
echo
echo "http://$HOST:$PORT_A/#token=$TOKEN_A&agent2=$HOST:$PORT_B&token2=$TOKEN_B"
echo
echo "Press Ctrl-C to stop both agents."

# Wait until either agent exits; then say which and stop the other.
set +e
wait -n "$PID_A" "$PID_B"
set -e
for name in A B; do
    pid_var="PID_$name"
    if ! kill -0 "${!pid_var}" 2>/dev/null; then
        rc=0; wait "${!pid_var}" 2>/dev/null || rc=$?
        log "agent $name exited unexpectedly (status $rc); stopping the other agent"
    fi
done
exit 1

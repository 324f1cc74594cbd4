# Sourced by tests/platforms/arm64.sh and windows.sh (after scripts/lib.sh).
#
# start_agent NAME VARIABLE CMD...: `CMD... agent` (the agent binary, or an
# emulator with it: qemu, wine) on a free loopback port with the token
# $token (given, so never printed), its output in $dir/NAME.out, its pid in
# `pids`, and VARIABLE set to its URL with the token. It lives at most
# $agent_lifetime_s (300) and must be ready within $agent_ready_s (30):
# emulated agents start slower. Calls `fail` when it is not.
start_agent() {
  local name=$1 var=$2 found
  shift 2
  MESHPERF_TOKEN=$token timeout "${agent_lifetime_s:-300}" "$@" agent --listen 127.0.0.1:0 >"$dir/$name.out" 2>&1 &
  pids+=($!)
  for _ in $(seq $((${agent_ready_s:-30} * 10))); do
    # A given token is not printed (the ready line says where it is): the
    # URL is the printed address with the token this script gave.
    found=$(grep -o ' ready: http://[^ #]*' "$dir/$name.out" 2>/dev/null | head -1 || true)
    if [ -n "$found" ]; then printf -v "$var" '%s#token=%s' "${found# ready: }" "$token"; return; fi
    sleep 0.1
  done
  cat "$dir/$name.out" >&2; fail "the $name agent did not start within ${agent_ready_s:-30} s"
}

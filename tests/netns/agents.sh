# Sourced by the namespace tests (run.sh, lul.sh, path.sh, mesh.sh).
#
# netns_begin TOOL...: a test's start, with `name` set: skipped (exit 0)
# unless root; `fail MESSAGE` (exit 1, naming the test); every TOOL
# installed; `root` (the checkout) and `bin` (the agent: $MESHPERF_BIN,
# else target/release/meshperf) set, bin present.
netns_begin() {
  if [ "$(id -u)" != 0 ]; then
    echo "$name: skipped (needs root to create network namespaces; CI runs it as root)"
    exit 0
  fi
  fail() { echo "$name: FAILED: $*" >&2; exit 1; }
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/setup.sh --test installs it as root)"
  done
  root=$(cd "$(dirname "$0")/../.." && pwd)
  bin="${MESHPERF_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/meshperf}"
  [ -x "$bin" ] || fail "$bin is missing: run scripts/build.sh"
}

# start_agent NS ADDR VAR [FLAGS [SECONDS]]: starts `meshperf agent` in
# network namespace NS on ADDR (IPv4 or IPv6), port 0 (the kernel picks
# one), with the given token (so it is never printed), FLAGS (word-split)
# and a lifetime of SECONDS (300 by default), and sets variable VAR to its
# ready URL with the token. Runs in the caller's shell (not a $(...)
# subshell) so its pid reaches `pids` and the caller's cleanup stops it.
# The caller sets `dir` (the agents' output goes to $dir/NS.out, or
# $dir/NS-ADDR.out for an IPv6 one), `token`, `bin`, the array `pids` and a
# function `fail MESSAGE`.
start_agent() {
  local out="$dir/$1.out" listen="$2:0" found
  case $2 in *:*) out="$dir/$1-$2.out"; listen="[$2]:0" ;; esac
  # shellcheck disable=SC2086
  MESHPERF_TOKEN=$token ip netns exec "$1" timeout "${5:-300}" "$bin" agent --listen "$listen" ${4:-} >"$out" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    # The ready URL carries no token (it was given, so never printed).
    found=$(grep -o ' ready: http://[^ ]*/' "$out" 2>/dev/null | head -1 || true)
    if [ -n "$found" ]; then printf -v "$3" '%s' "${found# ready: }#token=$token"; return; fi
    sleep 0.1
  done
  cat "$out" >&2; fail "the agent in $1 did not start"
}

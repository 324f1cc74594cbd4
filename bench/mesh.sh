#!/usr/bin/env bash
# The netns half of the bench's mesh section (bench/mesh.mjs runs it; root
# only): six hosts on one bridge (tests/netns/bridge.sh), each link at a line
# rate of 1 Gbit/s (tbf, shaped as tests/netns/mesh.sh shapes its links; the
# agents at nice -20 as there), an agent in each, and
# the same matrix from the hub with the concurrent rounds and with --serial,
# in that order and the reverse on alternate rounds; then the same for a
# tcp_rr over paths of 1 ms each way (every host's packets to the others held
# in an NFQUEUE delay line, tests/netns/delay.py, as tests/netns/mesh.sh
# does): on bare veths a tcp_rr is bound by the two cores, so pairs at once
# cannot be faster than one after another, while over paths with a delay, as
# between real hosts, the time is the paths'. Prints one line per matrix:
# "KIND MODE WALL_SECONDS FAILED_CELLS". Usage: mesh.sh ROUNDS.
# Everything is removed on exit; every process is bounded by `timeout`.
set -euo pipefail
rounds=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="${CARGO_TARGET_DIR:-$root/target}/release/meshperf"
id=mpb$$
hub=${id}h
net=10.79.$(($$ % 200 + 20))
hosts=6
dir=$(mktemp -d "/tmp/$id.XXXXXX")
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
pids=()
fail() { echo "mesh bench: $*" >&2; exit 1; }
cleanup() {
  bridge_down
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
. "$root/tests/netns/bridge.sh"
for i in $(seq "$hosts"); do shape "$i" 1000; done
agents_up 1800

# matrix KIND MODE [meshperf run flags...]: one matrix, timed around the
# whole `meshperf run` (connecting, every round, the result written).
matrix() {
  local t0=$EPOCHREALTIME rc=0
  ip netns exec "$hub" timeout 600 "$bin" run "${urls[@]}" --matrix --json "$dir/m.json" "${@:3}" \
    >/dev/null 2>"$dir/m.err" || rc=$?
  local t1=$EPOCHREALTIME
  [ -s "$dir/m.json" ] || { cat "$dir/m.err" >&2; fail "meshperf run exited $rc with no result"; }
  local failed
  failed=$(python3 -c 'import json, sys; print(sum(1 for s in json.load(open(sys.argv[1]))["steps"] if s.get("error")))' "$dir/m.json")
  echo "$1 $2 $(python3 -c "print(f'{$t1 - $t0:.3f}')") $failed"
  rm -f "$dir/m.json"
}
# both LABEL KIND PARAM: the concurrent and the serial matrix, in an order
# that alternates with the round.
both() {
  if [ $((r % 2)) = 1 ]; then
    matrix "$1" concurrent --kind "$2" --set "$3"
    matrix "$1" serial --kind "$2" --set "$3" --serial
  else
    matrix "$1" serial --kind "$2" --set "$3" --serial
    matrix "$1" concurrent --kind "$2" --set "$3"
  fi
}
for r in $(seq "$rounds"); do
  both tcp_stream tcp_stream duration_s=1
  both tcp_rr tcp_rr count=2000
done
nfq_python=${MESHPERF_NFQ_PYTHON:-$root/.tools/nfq/bin/python}
if "$nfq_python" -c 'import netfilterqueue' 2>/dev/null; then
  for i in $(seq "$hosts"); do
    delay_line "$i" 7 1 1800
    ipt=(ip netns exec "${id}$i" iptables)
    "${ipt[@]}" -A OUTPUT -d "$net.254" -j ACCEPT # the controller's connections
    "${ipt[@]}" -A OUTPUT -o "${id}e$i" -j NFQUEUE --queue-num 7
  done
  for r in $(seq "$rounds"); do both tcp_rr_1ms_paths tcp_rr count=300; done
else
  echo "mesh bench: no delay lines ($nfq_python cannot import netfilterqueue; scripts/setup.sh --test installs it): tcp_rr over 1 ms paths left out" >&2
fi

#!/usr/bin/env bash
# The mesh against the kernel's ground truth (root only): five hosts, each a
# network namespace with an agent, on one bridge in a sixth namespace (the
# hub), from which `meshperf run --matrix --json -` drives every ordered pair
# in the concurrent rounds (circle method: two pairs at once here).
#
# - Host 5's link is shaped by tc tbf to 50 Mbit/s in both directions
#   (egress of its own veth and of the bridge's port to it), so its row
#   (it sends) and its column (it receives) of a tcp_stream matrix must read
#   50 Mbit/s within 5%, as TCP payload: the tbf counts Ethernet frames, so
#   the payload rate is 50 Mbit/s x 1448 / 1514 (MSS with timestamps over a
#   1500-byte MTU, 66 bytes of Ethernet, IP and TCP headers per frame).
# - The other hosts' links have a line rate of 200 Mbit/s (tbf the same
#   way), as a NIC or a cloud VM's bandwidth cap has. Bare veths have none:
#   a stream over them runs as fast as the CPUs let it, and on this 2-core
#   VM shared with other jobs (load 6 to 8) the same path measured 8 to 22
#   Gbit/s from one step to the next, even one pair at a time (--serial),
#   with every agent pinned to one CPU or at nice -10; the cells measured
#   the neighbours' CPU use, not the paths. At 1 Gbit/s the forwarding
#   (softirq work, not the agents') still lost to other jobs now and then
#   (cells down to 0.76 Gbit/s, and to 0.37 at load 11: 2 runs in 9
#   failed); at 200 Mbit/s it is a few per cent of a core, and 3 runs in 3
#   passed at load 4 to 13. MESH_LINE_MBIT=0 leaves the links bare (then use
#   an idle machine). The agents run at nice -20 (bridge.sh) for the same
#   reason: at nice -10 the last round of one tcp_rr matrix read 5.3 and
#   5.8 ms instead of 2.2, its wake-ups late behind other jobs.
# - A path matrix: every pair finds its peer at hop 1 each way (one bridge),
#   the bridge's MTU and its marks kept.
# - For the tcp_rr matrices every host's packets to the others wait 1 ms in
#   a delay line (iptables NFQUEUE in the host's OUTPUT chain to
#   tests/netns/delay.py at real-time priority; no netem here), so every
#   path's round trip is 2 ms, as a LAN's or a data centre's is a fraction
#   of a millisecond to a few: a bare veth's is 22 us of the two cores'
#   scheduling, and the same pair's median read 22, 29 or 48 us from one
#   matrix to the next (placement of the two ends on the same core or not,
#   the other pair of the round, other jobs), --serial or pinned to one CPU
#   alike, so 20% of it (4 us) measured the scheduler. Host 2's packets to
#   host 3 wait D = 5 ms more: a one-way delay, so the round trip of both
#   ordered pairs (2 -> 3 and 3 -> 2) grows by D; the tcp_rr matrix must show
#   those two cells at least 2 + D ms (what the lines hold their round trip)
#   and under the slowest other cell + 1.5 D, nearer a delay once than
#   twice (a round trip held D longer wakes later: 0.1 to 0.54 ms over the
#   median + D here, while the other cells stayed within 0.05 ms of it; a
#   bound of + D + 0.5 ms failed a CI run by 10 us). The lines are on
#   for the tcp_rr matrices only: they pass every packet through Python,
#   which would cap the tcp_stream matrix's throughput at what one Python
#   process forwards, a CPU limit rather than a path's.
# - Every other cell of the tcp_stream matrix within 20% of the median of
#   those cells. Every other tcp_rr cell at least 2 ms (the lines hold each
#   way 1 ms) and under the median + D/2, nearer the undelayed level than
#   the delayed one: not within a share of the median, as the Python lines'
#   wake-ups on two busy cores spread the cells by a millisecond (2689.9 to
#   3785.1 us once, a cell 21.7% from the median, while the delayed cells
#   read +5.17 and +4.96 ms), and D/2 is what tells a delayed path from an
#   undelayed one: a delay on the wrong pair, or none, still fails.
# - Host 1's agent killed (SIGKILL) once the first round of a third matrix
#   (tcp_rr again) has ended: every cell of host 1 that ends after that
#   fails, and every other cell still meets the checks above.
#
# What other jobs on the machine can still do: the kernel forwards the
# packets in softirq work, which under load moves to ksoftirqd (nice 0), so
# with the two cores saturated (load 7 to 13 here: builds, Chromium) a whole
# round's round trips grew by 1 to 4 ms now and then (1 run in 5 failed on
# it) and streams lost rate. It is meant for a machine running the tests
# alone, as CI does.
#
# Names are unique per run; everything is removed on exit, whether the checks
# pass or not; every process is bounded by `timeout`. About 65 s. Exit 0 on
# success or when skipped.
set -euo pipefail

name="mesh"
. "$(dirname "$0")/agents.sh"
netns_begin ip tc iptables python3 chrt
nfq_python=${MESHPERF_NFQ_PYTHON:-$root/.tools/nfq/bin/python}
"$nfq_python" -c 'import netfilterqueue' 2>/dev/null \
  || fail "$nfq_python cannot import netfilterqueue (scripts/setup.sh --test installs it as root into .tools/nfq)"

id=mpm$$
hub=${id}h
net=10.78.$(($$ % 200 + 20))
hosts=5
shaped=5 delayed_from=2 delayed_to=3 killed=1
delay_ms=5
base_ms=1
rate_mbit=50
line_mbit=${MESH_LINE_MBIT:-200}
dir=$(mktemp -d "/tmp/$id.XXXXXX")
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
pids=()
cleanup() {
  bridge_down
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
# Hosts 1 to 5 on a bridge in the hub (bridge.sh).
. "$root/tests/netns/bridge.sh"
for i in $(seq "$hosts"); do
  if [ "$i" = "$shaped" ]; then shape "$i" "$rate_mbit"; elif [ "$line_mbit" != 0 ]; then shape "$i" "$line_mbit"; fi
done
agents_up 150

# matrix NAME [meshperf run flags...]: runs a matrix from the hub in the
# background, the JSON to $dir/NAME.json, the table and the cells' lines to
# $dir/NAME.err; sets matrix_pid.
matrix() {
  local out=$1; shift
  ip netns exec "$hub" timeout 80 "$bin" run "${urls[@]}" --matrix --json - "$@" \
    >"$dir/$out.json" 2>"$dir/$out.err" &
  matrix_pid=$!
  pids+=($matrix_pid)
}
# check NAME [mesh_check.py flags...]: the cells of NAME against the truth.
check() {
  local out=$1; shift
  python3 "$root/tests/netns/mesh_check.py" "$dir/$out.json" --hosts "$hosts" "$@" \
    || { grep -v '#r=' "$dir/$out.err" >&2 || true; fail "the $out matrix does not show the paths as they are (load average $(cut -d' ' -f1-3 /proc/loadavg))"; }
}

# 1. Throughput, 3 s a pair (a stall of the forwarding under load weighs less).
matrix stream --kind tcp_stream --set duration_s=3
rc=0; wait "$matrix_pid" || rc=$?
[ $rc -eq 0 ] || { cat "$dir/stream.err" >&2; fail "the tcp_stream matrix exited $rc"; }
ip netns exec "$hub" tc -s qdisc show dev "${id}p$shaped" | head -2
check stream --shaped "$shaped" --rate-mbit "$rate_mbit" --line-mbit "$line_mbit"

# 1b. Where in the path, every pair (issue 24): on one bridge each agent
# finds its peer at hop 1 both ways, the bridge's 1500-byte MTU each way
# and its marks kept (the hub, a router, is on no pair's path).
matrix path --kind path --set max_hops=4 --set probes=2 --set wait_ms=200 --set dscp=0,46 --set ecn=false --set marks_count=2
rc=0; wait "$matrix_pid" || rc=$?
[ $rc -eq 0 ] || { cat "$dir/path.err" >&2; fail "the path matrix exited $rc"; }
python3 - "$dir/path.json" "$hosts" <<'PY' || { grep -v '#r=' "$dir/path.err" >&2; fail "the path matrix does not show one hop each way"; }
import json, sys
r = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
errors = []
pairs = {(s["pair"]["client"], s["pair"]["server"]) for s in r["steps"]}
if len(r["steps"]) != n * (n - 1) or len(pairs) != n * (n - 1):
    errors.append(f"{len(r['steps'])} steps, {len(pairs)} pairs, want {n * (n - 1)}")
for s in r["steps"]:
    p, e = s["pair"], s.get("error")
    if e:
        errors.append(f"{p}: {e}")
        continue
    for way in ("forth", "back"):
        d = s["summary"][way]
        hops = [(h.get("addr"), h["peer"]) for h in d["hops"]]
        if d.get("peer_hop") != 1 or hops != [(d["to"], True)] or d["mtu"]["bytes"] != 1500:
            errors.append(f"{p} {way}: hops {hops}, peer at {d.get('peer_hop')}, MTU {d['mtu']}")
        if [m["verdict"] for m in d["marks"]] != ["kept", "kept"]:
            errors.append(f"{p} {way}: marks {d['marks']}")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
PY

# 2. Round-trip times through the delay lines.
for i in $(seq "$hosts"); do
  delay_line "$i" 7 "$base_ms" 120
  if [ "$i" = "$delayed_from" ]; then delay_line "$i" 8 $((base_ms + delay_ms)) 120; fi
done
for i in $(seq "$hosts"); do
  ipt=(ip netns exec "${id}$i" iptables)
  "${ipt[@]}" -A OUTPUT -d "$net.254" -j ACCEPT   # the controller's connections
  if [ "$i" = "$delayed_from" ]; then "${ipt[@]}" -A OUTPUT -d "$net.$delayed_to" -j NFQUEUE --queue-num 8; fi
  "${ipt[@]}" -A OUTPUT -o "${id}e$i" -j NFQUEUE --queue-num 7
done
rr=(--kind tcp_rr --set duration_s=1.5)
matrix rr "${rr[@]}"
rc=0; wait "$matrix_pid" || rc=$?
[ $rc -eq 0 ] || { cat "$dir/rr.err" >&2; fail "the tcp_rr matrix exited $rc"; }
check rr --delayed "$delayed_from,$delayed_to" --delay-ms "$delay_ms" --base-ms "$base_ms"

# 3. Host 1's agent killed once the first round has ended (its cells lines
# are "[k/20] ..."; a round of five agents has two pairs).
matrix kill "${rr[@]}"
for _ in $(seq 200); do grep -q '^\[2/' "$dir/kill.err" 2>/dev/null && break; sleep 0.05; done
grep -q '^\[2/' "$dir/kill.err" || { cat "$dir/kill.err" >&2; fail "the first round of the third matrix did not end"; }
# The agent is the child of `timeout` (`ip netns exec` and `nice` exec).
t=${agent_pid[$killed]}
victim=$(cat "/proc/$t/task/$t/children" 2>/dev/null || true)
[ -n "$victim" ] || fail "host $killed's agent process not found"
kill -KILL "$victim"
grep '^\[' "$dir/kill.err" >"$dir/kill.before" || true
rc=0; wait "$matrix_pid" || rc=$?
[ $rc -eq 1 ] || { cat "$dir/kill.err" >&2; fail "the matrix with a killed agent exited $rc, not 1 (cells failed)"; }
check kill --delayed "$delayed_from,$delayed_to" --delay-ms "$delay_ms" --base-ms "$base_ms" --killed "$killed" --ended-before "$dir/kill.before"
echo "$name: ok"

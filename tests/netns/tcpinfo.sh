#!/usr/bin/env bash
# What limited a tcp_stream (issue 43), against set-ups whose limit is known
# by construction (root only). Two end namespaces A (serving agent, the
# sender: every run is direction=receive) and B (driving agent, the
# receiver) joined through a router namespace R, as run.sh builds them;
# `meshperf run` runs in R. Each run's verdict line (meshperf run's text)
# must name the set-up's limit, and the result file's figures must show it:
#
# a. network: tc tbf at 20 Mbit/s with a queue of L bytes on R's way to B.
#    The rate is the tbf's (TCP payload of 20 Mbit/s of frames, at least
#    80% of it: the link was the bottleneck), the window was not the
#    receiver's nor the send buffer's (each under 10% of the time), and
#    the round trip under load exceeds the idle one by the queue's mean
#    sampled backlog (tc, every 10-20 ms) and one packet's time at the
#    rate within 20% + 1 ms, never by more than a full queue (L x 8 /
#    rate) + 2 ms.
# b. the receiver's window: B's receive buffer clamped (rcvbuf and
#    net.ipv4.tcp_rmem's maximum in B's namespace) behind a delay line of
#    D ms on the ACKs (NFQUEUE to tests/netns/delay.py: no netem here).
#    The window B advertised never exceeded its buffer, the rate never
#    exceeded that window per idle round trip (+10%), and the idle round
#    trip holds the delay line's D.
# c. the sender's socket buffer: A's send buffer clamped (sndbuf and
#    net.ipv4.tcp_wmem's maximum in A's namespace) behind the same line:
#    the rate never exceeded twice the buffer per idle round trip (the
#    kernel counts the buffer in memory and lets a write overshoot it),
#    nor half the receiver's window per round trip, and that window held
#    the sender back (the kernel's count) under 10% of the time.
# d. the application: a sender paced by wait_us at 8 Mbit/s over the
#    unshaped veths (gigabits): the rate is the pacing's (within 10%), and
#    the sender had nothing queued most of the time (busy under 50%).
#
# Names are unique per run; everything is removed on exit, whether the
# checks pass or not; every run is bounded by `timeout`. Exit 0 on success
# or when skipped.
set -euo pipefail

name="tcp limits"
. "$(dirname "$0")/agents.sh"
netns_begin ip tc iptables node ethtool chrt
id=mpt$$
A=${id}a B=${id}b R=${id}r
net=$((16 + ($$ + 97) % 200))
ipa=10.$net.1.2 ipb=10.$net.2.2
port=5298                        # the serving agent's data port
dir=/tmp/$id
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for n in "$A" "$B" "$R"; do ip netns del "$n" 2>/dev/null || true; done
  [ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT INT TERM
mkdir -p "$dir"

nfq_python=${MESHPERF_NFQ_PYTHON:-$root/.tools/nfq/bin/python}
"$nfq_python" -c 'import netfilterqueue' 2>/dev/null \
  || fail "$nfq_python cannot import netfilterqueue (scripts/setup.sh --test installs it as root into .tools/nfq)"

. "$root/tests/netns/topology.sh"
# Wire-sized packets in the tbf queue (L bytes are L / 1514 packets).
for d in "$A:${id}a0" "$R:${id}a1" "$R:${id}b1" "$B:${id}b0"; do
  out=$(ip netns exec "${d%%:*}" ethtool -K "${d#*:}" tso off gso off gro off 2>&1) \
    || fail "ethtool -K ${d#*:} tso off gso off gro off: $out"
done

start_agent "$A" "$ipa" url_a "--data-ports $port-$port"
start_agent "$B" "$ipb" url_b ""

run() { # result file, then --set NAME=VALUE...
  local out=$1; shift
  local sets=()
  for s in "$@"; do sets+=(--set "$s"); done
  ip netns exec "$R" timeout 90 "$bin" run --agent "$url_a" --agent "$url_b" \
    --kind tcp_stream --set direction=receive "${sets[@]}" --json "$out" >"$out.txt" 2>&1 \
    || { cat "$out.txt" >&2; fail "meshperf run exited $?"; }
  grep -v '#r=' "$out.txt" | grep -v '^progress' || true
}
# verdict FILE PREFIX: the run's verdict line must start with PREFIX.
verdict() {
  local v
  v=$(grep -m1 -E '^(Limited by|No verdict)' "$1.txt") || fail "no verdict line in $1.txt"
  [[ "$v" == "$2"* ]] || fail "the verdict is not '$2...': $v"
}
# check FILE JS: JS runs with `s` the sending side's summary (A's, the
# server's), `r` the receiving side's, `t` s.tcp_info, `rate` the bits per
# second received, `log` and `need(cond, message)`.
check() {
  node -e '
    const step = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).steps[0];
    if (step.error) throw new Error(`the step failed: ${step.error}`);
    const s = step.sides.server, r = step.sides.client, t = s.tcp_info;
    if (!t) throw new Error("no tcp_info in the summary of the sending side");
    // As received: the last write of a sender leaves bytes in its buffer.
    const rate = (r.received_bytes * 8) / r.recv_seconds;
    const log = (m) => console.log(m);
    const need = (ok, m) => { if (!ok) throw new Error(m); };
    log(`figures: received ${(rate / 1e6).toFixed(2)} Mbit/s; busy ${t.busy_share.toFixed(3)}, rwnd-limited ${t.rwnd_limited_share.toFixed(3)}, ` +
      `sndbuf-limited ${t.sndbuf_limited_share.toFixed(3)}; rtt ${t.srtt_us.toFixed(0)} us (idle ${t.min_rtt_us} us); ` +
      `window ${t.snd_wnd_max} B; sndbuf ${s.sndbuf_actual} B, rcvbuf ${r.rcvbuf_actual} B`);
    '"$2"'
  ' "$1" "${@:3}"
}

# The delay line, on the ACKs (B to A) of the serving agent's data port;
# real-time priority, so it holds each packet D, not D plus a wake-up the
# test's own load delayed.
delay_ms=20
ip netns exec "$R" timeout 200 chrt -f 50 "$nfq_python" "$root/tests/netns/delay.py" 9 "$delay_ms" >"$dir/delay.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do grep -q ready "$dir/delay.out" 2>/dev/null && break; sleep 0.1; done
grep -q ready "$dir/delay.out" || { cat "$dir/delay.out" >&2; fail "the delay line did not start"; }
delay_rule=(FORWARD -p tcp -s "$ipb" -d "$ipa" --dport "$port" -j NFQUEUE --queue-num 9)

# a. The network: a 20 Mbit/s tbf with a queue of L bytes toward B.
limit=100000
ip netns exec "$R" tc qdisc add dev "${id}b1" root tbf rate 20mbit burst 1600 limit "$limit"
(
  exec 2>/dev/null
  t0=$(date +%s%N)
  while :; do
    b=$(ip netns exec "$R" tc -s qdisc show dev "${id}b1" | sed -n 's/^ *backlog \([0-9]*\)b .*/\1/p')
    echo "$((($(date +%s%N) - t0) / 1000000)) $b"
    sleep 0.01
  done
) >"$dir/backlog" &
sampler=$!
pids+=("$sampler")
run "$dir/net.json" duration_s=5
kill "$sampler"
ip netns exec "$R" tc qdisc del dev "${id}b1" root
verdict "$dir/net.json" "Limited by the network"
check "$dir/net.json" '
  const most = 20e6 * 1448 / 1514, limit = Number(process.argv[2]);
  const rows = require("fs").readFileSync(process.argv[3], "utf8").trim().split("\n").map((l) => l.split(" ").map(Number))
    .filter(([ms, b]) => Number.isFinite(b) && ms >= 1500);
  need(rows.length >= 20, `only ${rows.length} samples of the queue`);
  // A segment waits behind the mean backlog, then takes its own 1514
  // bytes at 20 Mbit/s (606 us) to leave.
  const queued = rows.reduce((a, [, b]) => a + b, 0) / rows.length * 8 / 20e6 * 1e6 + 606; // us
  const added = t.srtt_us - t.min_rtt_us, full = limit * 8 / 20e6 * 1e6;
  log(`tbf 20 Mbit/s, queue of ${limit} B (${full} us): mean backlog and a packet ${queued.toFixed(0)} us (${rows.length} samples); rtt added ${added.toFixed(0)} us`);
  need(rate <= most * 1.01 && rate >= 0.8 * most, `rate ${rate} is not the tbf rate ${most}`);
  need(t.rwnd_limited_share < 0.1 && t.sndbuf_limited_share < 0.1, "the window or the buffer held the sender back");
  need(Math.abs(added - queued) <= 0.2 * queued + 1000, `added rtt ${added} us is not the queue of ${queued.toFixed(0)} us within 20% + 1 ms`);
  need(added <= full + 2000, `added rtt ${added} us is more than a full queue`);
' "$limit" "$dir/backlog" || fail "a: a tbf bottleneck"

ip netns exec "$R" iptables -A "${delay_rule[@]}"

# b. The receiver's window: B's buffer clamped, behind the delay line.
ip netns exec "$B" sysctl -qw net.ipv4.tcp_rmem="4096 32768 65536"
run "$dir/rwnd.json" duration_s=4 rcvbuf=32768
ip netns exec "$B" sysctl -qw net.ipv4.tcp_rmem="4096 131072 6291456"
verdict "$dir/rwnd.json" "Limited by the receiver's window"
check "$dir/rwnd.json" '
  const d = Number(process.argv[2]) * 1e3;
  need(t.min_rtt_us >= d, `idle rtt ${t.min_rtt_us} us is below the delay line of ${d}`);
  need(t.snd_wnd_max <= r.rcvbuf_actual, `B advertised ${t.snd_wnd_max} B, more than its buffer ${r.rcvbuf_actual}`);
  const cap = t.snd_wnd_max * 8 / (t.min_rtt_us / 1e6);
  need(rate <= 1.1 * cap, `rate ${rate} above the window per round trip ${cap}`);
' "$delay_ms" || fail "b: a clamped receive buffer"

# c. The sender's buffer: A's clamped, behind the same line.
ip netns exec "$A" sysctl -qw net.ipv4.tcp_wmem="4096 16384 32768"
run "$dir/sndbuf.json" duration_s=4 sndbuf=16384
ip netns exec "$A" sysctl -qw net.ipv4.tcp_wmem="4096 16384 4194304"
verdict "$dir/sndbuf.json" "Limited by the sender's socket buffer"
check "$dir/sndbuf.json" '
  // The kernel counts the buffer in memory (the bytes of a packet and its
  // overhead), and lets a write overshoot it: in flight up to about
  // twice sndbuf, never the room of the windows.
  const rtt = t.min_rtt_us / 1e6, buf = s.sndbuf_actual;
  need(t.min_rtt_us >= Number(process.argv[2]) * 1e3, `idle rtt ${t.min_rtt_us} us is below the delay line`);
  need(buf <= 2 * 16384, `sndbuf ${buf}, asked 16384 (the kernel doubles it)`);
  need(rate <= (2 * buf * 8) / rtt, `rate ${rate} above twice the send buffer per round trip`);
  need(rate <= (0.5 * t.snd_wnd_max * 8) / rtt, `rate ${rate} near the window ${t.snd_wnd_max} per round trip`);
  need(t.rwnd_limited_share < 0.1, `the receive window held it back ${t.rwnd_limited_share}`);
' "$delay_ms" || fail "c: a clamped send buffer"

ip netns exec "$R" iptables -D "${delay_rule[@]}"

# d. The application: 10000-byte writes every 10 ms (8 Mbit/s).
run "$dir/app.json" duration_s=3 msg_bytes=10000 wait_us=10000
verdict "$dir/app.json" "Limited by the application or the CPU"
check "$dir/app.json" '
  need(Math.abs(rate - 8e6) <= 0.1 * 8e6, `rate ${rate}, paced at 8 Mbit/s`);
  need(t.busy_share < 0.5, `busy ${t.busy_share} of the time with nothing to send`);
' || fail "d: a paced sender"
echo "$name: ok"

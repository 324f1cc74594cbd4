#!/usr/bin/env bash
# STAMP against the kernel's ground truth (root only). Two end namespaces A
# (the sending agent, --allow-target B) and B (an agent whose --stamp
# reflector listens on 8862) joined through a router namespace R, as run.sh
# builds them; `meshperf run` runs in R.
#
# 1. No delay: the round trip's median r0 (the path and both hosts).
# 2. A delay line (NFQUEUE to tests/netns/delay.py, as lul.sh's) holding the
#    test packets D ms on their way to the reflector: the median round trip
#    is r0 + D within 0.5 ms, and the forward one-way delay (the namespaces
#    share one clock) D within 0.5 ms above the backward one.
# 3. iptables in R dropping 5% of the test packets on their way to the
#    reflector (-m statistic): the sender's `lost` equals the rule's DROP
#    counter exactly.
#
# Names are unique per run; everything is removed on exit, whether the checks
# pass or not; every run is bounded by `timeout`. Exit 0 on success or when
# skipped.
set -euo pipefail

name="stamp"
. "$(dirname "$0")/agents.sh"
netns_begin ip iptables node
id=mps$$
A=${id}a B=${id}b R=${id}r
net=$((16 + $$ % 200))
ipa=10.$net.1.2 ipb=10.$net.2.2
port=8862                        # the reflector's port on B
dir=/tmp/$id
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for n in "$A" "$B" "$R"; do ip netns del "$n" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
mkdir -p "$dir"

# A - R - B (topology.sh).
. "$root/tests/netns/topology.sh"

start_agent "$A" "$ipa" url_a "--allow-target $ipb"
start_agent "$B" "$ipb" url_b "--stamp $port"

run() { # result file, then --set NAME=VALUE...
  local out=$1; shift
  local sets=()
  for s in "$@"; do sets+=(--set "$s"); done
  ip netns exec "$R" timeout 90 "$bin" run --agent "$url_a" \
    --kind stamp --set "target=stamp://$ipb:$port" "${sets[@]}" --json "$out" >"$out.txt" 2>&1 \
    || { cat "$out.txt" >&2; fail "meshperf run exited $?"; }
  grep -v '#r=' "$out.txt" | grep -v '^progress' || true
}

# 1. No delay.
run "$dir/plain.json" count=200 wait_us=10000

# 2. A delay line of D ms toward the reflector.
nfq_python=${MESHPERF_NFQ_PYTHON:-$root/.tools/nfq/bin/python}
"$nfq_python" -c 'import netfilterqueue' 2>/dev/null \
  || fail "$nfq_python cannot import netfilterqueue (scripts/setup.sh --test installs it as root into .tools/nfq)"
delay_ms=5
ip netns exec "$R" timeout 120 chrt -f 50 "$nfq_python" "$root/tests/netns/delay.py" 7 "$delay_ms" >"$dir/delay.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do grep -q ready "$dir/delay.out" 2>/dev/null && break; sleep 0.1; done
grep -q ready "$dir/delay.out" || { cat "$dir/delay.out" >&2; fail "the delay line did not start"; }
delay_rule=(FORWARD -p udp -d "$ipb" --dport "$port" -j NFQUEUE --queue-num 7)
ip netns exec "$R" iptables -A "${delay_rule[@]}"
run "$dir/delayed.json" count=200 wait_us=10000
ip netns exec "$R" iptables -D "${delay_rule[@]}"
node -e '
  const fs = require("fs");
  const s = (f) => JSON.parse(fs.readFileSync(f, "utf8")).steps[0].summary;
  const [plain, delayed] = [s(process.argv[1]), s(process.argv[2])];
  const d = Number(process.argv[3]) * 1000;
  const r0 = plain.rtt_us.median, r = delayed.rtt_us.median;
  const ow = delayed.forward_us.median - delayed.backward_us.median;
  const ow0 = plain.forward_us.median - plain.backward_us.median;
  console.log(`delay line ${d} us toward the reflector: round trip median ${r.toFixed(1)} us, ${r0.toFixed(1)} us without; ` +
    `forward minus backward ${ow.toFixed(1)} us, ${ow0.toFixed(1)} us without`);
  if (Math.abs(r - r0 - d) > 500) throw new Error(`round trip ${r} us is not ${r0} + ${d} us within 500 us`);
  if (Math.abs(ow - ow0 - d) > 500) throw new Error(`forward one-way delay rose by ${ow - ow0} us, not ${d} us within 500 us`);
  if (delayed.lost !== 0) throw new Error(`${delayed.lost} lost through the delay line`);
' "$dir/plain.json" "$dir/delayed.json" "$delay_ms" || fail "the round trip is not where the delay line put it"

# 3. 5% of the test packets dropped toward the reflector.
drop_rule=(FORWARD -p udp -d "$ipb" --dport "$port" -m statistic --mode random --probability 0.05 -j DROP)
ip netns exec "$R" iptables -A "${drop_rule[@]}"
run "$dir/loss.json" count=1000 wait_us=1000 timeout_ms=500
dropped=$(ip netns exec "$R" iptables -nvxL FORWARD | awk '/DROP/ && /statistic/ {print $1; exit}')
node -e '
  const fs = require("fs");
  const s = JSON.parse(fs.readFileSync(process.argv[1], "utf8")).steps[0].summary;
  const dropped = Number(process.argv[2]);
  console.log(`lost ${s.lost} of ${s.sent}, DROP counter ${dropped}`);
  if (dropped < 1) throw new Error("the DROP rule matched nothing");
  if (s.lost !== dropped) throw new Error(`lost ${s.lost} != DROP counter ${dropped}`);
' "$dir/loss.json" "$dropped" || fail "STAMP loss is not the DROP counter"
echo "$name: ok"

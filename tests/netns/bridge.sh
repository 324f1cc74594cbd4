# Sourced by tests/netns/mesh.sh and bench/mesh.sh (root): $hosts host
# namespaces ${id}1 ... ${id}N on one bridge (br0) in a hub namespace $hub
# at $net.254/24, host i at $net.i on its veth ${id}e$i, the bridge's port to
# it ${id}p$i; `shape` gives a host's link a rate, `agents_up` starts an
# agent in every host. The caller sets id, hub, net, hosts, dir, token, bin,
# an array pids and a function fail, and calls bridge_down on exit.
bridge_down() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for n in "$hub" $(seq -f "${id}%g" "$hosts"); do ip netns del "$n" 2>/dev/null || true; done
}

# shape HOST MBIT: a tbf on the host's link, both ways: what it sends leaves
# through its veth, what it receives through the bridge's port to it. The
# burst holds 2 ms at the rate (at least 32 KiB), well above the timers'
# lateness. The queue holds 8 MiB, more than a TCP sender keeps in flight
# (net.ipv4.tcp_wmem's 4 MiB at most), so a stream sees no loss: with a
# 50 ms queue, the drops when slow start overshot it cost a pair to a host
# at 50 Mbit/s a retransmission timeout now and then (64 segments
# retransmitted, 44.1 instead of 47.8 Mbit/s), a figure of TCP's recovery,
# not of the path.
shape() {
  local burst=$(($2 * 1000000 / 8 / 500))
  [ "$burst" -ge 32768 ] || burst=32768
  ip netns exec "${id}$1" tc qdisc add dev "${id}e$1" root tbf rate "$2mbit" burst "$burst" limit 8mb
  ip netns exec "$hub" tc qdisc add dev "${id}p$1" root tbf rate "$2mbit" burst "$burst" limit 8mb
}

# delay_line HOST QUEUE MS SECONDS: a delay line in host HOST's namespace
# (tests/netns/delay.py at real-time priority, $nfq_python: the caller's),
# holding each packet of NFQUEUE QUEUE for MS ms, for at most SECONDS; the
# caller's iptables rules send packets to the queue.
delay_line() {
  local out="$dir/delay$1-$2.out"
  ip netns exec "${id}$1" timeout "$4" chrt -f 50 "$nfq_python" "$(dirname "${BASH_SOURCE[0]}")/delay.py" "$2" "$3" >"$out" 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do grep -q ready "$out" 2>/dev/null && break; sleep 0.1; done
  grep -q ready "$out" || { cat "$out" >&2; fail "the delay line in host $1 did not start"; }
}

# agents_up SECONDS: an agent on port 7800 in every host, for at most
# SECONDS, at nice -20 (see mesh.sh), all ready; sets urls (the --agent
# flags of `meshperf run`, hub to hosts) and agent_pid[i] (the pid of the
# `timeout` whose child is host i's agent).
agents_up() {
  urls=()
  agent_pid=()
  local i
  for i in $(seq "$hosts"); do
    MESHPERF_TOKEN=$token ip netns exec "${id}$i" timeout "$1" nice -n -20 "$bin" agent --listen "$net.$i:7800" >"$dir/agent$i.out" 2>&1 &
    pids+=($!)
    agent_pid[i]=$!
    urls+=(--agent "http://$net.$i:7800/#token=$token")
  done
  for i in $(seq "$hosts"); do
    for _ in $(seq 100); do grep -q ' ready: ' "$dir/agent$i.out" 2>/dev/null && break; sleep 0.1; done
    grep -q ' ready: ' "$dir/agent$i.out" || { cat "$dir/agent$i.out" >&2; fail "the agent on $net.$i did not start"; }
  done
}

for n in "$hub" $(seq -f "${id}%g" "$hosts"); do ip netns add "$n"; ip -n "$n" link set lo up; done
ip -n "$hub" link add br0 type bridge
ip -n "$hub" addr add "$net.254/24" dev br0
ip -n "$hub" link set br0 up
for i in $(seq "$hosts"); do
  ip link add "${id}e$i" type veth peer name "${id}p$i"
  ip link set "${id}e$i" netns "${id}$i"
  ip link set "${id}p$i" netns "$hub"
  ip -n "${id}$i" addr add "$net.$i/24" dev "${id}e$i"
  ip -n "${id}$i" link set "${id}e$i" up
  ip -n "$hub" link set "${id}p$i" master br0
  ip -n "$hub" link set "${id}p$i" up
done

#!/usr/bin/env bash
# A "cluster" in network namespaces (root only): four hosts, each its own
# namespace running the agent from the unpacked OCI image as a container
# runtime would (tests/netns/oci.sh: the image scripts/release.sh builds,
# unpacked with umoci; its rootfs read-only, chrooted, user 65534, PID 1,
# the image's own arguments plus --metrics), joined by a bridge in a fifth
# (the hub) that runs a DNS server (dnsmasq: mesh.test has the four
# addresses, as a Kubernetes headless Service lists its pods), two
# sharded monitors as the sharded-monitor component runs them (`meshperf
# monitor --agent dns:mesh.test --token-file --shard 0/2` and `1/2`, the
# token as a mounted Secret gives it) with a 2-second tcp_stream per pair
# every 25 s, and Debian's Prometheus scraping both and the four agents'
# own counters. Host 4's egress is shaped with tc tbf to 50 Mbit/s. After
# a run of each, PromQL through Prometheus's HTTP API must return one
# throughput series per ordered pair (12) over both shards, each pair from
# one shard only, each shard saying its share; the three lowest (bottomk)
# must be exactly the pairs host 4 sends on, each well under the others;
# each agent's counters must show the tests it served and no failed
# authentication. Everything is
# removed on exit, whether the checks pass or not. Exit 0 on success or when
# skipped.
set -euo pipefail
fail() { echo "monitor cluster: FAILED: $*" >&2; exit 1; }
if [ "$(id -u)" != 0 ]; then
  echo "monitor cluster: skipped (needs root to create network namespaces; CI runs it as root)"
  exit 0
fi
for tool in ip tc dnsmasq prometheus python3 umoci unshare chroot node; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/setup.sh --test installs it as root)"
done
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="${MESHPERF_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/meshperf}"
[ -x "$bin" ] || fail "$bin is missing: run scripts/build.sh"
source "$root/tests/netns/oci.sh"
id=mpc$$
hosts=4
hub=${id}h
net=10.77.$(($$ % 200 + 20))
dir=$(mktemp -d /tmp/$id.XXXXXX)
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
pids=()
unshares=()
cleanup() {
  oci_kill "${unshares[@]}"
  if declare -F bridge_down >/dev/null; then bridge_down; fi
  rm -rf "/etc/netns/$hub" "$dir"
}
trap cleanup EXIT INT TERM

# The image (after tests/netns/image.sh in npm test, cargo has the static
# binary already: this is the packing and unpacking).
oci_unpack "$dir"
echo "monitor cluster: OCI image $oci_tag built and unpacked in $oci_seconds s"
(umask 077; printf '%s\n' "$token" >"$dir/token")

# The hub with its bridge and the four hosts (tests/netns/bridge.sh).
source "$root/tests/netns/bridge.sh"
# Host 4 sends at 50 Mbit/s at most.
ip netns exec "${id}4" tc qdisc add dev "${id}e4" root tbf rate 50mbit burst 64kb latency 100ms

mkdir -p "/etc/netns/$hub"
echo "nameserver 127.0.0.1" >"/etc/netns/$hub/resolv.conf"
ip netns exec "$hub" timeout 200 dnsmasq --no-daemon --no-resolv --no-hosts --bind-interfaces \
  --listen-address=127.0.0.1 --port=53 --local=/test/ --pid-file="$dir/dnsmasq.pid" \
  --host-record=mesh.test,$net.1 --host-record=mesh.test,$net.2 \
  --host-record=mesh.test,$net.3 --host-record=mesh.test,$net.4 \
  >"$dir/dnsmasq.log" 2>&1 &
pids+=($!)
# The image's agents: its arguments (--listen 0.0.0.0:7800) and the
# counters of the DaemonSet's (--metrics).
for i in 1 2 3 4; do
  oci_agent "${id}$i" "$token" --metrics 0.0.0.0:9465 >"$dir/agent$i.out" 2>&1 &
  pids+=($!)
  unshares[$i]=$!
done
for i in 1 2 3 4; do
  for _ in $(seq 100); do grep -q ' ready: ' "$dir/agent$i.out" 2>/dev/null && break; sleep 0.1; done
  grep -q " ready: http://$net.$i:7800/" "$dir/agent$i.out" || { cat "$dir/agent$i.out" >&2; fail "agent on $net.$i did not start"; }
  apid=$(pgrep -P "${unshares[$i]}" | head -1)
  [ -n "$apid" ] && [ "$(readlink "/proc/$apid/root")" = "$oci_rootfs" ] \
    && grep -Eq '^Uid:\s+65534\s' "/proc/$apid/status" && grep -Eq '^NSpid:\s+[0-9]+\s+1$' "/proc/$apid/status" \
    || fail "agent $i is not the image's (root $(readlink "/proc/$apid/root" 2>&1), $(grep -E '^(Uid|NSpid)' "/proc/$apid/status" 2>&1 | tr '\n\t' '  '))"
done
for _ in $(seq 50); do
  [ "$(ip netns exec "$hub" getent ahostsv4 mesh.test 2>/dev/null | awk '{print $1}' | sort -u | wc -l)" = 4 ] && break
  sleep 0.1
done
[ "$(ip netns exec "$hub" getent ahostsv4 mesh.test | awk '{print $1}' | sort -u | wc -l)" = 4 ] \
  || { cat "$dir/dnsmasq.log" >&2; fail "mesh.test does not resolve to 4 addresses in the hub"; }

# 12 pairs split between two shards, each in rounds of 2 s (an agent busy
# with the other shard's test is tried again 2 s later): about 15 s a run.
for shard in 0 1; do
  ip netns exec "$hub" timeout 200 "$bin" monitor --agent dns:mesh.test --token-file "$dir/token" \
    --kind tcp_stream --set duration_s=2 --every 25s --jitter 1s --shard $shard/2 --listen 127.0.0.1:946$((4 - shard)) \
    >"$dir/monitor$shard.out" 2>>"$dir/monitor.err" &
  pids+=($!)
done
cat >"$dir/prometheus.yml" <<YAML
global:
  scrape_interval: 2s
  scrape_timeout: 2s
scrape_configs:
  - job_name: meshperf
    static_configs:
      - targets: ['127.0.0.1:9464', '127.0.0.1:9463']
  - job_name: meshperf-agents
    static_configs:
      - targets: ['$net.1:9465', '$net.2:9465', '$net.3:9465', '$net.4:9465']
YAML
ip netns exec "$hub" timeout 200 prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
  --web.listen-address=127.0.0.1:9090 >"$dir/prometheus.log" 2>&1 &
pids+=($!)

ip netns exec "$hub" python3 - "$net" "$root/tests/monitor" <<'PY' || { cat "$dir/monitor.err" >&2; tail -n 5 "$dir/prometheus.log" >&2; fail "see above"; }
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[2])
from promql import query as promql, wait_runs
net = sys.argv[1]
def query(q):
    return promql(9090, q)
# One run of each shard is every pair once (a second run, of one monitor,
# made this test 20 s longer with two shards busy-retrying each other).
runs, tput = wait_runs(9090, 1, 'meshperf_pair_throughput_bits_per_second{job="meshperf"}', lambda r: len(r) == 12, 120, monitors=2)
hosts = {f"{net}.{i}:7800" for i in range(1, 5)}
pairs = {(s["metric"]["src"], s["metric"]["dst"]): float(s["value"][1]) for s in tput}
# Every ordered pair, each from one shard: 12 series, 12 pairs.
assert len(tput) == 12 and set(pairs) == {(a, b) for a in hosts for b in hosts if a != b}, sorted(pairs)
by_shard = {s["metric"]["instance"]: s["metric"]["shard"] for s in query('meshperf_monitor_shard_info{job="meshperf",shards="2"}')}
assert sorted(by_shard.values()) == ["0", "1"], by_shard
owned = {s["metric"]["instance"]: float(s["value"][1]) for s in query('meshperf_monitor_pairs_owned{job="meshperf"}')}
assert sum(owned.values()) == 12 and all(owned.values()), owned
info = query('meshperf_agent_info{job="meshperf"}')
assert {s["metric"]["agent"] for s in info} == hosts, info
shaped = f"{net}.4:7800"
low = query('bottomk(3, meshperf_pair_throughput_bits_per_second{job="meshperf"})')
low_pairs = {(s["metric"]["src"], s["metric"]["dst"]) for s in low}
assert all(src == shaped for src, _ in low_pairs) and len(low_pairs) == 3, f"bottomk(3): {sorted(low_pairs)}; all: {pairs}"
worst_shaped = max(v for (src, _), v in pairs.items() if src == shaped)
best_other = min(v for (src, _), v in pairs.items() if src != shaped)
assert worst_shaped < 55e6, f"host 4 sent at {worst_shaped / 1e6:.1f} Mbit/s through a 50 Mbit/s tbf"
assert worst_shaped * 4 < best_other, f"shaped {worst_shaped / 1e6:.1f} vs others from {best_other / 1e6:.1f} Mbit/s"
up = query('sum(meshperf_pair_up{job="meshperf"})')
assert float(up[0]["value"][1]) == 12, up
# The agents' own counters, scraped from each: each served its 3 pairs of
# run 1 at least (a later run's may not be scraped yet), and no wrong token. In
# all, at most 12 sides a run (the runs done and one under way), plus one
# for each busy refusal: a side started for one shard's test whose peer
# was busy with the other's is cancelled and counted.
served = {s["metric"]["instance"]: float(s["value"][1]) for s in
          query('sum by (instance) (meshperf_agent_tests_total{job="meshperf-agents",role="serve",kind="tcp_stream"})')}
busy = sum(float(s["value"][1]) for s in query('meshperf_agent_refusals_total{job="meshperf-agents",reason="busy"}'))
most = max(float(s["value"][1]) for s in query('meshperf_monitor_runs_total{job="meshperf"}'))
assert set(served) == {f"{net}.{i}:9465" for i in range(1, 5)} and all(v >= 3 for v in served.values()), served
assert sum(served.values()) <= 12 * (most + 1) + busy, (served, busy, most)
fails = query('sum(meshperf_agent_auth_failures_total{job="meshperf-agents"})')
assert float(fails[0]["value"][1]) == 0, fails
print(f"monitor cluster: ok (dns:mesh.test: 4 agents from the OCI image, 12 pairs through Prometheus from two shards "
      f"owning {sorted(int(v) for v in owned.values())} after {runs:.0f} run{'s' if runs != 1 else ''} each; "
      f"host 4's pairs {min(v for (s, _), v in pairs.items() if s == shaped) / 1e6:.1f} to {worst_shaped / 1e6:.1f} Mbit/s "
      f"under tbf 50mbit, the others from {best_other / 1e9:.2f} Gbit/s; tests served per agent {sorted(served.values())}, {busy:.0f} busy refusals between the shards)")
PY

# Nothing outlives the test: each agent (its unshare process's child) is
# gone once cleanup has run, not left in its deleted network namespace.
agents=()
for p in "${unshares[@]}"; do agents+=($(pgrep -P "$p" || true)); done
[ ${#agents[@]} -eq $hosts ] || fail "found ${#agents[@]} agent processes under unshare, not $hosts"
cleanup
trap - EXIT
for _ in $(seq 20); do
  alive=$(for a in "${agents[@]}"; do ps -o stat= -p "$a" | grep -v Z || true; done)
  [ -z "$alive" ] && break
  sleep 0.1
done
[ -z "$alive" ] || fail "agents ${agents[*]} outlived the test"
echo "monitor cluster: the $hosts agents stopped with the test"

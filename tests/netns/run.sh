#!/usr/bin/env bash
# Ground truth in network namespaces (root only): two end namespaces A and B
# joined through a router namespace R with veth pairs, one meshperf agent in
# A and one in B, and agent/tests/netns.rs run inside R to compare meshperf
# with tc tbf (rate), iptables -m statistic (loss) and TCP retransmits
# (against the DROP rule's counter and the sender's /proc/net/snmp).
# Names are unique per run (mp<pid>a/b/r); everything is removed on exit,
# whether the checks pass or not. Exit 0 on success or when skipped.
set -euo pipefail

if [ "$(id -u)" != 0 ]; then
  echo "netns harness: skipped (needs root to create network namespaces; CI runs it as root)"
  exit 0
fi
for tool in ip tc iptables; do
  if ! command -v "$tool" >/dev/null; then
    echo "netns harness: FAILED: $tool is not installed (apt-get install iproute2 iptables)" >&2
    exit 1
  fi
done

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
id=mp$$
A=${id}a B=${id}b R=${id}r
net=$((16 + $$ % 200))          # 10.<net>.1.0/24 (A side), 10.<net>.2.0/24 (B side)
ipa=10.$net.1.2 ipb=10.$net.2.2
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
pids=()

cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for n in "$A" "$B" "$R"; do ip netns del "$n" 2>/dev/null || true; done
  rm -rf "/tmp/$id"
}
trap cleanup EXIT INT TERM
mkdir -p "/tmp/$id"

echo "netns harness: building"
timeout 900 cargo build --profile "${MESHPERF_PROFILE:-release}" -q -p meshperf-agent
timeout 900 cargo test --profile test-release -q -p meshperf-agent --test netns --no-run

# A - R - B (topology.sh).
. "$root/tests/netns/topology.sh"

dir=/tmp/$id
bin="${MESHPERF_BIN:-${CARGO_TARGET_DIR:-target}/release/meshperf}"
fail() { echo "netns harness: $*" >&2; exit 1; }
. "$root/tests/netns/agents.sh"
start_agent "$A" "$ipa" url_a "" 600
start_agent "$B" "$ipb" url_b "" 600
echo "netns harness: agents $url_a and $url_b, router $R"

MESHPERF_NETNS_A=$url_a MESHPERF_NETNS_B=$url_b \
MESHPERF_NETNS_DEV_A=${id}a1 MESHPERF_NETNS_DEV_B=${id}b1 MESHPERF_NETNS_NS_A=$A MESHPERF_NETNS_NS_B=$B \
  ip netns exec "$R" timeout 300 cargo test --profile test-release -q --offline -p meshperf-agent --test netns -- --nocapture
echo "netns harness: ok"

#!/usr/bin/env bash
# Discovery by DNS (root only): in a network namespace with its own resolver
# (dnsmasq on 127.0.0.1:53, /etc/netns/NS/resolv.conf pointing at it), the
# name mesh.test has three A records, 127.0.0.1 to 127.0.0.3, as a
# Kubernetes headless Service lists its pods; an agent listens on each with
# one shared token, and `meshperf run --agent dns:mesh.test --matrix` must
# find all three and measure the six ordered pairs; fleet.test has 300 (an
# answer over TCP), returned whole by an agent's `resolve` and refused with
# its count by `meshperf run` and an agent under --max-resolve 100; a
# monitor over moving.test, whose answer changes between runs.
# Everything is removed on
# exit, whether the checks pass or not. Exit 0 on success or when skipped.
set -euo pipefail

if [ "$(id -u)" != 0 ]; then
  echo "dns discovery: skipped (needs root to create a network namespace; CI runs it as root)"
  exit 0
fi
command -v dnsmasq >/dev/null || { echo "dns discovery: FAILED: dnsmasq is not installed (scripts/setup.sh --test installs dnsmasq-base)" >&2; exit 1; }

root=$(cd "$(dirname "$0")/../.." && pwd)
bin="${MESHPERF_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/meshperf}"
[ -x "$bin" ] || { echo "dns discovery: FAILED: $bin is missing: run scripts/build.sh" >&2; exit 1; }
ns=mpdns$$
dir=/tmp/$ns
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "/etc/netns/$ns" "$dir"
}
trap cleanup EXIT INT TERM
mkdir -p "$dir" "/etc/netns/$ns"
fail() { echo "dns discovery: FAILED: $*" >&2; exit 1; }

ip netns add "$ns"
ip -n "$ns" link set lo up
# A non-loopback address, as a node has: getaddrinfo's AI_ADDRCONFIG (getent
# uses it) returns nothing where only loopback is configured.
ip -n "$ns" link add "${ns}a" type veth peer name "${ns}b"
ip -n "$ns" addr add 192.0.2.1/24 dev "${ns}a"
ip -n "$ns" link set "${ns}a" up
ip -n "$ns" link set "${ns}b" up
# `ip netns exec` bind-mounts this over /etc/resolv.conf inside the namespace.
echo "nameserver 127.0.0.1" >"/etc/netns/$ns/resolv.conf"
# moving.test: a name whose answer changes while a monitor runs (below); a
# hosts file dnsmasq reads again on SIGHUP.
printf '127.0.0.%s moving.test\n' 1 2 3 >"$dir/moving.hosts"
ip netns exec "$ns" timeout 120 dnsmasq --no-daemon --no-resolv --no-hosts --bind-interfaces \
  --listen-address=127.0.0.1 --port=53 --local=/test/ \
  --host-record=mesh.test,127.0.0.1 --host-record=mesh.test,127.0.0.2 --host-record=mesh.test,127.0.0.3 \
  --addn-hosts="$dir/moving.hosts" \
  $(for i in $(seq 300); do echo "--host-record=fleet.test,127.2.$((i / 256)).$((i % 256))"; done) \
  >"$dir/dnsmasq.log" 2>&1 &
pids+=($!)
for i in 1 2 3; do
  MESHPERF_TOKEN=$token ip netns exec "$ns" timeout 120 "$bin" agent --listen "127.0.0.$i:7800" >"$dir/agent$i.out" 2>&1 &
  pids+=($!)
done
for i in 1 2 3; do
  for _ in $(seq 100); do grep -q ' ready: ' "$dir/agent$i.out" 2>/dev/null && break; sleep 0.1; done
  grep -q ' ready: ' "$dir/agent$i.out" || { cat "$dir/agent$i.out" >&2; fail "agent on 127.0.0.$i did not start"; }
done
for _ in $(seq 50); do
  ip netns exec "$ns" getent ahostsv4 mesh.test >"$dir/getent" 2>/dev/null && break
  sleep 0.1
done
[ -s "$dir/getent" ] || { cat "$dir/dnsmasq.log" >&2; fail "mesh.test does not resolve in the namespace"; }

rc=0
MESHPERF_TOKEN=$token ip netns exec "$ns" timeout 120 "$bin" run --agent dns:mesh.test --matrix \
  --kind tcp_rr --set count=200 --json "$dir/matrix.json" >"$dir/out" 2>"$dir/err" || rc=$?
cat "$dir/err" "$dir/out" | grep -v '#r=' || true
[ $rc -eq 0 ] || fail "meshperf run exited $rc"
grep -q 'matrix of 3 agents, tcp_rr: 6 pairs' "$dir/err" || fail "the matrix did not have the 3 agents of mesh.test"
for i in 1 2 3; do grep -q "= agent 127.0.0.$i:7800" "$dir/out" || fail "127.0.0.$i missing from the table"; done
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const pairs = new Set(r.steps.map((s) => `${s.pair.client}>${s.pair.server}`));
  if (r.steps.length !== 6 || pairs.size !== 6) throw new Error(`expected 6 distinct pairs, got ${[...pairs]}`);
  for (const s of r.steps) if (s.error || !(s.summary.rtt_us.median > 0)) throw new Error(`pair ${JSON.stringify(s.pair)}: ${s.error}`);
' "$dir/matrix.json" || fail "the result file is not a 6-pair matrix"

# A fleet's name: fleet.test has 300 A records, an answer too large for a
# datagram (the resolver asks again over TCP). Every address comes back, or
# the name is refused with its count where --max-resolve is lower; never a
# silent subset. meshperf run first, then an agent's `resolve` (the page's
# dns: field), over the control WebSocket as the page asks.
rc=0
MESHPERF_TOKEN=$token ip netns exec "$ns" timeout 60 "$bin" run --agent dns:fleet.test --max-resolve 100 --matrix \
  --kind tcp_rr >"$dir/fleet.out" 2>"$dir/fleet.err" || rc=$?
[ $rc -eq 1 ] || fail "meshperf run with 300 addresses over --max-resolve 100 exited $rc: $(cat "$dir/fleet.err")"
grep -q 'fleet.test has 300 addresses, more than the 100 --max-resolve allows here' "$dir/fleet.err" \
  || fail "no count in the refusal: $(cat "$dir/fleet.err")"
MESHPERF_TOKEN=$token ip netns exec "$ns" timeout 120 "$bin" agent --listen 127.0.0.4:7800 --max-resolve 100 >"$dir/agent4.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q ' ready: ' "$dir/agent4.out" 2>/dev/null && break; sleep 0.1; done
resolve() { # PORT_HOST NAME: the agent's answer to `resolve`, as JSON
  ip netns exec "$ns" timeout 20 node --experimental-websocket --no-warnings -e '
    const [host, token, name] = process.argv.slice(1);
    const ws = new WebSocket(`ws://${host}/ws`);
    ws.onmessage = (e) => {
      const m = JSON.parse(e.data);
      if (m.type === "hello") ws.send(JSON.stringify({ type: "auth", id: 1, token }));
      else if (m.type === "auth_ok") ws.send(JSON.stringify({ type: "resolve", id: 2, name }));
      else if (m.id === 2) { console.log(JSON.stringify(m)); ws.close(); }
      else if (m.type === "error") { console.log(JSON.stringify(m)); ws.close(); }
    };' "$1" "$token" "$2"
}
whole=$(resolve 127.0.0.1:7800 fleet.test)
[ "$(node -p 'const m = JSON.parse(process.argv[1]); m.type === "resolved" ? new Set(m.addresses).size : JSON.stringify(m)' "$whole")" = 300 ] \
  || fail "the agent did not return fleet.test's 300 addresses: ${whole:0:300}"
over=$(resolve 127.0.0.4:7800 fleet.test)
node -e 'const m = JSON.parse(process.argv[1]); if (!(m.type === "error" && m.code === "not_found" && m.message.includes("fleet.test has 300 addresses, more than the 100"))) process.exit(1)' "$over" \
  || fail "the agent with --max-resolve 100 did not refuse fleet.test with its count: $over"

# Agents that come and go: a monitor over dns:moving.test (every 2 s),
# whose answer changes from 127.0.0.1-3 to 127.0.0.1, .2 and .4 between
# runs, as a Service's pods are replaced. The monitor resolves the name
# before every run (a change during a run counts from the next one): the
# first run after the change takes the new agent's pairs in, and the gone
# agent's 4 pairs go with it (the page keeps only pairs of the last run's
# agents), so the page holds exactly the 6 pairs of the three agents the
# name lists, all up, and those three agents.
MESHPERF_TOKEN=$token ip netns exec "$ns" timeout 90 "$bin" monitor --agent dns:moving.test --every 2s --jitter 0s \
  --kind udp_rr --set count=50 --listen 127.0.0.1:9464 >"$dir/monitor.out" 2>"$dir/monitor.err" &
pids+=($!)
moved=$(ip netns exec "$ns" timeout 80 python3 - "$dir" <<'PY'
import re, subprocess, sys, time, urllib.request
d = sys.argv[1]
def page():
    try:
        text = urllib.request.urlopen("http://127.0.0.1:9464/metrics", timeout=2).read().decode()
    except OSError:
        return None
    series = {}
    for line in text.splitlines():
        m = re.match(r'^(\w+)(?:\{(.*)\})? (\S+)$', line)
        if m:
            labels = tuple(sorted(re.findall(r'(\w+)="([^"]*)"', m.group(2) or "")))
            series[(m.group(1), labels)] = float(m.group(3))
    return series
def of(s, name):
    return {dict(k[1]).get("src", dict(k[1]).get("agent")) + (">" + dict(k[1])["dst"] if "dst" in dict(k[1]) else ""): v
            for k, v in s.items() if k[0] == name}
def runs(s):
    return s.get(("meshperf_monitor_runs_total", ()), 0)
def wait(what, ok, secs):
    t = time.time()
    while time.time() - t < secs:
        s = page()
        if s is not None and ok(s):
            return s
        time.sleep(0.1)
    sys.exit(f"{what} not within {secs} s; monitor stderr: {open(d + '/monitor.err').read()[-1500:]}")
def pairs_of(hosts):
    return {f"127.0.0.{a}:7800>127.0.0.{b}:7800" for a in hosts for b in hosts if a != b}
before = pairs_of([1, 2, 3])
s = wait("a first run over 127.0.0.1-3", lambda s: runs(s) >= 1, 30)
if set(of(s, "meshperf_pair_up")) != before or set(of(s, "meshperf_pair_up").values()) != {1.0}:
    sys.exit(f"first run: pairs {sorted(of(s, 'meshperf_pair_up').items())}, want the 6 of 127.0.0.1-3 up")
open(d + "/moving.hosts", "w").write("".join(f"127.0.0.{i} moving.test\n" for i in (1, 2, 4)))
subprocess.run(["pkill", "-HUP", "-f", f"addn-hosts={d}/moving.hosts"], check=True)
changed = time.time()
after = pairs_of([1, 2, 4])
# The first run that began after the change.
s = wait("a run over the new answer", lambda s: any("127.0.0.4:" in p for p in of(s, "meshperf_pair_up")), 20)
up = of(s, "meshperf_pair_up")
agents = set(of(s, "meshperf_agent_info"))
if set(up) != after or set(up.values()) != {1.0}:
    sys.exit(f"after the change: pairs {sorted(up.items())}, want the 6 of 127.0.0.1, .2 and .4 up")
if agents != {f"127.0.0.{i}:7800" for i in (1, 2, 4)} or s.get(("meshperf_monitor_agents", ())) != 3:
    sys.exit(f"after the change: agents {sorted(agents)}")
print(f"the 6 pairs of 127.0.0.1, .2 and .4 up {time.time() - changed:.1f} s after the change, 127.0.0.3's gone")
PY
) || fail "the monitor over a changing dns: answer: $moved"
echo "dns discovery: moving.test: $moved"

echo "dns discovery: ok (dns:mesh.test found 3 agents, 6 pairs measured; fleet.test's 300 addresses all returned, refused with the count over --max-resolve; a monitor over a changing answer took the new agent in and dropped the gone one's pairs)"

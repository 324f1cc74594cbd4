#!/usr/bin/env bash
# A real Prometheus (Debian's package) scrapes `meshperf monitor`: three
# agents on loopback, the monitor running their matrix every 2 s, Prometheus
# scraping its /metrics every second; then PromQL through Prometheus's HTTP
# API (/api/v1/query) must return one RTT series per ordered pair (6), with
# loopback-plausible values, and the monitor's run counter at 2 or more.
# Prometheus also loads deploy/prometheus/meshperf-rules.yml (evaluated every
# second): its pair figures are recorded for the 6 pairs, and every rule it
# has evaluated reports health ok (no evaluation error on a real monitor's
# series); the hourly baselines, which may not have had their turn yet, run
# as queries without error.
# Everything (processes, Prometheus's data dir) is removed on exit, whether
# the checks pass or not; every process is bounded by `timeout`.
set -euo pipefail
fail() { echo "monitor prometheus: FAILED: $*" >&2; exit 1; }
command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/setup.sh --test installs Debian's prometheus as root)"
command -v python3 >/dev/null || fail "python3 is not installed"
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="${MESHPERF_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/meshperf}"
[ -x "$bin" ] || fail "$bin is missing: run scripts/build.sh"
dir=$(mktemp -d /tmp/mpprom.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

# A line of FILE matching PATTERN, waiting up to 10 s.
wait_line() { # FILE PATTERN
  for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && break; sleep 0.1; done
  grep -m1 "$2" "$1" || { cat "$1" >&2; fail "no '$2' in $1"; }
}

agents=()
for i in 1 2 3; do
  timeout 120 "$bin" agent --listen 127.0.0.1:0 >"$dir/agent$i.out" 2>&1 &
  pids+=($!)
done
for i in 1 2 3; do
  agents+=(--agent "$(wait_line "$dir/agent$i.out" ' ready: ' | sed 's/.* ready: //')")
done
timeout 120 "$bin" monitor "${agents[@]}" --every 2s --listen 127.0.0.1:0 >"$dir/monitor.out" 2>"$dir/monitor.err" &
pids+=($!)
target=$(wait_line "$dir/monitor.err" 'metrics on http://' | sed 's#.*metrics on http://##; s#/metrics$##')

# A free loopback port for Prometheus's own HTTP API.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$dir/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - '$root/deploy/prometheus/meshperf-rules.yml'
scrape_configs:
  - job_name: meshperf
    static_configs:
      - targets: ['$target']
YAML
timeout 120 prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
  --web.listen-address="127.0.0.1:$port" >"$dir/prometheus.log" 2>&1 &
pids+=($!)

# Waits (up to 60 s) until the monitor finished two runs and Prometheus has
# scraped them, then checks the query's answer.
python3 - "$port" "$target" "$root/tests/monitor" <<'PY' || { tail -n 20 "$dir/monitor.err" "$dir/prometheus.log" >&2; fail "see above"; }
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[3])
from promql import query as promql, wait_runs
port, target = sys.argv[1], sys.argv[2]
def query(q):
    return promql(port, q)
runs, rtt = wait_runs(port, 2, 'meshperf_pair_rtt_seconds{job="meshperf",quantile="0.5"}', lambda r: len(r) == 6, 60)
pairs = {(s["metric"]["src"], s["metric"]["dst"]) for s in rtt}
agents = {a for p in pairs for a in p}
assert len(agents) == 3 and len(pairs) == 6 and all(a != b for a, b in pairs), pairs
for s in rtt:
    v = float(s["value"][1])
    assert 0 < v < 0.05, f"{s['metric']}: median RTT {v} s on loopback"
    assert s["metric"]["instance"] == target, s["metric"]
# PromQL over the pairs: the slowest pair's p99 is a number, every pair up.
up = query('sum(meshperf_pair_up{job="meshperf"})')
assert float(up[0]["value"][1]) == 6, up
worst = query('topk(1, meshperf_pair_rtt_seconds{job="meshperf",quantile="0.99"})')
assert len(worst) == 1 and 0 < float(worst[0]["value"][1]) < 0.1, worst
# The alerting rules on these series: the recorded figures, and no rule in
# error (each evaluated one: health ok).
import json, time, urllib.error, urllib.request
deadline = time.time() + 30
while len(query('meshperf:pair_rtt_p99_seconds{job="meshperf"}')) != 6:
    assert time.time() < deadline, query('meshperf:pair_rtt_p99_seconds')
    time.sleep(0.5)
with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/rules", timeout=5) as r:
    groups = json.load(r)["data"]["groups"]
rules = [(g["name"], x.get("name"), x.get("health"), x.get("lastError")) for g in groups for x in g["rules"]]
assert len(groups) == 4 and len(rules) > 20, rules
bad = [x for x in rules if x[2] not in ("ok", "unknown") or x[3] or (x[2] == "unknown" and x[0] != "meshperf-pair-baselines")]
assert not bad, bad
# Those not yet evaluated (the hourly group) run as queries: no error.
for x in (x for g in groups for x in g["rules"] if x["health"] == "unknown"):
    try:
        query(x["query"])
    except urllib.error.HTTPError as e:
        sys.exit(f"rule {x['name']}: {e.read().decode(errors='replace')}")
print(f"monitor prometheus: ok (Prometheus scraped {target}; 6 ordered pairs among {len(agents)} agents, "
      f"median RTT {min(float(s['value'][1]) for s in rtt) * 1e6:.0f} to {max(float(s['value'][1]) for s in rtt) * 1e6:.0f} us; "
      f"runs_total {runs:.0f}; {len(rules)} alerting and recording rules loaded, "
      f"{sum(x[2] == 'ok' for x in rules)} evaluated without error)")
PY

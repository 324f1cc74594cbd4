#!/usr/bin/env bash
# The cost of reading TCP_INFO every interval (issue 43) on the stream
# figure: a 1-stream tcp_stream on loopback, alternating between two agent
# binaries in the same run, WITH (the build as it is) and WITHOUT (a build
# whose bulk workers skip the per-interval TCP_INFO read: in
# agent/src/engine/bulk.rs `Slot::record`, `S::TCP.then(...)` made
# `(S::TCP && false).then(...)`). Prints each run and the ratio of the
# medians. Not part of npm test or npm run bench.
#
# usage: bench/tcpinfo-cost.sh WITH_BIN WITHOUT_BIN [ROUNDS [SECONDS [INTERVAL_MS]]]
set -euo pipefail
with=$1 without=$2 rounds=${3:-5} secs=${4:-3} iv=${5:-10}
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
dir=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"' EXIT
start() { # binary port
  MESHPERF_TOKEN=$token "$1" agent --listen "127.0.0.1:$2" >"$dir/$2.out" 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do grep -q ready "$dir/$2.out" && return; sleep 0.1; done
  cat "$dir/$2.out" >&2; exit 1
}
start "$with" 7941
start "$without" 7942
run() { # binary port -> bits per second
  "$1" run --agent "http://127.0.0.1:$2/#token=$token" --kind tcp_stream \
    --set duration_s="$secs" --set interval_ms="$iv" --json "$dir/r.json" >/dev/null 2>&1
  node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).steps[0].summary.bits_per_second)' "$dir/r.json"
}
a=() b=()
for i in $(seq "$rounds"); do
  x=$(run "$with" 7941); y=$(run "$without" 7942)
  a+=("$x"); b+=("$y")
  awk -v i="$i" -v x="$x" -v y="$y" 'BEGIN { printf "round %d: with %.3f Gbit/s, without %.3f Gbit/s\n", i, x / 1e9, y / 1e9 }'
done
node -e '
  const med = (v) => { const s = v.map(Number).sort((p, q) => p - q); return (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2; };
  const [a, b] = [process.argv[1].split(" "), process.argv[2].split(" ")];
  console.log(`median with ${(med(a) / 1e9).toFixed(3)} Gbit/s, without ${(med(b) / 1e9).toFixed(3)} Gbit/s: ratio ${(med(a) / med(b)).toFixed(4)}`);
' "${a[*]}" "${b[*]}"

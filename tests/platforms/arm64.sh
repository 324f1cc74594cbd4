#!/usr/bin/env bash
# An arm64 agent against an amd64 one (issue 23 part 1): the static
# aarch64-unknown-linux-musl build (Debian's gcc-aarch64-linux-gnu links it,
# scripts/lib.sh) in npm test's test-cross profile (unoptimised, Cargo.toml:
# the release profile's single-unit fat LTO would add minutes to npm test
# for a binary that only has to run here), run under Debian's
# qemu-aarch64-static on loopback, against $MESHPERF_BIN (amd64). `meshperf
# run` drives, both agents serve: a tcp_stream matrix (both directions,
# 16 MiB each), a udp_rr matrix (300 transactions each way) and a short
# latency_under_load (four 1 s phases). Checked: the binary is static
# aarch64, the agents report aarch64 and x86_64 kernels (qemu's uname), every pair
# moved what it was asked with no error.
set -euo pipefail
SCRIPT_NAME=arm64
# The profile npm test builds in (lib.sh would default to release).
profile=${MESHPERF_PROFILE:-test-release}
# The arm64 build's (npm test's test-cross: unoptimised, scripts/test.sh).
static_profile=${MESHPERF_STATIC_PROFILE:-$profile}
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/agents.sh"
fail() { echo "arm64: FAILED: $*" >&2; exit 1; }
bin=${MESHPERF_BIN:-$ROOT/target/$profile/meshperf}
[ -x "$bin" ] || fail "$bin is missing: run scripts/build.sh"
command -v qemu-aarch64-static >/dev/null || fail "qemu-aarch64-static is not installed (apt-get install qemu-user-static; scripts/setup.sh --test does)"
[ -d "$(rustc --print sysroot)/lib/rustlib/aarch64-unknown-linux-musl/lib" ] \
  || fail "the Rust target aarch64-unknown-linux-musl is missing (rustup target add aarch64-unknown-linux-musl; scripts/setup.sh --test does)"
aarch64_musl_env

t0=$SECONDS
cargo build -q --profile "$static_profile" -p meshperf-agent --target aarch64-unknown-linux-musl || fail "the aarch64-unknown-linux-musl build failed"
arm=${CARGO_TARGET_DIR:-$ROOT/target}/aarch64-unknown-linux-musl/$static_profile/meshperf
echo "arm64: $arm built in $((SECONDS - t0)) s ($(wc -c <"$arm") bytes)"
readelf -hW "$arm" | grep -Eq 'Machine:\s+AArch64' || fail "$arm is not an AArch64 binary: $(readelf -hW "$arm" | grep Machine)"
if readelf -lW "$arm" | grep -q INTERP || readelf -dW "$arm" | grep -q '(NEEDED)'; then
  fail "$arm is not static"
fi

dir=$(mktemp -d)
token=$(random_token)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
start_agent arm64 url_arm qemu-aarch64-static "$arm"
start_agent amd64 url_amd "$bin"
echo "arm64: agents ready: arm64 (qemu) ${url_arm%%#*}, amd64 ${url_amd%%#*}"

run() { # NAME ARGS...: meshperf run between the two, its JSON into $dir/NAME.json
  local name=$1 rc=0
  shift
  timeout 180 "$bin" run --agent "$url_arm" --agent "$url_amd" "$@" --json "$dir/$name.json" \
    >"$dir/$name.out" 2>"$dir/$name.err" || rc=$?
  grep -v '#r=' "$dir/$name.err" "$dir/$name.out" || true
  [ $rc -eq 0 ] || fail "meshperf run ($name) exited $rc"
}
run tcp_stream --matrix --kind tcp_stream --set msg_bytes=64K --set count=256
run udp_rr --matrix --kind udp_rr --set count=300
run lul --kind latency_under_load --set idle_s=1 --set download_s=1 --set upload_s=1 --set both_s=1 --set gap_s=0.2 --set probe_ms=10
node -e '
  const fs = require("fs"), dir = process.argv[1];
  const read = (n) => JSON.parse(fs.readFileSync(`${dir}/${n}.json`, "utf8"));
  for (const kind of ["tcp_stream", "udp_rr"]) {
    const r = read(kind);
    if (r.steps.length !== 2) throw new Error(`${kind}: ${r.steps.length} pairs, not 2`);
    for (const s of r.steps) {
      if (s.error) throw new Error(`${kind} ${JSON.stringify(s.pair)}: ${s.error}`);
      if (kind === "tcp_stream" && s.summary.bytes !== 256 * 65536) throw new Error(`tcp_stream moved ${s.summary.bytes} bytes`);
      if (kind === "udp_rr" && !(s.summary.count === 300 && s.summary.rtt_us.median > 0)) throw new Error(`udp_rr: ${JSON.stringify(s.summary)}`);
    }
  }
  // The arm64 agent is the one measured: uname under qemu says aarch64.
  const arches = read("tcp_stream").agents.map((a) => a.kernel.split(" ").pop()).join(",");
  if (arches !== "aarch64,x86_64") throw new Error(`the agents run on ${arches}, not aarch64,x86_64`);
  const l = read("lul");
  if (l.steps.length !== 1 || l.steps[0].error) throw new Error(`latency_under_load: ${JSON.stringify(l.steps.map((s) => s.error))}`);
  const s = l.steps[0].summary;
  const phases = (s.phases || []).map((p) => p.phase).join(",");
  if (phases !== "idle,download,upload,both") throw new Error(`latency_under_load phases: ${phases}`);
  for (const p of s.phases) {
    if (!(p.probes_up.received > 0 && p.rtt_us.median > 0)) throw new Error(`latency_under_load ${p.phase}: no probes answered`);
    if (p.phase === "download" && !(p.down_bytes > 0)) throw new Error("download phase moved nothing");
    if (p.phase === "upload" && !(p.up_bytes > 0)) throw new Error("upload phase moved nothing");
  }' "$dir" || fail "the results are not clean (above)"
echo "arm64: ok (static aarch64 agent under qemu: tcp_stream and udp_rr both ways, latency_under_load against amd64; $((SECONDS - t0)) s)"

#!/usr/bin/env bash
# npm test: set up (with chromium), build everything, run the web app's unit
# tests (node's test runner), the Rust tests in release mode (the integration
# tests time real transfers), each fuzz target's committed corpus and a short
# fixed-seed run (a test that cannot run is counted as failed), then the
# Playwright end-to-end tests in Debian's chromium against real agents.
# The last line is always "N passed, M failed, K skipped" (tests counted
# over all runners; each skipped test is named on a line before it); the
# exit status is non-zero when anything failed.
#
# --quick (npm run test:quick): the inner loop's tier: set up, build, the
# web unit tests, cargo test and the e2e specs of QUICK_E2E below; no
# deploy, platform, fuzz, monitor or network namespace test (docs/testing.md).
set -euo pipefail
SCRIPT_NAME=test
quick=0
case "${1:-}" in
    --quick) quick=1 ;;
    "") ;;
    *) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
# The quick tier's e2e specs: the walking skeleton, the form, a matrix and
# permalinks: 15 of the 64 e2e tests (Playwright's file filters).
QUICK_E2E=(skeleton.spec.ts tests/form.spec.ts tests/matrix.spec.ts tests/permalink.spec.ts)
# The agent every phase runs (e2e, netns, monitor) is built in cargo test's
# profile, test-release: one build for all (scripts/lib.sh). The release
# profile's fat-LTO build is the OCI image test's (scripts/release.sh).
export MESHPERF_PROFILE="${MESHPERF_PROFILE:-test-release}"
# The static and cross builds (arm64, the amd64 image): Cargo.toml's
# test-cross profile, unoptimised, half test-release's compile.
export MESHPERF_STATIC_PROFILE="${MESHPERF_STATIC_PROFILE:-test-cross}"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export MESHPERF_BIN="$AGENT_BIN"

out="$ROOT/target/test-logs"
mkdir -p "$out"
passed=0
failed=0
skipped=0
failures=()   # the failed tests' names, repeated at the end (CI shows the tail)
skips=()      # the skipped tests' names and why, listed at the end too
timings=()
t_all=$SECONDS

summary() {
    local rc=$?
    trap - EXIT
    [ $rc -ne 0 ] && [ $failed -eq 0 ] && failed=1   # a phase broke before counting
    log "timings: ${timings[*]:-none} total=$((SECONDS - t_all))s"
    [ $quick -eq 0 ] || log "quick tier only (scripts/test.sh --quick): the full suite is npm test"
    local name
    for name in "${skips[@]}"; do log "SKIPPED: $name"; done
    for name in "${failures[@]}"; do log "FAILED: $name"; done
    echo "$passed passed, $failed failed, $skipped skipped"
    [ $failed -eq 0 ] || exit 1
    exit $rc
}
trap summary EXIT

# phase NAME CMD...: runs CMD with its output teed to target/test-logs/NAME.log.
phase() {
    local name="$1"; shift
    local t0=$SECONDS rc=0
    log "== $name"
    "$@" 2>&1 | tee "$out/$name.log" || rc=$?
    timings+=("$name=$((SECONDS - t0))s")
    if [ $rc -eq 77 ]; then
        log "$name skipped (exit 77, $((SECONDS - t0)) s); log: target/test-logs/$name.log"
    elif [ $rc -ne 0 ]; then
        log "$name failed (exit $rc, $((SECONDS - t0)) s); log: target/test-logs/$name.log"
    fi
    return $rc
}

# failed_names PHASE CMD...: each line CMD prints is a failed test of PHASE.
failed_names() {
    local line
    while IFS= read -r line; do
        [ -n "$line" ] && failures+=("$1: $line")
    done < <("${@:2}" || true)
}

# The network namespace tests (and the amd64 musl build their image test
# uses) need CAP_NET_ADMIN (links, qdiscs, iptables) and CAP_SYS_ADMIN (`ip
# netns add` mounts the namespace; unshare), not a user id: a root in a
# container may lack them, and would see them fail for that.
netns_capable() {
    local eff
    eff=$(awk '/^CapEff:/ { print $2 }' /proc/self/status 2>/dev/null) || return 1
    [ -n "$eff" ] || return 1
    (( (16#$eff >> 12) & 1 && (16#$eff >> 21) & 1 ))
}

phase setup bash "$ROOT/scripts/setup.sh" --test
phase build bash "$ROOT/scripts/build.sh"

# Web unit tests: count from node's test runner summary ("# pass N", "# fail N").
rc=0
phase web-unit npm run -s test:unit -w web || rc=$?
read -r p f < <(awk '/^# pass [0-9]+$/ { p += $3 } /^# fail [0-9]+$/ { f += $3 } END { print p + 0, f + 0 }' "$out/web-unit.log")
passed=$((passed + p)); failed=$((failed + f))
if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then failed=$((failed + 1)); failures+=("web-unit (did not load, or crashed)"); fi
failed_names "web-unit" sed -n 's/^ *not ok [0-9]* - //p' "$out/web-unit.log"
log "web unit: $p passed, $f failed"

# skip NAME WHY: one test not run (or run only in part), counted as skipped.
skip() {
    skipped=$((skipped + 1)); skips+=("$1 ($2)"); log "$1: 1 skipped ($2)"
}

# counted NAME SECONDS SCRIPT [ARGS...]: one test, passed when SCRIPT exits
# 0, skipped when it exits 77 (what it could not check is its last line),
# failed otherwise (124 when `timeout` ended it).
counted() {
    [ $quick -eq 0 ] || return 0   # --quick runs none of these
    local rc=0
    phase "$1" timeout "$2" bash "$3" "${@:4}" || rc=$?
    if [ $rc -eq 0 ]; then
        passed=$((passed + 1)); log "$1: 1 passed"
    elif [ $rc -eq 77 ]; then
        skip "$1" "$(tail -n 1 "$out/$1.log")"
    else
        [ $rc -ne 124 ] || log "$1: ran past its $2 s and was stopped"
        # The reason (a script's last "FAILED"/Error lines, else its last lines) is
        # repeated in the summary: CI keeps only the run's tail.
        local why
        why=$(grep 'FAILED\|Error\|error:' "$out/$1.log" | tail -n 3 | cut -c1-400) || true
        [ -n "$why" ] || why=$(tail -n 3 "$out/$1.log" | cut -c1-400)
        failed=$((failed + 1)); failures+=("$1: ${why//$'\n'/ | }"); log "$1: 1 failed"
    fi
}

# deploy/: the Kubernetes manifests against the API schemas of a current
# release (kubernetes-validate) as files and as kustomize builds them, and the
# systemd unit.
counted deploy 120 "$ROOT/tests/deploy/validate.sh"

# Every node and every laptop (tests/platforms/): the man pages name every
# flag of --help and the bash completion completes; a static arm64 agent
# under qemu-user against this amd64 one (tcp_stream, udp_rr,
# latency_under_load); the .deb of that arm64 binary installed into a
# throwaway root, its unit verified and its agent started; the Windows
# agent (x86_64-pc-windows-gnu, mingw-w64) under Wine against this one.
# The builds those tests and the OCI image test below run (static arm64,
# Windows, and as root static amd64) in one cargo: its job queue keeps both CPUs busy
# through each build's single-crate stretches (ring's C, the agent crate,
# the links), where two builds one after the other leave a CPU idle. The
# tests then find them built; one that fails here fails those tests too.
static_build() {
    local targets=(--target aarch64-unknown-linux-musl --target x86_64-pc-windows-gnu)
    aarch64_musl_env
    windows_gnu_env
    if netns_capable && [ -d "$(rustc --print sysroot)/lib/rustlib/x86_64-unknown-linux-musl/lib" ]; then
        amd64_musl_env
        targets+=(--target x86_64-unknown-linux-musl)
    fi
    cargo build -q --profile "$MESHPERF_STATIC_PROFILE" -p meshperf-agent "${targets[@]}"
}
[ $quick -eq 1 ] || phase static-build static_build || log "static-build failed: the tests that need a static binary say so"
counted platforms-docs 300 "$ROOT/tests/platforms/docs.sh"
counted platforms-arm64 900 "$ROOT/tests/platforms/arm64.sh"
counted platforms-deb 300 "$ROOT/tests/platforms/deb.sh"
counted platforms-windows 300 "$ROOT/tests/platforms/windows.sh"
# A fleet of mixed versions: the agent of an earlier commit (built once,
# unoptimised, kept in target/old-agent/) beside this tree's, every kind
# both know both ways, path refused naming the old agent, the old CLI and
# this monitor over both (tests/fleet/mixed.sh).
counted mixed-versions 1500 "$ROOT/tests/fleet/mixed.sh"
# macOS: the agent checks (cargo check, no SDK here to link) for
# x86_64-apple-darwin and aarch64-apple-darwin, zig compiling ring's C.
counted platforms-macos 600 "$ROOT/scripts/check-macos.sh"

# Rust: count from the harness' "test result:" lines, one per test binary.
# The phase has a deadline (about 3 times its length on these 2 cores, the
# compile included): a test that hangs is stopped with everything cargo
# started (`timeout` signals its process group) and named, from the
# harness' own "has been running for over 60 seconds" line. A test that
# could not check all it should (agent/tests/integration/util.rs `skipped`:
# no root, say) appends its name to $MESHPERF_SKIP_LOG: it is counted as
# skipped, not passed.
export MESHPERF_SKIP_LOG="$out/cargo-skipped.txt"
rm -f "$MESHPERF_SKIP_LOG"
rc=0
phase cargo-test timeout --kill-after=10 1800 cargo test --workspace --profile test-release --no-fail-fast || rc=$?
read -r p f < <(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
                     END { print p + 0, f + 0 }' "$out/cargo-test.log")
passed=$((passed + p)); failed=$((failed + f))
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    # The tests the harness saw run past 60 s and never finished.
    hung=$(awk '/ has been running for over 60 seconds$/ { sub(/^test /, ""); sub(/ has been running for over 60 seconds$/, ""); run[$0] = 1 }
                /^test .* \.\.\. / { t = $2; delete run[t] }
                END { for (t in run) { printf "%s%s", sep, t; sep = ", " } }' "$out/cargo-test.log")
    failed=$((failed + 1)); failures+=("cargo-test (stopped after 1800 s; still running: ${hung:-none named: see the end of its log})")
elif [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
    failed=$((failed + 1)); failures+=("cargo-test (did not compile, or crashed)")
fi
# Passed, but only in part: skipped instead.
if [ -s "$MESHPERF_SKIP_LOG" ]; then
    while IFS= read -r line; do
        grep -qxF "test ${line%%: *} ... ok" "$out/cargo-test.log" || continue
        passed=$((passed - 1)); skip "cargo-test: ${line%%: *}" "${line#*: }"
    done < <(awk '{ n = $0; sub(/: .*/, "", n); if (!(n in seen)) { seen[n] = 1; print } }' "$MESHPERF_SKIP_LOG")
fi
failed_names cargo-test sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$out/cargo-test.log"
# ... and why: each panic's place and the two lines after it, cut to 400
# characters (CI shows the log's tail; the failed test's own output is far
# above it).
failed_names cargo-test awk '
    /^---- .* stdout ----$/ { name = $2; n = 0; next }
    name != "" && /panicked at/ { why = $0; n = 2; next }
    n > 0 { why = why " | " $0; if (--n == 0) { print name ": " substr(why, 1, 400); name = "" } }' "$out/cargo-test.log"
log "cargo test: $p passed, $f failed"

# Fuzzing (fuzz/, nightly and cargo-fuzz from setup.sh): every decoder of
# outside bytes, one test per target, passed when it finds no crash. Each is
# deterministic for a commit (`scripts/fuzz.sh check`: the committed corpus
# replayed, then a fixed number of runs with a fixed seed from that corpus
# only), so a red fuzz test is the commit's, and a re-run gives the same.
# Long random campaigns are `scripts/fuzz.sh campaign` (fuzz/README.md). The
# build (about 3 CPU minutes from nothing) is its own phase (started in the
# background beside the arm64 and the release builds, the three took 580 s
# on these 2 vCPUs against about 450 s one after the other). Without the
# toolchain the targets did not run: that is counted as a failure, not a pass.
if [ $quick -eq 1 ]; then
    :   # no fuzz test in the quick tier
elif [ -x "$CARGO_FUZZ_BIN" ] && rustup run "$FUZZ_TOOLCHAIN" rustc --version >/dev/null 2>&1; then
    if phase fuzz-build bash "$ROOT/scripts/fuzz.sh" build; then
        # One at a time: a check keeps both CPUs busy (two side by side
        # took 58 s against 52 s one after the other, frame and plan).
        for t in $(bash "$ROOT/scripts/fuzz.sh" list); do
            counted "fuzz-$t" 120 "$ROOT/scripts/fuzz.sh" check "$t"
        done
    else
        failed=$((failed + 1)); failures+=("fuzz-build"); log "fuzz-build: 1 failed"
    fi
else
    failed=$((failed + 1)); failures+=("fuzz (not run)")
    log "fuzz: 1 failed: not run, no $FUZZ_TOOLCHAIN toolchain or no cargo-fuzz at ${CARGO_FUZZ_BIN#"$ROOT/"} (scripts/setup.sh --test installs both; it needs rustup)"
fi

# Playwright: count from its JSON report.
report="$out/playwright.json"
rm -f "$report"
rc=0
e2e_only=()
[ $quick -eq 0 ] || e2e_only=("${QUICK_E2E[@]}")
PLAYWRIGHT_JSON_OUTPUT_NAME="$report" phase e2e npm test -w e2e -- --reporter=list,json "${e2e_only[@]}" || rc=$?
if [ -f "$report" ]; then
    read -r p f < <(node -e '
        const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).stats;
        console.log(s.expected, s.unexpected + s.flaky)' "$report")
    # Each spec that failed (or passed only on a retry): file, title, status.
    failed_names e2e node -e '
        const walk = (s, out) => {
            for (const spec of s.specs || [])
                for (const t of spec.tests || [])
                    if (t.status === "unexpected" || t.status === "flaky") out.push(`${spec.file}: ${spec.title} (${t.status})`);
            for (const c of s.suites || []) walk(c, out);
            return out;
        };
        const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        for (const s of r.suites || []) for (const l of walk(s, [])) console.log(l);' "$report"
else
    p=0; f=0
fi
passed=$((passed + p)); failed=$((failed + f))
if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then failed=$((failed + 1)); failures+=("e2e (no report, or crashed)"); fi
log "e2e: $p passed, $f failed"
[ $quick -eq 0 ] || exit 0   # the quick tier ends here

# A real Prometheus (Debian's, which setup installs) scrapes `meshperf
# monitor` over three agents on loopback; PromQL through its HTTP API finds
# the 6 ordered pairs. Needs no root.
counted monitor-prometheus 180 "$ROOT/tests/monitor/prometheus.sh"

# The tests below build network namespaces (netns_capable: see above);
# without the capabilities each is counted as skipped, by name.
netns_tests=(netns netns-dns netns-lul netns-tcpinfo netns-path netns-stamp netns-mesh netns-image monitor-cluster)
if netns_capable; then
    # Ground truth in network namespaces: one test, counted from its exit status.
    counted netns 1200 "$ROOT/tests/netns/run.sh"
    # Discovery by DNS: a resolver with several A records for one name.
    counted netns-dns 300 "$ROOT/tests/netns/dns.sh"
    # Latency under load: a tbf queue in one direction and iptables probe
    # loss, against meshperf's added RTT, one-way delays and loss counts.
    counted netns-lul 300 "$ROOT/tests/netns/lul.sh"
    # What limited a tcp_stream: a tbf queue, a clamped receive buffer and
    # a clamped send buffer behind a delay line, a paced sender; each
    # verdict against its set-up.
    counted netns-tcpinfo 300 "$ROOT/tests/netns/tcpinfo.sh"
    # Where in the path: three routers and an asymmetric way back, MTU 1400
    # on one link, a DSCP rewrite, a router sending no ICMP and a black
    # hole; meshperf's hops, MTU and marks each way, against tracepath's.
    counted netns-path 120 "$ROOT/tests/netns/path.sh"
    # STAMP through a delay line and an iptables drop rule: the round trip
    # within 0.5 ms of the line, the loss the rule's DROP counter exactly.
    counted netns-stamp 180 "$ROOT/tests/netns/stamp.sh"
    # Forged ICMP errors (issue 40): a made-up router in a namespace sends
    # port/host unreachable, fragmentation needed and time exceeded quoting
    # the test flows' 8-byte UDP headers; udp_rr and udp_stream run to
    # their ends counting them, a path trace takes none for a hop.
    counted netns-icmp 120 "$ROOT/tests/netns/icmp.sh"
    # The mesh: five hosts on a bridge, one under tbf at 50 Mbit/s, one
    # pair behind a 5 ms delay line; tcp_stream and tcp_rr matrices must
    # pinpoint exactly those paths, and an agent killed mid-matrix only its
    # own row and column.
    counted netns-mesh 180 "$ROOT/tests/netns/mesh.sh"
    # The OCI image: the static (musl) build, the image built and unpacked
    # with umoci, its agent (chrooted, uid 65534, PID 1) against the plain
    # build's over a veth pair (amd64 and arm64, an image index). The musl
    # builds are static-build's above (test-cross profile).
    counted netns-image 1200 "$ROOT/tests/netns/image.sh"
    # The cluster: 4 agents in namespaces found by DNS (dnsmasq), the
    # monitor's tcp_stream matrix through Prometheus, one host under tbf
    # and its pairs the slowest in the query.
    counted monitor-cluster 300 "$ROOT/tests/monitor/cluster.sh"
else
    for t in "${netns_tests[@]}"; do
        skip "$t" "needs CAP_NET_ADMIN and CAP_SYS_ADMIN to create network namespaces; CI runs as root"
    done
fi

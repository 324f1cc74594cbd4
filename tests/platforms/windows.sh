#!/usr/bin/env bash
# The Windows agent against the Linux one (issue 23 part 5): the
# x86_64-pc-windows-gnu build (Debian's mingw-w64 links it, scripts/lib.sh)
# in npm test's test-cross profile, run under Debian's Wine (wine64) in a
# throwaway prefix on loopback, against $MESHPERF_BIN. `meshperf run`
# drives, both agents serve: a tcp_stream matrix (both directions, 16 MiB
# each), a udp_rr matrix (300 transactions each way), a udp_stream matrix
# capped by rate (1000 datagrams each way in about 1 s) and one step of it
# both ways at once (two flows each way on one worker thread per side,
# `gso` auto: the Windows ends go without),
# and two short latency_under_load steps (2.6 s each; the Windows agent
# serving, then driving). Checked: the
# binary is a PE32+ x86-64 executable; every pair moved what it was asked
# with no error: udp_stream's receivers counted every datagram (none
# reordered or doubled on loopback, the raw sequence numbers all there;
# lost, with the probes, no more than the kernel dropped on the way in)
# and the sender kept to the rate, latency_under_load measured probes
# both ways in every phase with their raw round trips; the timestamps are
# the user-space ones where the Windows agent received (the Linux
# receiver's kernel ones otherwise); the Windows agent's info says Windows
# and capabilities tcp_stream, tcp_rr, udp_rr, udp_stream,
# latency_under_load; a Linux-only kind (unix_stream) and Linux-only
# options (zerocopy; gso on for udp_stream) asked of it are refused in one
# line naming windows, and it serves the next step; the Windows build's
# own `meshperf run` (under Wine) drives one tcp_rr step against the Linux
# agent.
set -euo pipefail
SCRIPT_NAME=windows
# The profile npm test builds in (lib.sh would default to release).
profile=${MESHPERF_PROFILE:-test-release}
# The Windows build's (npm test's test-cross: unoptimised, scripts/test.sh).
static_profile=${MESHPERF_STATIC_PROFILE:-$profile}
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/agents.sh"
fail() { echo "windows: FAILED: $*" >&2; exit 1; }
bin=${MESHPERF_BIN:-$ROOT/target/$profile/meshperf}
[ -x "$bin" ] || fail "$bin is missing: run scripts/build.sh"
wine=$(wine64_bin)
[ -n "$wine" ] || fail "wine64 is not installed (apt-get install --no-install-recommends wine64; scripts/setup.sh --test does)"
[ -d "$(rustc --print sysroot)/lib/rustlib/x86_64-pc-windows-gnu/lib" ] \
  || fail "the Rust target x86_64-pc-windows-gnu is missing (rustup target add x86_64-pc-windows-gnu; scripts/setup.sh --test does)"
windows_gnu_env

t0=$SECONDS
# npm test built it already (scripts/test.sh, static_build): cargo finds it fresh.
cargo build -q --profile "$static_profile" -p meshperf-agent --target x86_64-pc-windows-gnu || fail "the x86_64-pc-windows-gnu build failed"
exe=${CARGO_TARGET_DIR:-$ROOT/target}/x86_64-pc-windows-gnu/$static_profile/meshperf.exe
echo "windows: $exe built in $((SECONDS - t0)) s ($(wc -c <"$exe") bytes)"
x86_64-w64-mingw32-objdump -f "$exe" | grep -q 'file format pei-x86-64' || fail "$exe is not a PE32+ x86-64 executable"

dir=$(mktemp -d)
export WINEPREFIX="$dir/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  # This prefix's wineserver only (it lingers a few seconds after its last process).
  timeout 10 "$(dirname "$wine")/wineserver" -k 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

# A fresh prefix: Wine's first start builds it (the registry, C:\windows).
t1=$SECONDS
# Its exit status is not the test: with wine64 alone its 32-bit half fails
# (no syswow64), and under load the program it was asked to run after
# making the prefix once went unfound ("ShellExecuteEx failed", exit 1)
# though the prefix was whole. So: wait for the prefix's processes to end
# (the registry written), then check the prefix itself.
timeout 120 "$wine" wineboot --init >"$dir/wineboot.out" 2>&1 || true
timeout 60 "$(dirname "$wine")/wineserver" -w 2>/dev/null || true
for f in system32/kernel32.dll system32/ntdll.dll; do
  [ -e "$WINEPREFIX/drive_c/windows/$f" ] || { cat "$dir/wineboot.out" >&2; fail "wineboot did not make a prefix in 120 s (no C:\windows\$f)"; }
done
echo "windows: Wine prefix made in $((SECONDS - t1)) s ($("$wine" --version))"
# Rust's std (1.78 and later) takes its random numbers from ProcessPrng in
# bcryptprimitives.dll, which Windows 10 has and Wine 8.0 (Debian 12) does
# not: there the test gives this prefix a two-line one over BCryptGenRandom
# (Wine's own), built with the same mingw-w64. A Wine that has the DLL
# keeps its own.
sys32="$WINEPREFIX/drive_c/windows/system32"
if [ ! -e "$sys32/bcryptprimitives.dll" ]; then
  cat >"$dir/bcryptprimitives.c" <<'EOF'
#include <windows.h>
#include <bcrypt.h>
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    return BCryptGenRandom(NULL, data, (ULONG)len, BCRYPT_USE_SYSTEM_PREFERRED_RNG) == 0;
}
EOF
  printf 'LIBRARY bcryptprimitives.dll\nEXPORTS\nProcessPrng\n' >"$dir/bcryptprimitives.def"
  x86_64-w64-mingw32-gcc -O2 -shared -o "$sys32/bcryptprimitives.dll" \
    "$dir/bcryptprimitives.c" "$dir/bcryptprimitives.def" -lbcrypt \
    || fail "cannot build the bcryptprimitives.dll shim for Wine"
  echo "windows: this Wine has no bcryptprimitives.dll: the prefix got a ProcessPrng shim"
fi

token=$(random_token)
agent_lifetime_s=240 agent_ready_s=60   # Wine starts slower
t1=$SECONDS
start_agent windows url_win "$wine" "$exe"
echo "windows: the Windows agent (Wine) is ready in $((SECONDS - t1)) s at ${url_win%%#*}"
start_agent linux url_lin "$bin"

run_between() { # SERVER DRIVER NAME ARGS...: meshperf run, SERVER's agent serving, its JSON into $dir/NAME.json
  local server=$1 driver=$2 name=$3 rc=0
  shift 3
  timeout 120 "$bin" run --agent "$server" --agent "$driver" "$@" --json "$dir/$name.json" \
    >"$dir/$name.out" 2>"$dir/$name.err" || rc=$?
  grep -v '#r=' "$dir/$name.err" "$dir/$name.out" || true
  [ $rc -eq 0 ] || fail "meshperf run ($name) exited $rc"
}
run() { run_between "$url_win" "$url_lin" "$@"; } # NAME ARGS...: the Windows agent serving
run tcp_stream --matrix --kind tcp_stream --set msg_bytes=64K --set count=256
run udp_rr --matrix --kind udp_rr --set count=300
# What the kernel dropped on the way in from here to the last UDP run (Wine's
# sockets are this host's): the datagrams and probes those runs may lose.
drops() { kernel_drops | awk '{ s += $1 } END { print s }'; } # scripts/lib.sh
drops_before=$(drops)
# 1000 datagrams of 1000 bytes at 8 Mbit/s: 1 s each way.
run udp_stream --matrix --kind udp_stream --set rate=8M --set count=1000 --set pkt_bytes=1000
# Both ways at once, two flows each way, all four on one thread per side:
# the thread sleeps on its receivers' sockets together (WSAPoll on Windows).
# `gso` auto: Windows has no UDP GSO or GRO, and goes without.
run udp_stream_both --kind udp_stream --set direction=both --set streams=2 --set threads=1 \
  --set rate=8M --set count=500 --set pkt_bytes=1000 --set gso=auto

refused() { # NAME WANT ARGS...: a step the Windows agent refuses; its one line must say WANT
  local name=$1 want=$2 rc=0
  shift 2
  timeout 60 "$bin" run "$@" --json "$dir/$name.json" >"$dir/$name.out" 2>&1 || rc=$?
  [ $rc -ne 0 ] || fail "$name: meshperf run passed; the Windows agent should have refused it"
  grep -F -- "$want" "$dir/$name.out" | head -1 | sed 's/^/windows: refused: /'
  grep -qF -- "$want" "$dir/$name.out" || { cat "$dir/$name.out" >&2; fail "$name: no line saying '$want'"; }
}
refused unix_stream "unix_stream needs Linux (unix sockets); this agent runs on windows" \
  --agent "$url_win" --kind unix_stream --set count=10
refused zerocopy "zerocopy needs Linux (MSG_ZEROCOPY); this agent runs on windows" \
  --agent "$url_lin" --agent "$url_win" --kind tcp_stream --set zerocopy=true --set count=16
refused gso "gso needs Linux (UDP GSO and GRO); this agent runs on windows" \
  --agent "$url_lin" --agent "$url_win" --kind udp_stream --set gso=on --set rate=8M --set count=100
# Four phases of 0.5 s, probes every 10 ms, after the refusals (the agent
# serves on): one step measures both ways, so once with the Windows agent
# serving and once driving.
lul=(--kind latency_under_load --set idle_s=0.5 --set download_s=0.5 --set upload_s=0.5
  --set both_s=0.5 --set gap_s=0.2 --set probe_ms=10)
run lul_win_serves "${lul[@]}"
run_between "$url_lin" "$url_win" lul_win_drives "${lul[@]}"
drops=$(($(drops) - drops_before))
node -e '
  const fs = require("fs"), dir = process.argv[1], drops = Number(process.argv[2]);
  const read = (n) => JSON.parse(fs.readFileSync(`${dir}/${n}.json`, "utf8"));
  const values = (s, kind) => s.samples.filter((x) => x.kind === kind).reduce((n, x) => n + x.values.length, 0);
  // Every datagram of a flow (`n` asked) counted by its receiver, none
  // reordered or doubled on loopback; lost only what the kernel dropped on
  // the way in (all of them lost together, checked at the end).
  let lost = 0;
  const counted = (what, f, n) => {
    if (!(f.sent === n && f.received + f.lost === n && f.out_of_order === 0 && f.duplicates === 0))
      throw new Error(`${what}: ${JSON.stringify(f)}`);
    lost += f.lost;
  };
  for (const kind of ["tcp_stream", "udp_rr", "udp_stream", "lul_win_serves", "lul_win_drives"]) {
    const r = read(kind);
    const pairs = kind.startsWith("lul") ? 1 : 2;
    if (r.steps.length !== pairs) throw new Error(`${kind}: ${r.steps.length} pairs, not ${pairs}`);
    for (const s of r.steps) {
      const what = `${kind} ${JSON.stringify(s.pair)}`;
      if (s.error) throw new Error(`${what}: ${s.error}`);
      // Agent 0 is the Windows one: user-space timestamps where it received.
      const stamps = (windows) => (windows ? "user" : "kernel");
      if (kind === "tcp_stream" && s.summary.bytes !== 256 * 65536) throw new Error(`tcp_stream moved ${s.summary.bytes} bytes`);
      if (kind === "udp_rr" && !(s.summary.count === 300 && s.summary.rtt_us.median > 0)) throw new Error(`udp_rr: ${JSON.stringify(s.summary)}`);
      if (kind === "udp_stream") {
        const f = s.summary;
        counted(what, f, 1000);
        if (values(s, "sequence") !== f.received) throw new Error(`${what}: ${values(s, "sequence")} sequence numbers`);
        // 1000 datagrams at 1000 a second take a second: the rate held.
        if (!(f.send_seconds > 0.9 && f.send_bits_per_second < 8.2e6)) throw new Error(`${what}: not paced at 8 Mbit/s: ${JSON.stringify(f)}`);
        // The serving agent received (direction send).
        if (f.timestamps !== stamps(s.pair.server === 0)) throw new Error(`${what}: timestamps ${f.timestamps}`);
      }
      if (kind.startsWith("lul")) {
        const f = s.summary;
        if (f.complete !== true || f.phases.length !== 4) throw new Error(`${what}: ${JSON.stringify(f)}`);
        for (const p of f.phases) {
          if (!(p.probes_up.sent > 20 && p.rtt_us.n === p.probes_down.received && p.rtt_us.median > 0))
            throw new Error(`${what} ${p.phase}: ${JSON.stringify(p)}`);
          lost += p.probes_up.lost + p.probes_down.lost;
          // The load ran its way(s): the tcp_stream workers on Windows.
          const down = p.phase === "download" || p.phase === "both", up = p.phase === "upload" || p.phase === "both";
          if ((p.down_bits_per_second > 0) !== down || (p.up_bits_per_second > 0) !== up)
            throw new Error(`${what} ${p.phase}: load down ${p.down_bits_per_second}, up ${p.up_bits_per_second} bit/s`);
        }
        // Every one of the 16 streams of the load (4 a way and phase, in
        // groups of 4 by stream index) moved data all along: the streams of
        // a worker each get their turn (a starved one stops at the 4 MiB its
        // socket buffers take). Starved: no more than 8 MiB, nor than half
        // what its group moved on average in the same run (an unoptimised
        // agent on a busy host moves less in 0.5 s, all its streams alike).
        const load = s.samples.filter((x) => x.kind === "interval_bytes" && x.role === "client");
        const moved = (x) => x.values.reduce((a, b) => a + b, 0);
        const group = (x) => load.filter((y) => (y.stream >> 2) === (x.stream >> 2));
        const mean = (g) => g.reduce((a, y) => a + moved(y), 0) / g.length;
        const starved = load.filter((x) => moved(x) <= Math.min(8 << 20, mean(group(x)) / 2)).map((x) => `${x.stream} (${moved(x)} B)`);
        if (load.length !== 16 || starved.length) throw new Error(`${what}: ${load.length} load streams, starved: ${starved}`);
        if (values(s, "rtt_ns") !== f.probes_down.received) throw new Error(`${what}: ${values(s, "rtt_ns")} round trips for ${f.probes_down.received} answers`);
        if (f.timestamps !== "user") throw new Error(`${what}: timestamps ${f.timestamps}`);
      }
    }
  }
  const both = read("udp_stream_both").steps[0];
  if (both.error) throw new Error(`udp_stream both ways: ${both.error}`);
  counted("udp_stream both ways", both.summary, 1000);
  counted("udp_stream both ways, reverse", both.summary.reverse, 1000);
  if (both.summary.streams.length !== 2) throw new Error(`udp_stream both ways: ${both.summary.streams.length} flows`);
  // The Windows agent serves: it received the flows (no GRO) and sent
  // their reverse (no GSO); the Linux ends use what their kernel has.
  if (both.summary.gro !== false || both.summary.reverse.gso !== false)
    throw new Error(`udp_stream gso auto: the Windows receiver has gro ${both.summary.gro}, its sender gso ${both.summary.reverse.gso}`);
  // The Windows agent is the one measured, and says what it runs.
  const [win, lin] = read("tcp_stream").agents;
  if (!win.kernel.startsWith("Windows")) throw new Error(`the first agent runs ${win.kernel}, not Windows`);
  if (!lin.kernel.startsWith("Linux")) throw new Error(`the second agent runs ${lin.kernel}, not Linux`);
  const caps = win.capabilities.join(",");
  if (caps !== "tcp_stream,tcp_rr,udp_rr,udp_stream,latency_under_load") throw new Error(`the Windows agent says it runs ${caps}`);
  if (!lin.capabilities.includes("unix_stream")) throw new Error(`the Linux agent says it runs ${lin.capabilities}`);
  console.log(`windows: ${lost} datagrams and probes lost, the kernel dropped ${drops} on the way in meanwhile`);
  if (lost > drops) throw new Error(`${lost} datagrams and probes lost, more than the ${drops} the kernel dropped on the way in`);' "$dir" "$drops" \
  || fail "the results are not clean (above)"

# The Windows build's own `meshperf run`, under Wine, drives the Linux agent.
rc=0
timeout 120 "$wine" "$exe" run --agent "$url_lin" --kind tcp_rr --set count=500 --json "$dir/winrun.json" \
  >"$dir/winrun.out" 2>"$dir/winrun.err" || rc=$?
grep -v '#r=' "$dir/winrun.err" "$dir/winrun.out" || true
[ $rc -eq 0 ] || fail "the Windows meshperf run exited $rc"
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const s = r.steps[0];
  if (r.steps.length !== 1 || s.error || s.summary.count !== 500 || !(s.summary.rtt_us.median > 0))
    throw new Error(`the Windows run: ${JSON.stringify(s.error || s.summary)}`);' "$dir/winrun.json" \
  || fail "the Windows meshperf run's result is not clean (above)"
echo "windows: ok (the Windows agent under Wine: tcp_stream, udp_rr, udp_stream and latency_under_load both ways against Linux, Linux-only kind and options refused naming windows; the Windows meshperf run drove tcp_rr; $((SECONDS - t0)) s)"

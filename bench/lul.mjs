// Latency under load section (issue 13): the probes of latency_under_load
// against the dedicated request/response tests at the probes' interval on
// idle loopback; what probe_ms costs a tcp_stream's throughput; flent's
// rrul_be (netperf streams, irtt pings) beside latency_under_load.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { rotated, sockperfPct, sockperfPingPong, ROUNDS, SECS, children, fmt, median, meshperf, pin, report, results, sh, sleep, tmp } from './lib.mjs';

/** The probes' interval and datagram size, as the issue's targets name them. */
const PROBE_MS = 5;
const PROBE_BYTES = 64;
/** flent's servers: netserver on a port the other sections do not use;
 * irtt on its default port (flent gives irtt the same -H as netperf). */
const NETSERVER_PORT = 12866;
const IRTT_PORT = 2112;
const SOCKPERF_PORT = 11114;

export async function lul(agents) {
  for (const [name, fn] of [['probe precision', probePrecision], ['probe cost', probeCost], ['flent side by side', sideBySide]]) {
    try { await fn(agents); } catch (e) { console.log(`lul ${name}: FAILED: ${e.message.split('\n')[0]}`); results.push({ name: `lul ${name}`, failed: true }); }
  }
}

/** A latency_under_load plan; `phases` are idle, download, upload, both (s). */
const lulPlan = ([idle, down, up, both], extra = {}) => ({
  kind: 'latency_under_load',
  params: { idle_s: idle, download_s: down, upload_s: up, both_s: both, probe_ms: PROBE_MS, probe_bytes: PROBE_BYTES, ...extra },
});
const phase = (s, name) => s.phases.find((p) => p.phase === name);

/** The agent's one-line refusal of `param` in a failed run's message, or null. */
function refusal(e, param) {
  return e.message.match(new RegExp(`would refuse it: (${param}[^;\\n]*)`))?.[1] ?? null;
}

/** meshperf(plan), or the refusal of `param` as { refused } (anything else throws). */
function tryPlan(agents, plan, param) {
  try { return meshperf(agents, plan); } catch (e) {
    const why = refusal(e, param);
    if (why === null) throw e;
    return { refused: why };
  }
}

/** 1. Idle probes against udp_rr at the same interval and size, and sockperf
 * ping-pong at the same rate (--mps). udp_rr is asked for wait_us (tcp_rr's
 * name for the wait between requests); an agent that has no such parameter
 * for udp_rr refuses it, and the comparison says so. */
async function probePrecision(agents) {
  const rate = 1000 / PROBE_MS;
  console.log(`\n== latency_under_load probes on idle loopback, every ${PROBE_MS} ms, ${PROBE_BYTES} B, ${ROUNDS} rounds alternating (RTT p50 in us)`);
  const rrAt = { kind: 'udp_rr', params: { req_bytes: PROBE_BYTES, resp_bytes: PROBE_BYTES, count: Math.round(SECS * rate), wait_us: PROBE_MS * 1000 } };
  const first = tryPlan(agents, { ...rrAt, params: { ...rrAt.params, count: 10 } }, 'wait_us');
  if (first.refused) console.log(`  udp_rr at ${PROBE_MS} ms: not available in this build (wait_us refused: ${first.refused}); compared with sockperf at ${rate} requests/s and with udp_rr back to back instead`);
  const sp = spawn(...(() => { const c = [...pin(0), 'sockperf', 'sr', '-i', '127.0.0.1', '-p', '11113']; return [c[0], c.slice(1), { stdio: 'ignore' }]; })());
  children.push(sp);
  await sleep(500);
  const probe = [], probe99 = [], lost = [], rr = [], b2b = [], sock = [];
  for (let r = 0; r < ROUNDS; r++) {
    rotated(r, [
      () => {
        // Idle phase only counts; the loaded phases are as short as allowed to be useful.
        const s = meshperf(agents, lulPlan([SECS, 0.1, 0.1, 0.1], { streams: 1, gap_s: 0 })).s;
        const idle = phase(s, 'idle');
        probe.push(idle.rtt_us.median); probe99.push(idle.rtt_us.p99); lost.push(idle.probes_up.lost + idle.probes_down.lost);
      },
      () => { if (!first.refused) rr.push(meshperf(agents, rrAt).s.rtt_us.median); },
      () => { b2b.push(meshperf(agents, { kind: 'udp_rr', params: { req_bytes: PROBE_BYTES, resp_bytes: PROBE_BYTES, count: 20000 } }).s.rtt_us.median); },
      () => { sock.push(sockperfPct(sockperfPingPong(11113, SECS, ['--mps', String(rate)]), '50.000')); },
    ]);
  }
  sp.kill();
  console.log(`  probes: p50 ${probe.map((x) => fmt(x, 1)).join(' ')} us, p99 median ${fmt(median(probe99), 1)} us, lost ${lost.join('/')}`);
  const target = '<= 1.05 x (shown as peer/probes >= 0.952)';
  if (rr.length) report(`lul probe p50 vs udp_rr at ${PROBE_MS} ms`, probe, rr, 'us', target, 'lower');
  report(`lul probe p50 vs sockperf pp --mps ${rate}`, probe, sock, 'us', target, 'lower');
  report('lul probe p50 vs udp_rr back to back', probe, b2b, 'us', 'report (not the same interval)', 'lower');
}

/** 2. tcp_stream with probe_ms against without, alternating. */
function probeCost(agents) {
  console.log(`\n== tcp_stream with probe_ms ${PROBE_MS} against without, 128 KiB writes, ${SECS} s, ${ROUNDS} rounds alternating`);
  const plain = { kind: 'tcp_stream', params: { msg_bytes: 131072, duration_s: SECS } };
  const probed = { kind: 'tcp_stream', params: { ...plain.params, probe_ms: PROBE_MS } };
  const first = tryPlan(agents, { ...probed, params: { ...probed.params, duration_s: 0.5 } }, 'probe_ms');
  if (first.refused) {
    console.log(`  tcp_stream probe_ms: not available in this build (probe_ms refused: ${first.refused})`);
    return;
  }
  const without = [], withp = [], rtt = [];
  for (let r = 0; r < ROUNDS; r++) {
    rotated(r, [
      () => { without.push(meshperf(agents, plain).s.bits_per_second / 1e9); },
      () => {
        const { s, step } = meshperf(agents, probed);
        withp.push(s.bits_per_second / 1e9);
        // The probe flow's summary (key `probe`, as latency_under_load's):
        // an idle lead-in, then the phase under the stream's load.
        const probe = s.probe ?? step.sides?.client?.probe;
        const idle = probe?.phases?.find((p) => p.phase === 'idle'), loaded = probe?.phases?.find((p) => p.phase !== 'idle');
        if (idle?.rtt_us && loaded?.rtt_us) rtt.push([idle.rtt_us.median, loaded.rtt_us.median]);
      },
    ]);
  }
  if (rtt.length) console.log(`  probe RTT p50 idle / under the stream's load: ${rtt.map(([i, l]) => `${fmt(i, 1)}/${fmt(l, 1)}`).join(' ')} us`);
  else console.log('  (no probe RTTs: the summary has no `probe` with an idle and a loaded phase)');
  report(`tcp_stream with probe_ms ${PROBE_MS} vs without`, withp, without, 'Gbit/s', '>= 0.98');
}

/** JSON as Python writes it (NaN and Infinity allowed). */
const pyJson = (text) => JSON.parse(text.replace(/\b(NaN|-?Infinity)\b/g, 'null'));

/** One flent rrul_be run on CPU 1 against netserver and irtt on CPU 0:
 * irtt RTTs (ms) of the idle lead-in and of the loaded time, and the mean
 * download and upload sums (Mbit/s) over the loaded time. */
function flentRun(idle, load) {
  const dir = mkdtempSync(join(tmp, 'flent-'));
  sh('taskset', ['-c', '1', 'flent', 'rrul_be', '-H', '127.0.0.1', '--netperf-control-port', String(NETSERVER_PORT), '-l', String(load), '-d', String(idle), '--irtt-sampling-interval', String(PROBE_MS), '-s', '0.05', '-D', dir, '-o', join(dir, 'summary.txt'), '-f', 'summary'], { timeout: (2 * idle + load + 60) * 1000 });
  const file = readdirSync(dir).find((f) => f.endsWith('.flent.gz'));
  if (!file) throw new Error(`flent wrote no data file in ${dir}`);
  const d = pyJson(gunzipSync(readFileSync(join(dir, file))).toString());
  if (d.metadata.FAILED_RUNNERS) throw new Error(`flent: ${d.metadata.FAILED_RUNNERS} runners failed (see ${dir})`);
  const t0 = Date.parse(d.metadata.T0) / 1000;
  const pings = Object.keys(d.raw_values).filter((k) => k.startsWith('Ping (ms) UDP'));
  if (!pings.length || !d.metadata.SERIES_META[pings[0]].COMMAND?.includes('irtt')) throw new Error('flent did not use irtt for its UDP pings');
  const idleRtt = [], loadRtt = [];
  let sent = 0, lost = 0;
  for (const k of pings) {
    for (const p of d.raw_values[k]) {
      const t = p.t - t0;
      if (t >= idle && t < idle + load) { sent++; if (p.lost) lost++; }
      if (p.lost || p.val == null) continue;
      if (t < idle) idleRtt.push(p.val); else if (t < idle + load) loadRtt.push(p.val);
    }
  }
  const loaded = (series) => {
    const v = d.x_values.map((x, i) => [x, d.results[series][i]]).filter(([x, y]) => x >= idle && x < idle + load && y != null).map(([, y]) => y);
    return v.reduce((a, b) => a + b, 0) / v.length;
  };
  return { idle: median(idleRtt), load: median(loadRtt), loss: (100 * lost) / sent, down: loaded('TCP download sum'), up: loaded('TCP upload sum') };
}

/** latency_under_load with a long both phase (4 streams each way) and,
 * from 1.5 s into the run for SECS s, an irtt client and a sockperf
 * ping-pong on CPU 1 probing every PROBE_MS through the same load: three
 * probe flows through one load, each timed by its own tool. */
function irttBeside(agents, round) {
  const out = join(tmp, `irtt-${round}.json`), spOut = join(tmp, `sockperf-${round}.txt`);
  const later = (cmd) => {
    const c = spawn('sh', ['-c', `sleep 1.5; exec taskset -c 1 ${cmd}`], { stdio: 'ignore' });
    children.push(c);
    return new Promise((res) => c.once('exit', res));
  };
  const done = Promise.all([
    later(`irtt client -o ${out} -Q -d ${SECS}s -i ${PROBE_MS}ms --fill=rand 127.0.0.1:${IRTT_PORT}`),
    later(`sockperf pp -i 127.0.0.1 -p ${SOCKPERF_PORT} -m ${PROBE_BYTES} -t ${SECS} --full-rtt --mps ${1000 / PROBE_MS} > ${spOut} 2>&1`),
  ]);
  const s = meshperf(agents, lulPlan([0.1, 0.1, 0.1, SECS + 2], { streams: 4, gap_s: 0 })).s;
  return { probe: phase(s, 'both').rtt_us.median, out, spOut, done };
}

/** 3. flent rrul_be (4 TCP streams each way, irtt pings every 5 ms) beside
 * latency_under_load's idle and both phases (4 streams each way, probes
 * every 5 ms). crusader has no package in the registries this project
 * reaches (crates.io: a placeholder; npm, PyPI, Debian: none). */
async function sideBySide(agents) {
  console.log(`\n== flent rrul_be beside latency_under_load, 4 TCP streams each way, pings every ${PROBE_MS} ms, idle ${SECS} s then ${SECS} s loaded, ${ROUNDS} rounds alternating`);
  console.log('  crusader: not available: the crates.io package `crusader` is a 0.0.1 placeholder (its main prints "Crusade!"), and the tool has no package in crates.io, npm, PyPI or Debian');
  const missing = ['flent', 'irtt', 'netserver'].filter((c) => spawnSync('sh', ['-c', `command -v ${c}`]).status !== 0);
  if (missing.length) {
    console.log(`  flent: skipped: ${missing.join(', ')} not installed (scripts/bench.sh installs flent, irtt and fping from Debian; see its log)`);
    return;
  }
  // The servers in the foreground, on ports of their own, ended by pid.
  const serve = (cmd) => { const c = [...pin(0), ...cmd]; const p = spawn(c[0], c.slice(1), { stdio: 'ignore' }); children.push(p); return p; };
  const ns = serve(['netserver', '-D', '-L', '127.0.0.1', '-p', String(NETSERVER_PORT)]);
  const irtt = serve(['irtt', 'server', '-b', `127.0.0.1:${IRTT_PORT}`, '-i', '0']);
  const sp = serve(['sockperf', 'sr', '-i', '127.0.0.1', '-p', String(SOCKPERF_PORT)]);
  await sleep(500);
  for (const [p, name] of [[ns, 'netserver'], [irtt, 'irtt server'], [sp, 'sockperf sr']]) if (p.exitCode !== null) throw new Error(`${name} exited ${p.exitCode} (port in use?)`);
  const f = [], m = [], same = [];
  try {
    for (let r = 0; r < ROUNDS; r++) {
      rotated(r, [
        () => { f.push(flentRun(SECS, SECS)); },
        () => { same.push(irttBeside(agents, r)); },
        () => {
          const s = meshperf(agents, lulPlan([SECS, SECS, SECS, SECS], { streams: 4, gap_s: 0.5 })).s;
          const [idle, both] = [phase(s, 'idle'), phase(s, 'both')];
          // Round trips lost: probes sent whose answer never came back.
          const sent = both.probes_up.sent, back = both.probes_down.received;
          m.push({ idle: idle.rtt_us.median / 1e3, load: both.rtt_us.median / 1e3, loss: sent ? (100 * (sent - back)) / sent : NaN, down: both.down_bits_per_second / 1e6, up: both.up_bits_per_second / 1e6 });
        },
      ]);
    }
    for (const x of same) await x.done;
  } finally {
    irtt.kill();
    ns.kill();
    sp.kill();
  }
  const col = (xs, k) => median(xs.map((x) => x[k]));
  const line = (name, xs) => console.log(`  ${name.padEnd(34)} idle RTT p50 ${fmt(col(xs, 'idle') * 1e3, 1).padStart(7)} us, loaded p50 ${fmt(col(xs, 'load') * 1e3, 1).padStart(8)} us, loss ${fmt(col(xs, 'loss'), 2)} %, down ${fmt(col(xs, 'down') / 1e3).padStart(6)} Gbit/s, up ${fmt(col(xs, 'up') / 1e3).padStart(6)} Gbit/s`);
  line('flent rrul_be (irtt)', f);
  line('meshperf latency_under_load (both)', m);
  const trios = same.map((x) => [x.probe, JSON.parse(readFileSync(x.out, 'utf8')).stats.rtt.median / 1e3, sockperfPct(readFileSync(x.spOut, 'utf8'), '50.000')]);
  console.log(`  the same load (latency_under_load's both phase), its probes with irtt and sockperf every ${PROBE_MS} ms beside them, RTT p50 in us (probes/irtt/sockperf): ${trios.map((t) => t.map((x) => fmt(x, 0)).join('/')).join(' ')}`);
  const target = 'report (<= 1.05 x is as precise)';
  report('lul probe p50 vs irtt, same load, same run', trios.map(([a]) => a), trios.map(([, b]) => b), 'us', target, 'lower');
  report('lul probe p50 vs sockperf, same load, same run', trios.map(([a]) => a), trios.map(([, , c]) => c), 'us', target, 'lower');
  report('lul loaded RTT p50 vs flent rrul_be irtt', m.map((x) => x.load * 1e3), f.map((x) => x.load * 1e3), 'us', 'report', 'lower');
  report('lul both-phase throughput vs flent rrul_be', m.map((x) => (x.down + x.up) / 1e3), f.map((x) => (x.down + x.up) / 1e3), 'Gbit/s', 'report');
}

// Shared helpers of the benchmark sections (bench.mjs has the overview).
// npm run bench: meshperf side by side with iperf3, netperf and sockperf on
// loopback, alternating rounds, medians and ratios against the targets of
// docs/design.md ("Performance targets"). Prints figures; asserts nothing.
//
// CPU placement: the serving end on CPU 0, the driving end on CPU 1 for every
// tool (taskset / iperf3 -A / netperf -T), so all tools see the same placement;
// meshperf's tcp_stream pins its data threads the way iperf3 -A does, with
// cpus / server_cpus, and leaves its control loops on the other CPUs.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const root = new URL('..', import.meta.url).pathname;
// MESHPERF_BIN: another build (e.g. target/test-release/meshperf, as the
// e2e tests take it) for a quick look at one section; figures for
// docs/performance.md come from the release build.
export const bin = process.env.MESHPERF_BIN || join(root, 'target/release/meshperf');
export const ROUNDS = Number(process.env.BENCH_ROUNDS || 5);
export const SECS = Number(process.env.BENCH_SECONDS || 3);
export const only = process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(',') : null;
export const tmp = mkdtempSync(join(tmpdir(), 'meshperf-bench-'));
export const children = [];
export const cpus = Number(spawnSync('nproc').stdout.toString().trim()) || 1;
// The CPU the figures were taken on (the first model name /proc/cpuinfo gives).
export const cpuModel = (() => {
  try { return readFileSync('/proc/cpuinfo', 'utf8').match(/^model name\s*:\s*(.+)$/m)?.[1].trim() ?? 'unknown CPU'; } catch { return 'unknown CPU'; }
})();
export const pin = (cpu) => (cpus > 1 ? ['taskset', '-c', String(cpu)] : []);

export function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 120_000, ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr || r.stdout || r.error}`);
  return r.stdout;
}
export const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
export const fmt = (x, d = 2) => (x === undefined || Number.isNaN(x) ? 'n/a' : x.toFixed(d));
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** An agent on 127.0.0.1 (port from the kernel) on CPU `cpu` (null: on
 * every CPU, for tests that place their data threads with `cpus` /
 * `server_cpus`); `stderr` 'ignore' drops its "stopped" line (the mesh
 * section starts 64). */
export function startAgent(cpu, extra = [], stderr = 'inherit') {
  return new Promise((resolve, reject) => {
    const token = randomBytes(16).toString('hex');
    const cmd = [...(cpu === null ? [] : pin(cpu)), bin, 'agent', '--listen', '127.0.0.1:0', '--quiet', ...extra];
    const p = spawn(cmd[0], cmd.slice(1), { env: { ...process.env, MESHPERF_TOKEN: token }, stdio: ['ignore', 'pipe', stderr] });
    children.push(p);
    p.stdout.once('data', (d) => {
      // The token was given, so the ready line does not print it.
      const base = d.toString().match(/ ready: (http:\/\/\S+\/)/)?.[1];
      base ? resolve({ url: `${base}#token=${token}`, pid: p.pid }) : reject(new Error(`agent printed ${d}`));
    });
    p.once('exit', (c) => reject(new Error(`agent exited ${c}`)));
  });
}

export function cpuSeconds(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime in clock ticks (USER_HZ = 100)
}

export function meshperf(agents, plan) {
  const pf = join(tmp, 'plan.json');
  const jf = join(tmp, 'result.json');
  writeFileSync(pf, JSON.stringify(plan));
  const before = agents.map((a) => cpuSeconds(a.pid));
  sh(bin, ['run', ...agents.flatMap((a) => ['--agent', a.url]), '--plan', pf, '--json', jf]);
  const cpu = agents.reduce((s, a, i) => s + cpuSeconds(a.pid) - before[i], 0);
  const r = JSON.parse(readFileSync(jf, 'utf8'));
  const step = r.steps[0];
  if (step.error) throw new Error(`meshperf step failed: ${step.error}`);
  return { s: step.summary, cpu, step };
}

export const results = [];

/** Runs one round's measurements, starting with a different one each round,
 * so no tool always runs first (or right after a CPU-heating one). */
export function rotated(round, fns) {
  for (let i = 0; i < fns.length; i++) fns[(i + round) % fns.length]();
}

/** A percentile (e.g. '50.000') from sockperf's report ("---> percentile 50.000 =   17.943"). */
export function sockperfPct(text, p) {
  return Number(text.match(new RegExp(`percentile ${p.replace('.', '\\.')} =\\s*([0-9.]+)`))?.[1]);
}

/** sockperf ping-pong on CPU 1 against a server on 127.0.0.1:port; stdout and stderr together. */
export function sockperfPingPong(port, secs, extra = []) {
  const r = spawnSync('taskset', ['-c', '1', 'sockperf', 'pp', '-i', '127.0.0.1', '-p', String(port), '-m', '64', '-t', String(secs), '--full-rtt', ...extra], { encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`sockperf pp failed: ${r.stderr || r.error}`);
  return r.stdout + r.stderr;
}
/** Whether a peer tool is installed (its row is skipped, and says so, where not). */
export const has = (tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;

/** iperf2 (Debian's `iperf`, one thread per stream) against a server on
 * 127.0.0.1:port for secs, the client on `cpus` (a taskset list); Gbit/s
 * summed over its streams (its CSV report: one line per stream, the rate last,
 * as the sender counted it). */
export function iperf2(port, secs, streams, cpus) {
  const out = sh('taskset', ['-c', cpus, 'iperf', '-c', '127.0.0.1', '-p', String(port), '-t', String(secs), '-l', '128K', '-P', String(streams), '-y', 'C']);
  const lines = out.trim().split('\n').map((l) => l.split(',')).filter((f) => f.length >= 9 && f[5] !== '-1');
  if (lines.length !== streams) throw new Error(`iperf -P ${streams} reported ${lines.length} streams: ${out.trim()}`);
  return lines.reduce((s, f) => s + Number(f[8]), 0) / 1e9;
}

export function report(name, ours, theirs, unit, target, better = 'higher') {
  const m = median(ours), t = median(theirs);
  const ratio = better === 'higher' ? m / t : t / m;
  results.push({ name, m, t, ratio, unit, target });
  console.log(`${name.padEnd(46)} meshperf ${fmt(m).padStart(9)} ${unit.padEnd(8)} peer ${fmt(t).padStart(9)}  ratio ${fmt(ratio, 3)} (target ${target})`);
}


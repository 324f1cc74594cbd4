// Fleet (issue 25): BENCH_FLEET_AGENTS agents (default 1000) on loopback
// addresses 127.1.x.y, one token, started BENCH_FLEET_BATCH at a time
// (default 50, each ready within 20 s), and two sharded, sampled monitors
// (`meshperf monitor --shard 0/2` and `1/2`, `--peers` BENCH_FLEET_PEERS,
// default 4, `--every 1s --stale 1h` so that every pair measured keeps its
// series) until each has done BENCH_FLEET_RUNS runs (default 3; 0: a whole
// rotation, ceil((N-1)/K) runs, which at 1000 agents is 250 runs, about an
// hour on 2 vCPUs: BENCH_FLEET_AGENTS=200 BENCH_FLEET_RUNS=0 checks a whole
// cycle in minutes).
//
// What each run measured is read from the monitor, not assumed: after each
// run its `/matrix.json?form=compact` (every pair kept, each with its age:
// 0 for the run just ended) gives that run's pairs. Checked: in each run
// (the two shards' run i together) every agent drives K peers and serves
// K; no pair is measured twice in a cycle (by a shard or across shards);
// after a whole cycle the two shards' pairs are every ordered pair, each
// once. Printed per monitor: CPU per test (utime + stime over its tests),
// memory (VmRSS at the end, VmHWM), a run's wall time (its stderr lines),
// `/metrics` in bytes and series against the bound docs/performance.md
// states (1.2 KB per pair kept + 2.5 KB per agent + 16 KB); the compact
// form's size. Everything started here is stopped at the end, failed or
// not. Each agent is about 6 MB resident.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bin, cpuSeconds, fmt, median, sleep, tmp } from './lib.mjs';

const N = Number(process.env.BENCH_FLEET_AGENTS || 1000);
const K = Number(process.env.BENCH_FLEET_PEERS || 4);
const ROTATION = Math.ceil((N - 1) / K);
const RUNS = Number(process.env.BENCH_FLEET_RUNS ?? 3) || ROTATION;
const BATCH = Number(process.env.BENCH_FLEET_BATCH || 50);
/** The /metrics bound: bytes per pair kept, per agent, and a constant. */
export const METRICS_BOUND = { pair: 1200, agent: 2500, base: 16_000 };

const kb = (pid, field) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`${field}:\\s+(\\d+)`))[1]) / 1024;

function agentAt(ip, token, all) {
  return new Promise((resolve, reject) => {
    const p = spawn(bin, ['agent', '--listen', `${ip}:0`, '--quiet'], { env: { ...process.env, MESHPERF_TOKEN: token }, stdio: ['ignore', 'pipe', 'ignore'] });
    all.push(p);
    const late = setTimeout(() => reject(new Error(`agent on ${ip} not ready within 20 s`)), 20_000);
    p.stdout.once('data', (d) => {
      clearTimeout(late);
      const base = d.toString().match(/ ready: (http:\/\/\S+\/)/)?.[1];
      base ? resolve({ url: base, pid: p.pid }) : reject(new Error(`agent printed ${d}`));
    });
    p.once('exit', (c) => { clearTimeout(late); reject(new Error(`agent on ${ip} exited ${c}`)); });
    p.once('error', (e) => { clearTimeout(late); reject(e); });
  });
}

function monitor(urls, tokenFile, shard, all) {
  // The agents in a file would be tidier, but a monitor takes --agent only:
  // 1000 of them are about 40 KB of arguments, far under the kernel's limit.
  const args = ['monitor', '--listen', '127.0.0.1:0', '--token-file', tokenFile, '--peers', String(K), '--shard', shard,
    '--every', '1s', '--jitter', '100ms', '--stale', '1h', ...urls.flatMap((u) => ['--agent', u])];
  const p = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  all.push(p);
  const m = { p, shard, lines: [], addr: null, runs: [], compact: 0 };
  let rest = '';
  p.stderr.on('data', (d) => {
    const parts = (rest + d.toString()).split('\n');
    rest = parts.pop();
    for (const l of parts) {
      m.lines.push(l);
      m.addr ??= l.match(/metrics on http:\/\/(\S+)\/metrics/)?.[1];
    }
  });
  return m;
}

async function get(m, path) {
  const r = await fetch(`http://${m.addr}${path}`, { signal: AbortSignal.timeout(30_000) });
  if (!r.ok) throw new Error(`${path}: ${r.status}`);
  return r.text();
}

const value = (page, name) => Number(page.match(new RegExp(`^${name} (\\S+)$`, 'm'))?.[1] ?? NaN);

/**
 * Reads each run's pairs from the compact form as the run ends (its cells
 * of age 0), until `RUNS` runs: the monitor says "run N:" on stderr after
 * it published run N, and the form read then must be run N's.
 */
async function follow(m, deadline) {
  const said = () => m.lines.filter((l) => /^meshperf monitor: run \d+: /.test(l)).length;
  while (m.runs.length < RUNS) {
    if (m.p.exitCode !== null) throw new Error(`monitor ${m.shard} exited: ${m.lines.slice(-3).join(' / ')}`);
    if (Date.now() > deadline) throw new Error(`monitor ${m.shard}: ${m.runs.length} of ${RUNS} runs within the time allowed`);
    if (said() <= m.runs.length) {
      await sleep(50);
      continue;
    }
    const text = await get(m, '/matrix.json?form=compact');
    const doc = JSON.parse(text);
    if (doc.monitor.runs !== m.runs.length + 1) throw new Error(`monitor ${m.shard}: read run ${doc.monitor.runs} for run ${m.runs.length + 1} (a run ended before the last was read)`);
    const ends = doc.agents.map((a) => a.endpoint);
    const now = doc.cells.filter((c) => c[2] === 0);
    m.runs.push({ pairs: now.map((c) => `${ends[c[0]]}>${ends[c[1]]}`), failed: now.filter((c) => typeof c[3] === 'string').length });
    m.compact = Math.max(m.compact, text.length);
  }
}

export async function fleet() {
  console.log(`\n== fleet: ${N} agents on 127.1.x.y, two monitors --shard 0/2 and 1/2, --peers ${K} (a rotation of ${ROTATION} runs), ${RUNS} runs each`);
  const token = randomBytes(16).toString('hex');
  const tokenFile = join(tmp, 'fleet-token');
  writeFileSync(tokenFile, token, { mode: 0o600 });
  const all = [];
  try {
    const agents = [];
    const t0 = Date.now();
    for (let i = 0; i < N; i += BATCH) {
      const batch = [];
      for (let j = i; j < Math.min(N, i + BATCH); j++) batch.push(agentAt(`127.1.${Math.floor(j / 254)}.${(j % 254) + 1}`, token, all));
      agents.push(...(await Promise.all(batch)));
    }
    const rss = agents.map((a) => kb(a.pid, 'VmRSS'));
    console.log(`${N} agents started in ${fmt((Date.now() - t0) / 1e3, 1)} s, ${BATCH} at a time; resident ${fmt(median(rss), 1)} MB each (median), ${fmt(rss.reduce((s, x) => s + x, 0) / 1024, 2)} GB in all`);
    const urls = agents.map((a) => a.url);
    const ms = [monitor(urls, tokenFile, '0/2', all), monitor(urls, tokenFile, '1/2', all)];
    const began = Date.now();
    await Promise.all(ms.map((m) => follow(m, began + 3 * 3600e3)));
    const elapsed = (Date.now() - began) / 1e3;
    for (const m of ms) {
      const page = await get(m, '/metrics');
      const walls = m.lines.map((l) => l.match(/^meshperf monitor: run \d+: \d+ agents, (\d+) of (\d+) pairs measured in ([\d.]+) s/)).filter(Boolean);
      const tests = walls.reduce((s, w) => s + Number(w[2]), 0);
      const failed = walls.reduce((s, w) => s + Number(w[2]) - Number(w[1]), 0);
      const cpu = cpuSeconds(m.p.pid);
      const series = page.split('\n').filter((l) => l && !l.startsWith('#')).length;
      const kept = value(page, 'meshperf_monitor_pairs');
      const bound = METRICS_BOUND.pair * kept + METRICS_BOUND.agent * N + METRICS_BOUND.base;
      console.log(`monitor shard ${m.shard}: ${walls.length} runs, ${tests} tests (${failed} failed), `
        + `CPU ${fmt((cpu / Math.max(tests, 1)) * 1e3, 3)} ms per test (${fmt(cpu, 1)} s in all, with its start), memory ${fmt(kb(m.p.pid, 'VmRSS'), 1)} MB resident, ${fmt(kb(m.p.pid, 'VmHWM'), 1)} MB peak, `
        + `a run's wall time ${fmt(median(walls.map((w) => Number(w[3]))), 1)} s (median; ${walls.map((w) => w[3]).join(', ')})`);
      console.log(`  /metrics ${fmt(page.length / 1e6, 2)} MB in ${series} series for ${kept} pairs kept `
        + `(bound ${fmt(bound / 1e6, 2)} MB: ${page.length <= bound ? 'under' : 'OVER'}); /matrix.json?form=compact ${fmt(m.compact / 1e6, 2)} MB, ${fmt(m.compact / Math.max(kept, 1), 0)} bytes a pair`);
      if (page.length > bound) console.log('fleet: FAILED: /metrics over its bound');
    }
    // Each run (both shards' run i together): every agent drives K and
    // serves K. The first cycle (ROTATION runs, or the runs done): no pair
    // in both shards; every pair once, but where the rotation wraps (its
    // last run takes offsets from the start again when K does not divide
    // N-1: N x (K x ROTATION - (N-1)) pairs twice).
    const hosts = urls.map((u) => u.replace(/^http:\/\//, '').replace(/\/$/, ''));
    const bad = [];
    const cycle = Math.min(RUNS, ROTATION);
    for (let i = 0; i < RUNS; i++) {
      const drives = new Map(hosts.map((h) => [h, 0]));
      const serves = new Map(hosts.map((h) => [h, 0]));
      for (const p of ms.flatMap((m) => m.runs[i].pairs)) {
        const [s, d] = p.split('>');
        drives.set(s, drives.get(s) + 1);
        serves.set(d, serves.get(d) + 1);
      }
      const off = hosts.filter((h) => drives.get(h) !== K || serves.get(h) !== K);
      if (off.length) bad.push(`run ${i + 1}: ${off.length} agents do not drive and serve ${K} (e.g. ${off[0]}: ${drives.get(off[0])} and ${serves.get(off[0])})`);
    }
    const sets = ms.map((m) => new Set(m.runs.slice(0, cycle).flatMap((r) => r.pairs)));
    const both = [...sets[0]].filter((p) => sets[1].has(p)).length;
    if (both) bad.push(`${both} pairs measured by both shards`);
    const measured = ms.reduce((s, m) => s + m.runs.slice(0, cycle).reduce((t, r) => t + r.pairs.length, 0), 0);
    const distinct = new Set([...sets[0], ...sets[1]]).size;
    const whole = RUNS >= ROTATION;
    const twice = whole ? N * (K * ROTATION - (N - 1)) : 0;
    if (measured !== N * K * cycle) bad.push(`${measured} tests in the first ${cycle} runs, not N x K x runs = ${N * K * cycle}`);
    if (measured - distinct !== twice) bad.push(`${measured - distinct} pairs measured twice in the first ${cycle} runs (want ${twice})`);
    const failedPairs = ms.reduce((s, m) => s + m.runs.reduce((t, r) => t + r.failed, 0), 0);
    console.log(`runs: ${RUNS} of each shard in ${fmt(elapsed, 0)} s; in each run every agent drove ${K} and served ${K}, no pair in both shards: ${bad.length ? 'NO' : 'yes'}; `
      + `${distinct} distinct ordered pairs of ${N * (N - 1)} measured in the first ${cycle} runs (${failedPairs} tests failed)`
      + (whole ? `; a whole cycle of ${ROTATION} runs: ${distinct === N * (N - 1) ? `every ordered pair (${twice} twice, where the rotation wraps)` : 'PAIRS MISSING'}`
        : `; a whole cycle is ${ROTATION} runs, about ${fmt((ROTATION * elapsed) / RUNS / 60, 0)} min at this pace (BENCH_FLEET_RUNS=0)`));
    for (const b of bad.slice(0, 5)) console.log(`  ${b}`);
    if (bad.length || (whole && distinct !== N * (N - 1))) console.log('fleet: FAILED: a run or the cycle is not the rotation');
  } finally {
    // Every process started here goes, whatever happened: SIGTERM, then
    // SIGKILL for any still there after 5 s.
    for (const p of all) try { p.kill(); } catch {}
    const end = Date.now() + 5000;
    while (all.some((p) => p.exitCode === null && p.signalCode === null) && Date.now() < end) await sleep(100);
    for (const p of all) if (p.exitCode === null && p.signalCode === null) try { p.kill('SIGKILL'); } catch {}
  }
}

// Fleet (issue 25): BENCH_FLEET_AGENTS agents (default 1000) on loopback
// addresses 127.1.x.y, one token, and two sharded, sampled monitors
// (`meshperf monitor --shard 0/2` and `1/2`, `--peers` BENCH_FLEET_PEERS,
// default 4, `--every 1s --stale 1h` so that every pair measured keeps its
// series) until each has done BENCH_FLEET_RUNS runs (default 3; the
// rotation, ceil((N-1)/K) runs, checks coverage). Prints per monitor its
// CPU per test (utime + stime over the tests it ran), its peak memory
// (VmHWM), its runs' wall time (from its stderr lines) and its /metrics in
// bytes and series; then the two shards' pairs: disjoint, and, after a whole
// rotation, every ordered pair. Each agent is about 6 MB resident.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bin, children, cpuSeconds, fmt, median, sleep, tmp } from './lib.mjs';

const N = Number(process.env.BENCH_FLEET_AGENTS || 1000);
const K = Number(process.env.BENCH_FLEET_PEERS || 4);
const RUNS = Number(process.env.BENCH_FLEET_RUNS || 3);

function agentAt(ip, token) {
  return new Promise((resolve, reject) => {
    const p = spawn(bin, ['agent', '--listen', `${ip}:0`, '--quiet'], { env: { ...process.env, MESHPERF_TOKEN: token }, stdio: ['ignore', 'pipe', 'ignore'] });
    children.push(p);
    p.stdout.once('data', (d) => {
      const base = d.toString().match(/ ready: (http:\/\/\S+\/)/)?.[1];
      base ? resolve({ url: base, pid: p.pid }) : reject(new Error(`agent printed ${d}`));
    });
    p.once('exit', (c) => reject(new Error(`agent on ${ip} exited ${c}`)));
  });
}

function monitor(urls, tokenFile, shard) {
  const args = ['monitor', '--listen', '127.0.0.1:0', '--token-file', tokenFile, '--peers', String(K), '--shard', shard,
    '--every', '1s', '--jitter', '100ms', '--stale', '1h', ...urls.flatMap((u) => ['--agent', u])];
  const p = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(p);
  const m = { p, lines: [], addr: null };
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

async function scrape(m) {
  const r = await fetch(`http://${m.addr}/metrics`);
  return r.text();
}

const value = (page, name) => Number(page.match(new RegExp(`^${name} (\\S+)$`, 'm'))?.[1] ?? NaN);
const pairsOf = (page) => new Set([...page.matchAll(/^meshperf_pair_up\{dst="([^"]+)",src="([^"]+)"\}/gm)].map((x) => `${x[2]}>${x[1]}`));

export async function fleet() {
  console.log(`\n== fleet: ${N} agents on 127.1.x.y, two monitors --shard 0/2 and 1/2, --peers ${K}, ${RUNS} runs each`);
  const token = randomBytes(16).toString('hex');
  const tokenFile = join(tmp, 'fleet-token');
  writeFileSync(tokenFile, token, { mode: 0o600 });
  const agents = [];
  for (let i = 0; i < N; i++) agents.push(await agentAt(`127.1.${i >> 8}.${(i & 255) + 1}`, token));
  const rss = agents.slice(0, 10).map((a) => Number(readFileSync(`/proc/${a.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]) / 1024);
  console.log(`${N} agents started; resident ${fmt(median(rss), 1)} MB each (median of 10)`);
  const urls = agents.map((a) => a.url);
  const ms = [monitor(urls, tokenFile, '0/2'), monitor(urls, tokenFile, '1/2')];
  const started = Date.now();
  const pages = [null, null];
  for (;;) {
    await sleep(500);
    for (const [i, m] of ms.entries()) {
      if (m.p.exitCode !== null) throw new Error(`monitor ${i} exited: ${m.lines.slice(-3).join(' / ')}`);
      if (!m.addr || pages[i]) continue;
      const page = await scrape(m);
      if (value(page, 'meshperf_monitor_runs_total') >= RUNS) pages[i] = page;
    }
    if (pages.every(Boolean)) break;
    if (Date.now() - started > 3600e3) throw new Error('the monitors did not finish their runs within an hour');
  }
  const rotation = Math.ceil((N - 1) / K);
  const sets = [];
  for (const [i, m] of ms.entries()) {
    const page = pages[i];
    const runs = value(page, 'meshperf_monitor_runs_total');
    const walls = m.lines.map((l) => l.match(/^meshperf monitor: run \d+: \d+ agents, (\d+) of (\d+) pairs measured in ([\d.]+) s/)).filter(Boolean);
    const tests = walls.reduce((s, w) => s + Number(w[2]), 0);
    const failed = walls.reduce((s, w) => s + Number(w[2]) - Number(w[1]), 0);
    const cpu = cpuSeconds(m.p.pid);
    const hwm = Number(readFileSync(`/proc/${m.p.pid}/status`, 'utf8').match(/VmHWM:\s+(\d+)/)[1]) / 1024;
    const series = page.split('\n').filter((l) => l && !l.startsWith('#')).length;
    sets.push(pairsOf(page));
    console.log(`monitor shard ${i}/2: ${runs} runs, ${tests} tests (${failed} failed), `
      + `CPU ${fmt((cpu / Math.max(tests, 1)) * 1e3, 3)} ms per test (${fmt(cpu, 1)} s in all, with its start), peak memory ${fmt(hwm, 1)} MB, `
      + `a run's wall time ${fmt(median(walls.map((w) => Number(w[3]))), 1)} s (median; ${walls.map((w) => w[3]).join(', ')}), `
      + `/metrics ${fmt(page.length / 1e6, 2)} MB in ${series} series (${sets[i].size} pairs)`);
  }
  const both = [...sets[0]].filter((p) => sets[1].has(p)).length;
  const union = new Set([...sets[0], ...sets[1]]).size;
  const whole = Math.min(...pages.map((p) => value(p, 'meshperf_monitor_runs_total'))) >= rotation;
  console.log(`shards: ${both} pairs in both (want 0), ${union} of ${N * (N - 1)} ordered pairs measured`
    + (whole ? ` after a whole rotation of ${rotation} runs (want all)` : ` (a whole rotation is ${rotation} runs: BENCH_FLEET_RUNS=${rotation} checks coverage)`));
  if (both !== 0 || (whole && union !== N * (N - 1))) console.log('fleet: FAILED: the shards overlap or miss pairs');
  for (const m of ms) m.p.kill();
  for (const a of agents) process.kill(a.pid);
}

// npm run bench: meshperf side by side with iperf3, netperf and sockperf on
// loopback, alternating rounds, medians and ratios against the targets of
// DESIGN.md ("Performance targets"). Prints figures; asserts nothing.
//
// CPU placement: the serving end on CPU 0, the driving end on CPU 1 for every
// tool (taskset / iperf3 -A / netperf -T), so all tools see the same placement.
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { readFileSync, mkdtempSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, normalize, extname } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const bin = join(root, 'target/release/meshperf');
const ROUNDS = Number(process.env.BENCH_ROUNDS || 5);
const SECS = Number(process.env.BENCH_SECONDS || 3);
const only = process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(',') : null;
const tmp = mkdtempSync(join(tmpdir(), 'meshperf-bench-'));
const children = [];
const cpus = Number(spawnSync('nproc').stdout.toString().trim()) || 1;
const pin = (cpu) => (cpus > 1 ? ['taskset', '-c', String(cpu)] : []);

function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 120_000, ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr || r.stdout || r.error}`);
  return r.stdout;
}
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const fmt = (x, d = 2) => (x === undefined || Number.isNaN(x) ? 'n/a' : x.toFixed(d));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function startAgent(cpu, extra = []) {
  return new Promise((resolve, reject) => {
    const token = Math.random().toString(16).slice(2).padEnd(12, '0');
    const cmd = [...pin(cpu), bin, 'agent', '--listen', '127.0.0.1:0', ...extra];
    const p = spawn(cmd[0], cmd.slice(1), { env: { ...process.env, MESHPERF_TOKEN: token }, stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(p);
    p.stdout.once('data', (d) => {
      const url = d.toString().match(/http:\/\/\S+/)?.[0];
      url ? resolve({ url, pid: p.pid }) : reject(new Error(`agent printed ${d}`));
    });
    p.once('exit', (c) => reject(new Error(`agent exited ${c}`)));
  });
}

function cpuSeconds(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime in clock ticks (USER_HZ = 100)
}

function meshperf(agents, plan) {
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

const results = [];
function report(name, ours, theirs, unit, target, better = 'higher') {
  const m = median(ours), t = median(theirs);
  const ratio = better === 'higher' ? m / t : t / m;
  results.push({ name, m, t, ratio, unit, target });
  console.log(`${name.padEnd(46)} meshperf ${fmt(m).padStart(9)} ${unit.padEnd(8)} peer ${fmt(t).padStart(9)}  ratio ${fmt(ratio, 3)} (target ${target})`);
}

async function tcpStream(agents) {
  console.log(`\n== TCP stream, loopback, 128 KiB writes, ${SECS} s, ${ROUNDS} rounds alternating`);
  const iperfSrv = spawn(...(() => { const c = [...pin(0), 'iperf3', '-s', '-p', '5299']; return [c[0], c.slice(1), { stdio: 'ignore' }]; })());
  children.push(iperfSrv);
  sh('netserver', ['-p', '12865']);
  await sleep(300);
  const m1 = [], i1 = [], n1 = [], m2 = [], i2 = [], mc = [], ic = [];
  for (let r = 0; r < ROUNDS; r++) {
    const a = meshperf(agents, { kind: 'tcp_stream', params: { msg_bytes: 131072, duration_s: SECS } });
    m1.push(a.s.bits_per_second / 1e9);
    mc.push(a.cpu / (a.s.bytes / 1e9));
    const j = JSON.parse(sh('iperf3', ['-c', '127.0.0.1', '-p', '5299', '-t', String(SECS), '-l', '128K', '-A', '1,0', '-J']));
    i1.push(j.end.sum_received.bits_per_second / 1e9);
    const c = j.end.cpu_utilization_percent;
    ic.push(((c.host_total + c.remote_total) / 100) * SECS / (j.end.sum_received.bytes / 1e9));
    const n = sh('netperf', ['-H', '127.0.0.1', '-p', '12865', '-T', '1,0', '-t', 'TCP_STREAM', '-l', String(SECS), '-P', '0', '--', '-m', '131072']);
    n1.push(Number(n.trim().split(/\s+/).pop()) / 1e3);
    const b = meshperf(agents, { kind: 'tcp_stream', params: { msg_bytes: 131072, duration_s: SECS, streams: 2 } });
    m2.push(b.s.bits_per_second / 1e9);
    const j2 = JSON.parse(sh('iperf3', ['-c', '127.0.0.1', '-p', '5299', '-t', String(SECS), '-l', '128K', '-P', '2', '-A', '1,0', '-J']));
    i2.push(j2.end.sum_received.bits_per_second / 1e9);
  }
  iperfSrv.kill();
  spawnSync('pkill', ['-x', 'netserver']);
  report('tcp_stream 1 stream vs iperf3', m1, i1, 'Gbit/s', '>= 1.10');
  report('tcp_stream 1 stream vs netperf TCP_STREAM', m1, n1, 'Gbit/s', '>= 1.00');
  report('tcp_stream 2 streams vs iperf3 -P 2', m2, i2, 'Gbit/s', '>= 1.10');
  report('CPU seconds per GB vs iperf3 (lower is better)', mc, ic, 's/GB', '<= 1.00 (shown as iperf3/meshperf >= 1)', 'lower');
}

async function tcpRr(agents) {
  console.log(`\n== TCP request/response, 64 B, loopback, ${ROUNDS} rounds alternating (RTT in us)`);
  sh('netserver', ['-p', '12865']);
  const sp = spawn(...(() => { const c = [...pin(0), 'sockperf', 'sr', '--tcp', '-p', '11111']; return [c[0], c.slice(1), { stdio: 'ignore' }]; })());
  children.push(sp);
  await sleep(500);
  const m50 = [], m99 = [], m999 = [], n50 = [], n99 = [], s50 = [], s99 = [], s999 = [], b50 = [];
  for (let r = 0; r < ROUNDS; r++) {
    const a = meshperf(agents, { kind: 'tcp_rr', params: { req_bytes: 64, resp_bytes: 64, duration_s: SECS } });
    m50.push(a.s.rtt_us.median); m99.push(a.s.rtt_us.p99); m999.push(a.s.rtt_us.p999);
    const bp = meshperf(agents, { kind: 'tcp_rr', params: { req_bytes: 64, resp_bytes: 64, duration_s: SECS, busy_poll: true } });
    b50.push(bp.s.rtt_us.median);
    const n = sh('netperf', ['-H', '127.0.0.1', '-p', '12865', '-T', '1,0', '-t', 'TCP_RR', '-l', String(SECS), '-P', '0', '--', '-r', '64,64', '-o', 'P50_LATENCY,P99_LATENCY']);
    const [p50, p99] = n.trim().split(',').map(Number);
    n50.push(p50); n99.push(p99);
    const s = sh('taskset', ['-c', '1', 'sockperf', 'pp', '--tcp', '-i', '127.0.0.1', '-p', '11111', '-m', '64', '-t', String(SECS), '--full-rtt']);
    const pct = (p) => Number(s.match(new RegExp(`<${p}> percentile\\s*:\\s*([0-9.]+)`))?.[1]);
    s50.push(pct('50.000')); s99.push(pct('99.000')); s999.push(pct('99.900'));
  }
  sp.kill();
  spawnSync('pkill', ['-x', 'netserver']);
  report('tcp_rr p50 vs netperf TCP_RR', m50, n50, 'us', '<= 1.00 x (shown as peer/meshperf >= 1)', 'lower');
  report('tcp_rr p50 vs sockperf ping-pong', m50, s50, 'us', '<= 1.00 x (shown as peer/meshperf >= 1)', 'lower');
  report('tcp_rr p99 vs sockperf ping-pong', m99, s99, 'us', 'report', 'lower');
  report('tcp_rr p99.9 vs sockperf ping-pong', m999, s999, 'us', 'report', 'lower');
  report('tcp_rr busy_poll p50 vs sockperf ping-pong', b50, s50, 'us', 'lower than epoll', 'lower');
}

// The wasm statistics page (bench/wasm/) in headless Debian Chromium: full
// statistics + a histogram for 1 M and 10 M samples, wasm next to plain JS in
// the same page. (Samples streamed agent -> browser are measured elsewhere.)
async function wasmStats() {
  const sizes = process.env.BENCH_WASM_N || '1000000,10000000';
  console.log(`\n== wasm statistics in Chromium: summary + histogram, n = ${sizes}, ${ROUNDS} rounds alternating after a warm-up`);
  if (!existsSync(join(root, 'web/src/lib/wasm-pkg/meshperf_wasm_bg.wasm'))) throw new Error('web/src/lib/wasm-pkg missing: run scripts/build.sh');
  const { chromium } = await import('playwright-core');
  const types = { '.html': 'text/html', '.mjs': 'text/javascript', '.js': 'text/javascript', '.wasm': 'application/wasm' };
  const server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)).replace(/^\/+/, '');
    const ok = (path.startsWith('bench/wasm/') || path.startsWith('web/src/lib/wasm-pkg/')) && !path.includes('..');
    const file = join(root, path.endsWith('/') ? `${path}index.html` : path);
    if (!ok || !existsSync(file)) { res.writeHead(404).end(); return; }
    res.writeHead(200, { 'content-type': types[extname(file)] || 'application/octet-stream' }).end(readFileSync(file));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage();
    page.on('console', (m) => console.log(`  page: ${m.text()}`));
    await page.goto(`http://127.0.0.1:${server.address().port}/bench/wasm/?n=${sizes}&rounds=${ROUNDS}`);
    await page.waitForFunction(() => window.benchResult, null, { timeout: 600_000, polling: 500 });
    const r = await page.evaluate(() => window.benchResult);
    if (r.error) throw new Error(r.error);
    for (const s of r.sizes) {
      const name = `wasm stats n=${s.n / 1e6}M vs plain JS`;
      results.push({ name, ratio: s.ratio });
      const target = s.n >= 1e7 ? ` (target <= 400 ms: ${s.wasm_ms <= 400 ? 'met' : 'missed'}; >= 3 x: ${s.ratio >= 3 ? 'met' : 'missed'})` : '';
      console.log(`${name.padEnd(46)} wasm ${fmt(s.wasm_ms, 0).padStart(6)} ms  js ${fmt(s.js_ms, 0).padStart(6)} ms  ratio ${fmt(s.ratio, 2)}${target}${s.mismatched.length ? `  MISMATCH ${s.mismatched}` : ''}`);
    }
  } finally {
    await browser.close();
    server.close();
  }
}

const sections = { tcp_stream: tcpStream, tcp_rr: tcpRr, wasm_stats: wasmStats };

async function main() {
  try { sh(bin, ['--version']); } catch { throw new Error(`${bin} missing: run npm run build first`); }
  console.log(`meshperf bench: ${cpus} CPUs, serving end on CPU 0, driving end on CPU 1, ${ROUNDS} rounds, ${SECS} s each`);
  const a = await startAgent(0);
  const b = await startAgent(1);
  const hello = JSON.parse(JSON.stringify({}));
  void hello;
  for (const [name, fn] of Object.entries(sections)) {
    if (only && !only.includes(name)) continue;
    try { await fn([a, b]); } catch (e) { console.log(`${name}: FAILED: ${e.message.split('\n')[0]}`); results.push({ name, failed: true }); }
  }
  console.log('\nsummary (ratio >= 1 means meshperf meets or beats the peer on that figure):');
  for (const r of results) if (!r.failed) console.log(`  ${r.name.padEnd(46)} ${fmt(r.ratio, 3)}`);
}

main()
  .catch((e) => { console.error(`bench: ${e.message}`); process.exitCode = 1; })
  .finally(() => { for (const c of children) { try { c.kill(); } catch {} } });

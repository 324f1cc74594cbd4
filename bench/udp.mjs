// UDP sections: udp_rr latency vs netperf UDP_RR and sockperf ping-pong,
// udp_stream pacing accuracy, and loss at 1 Gbit/s with 1400-byte datagrams
// next to iperf3 -u in the same run (`udp`); packet rate and Gbit/s per
// core flat out, gso off and on, against iperf3 -u -b 0 and sockperf tp
// (`udp_rate`).
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { rotated, sockperfPct, sockperfPingPong, ROUNDS, SECS, bin, children, cpus, fmt, has, median, meshperf, pin, report, results, sh, sleep, startAgent, tmp } from './lib.mjs';

export async function udp(agents) {
  console.log(`\n== UDP request/response, 64 B, loopback, ${ROUNDS} rounds alternating (RTT in us)`);
  sh('netserver', ['-p', '12865']);
  const srv = [...pin(0), 'sockperf', 'sr', '-i', '127.0.0.1', '-p', '11112'];
  const sp = spawn(srv[0], srv.slice(1), { stdio: 'ignore' });
  children.push(sp);
  await sleep(500);
  const m50 = [], m99 = [], n50 = [], s50 = [], s99 = [];
  for (let r = 0; r < ROUNDS; r++) {
    rotated(r, [
      () => {
        const a = meshperf(agents, { kind: 'udp_rr', params: { req_bytes: 64, resp_bytes: 64, count: 20000 } });
        m50.push(a.s.rtt_us.median); m99.push(a.s.rtt_us.p99);
      },
      () => {
        try {
          const n = sh('netperf', ['-H', '127.0.0.1', '-p', '12865', '-T', '1,0', '-t', 'UDP_RR', '-l', String(SECS), '-P', '0', '--', '-r', '64,64', '-o', 'P50_LATENCY']);
          n50.push(Number(n.trim()));
        } catch { /* netperf missing: its row says n/a */ }
      },
      () => {
        const s = sockperfPingPong(11112, SECS);
        const pct = (p) => sockperfPct(s, p);
        s50.push(pct('50.000')); s99.push(pct('99.000'));
      },
    ]);
  }
  sp.kill();
  spawnSync('pkill', ['-x', 'netserver']);
  if (n50.length) report('udp_rr p50 vs netperf UDP_RR', m50, n50, 'us', '<= 1.00 x (shown as peer/meshperf >= 1)', 'lower');
  report('udp_rr p50 vs sockperf ping-pong', m50, s50, 'us', '<= 1.00 x (shown as peer/meshperf >= 1)', 'lower');
  report('udp_rr p99 vs sockperf ping-pong', m99, s99, 'us', 'report', 'lower');

  console.log(`\n== udp_stream pacing, 1400 B, 20000 datagrams, ${ROUNDS} rounds, medians (gap error = |achieved gap - wait_us|)`);
  for (const wait of [0, 5, 20, 100]) {
    const count = wait >= 100 ? 5000 : 20000;
    const means = [], p99s = [], errs = [], lost = [];
    for (let r = 0; r < ROUNDS; r++) {
      const a = meshperf(agents, { kind: 'udp_stream', params: { pkt_bytes: 1400, count, wait_us: wait } });
      const snd = a.step.sides.client;
      means.push(snd.send_gap_us.mean); p99s.push(snd.send_gap_us.p99); errs.push(snd.pacing_error_us.p99); lost.push(a.s.lost);
    }
    const mean = median(means), err = median(errs);
    const meanOk = wait > 0 ? Math.abs(mean - wait) / wait <= 0.01 : true;
    const line = wait === 0
      ? `mean gap ${fmt(mean)} us (as fast as the sender goes), p99 gap ${fmt(median(p99s))} us`
      : `mean gap ${fmt(mean, 3)} us (${meanOk ? 'within' : 'outside'} 1%), p99 gap error ${fmt(err)} us (runs: ${errs.map((e) => fmt(e, 1)).join(' ')})${wait === 20 ? ` (target <= 5 us: ${err <= 5 ? 'met' : 'missed'})` : ''}`;
    console.log(`  wait_us ${String(wait).padStart(3)}: ${line}, lost ${lost.join('/')} of ${count}`);
    if (wait === 20) results.push({ name: 'udp pacing p99 gap error at 20 us (5 us target)', ratio: 5 / err });
  }

  console.log(`\n== UDP at 1 Gbit/s, 1400 B datagrams, ~${SECS} s, ${ROUNDS} rounds alternating with iperf3 -u (loss in %)`);
  const iperfCmd = [...pin(0), 'iperf3', '-s', '-p', '5298'];
  const ip = spawn(iperfCmd[0], iperfCmd.slice(1), { stdio: 'ignore' });
  children.push(ip);
  await sleep(300);
  const ml = [], il = [], mr = [];
  const wait = (1400 * 8) / 1e3; // us per datagram at 1 Gbit/s
  for (let r = 0; r < ROUNDS; r++) {
    rotated(r, [
      () => {
        const a = meshperf(agents, { kind: 'udp_stream', params: { pkt_bytes: 1400, count: Math.round((SECS * 1e6) / wait), wait_us: wait } });
        ml.push((100 * a.s.lost) / a.s.sent);
        mr.push(a.s.recv_bits_per_second / 1e9);
      },
      () => {
        const j = JSON.parse(sh('iperf3', ['-c', '127.0.0.1', '-p', '5298', '-u', '-b', '1G', '-l', '1400', '-t', String(SECS), '-A', '1,0', '-J']));
        il.push(j.end.sum.lost_percent);
      },
    ]);
  }
  ip.kill();
  const m = median(ml), t = median(il);
  results.push({ name: 'udp_stream loss at 1 Gbit/s vs iperf3 -u', ratio: m <= t ? 1 : t / m });
  console.log(`udp_stream loss at 1 Gbit/s: meshperf ${fmt(m, 3)} % (received ${fmt(median(mr), 3)} Gbit/s), iperf3 ${fmt(t, 3)} %  (target <= 1 %: ${m <= 1 ? 'met' : 'missed'}; <= iperf3: ${m <= t ? 'met' : 'missed'})`);
}

/** One udp_stream step through `meshperf run --json-stream`, whose step
 * line has the summary and the sides without the raw samples: a burst of
 * 64-byte datagrams with gso on is millions of them, which in the result
 * file would be hundreds of megabytes of JSON. */
function udpStep(agents, params) {
  const pf = join(tmp, 'plan-udp-rate.json');
  const jf = join(tmp, 'stream-udp-rate.jsonl');
  writeFileSync(pf, JSON.stringify({ kind: 'udp_stream', params }));
  sh(bin, ['run', ...agents.flatMap((a) => ['--agent', a.url]), '--plan', pf, '--json-stream', jf], { timeout: 300_000 });
  const step = readFileSync(jf, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.event === 'step').data;
  if (step.error) throw new Error(`meshperf step failed: ${step.error}`);
  return step;
}

/** CPU seconds (user + system) both sides' threads used. */
const sidesCpu = (step) => ['client', 'server'].reduce((t, r) => t + (step.sides[r]?.cpu?.user_seconds ?? 0) + (step.sides[r]?.cpu?.system_seconds ?? 0), 0);

// Packet rate (issue 21 part 4): udp_stream flat out (wait_us 0, for
// BENCH_SECONDS) with gso off and on, against iperf3 -u -b 0 and sockperf
// throughput mode, alternating; 64-byte datagrams in packets per second as
// each receiver counted them (sockperf tp counts only what it sent), and
// 1400-byte ones in Gbit/s per core: the bits received per CPU second of
// both ends (meshperf: its sides' threads; iperf3: its -J
// cpu_utilization_percent of both ends).
export async function udpRate(agents) {
  const iperfCmd = [...pin(0), 'iperf3', '-s', '-p', '5299'];
  const ip = spawn(iperfCmd[0], iperfCmd.slice(1), { stdio: 'ignore' });
  children.push(ip);
  const spCmd = [...pin(0), 'sockperf', 'sr', '-i', '127.0.0.1', '-p', '11113'];
  const sp = spawn(spCmd[0], spCmd.slice(1), { stdio: 'ignore' });
  children.push(sp);
  await sleep(500);
  const iperf = (len) => {
    const j = JSON.parse(sh('iperf3', ['-c', '127.0.0.1', '-p', '5299', '-u', '-b', '0', '-l', String(len), '-t', String(SECS), '-A', '1,0', '-J']));
    const rx = j.end.sum_received ?? j.end.sum;
    const got = rx.packets - rx.lost_packets;
    const cpu = ((j.end.cpu_utilization_percent.host_total + j.end.cpu_utilization_percent.remote_total) / 100) * rx.seconds;
    return { pps: got / rx.seconds, loss: rx.lost_percent, gbit: (got * len * 8) / rx.seconds / 1e9, perCore: (got * len * 8) / cpu / 1e9 };
  };
  const ours = (len, gso) => {
    const step = udpStep(agents, { pkt_bytes: len, wait_us: 0, duration_s: SECS, gso });
    const s = step.summary;
    const bits = s.received * len * 8;
    return {
      pps: s.received / s.recv_seconds, loss: (100 * s.lost) / s.sent, gbit: bits / s.recv_seconds / 1e9, perCore: bits / sidesCpu(step) / 1e9,
      calls: `${s.send_calls} send, ${s.recv_calls} receive calls`,
    };
  };
  for (const len of [64, 1400]) {
    const what = len === 64 ? 'packets/s' : 'Gbit/s per core';
    console.log(`\n== udp_stream flat out, ${len} B, ${SECS} s, ${ROUNDS} rounds alternating, gso off and on against iperf3 -u -l ${len} -b 0${len === 64 ? ' and sockperf tp' : ''} (${what})`);
    const off = [], on = [], i3 = [], sp3 = [];
    for (let r = 0; r < ROUNDS; r++) {
      rotated(r, [
        () => off.push(ours(len, 'off')),
        () => on.push(ours(len, 'on')),
        () => i3.push(iperf(len)),
        ...(len === 64 ? [() => {
          const out = sh('taskset', ['-c', '1', 'sockperf', 'tp', '-i', '127.0.0.1', '-p', '11113', '-m', '64', '-t', String(SECS)]);
          sp3.push({ pps: Number(out.match(/Message Rate is ([0-9.]+)/)?.[1]) });
        }] : []),
      ]);
    }
    const key = len === 64 ? 'pps' : 'perCore';
    const med = (xs, k) => median(xs.map((x) => x[k]));
    for (const [name, xs] of [['meshperf gso off', off], ['meshperf gso on', on], ['iperf3 -u -b 0', i3]]) {
      const last = xs[xs.length - 1];
      console.log(`  ${name.padEnd(17)} ${fmt(med(xs, key), len === 64 ? 0 : 3).padStart(10)} ${what}, ${fmt(med(xs, 'gbit'), 3)} Gbit/s received, lost ${xs.map((x) => fmt(x.loss, 2)).join('/')} %${last.calls ? ` (last round: ${last.calls})` : ''}`);
    }
    if (len === 64) console.log(`  ${'sockperf tp'.padEnd(17)} ${fmt(med(sp3, 'pps'), 0).padStart(10)} ${what} sent (sockperf tp counts no loss)`);
    const unit = len === 64 ? 'pkt/s' : 'Gbit/cs';
    report(`udp ${len} B ${len === 64 ? 'pps' : 'per core'}, gso on vs iperf3 -u -b 0`, on.map((x) => x[key]), i3.map((x) => x[key]), unit, len === 64 ? '>= 1.2 x, loss stated' : 'report');
    report(`udp ${len} B ${len === 64 ? 'pps' : 'per core'}, gso off vs iperf3 -u -b 0`, off.map((x) => x[key]), i3.map((x) => x[key]), unit, 'report');
    if (len === 64) report('udp 64 B pps, gso on vs sockperf tp (sent)', on.map((x) => x.pps), sp3.map((x) => x.pps), unit, 'report');
    report(`udp ${len} B ${len === 64 ? 'pps' : 'per core'}, gso on vs off`, on.map((x) => x[key]), off.map((x) => x[key]), unit, 'report');
  }
  ip.kill();
  sp.kill();
}

// Many UDP flows (issue 21 part 2): udp_stream with 8 flows flat out over
// worker threads against its own 1 flow, iperf2 -u -P 8 (a thread per
// stream) and iperf3 -u -P 8 (one thread before 3.16), 1400-byte datagrams,
// where the machine has 8 CPUs or more: serving ends on CPUs 0..k-1,
// driving ends on k..2k-1 (1 flow: CPU k and CPU 0). Gbit/s as each
// receiver counted them (iperf2: its server's report; iperf3: packets less
// those lost), with the loss.
export async function udpScale() {
  const k = Math.min(8, Math.floor(cpus / 2));
  if (k < 4) {
    console.log(`\n== UDP 8 flows: skipped, this machine has ${cpus} CPUs (the section needs 8 or more)`);
    return;
  }
  const srv = `0-${k - 1}`, cli = `${k}-${2 * k - 1}`, len = 1400;
  console.log(`\n== udp_stream 8 flows flat out against 1 flow, ${len} B, ${SECS} s, ${ROUNDS} rounds alternating; serving ends on CPUs ${srv}, driving ends on ${cli} (Gbit/s received)`);
  const agents = [await startAgent(null), await startAgent(null)];
  const withIperf2 = has('iperf'), withIperf3 = has('iperf3');
  let report2 = '';
  const servers = [];
  if (withIperf2) {
    const p = spawn('taskset', ['-c', srv, 'iperf', '-s', '-u', '-p', '5305', '-y', 'C'], { stdio: ['ignore', 'pipe', 'ignore'] });
    p.stdout.on('data', (d) => { report2 += d; });
    servers.push(p);
  }
  if (withIperf3) servers.push(spawn('taskset', ['-c', srv, 'iperf3', '-s', '-p', '5306'], { stdio: 'ignore' }));
  children.push(...servers);
  await sleep(300);
  const ours = (streams, gso) => {
    const at = streams === 1 ? { cpus: String(k), server_cpus: '0' } : { cpus: cli, server_cpus: srv };
    const s = udpStep(agents, { pkt_bytes: len, wait_us: 0, duration_s: SECS, streams, gso, ...at }).summary;
    return { gbit: (s.received * len * 8) / s.recv_seconds / 1e9, loss: (100 * s.lost) / s.sent };
  };
  const iperf2 = async () => {
    const from = report2.length;
    sh('taskset', ['-c', cli, 'iperf', '-c', '127.0.0.1', '-u', '-p', '5305', '-t', String(SECS), '-l', String(len), '-b', '100G', '-P', '8', '-y', 'C']);
    // The server reports each stream as it ends.
    for (let i = 0; i < 20 && report2.slice(from).trim().split('\n').length < 8; i++) await sleep(100);
    const lines = report2.slice(from).trim().split('\n').map((l) => l.split(',')).filter((f) => f.length >= 14 && f[5] !== '-1');
    if (lines.length !== 8) throw new Error(`iperf -u -P 8: the server reported ${lines.length} streams: ${report2.slice(from)}`);
    const total = lines.reduce((t, f) => t + Number(f[11]), 0), lost = lines.reduce((t, f) => t + Number(f[10]), 0);
    return { gbit: lines.reduce((t, f) => t + Number(f[8]), 0) / 1e9, loss: (100 * lost) / total };
  };
  const iperf3 = () => {
    const j = JSON.parse(sh('taskset', ['-c', cli, 'iperf3', '-c', '127.0.0.1', '-p', '5306', '-u', '-b', '0', '-l', String(len), '-t', String(SECS), '-P', '8', '-J']));
    const rx = j.end.sum_received ?? j.end.sum;
    const got = rx.packets - rx.lost_packets;
    return { gbit: (got * len * 8) / rx.seconds / 1e9, loss: rx.lost_percent };
  };
  const one = [], off = [], on = [], p2 = [], p3 = [];
  for (let r = 0; r < ROUNDS; r++) {
    const steps = [
      () => one.push(ours(1, 'off')),
      () => off.push(ours(8, 'off')),
      () => on.push(ours(8, 'on')),
      ...(withIperf3 ? [() => p3.push(iperf3())] : []),
    ];
    rotated(r, steps);
    if (withIperf2) p2.push(await iperf2());
  }
  for (const a of agents) process.kill(a.pid);
  for (const p of servers) p.kill('SIGKILL');
  const g = (xs) => xs.map((x) => x.gbit);
  for (const [name, xs] of [['meshperf 1 flow', one], ['meshperf 8 flows, gso off', off], ['meshperf 8 flows, gso on', on], ['iperf2 -u -P 8', p2], ['iperf3 -u -P 8 -b 0', p3]]) {
    if (xs.length) console.log(`  ${name.padEnd(26)} ${fmt(median(g(xs)), 3).padStart(9)} Gbit/s received, lost ${xs.map((x) => fmt(x.loss, 2)).join('/')} %`);
  }
  report('udp_stream 8 flows vs 1 flow (gso off)', g(off), g(one), 'Gbit/s', 'report');
  if (withIperf2) report('udp_stream 8 flows vs iperf2 -u -P 8', g(off), g(p2), 'Gbit/s', 'report');
  if (withIperf3) report('udp_stream 8 flows vs iperf3 -u -P 8', g(off), g(p3), 'Gbit/s', 'report');
}

// UDP sections: udp_rr latency vs netperf UDP_RR and sockperf ping-pong,
// udp_stream pacing accuracy, and loss at 1 Gbit/s with 1400-byte datagrams
// next to iperf3 -u in the same run (`udp`); packet rate and Gbit/s per
// core flat out, gso off and on, against iperf3 -u -b 0 and sockperf tp
// (`udp_rate`).
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { rotated, sockperfPct, sockperfPingPong, ROUNDS, SECS, bin, children, fmt, median, meshperf, pin, report, results, sh, sleep, tmp } from './lib.mjs';

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

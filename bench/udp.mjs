// UDP section: udp_rr latency vs netperf UDP_RR and sockperf ping-pong,
// udp_stream pacing accuracy, and loss at 1 Gbit/s with 1400-byte datagrams
// next to iperf3 -u in the same run.
import { spawn, spawnSync } from 'node:child_process';
import { rotated, sockperfPct, sockperfPingPong, ROUNDS, SECS, children, fmt, median, meshperf, pin, report, results, sh, sleep } from './lib.mjs';

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

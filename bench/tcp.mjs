// TCP sections: stream throughput and CPU per GB vs iperf3 and netperf,
// zero-copy send against plain send (and iperf3 -Z against iperf3),
// request/response latency vs netperf TCP_RR and sockperf, connection rate
// vs netperf TCP_CRR, 1000 flows of tcp_rr vs one.
import { spawn, spawnSync } from 'node:child_process';
import { fmt, has, iperf2, median, rotated, sockperfPct, sockperfPingPong, ROUNDS, SECS, children, cpus, meshperf, pin, report, sh, sleep, startAgent } from './lib.mjs';

export async function tcpStream() {
  console.log(`\n== TCP stream, loopback, 128 KiB writes, ${SECS} s, ${ROUNDS} rounds alternating`);
  // meshperf pinned as iperf3 -A 1,0 pins itself: the data threads on the
  // CPUs (cpus / server_cpus), the agents' control loops elsewhere; and, as
  // iperf3 without -A, unpinned. Two agents on every CPU serve both.
  const agents = [await startAgent(null), await startAgent(null)];
  const at = cpus > 1 ? { cpus: 1, server_cpus: 0 } : {};
  const iperfSrv = spawn(...(() => { const c = [...pin(0), 'iperf3', '-s', '-p', '5299']; return [c[0], c.slice(1), { stdio: 'ignore' }]; })());
  children.push(iperfSrv);
  const iperfFree = spawn('iperf3', ['-s', '-p', '5300'], { stdio: 'ignore' });
  children.push(iperfFree);
  // iperf2 (one thread per stream), serving on CPU 0 as iperf3 -A 1,0 does.
  const withIperf2 = has('iperf');
  let iperf2Srv = null;
  if (withIperf2) {
    const c = [...pin(0), 'iperf', '-s', '-p', '5302'];
    iperf2Srv = spawn(c[0], c.slice(1), { stdio: 'ignore' });
    children.push(iperf2Srv);
  } else console.log('iperf (iperf2) is not installed: the 2-stream row against it is skipped (scripts/bench.sh installs it)');
  sh('netserver', ['-p', '12865']);
  await sleep(300);
  const m1 = [], i1 = [], n1 = [], m2 = [], i2 = [], p2 = [], mc = [], ic = [], mN = [], iN = [], mU = [], iU = [];
  for (let r = 0; r < ROUNDS; r++) {
    rotated(r, [
      () => {
        const a = meshperf(agents, { kind: 'tcp_stream', params: { msg_bytes: 131072, duration_s: SECS, ...at } });
        m1.push(a.s.bits_per_second / 1e9);
        mc.push(a.cpu / (a.s.bytes / 1e9));
      },
      () => {
        const j = JSON.parse(sh('iperf3', ['-c', '127.0.0.1', '-p', '5299', '-t', String(SECS), '-l', '128K', '-A', '1,0', '-J']));
        i1.push(j.end.sum_received.bits_per_second / 1e9);
        const c = j.end.cpu_utilization_percent;
        ic.push(((c.host_total + c.remote_total) / 100) * SECS / (j.end.sum_received.bytes / 1e9));
      },
      () => {
        const n = sh('netperf', ['-H', '127.0.0.1', '-p', '12865', '-T', '1,0', '-t', 'TCP_STREAM', '-l', String(SECS), '-P', '0', '--', '-m', '131072']);
        n1.push(Number(n.trim().split(/\s+/).pop()) / 1e3);
      },
      () => {
        const a = meshperf(agents, { kind: 'tcp_stream', params: { msg_bytes: 131072, duration_s: SECS, nodelay: true, ...at } });
        mN.push(a.s.bits_per_second / 1e9);
      },
      () => {
        const j = JSON.parse(sh('iperf3', ['-c', '127.0.0.1', '-p', '5299', '-t', String(SECS), '-l', '128K', '-N', '-A', '1,0', '-J']));
        iN.push(j.end.sum_received.bits_per_second / 1e9);
      },
      () => {
        const b = meshperf(agents, { kind: 'tcp_stream', params: { msg_bytes: 131072, duration_s: SECS, streams: 2, ...at } });
        m2.push(b.s.bits_per_second / 1e9);
      },
      () => {
        const j2 = JSON.parse(sh('iperf3', ['-c', '127.0.0.1', '-p', '5299', '-t', String(SECS), '-l', '128K', '-P', '2', '-A', '1,0', '-J']));
        i2.push(j2.end.sum_received.bits_per_second / 1e9);
      },
      ...(withIperf2 ? [() => p2.push(iperf2(5302, SECS, 2, cpus > 1 ? '1' : '0'))] : []),
      () => {
        const u = meshperf(agents, { kind: 'tcp_stream', params: { msg_bytes: 131072, duration_s: SECS } });
        mU.push(u.s.bits_per_second / 1e9);
      },
      () => {
        const ju = JSON.parse(sh('iperf3', ['-c', '127.0.0.1', '-p', '5300', '-t', String(SECS), '-l', '128K', '-J']));
        iU.push(ju.end.sum_received.bits_per_second / 1e9);
      },
    ]);
  }
  iperfSrv.kill();
  iperfFree.kill();
  for (const a of agents) process.kill(a.pid);
  spawnSync('pkill', ['-x', 'netserver']);
  iperf2Srv?.kill('SIGKILL'); // iperf2's server can ignore SIGTERM until a client comes
  report('tcp_stream 1 stream vs iperf3', m1, i1, 'Gbit/s', '>= 1.10');
  report('tcp_stream 1 stream vs iperf3, unpinned', mU, iU, 'Gbit/s', '>= 1.10');
  report('tcp_stream 1 stream vs netperf TCP_STREAM', m1, n1, 'Gbit/s', '>= 1.00');
  report('tcp_stream nodelay vs iperf3 -N', mN, iN, 'Gbit/s', 'report (both TCP_NODELAY)');
  report('tcp_stream 2 streams vs iperf3 -P 2', m2, i2, 'Gbit/s', '>= 1.10');
  if (withIperf2) report('tcp_stream 2 streams vs iperf2 -P 2', m2, p2, 'Gbit/s', '>= 1.10');
  report('CPU seconds per GB vs iperf3 (lower is better)', mc, ic, 's/GB', '<= 1.00 (shown as iperf3/meshperf >= 1)', 'lower');
}

/** -P 8 against one stream, on a machine with 8 or more CPUs per side's
 * share: the serving ends on the first k CPUs, the driving ends on the next
 * k (k = min(8, CPUs / 2)), every tool placed the same way; meshperf's one
 * stream on one CPU of each half. iperf2 runs a thread per stream; iperf3
 * before 3.16 runs every stream on one thread (its version is printed). */
export async function tcpScale() {
  const k = Math.min(8, Math.floor(cpus / 2));
  if (k < 4) {
    console.log(`\n== TCP stream -P 8: skipped, this machine has ${cpus} CPUs (the section needs 8 or more)`);
    return;
  }
  const srv = `0-${k - 1}`, cli = `${k}-${2 * k - 1}`;
  const v3 = spawnSync('iperf3', ['--version'], { encoding: 'utf8' }).stdout?.split('\n')[0] ?? 'iperf3 missing';
  console.log(`\n== TCP stream -P 8 against 1 stream, loopback, 128 KiB writes, ${SECS} s, ${ROUNDS} rounds alternating; serving ends on CPUs ${srv}, driving ends on ${cli} (${v3})`);
  const agents = [await startAgent(null), await startAgent(null)];
  const withIperf2 = has('iperf'), withIperf3 = has('iperf3');
  const servers = [
    ...(withIperf2 ? [spawn('taskset', ['-c', srv, 'iperf', '-s', '-p', '5303'], { stdio: 'ignore' })] : []),
    ...(withIperf3 ? [spawn('taskset', ['-c', srv, 'iperf3', '-s', '-p', '5304'], { stdio: 'ignore' })] : []),
  ];
  children.push(...servers);
  await sleep(300);
  const one = [], eight = [], c1 = [], c8 = [], p8 = [], i8 = [];
  const run = (streams, at) => meshperf(agents, { kind: 'tcp_stream', params: { msg_bytes: 131072, duration_s: SECS, streams, ...at } });
  for (let r = 0; r < ROUNDS; r++) {
    rotated(r, [
      () => { const a = run(1, { cpus: String(k), server_cpus: '0' }); one.push(a.s.bits_per_second / 1e9); c1.push(a.cpu / (a.s.bytes / 1e9)); },
      () => { const a = run(8, { cpus: cli, server_cpus: srv }); eight.push(a.s.bits_per_second / 1e9); c8.push(a.cpu / (a.s.bytes / 1e9)); },
      ...(withIperf2 ? [() => p8.push(iperf2(5303, SECS, 8, cli))] : []),
      ...(withIperf3 ? [() => {
        const j = JSON.parse(sh('taskset', ['-c', cli, 'iperf3', '-c', '127.0.0.1', '-p', '5304', '-t', String(SECS), '-l', '128K', '-P', '8', '-J']));
        i8.push(j.end.sum_received.bits_per_second / 1e9);
      }] : []),
    ]);
  }
  for (const a of agents) process.kill(a.pid);
  for (const p of servers) p.kill('SIGKILL');
  report('tcp_stream -P 8 vs 1 stream', eight, one, 'Gbit/s', '>= 5.00');
  if (withIperf2) report('tcp_stream -P 8 vs iperf2 -P 8', eight, p8, 'Gbit/s', '>= 1.10');
  if (withIperf3) report('tcp_stream -P 8 vs iperf3 -P 8', eight, i8, 'Gbit/s', 'report');
  report('CPU seconds per GB, -P 8 vs 1 stream', c8, c1, 's/GB', 'report', 'lower');
}

/** CPU seconds per GB of an iperf3 -J run (both ends), as tcpStream reads it. */
const iperfCpuPerGb = (j) => {
  const c = j.end.cpu_utilization_percent;
  return ((c.host_total + c.remote_total) / 100) * SECS / (j.end.sum_received.bytes / 1e9);
};

export async function zerocopy() {
  console.log(`\n== TCP stream zero-copy (MSG_ZEROCOPY) against plain send, loopback, 128 KiB writes, ${SECS} s, ${ROUNDS} rounds alternating`);
  // On loopback the kernel copies every zero-copy send anyway (delivery to
  // a local socket copies the pages, and says so): what this row shows is
  // the cost of the zero-copy machinery (page pinning, completions), not
  // the copy it saves on a NIC. Placed as tcpStream places its rows.
  // iperf3's -Z (3.12 here) is not MSG_ZEROCOPY: it sends with sendfile(2)
  // from a memory-mapped file, so its row compares the two methods.
  const agents = [await startAgent(null), await startAgent(null)];
  const at = cpus > 1 ? { cpus: 1, server_cpus: 0 } : {};
  const iperf = spawnSync('iperf3', ['--version']).status === 0;
  if (iperf) {
    const srv = spawn(...(() => { const c = [...pin(0), 'iperf3', '-s', '-p', '5301']; return [c[0], c.slice(1), { stdio: 'ignore' }]; })());
    children.push(srv);
    await sleep(300);
  }
  const zc = [], plain = [], zcG = [], plainG = [], iz = [], ip = [], izG = [], ipG = [];
  let copied = 0, sends = 0;
  const iperf3 = (extra) => JSON.parse(sh('iperf3', ['-c', '127.0.0.1', '-p', '5301', '-t', String(SECS), '-l', '128K', '-A', '1,0', '-J', ...extra]));
  for (let r = 0; r < ROUNDS; r++) {
    rotated(r, [
      () => {
        const a = meshperf(agents, { kind: 'tcp_stream', params: { msg_bytes: 131072, duration_s: SECS, zerocopy: true, ...at } });
        zc.push(a.cpu / (a.s.bytes / 1e9)); zcG.push(a.s.bits_per_second / 1e9);
        const c = a.step.sides.client;
        sends += c.zerocopy_sends; copied += c.zerocopy_copied;
      },
      () => {
        const a = meshperf(agents, { kind: 'tcp_stream', params: { msg_bytes: 131072, duration_s: SECS, ...at } });
        plain.push(a.cpu / (a.s.bytes / 1e9)); plainG.push(a.s.bits_per_second / 1e9);
      },
      ...(iperf ? [
        () => { const j = iperf3(['-Z']); iz.push(iperfCpuPerGb(j)); izG.push(j.end.sum_received.bits_per_second / 1e9); },
        () => { const j = iperf3([]); ip.push(iperfCpuPerGb(j)); ipG.push(j.end.sum_received.bits_per_second / 1e9); },
      ] : []),
    ]);
  }
  for (const a of agents) process.kill(a.pid);
  report('zero-copy vs plain send, CPU per GB', zc, plain, 's/GB', '<= 0.75 x plain (shown as plain/zero-copy >= 1.33)', 'lower');
  console.log(`  (medians: zero-copy ${fmt(median(zcG))} Gbit/s, plain ${fmt(median(plainG))}; the kernel copied ${copied} of ${sends} zero-copy sends)`);
  if (iperf) {
    report('iperf3 -Z (sendfile) vs iperf3, CPU per GB', iz, ip, 's/GB', 'report', 'lower');
    report('zero-copy CPU per GB vs iperf3 -Z (sendfile)', zc, iz, 's/GB', 'report (shown as iperf3/meshperf)', 'lower');
    console.log(`  (medians: iperf3 -Z ${fmt(median(izG))} Gbit/s, iperf3 ${fmt(median(ipG))})`);
  } else {
    console.log('  (iperf3 not installed: no iperf3 -Z beside it)');
  }
}

export async function tcpRr(agents) {
  console.log(`\n== TCP request/response, 64 B, loopback, ${ROUNDS} rounds alternating (RTT in us)`);
  sh('netserver', ['-p', '12865']);
  const sp = spawn(...(() => { const c = [...pin(0), 'sockperf', 'sr', '--tcp', '-p', '11111']; return [c[0], c.slice(1), { stdio: 'ignore' }]; })());
  children.push(sp);
  await sleep(500);
  const m50 = [], m99 = [], m999 = [], n50 = [], n99 = [], s50 = [], s99 = [], s999 = [], b50 = [];
  // Busy-poll keeps its CPU hot, which flatters whatever runs next: it has
  // its own rounds after the alternating epoll/blocking ones.
  for (let r = 0; r < ROUNDS; r++) {
    rotated(r, [
      () => {
        const a = meshperf(agents, { kind: 'tcp_rr', params: { req_bytes: 64, resp_bytes: 64, duration_s: SECS } });
        m50.push(a.s.rtt_us.median); m99.push(a.s.rtt_us.p99); m999.push(a.s.rtt_us.p999);
      },
      () => {
        const n = sh('netperf', ['-H', '127.0.0.1', '-p', '12865', '-T', '1,0', '-t', 'TCP_RR', '-l', String(SECS), '-P', '0', '--', '-r', '64,64', '-o', 'P50_LATENCY,P99_LATENCY']);
        const [p50, p99] = n.trim().split(',').map(Number);
        n50.push(p50); n99.push(p99);
      },
      () => {
        const s = sockperfPingPong(11111, SECS, ['--tcp']);
        const pct = (p) => sockperfPct(s, p);
        s50.push(pct('50.000')); s99.push(pct('99.000')); s999.push(pct('99.900'));
      },
    ]);
  }
  for (let r = 0; r < ROUNDS; r++) {
    const bp = meshperf(agents, { kind: 'tcp_rr', params: { req_bytes: 64, resp_bytes: 64, duration_s: SECS, busy_poll: true } });
    b50.push(bp.s.rtt_us.median);
  }
  sp.kill();
  spawnSync('pkill', ['-x', 'netserver']);
  report('tcp_rr p50 vs netperf TCP_RR', m50, n50, 'us', '<= 1.00 x (shown as peer/meshperf >= 1)', 'lower');
  report('tcp_rr p50 vs sockperf ping-pong', m50, s50, 'us', '<= 1.00 x (shown as peer/meshperf >= 1)', 'lower');
  report('tcp_rr p99 vs sockperf ping-pong', m99, s99, 'us', 'report', 'lower');
  report('tcp_rr p99.9 vs sockperf ping-pong', m999, s999, 'us', 'report', 'lower');
  report('tcp_rr busy_poll p50 vs sockperf ping-pong', b50, s50, 'us', 'lower than epoll', 'lower');
}


export async function tcpCrr(agents) {
  console.log(`\n== TCP connection rate (connect, 1 B request, 1 B response, close), loopback, ${ROUNDS} rounds alternating (transactions/s)`);
  sh('netserver', ['-p', '12865']);
  const m = [], n = [], mc = [], nc = [];
  for (let r = 0; r < ROUNDS; r++) {
    rotated(r, [
      () => {
        const a = meshperf(agents, { kind: 'tcp_crr', params: { req_bytes: 1, resp_bytes: 1, duration_s: SECS } });
        m.push(a.s.transactions_per_second); mc.push(a.s.connect_us.median);
      },
      () => {
        // THROUGHPUT is transactions per second for the _RR tests.
        const out = sh('netperf', ['-H', '127.0.0.1', '-p', '12865', '-T', '1,0', '-t', 'TCP_CRR', '-l', String(SECS), '-P', '0', '--', '-r', '1,1', '-o', 'THROUGHPUT,P50_LATENCY']);
        const [tps, p50] = out.trim().split(',').map(Number);
        n.push(tps); nc.push(p50);
      },
    ]);
  }
  spawnSync('pkill', ['-x', 'netserver']);
  report('tcp_crr transactions/s vs netperf TCP_CRR', m, n, 'transactions/s', '>= 1.00');
  console.log(`  (medians: meshperf connect ${fmt(median(mc), 1)} us; netperf transaction p50 ${fmt(median(nc), 1)} us)`);
}

// Many flows (issue: scale up): tcp_rr with 1000 concurrent connections on
// the agents' worker threads against one connection, transactions/s and
// p99. No peer here runs concurrent request/response flows (neper is not
// packaged; netperf's TCP_RR is one connection), so the comparison is with
// meshperf's own one flow, in the same rounds.
export async function flows(agents) {
  console.log(`\n== tcp_rr, 1000 flows against 1, 64 B, loopback, ${ROUNDS} rounds alternating (transactions/s)`);
  const many = [], one = [], manyP99 = [], oneP99 = [], spread = [];
  const rr = (extra) => meshperf(agents, { kind: 'tcp_rr', params: { req_bytes: 64, resp_bytes: 64, duration_s: SECS, ...extra } }).s;
  for (let r = 0; r < ROUNDS; r++) {
    rotated(r, [
      () => {
        const s = rr({ flows: 1000 });
        if (s.flows?.count !== 1000) throw new Error(`tcp_rr flows 1000: the summary's flows is ${JSON.stringify(s.flows?.count)}`);
        many.push(s.transactions_per_second); manyP99.push(s.rtt_us.p99);
        // Each flow's share of the time: min/median/max of its transactions
        // (fairness), and the mean RTT against Little's law (flows / rate).
        spread.push(`${s.flows.min}/${s.flows.median}/${s.flows.max} transactions per flow on ${s.flows.threads} thread(s), mean RTT ${fmt(s.rtt_us.mean / 1000)} ms (1000 / rate: ${fmt(1e6 / s.transactions_per_second)} ms)`);
      },
      () => { const s = rr({}); one.push(s.transactions_per_second); oneP99.push(s.rtt_us.p99); },
    ]);
  }
  report('tcp_rr 1000 flows vs 1 flow, transactions/s', many, one, 'txn/s', 'report');
  report('tcp_rr 1000 flows vs 1 flow, p99 RTT', manyP99, oneP99, 'us', 'report', 'lower');
  for (const [r, line] of spread.entries()) console.log(`  1000 flows, round ${r + 1}: ${line}`);
}

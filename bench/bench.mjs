// npm run bench: meshperf side by side with iperf3, netperf and sockperf on
// loopback, alternating rounds, medians and ratios against the targets of
// docs/design.md ("Performance targets"). Prints figures; asserts nothing.
// BENCH_ROUNDS, BENCH_SECONDS and BENCH_ONLY=section,... tune a run;
// MESHPERF_BIN runs another build.
//
// CPU placement: the serving end on CPU 0, the driving end on CPU 1 for every
// tool (taskset / iperf3 -A / netperf -T), so all tools see the same placement.
import { ROUNDS, SECS, bin, children, cpuModel, cpus, fmt, only, results, sh, startAgent } from './lib.mjs';
import { flows, tcpCrr, tcpRr, tcpScale, tcpStream, zerocopy } from './tcp.mjs';
import { udp, udpRate, udpScale } from './udp.mjs';
import { footprint } from './footprint.mjs';
import { wasmStats } from './wasm.mjs';
import { samples } from './samples.mjs';
import { mesh } from './mesh.mjs';
import { matrixPage } from './matrix_page.mjs';
import { lul } from './lul.mjs';
import { fleet } from './fleet.mjs';

const sections = { tcp_stream: tcpStream, tcp_scale: tcpScale, zerocopy, tcp_rr: tcpRr, tcp_crr: tcpCrr, flows, udp, udp_rate: udpRate, udp_scale: udpScale, footprint, samples, wasm_stats: wasmStats, mesh, matrix_page: matrixPage, lul, fleet };

async function main() {
  try { sh(bin, ['--version']); } catch { throw new Error(`${bin} missing: run npm run build first`); }
  console.log(`meshperf bench: ${cpus} CPUs (${cpuModel}), serving end on CPU 0, driving end on CPU 1, ${ROUNDS} rounds, ${SECS} s each`);
  const a = await startAgent(0);
  const b = await startAgent(1);
  for (const [name, fn] of Object.entries(sections)) {
    if (only && !only.includes(name)) continue;
    try { await fn([a, b]); } catch (e) { console.log(`${name}: FAILED: ${e.message.split('\n')[0]}`); results.push({ name, failed: true }); }
  }
  console.log('\nsummary (ratio >= 1 means meshperf meets or beats the peer on that figure):');
  for (const r of results) if (!r.failed) console.log(`  ${r.name.padEnd(46)} ${fmt(r.ratio, 3)}`);
}

main()
  .catch((e) => { console.error(`bench: ${e.message}`); process.exitCode = 1; })
  // SIGTERM first (the agents print their "stopped" line), then SIGKILL for a
  // peer that waits on (iperf2's server can sit in accept until a client comes).
  .finally(() => {
    for (const c of children) {
      try { c.kill(); } catch {}
      if (c.exitCode === null && c.signalCode === null) setTimeout(() => { try { c.kill('SIGKILL'); } catch {} }, 2000).unref();
    }
  });

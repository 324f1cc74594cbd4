// Times the wasm build in node (a benchmark: prints figures, never fails).
// After `cargo build -p meshperf-wasm --profile wasm-release --target wasm32-unknown-unknown`
// and wasm-bindgen --target web into web/src/lib/wasm-pkg, from the repo root:
//   node wasm/examples/bench_node.mjs [n]
// The first call of each function is shown separately: browsers run wasm in a
// baseline tier until a function is called again after tier-up.
import fs from 'node:fs';
import * as m from '../../web/src/lib/wasm-pkg/meshperf_stats.js';

const pkg = new URL('../../web/src/lib/wasm-pkg/meshperf_stats_bg.wasm', import.meta.url);
m.initSync({ module: fs.readFileSync(pkg) });
const n = Number(process.argv[2] ?? 10_000_000);
const v = new Float64Array(n);
for (let i = 0; i < n; i++) {
  const u = Math.random();
  v[i] = 20 + 1000 * u * u * u; // skewed, latency-like
}
// Wall time, and process CPU time (user+system, all threads: less
// sensitive to a busy machine, but includes V8's background compiles).
const time = (label, f) => {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const r = f();
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  console.log(`${label}: ${wall.toFixed(0)} ms wall, ${((c.user + c.system) / 1e3).toFixed(0)} ms cpu`);
  return r;
};
const set = new m.SampleSet();
time('SampleSet.push', () => set.push(v));
for (let r = 1; r <= 3; r++) time(`SampleSet.summary(${n}) call ${r}`, () => set.summary());
time('SampleSet.histogram(1, 0, 1100)', () => set.histogram(1, 0, 1100));
time('SampleSet.cdf(1000)', () => set.cdf(1000));
time('SampleSet.decimate(2000)', () => set.decimate(2000));
set.free();

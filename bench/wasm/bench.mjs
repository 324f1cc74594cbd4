// The wasm statistics benchmark page: for each n, full statistics (the
// docs/design.md summary: n, min, max, mean, sigma, skew, kurtosis, median,
// quartiles, p90..p99.99, MAD) plus a 1-unit histogram, by the wasm module
// (samples pushed once into a SampleSet, as the web app does) and by a
// straightforward JS version (sort-based quantiles, two-pass moments, a
// histogram loop). Rounds alternate wasm and JS; the first round of each is a
// warm-up (tier-up) and is not counted. Results land in `window.benchResult`
// and in the page text.
import init, * as wasm from '../../web/src/lib/wasm-pkg/meshperf_stats.js';

const q = new URLSearchParams(location.search);
const sizes = (q.get('n') || '1000000,10000000').split(',').map(Number);
const rounds = Number(q.get('rounds') || 3);
const out = document.getElementById('out');
const log = (s) => { out.textContent += `\n${s}`; console.log(s); };

/** Latency-like samples (us): a skewed body and a long tail, deterministic. */
function samples(n) {
  const v = new Float64Array(n);
  let s = 123456789;
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    const u = (s >>> 0) / 4294967296;
    v[i] = 15 + 1000 * u * u * u;
  }
  return v;
}

/** numpy's default (linear) quantile of sorted data. */
function quantile(sorted, p) {
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo] + (h - lo) * (sorted[hi] - sorted[lo]);
}

/** The plain JS version: what one writes without thinking about speed. */
function jsStats(values) {
  const n = values.length;
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (let i = 0; i < n; i++) sum += values[i];
  const mean = sum / n;
  let m2 = 0, m3 = 0, m4 = 0;
  for (let i = 0; i < n; i++) {
    const d = values[i] - mean, d2 = d * d;
    m2 += d2; m3 += d2 * d; m4 += d2 * d2;
  }
  m2 /= n; m3 /= n; m4 /= n;
  const median = quantile(sorted, 0.5);
  const dev = new Float64Array(n);
  for (let i = 0; i < n; i++) dev[i] = Math.abs(values[i] - median);
  dev.sort();
  const summary = {
    n, min: sorted[0], max: sorted[n - 1], mean, sigma: Math.sqrt(m2),
    skew: m3 / m2 ** 1.5, kurtosis: m4 / (m2 * m2) - 3, median,
    iq25: quantile(sorted, 0.25), iq75: quantile(sorted, 0.75), p90: quantile(sorted, 0.9),
    p99: quantile(sorted, 0.99), p999: quantile(sorted, 0.999), p9999: quantile(sorted, 0.9999),
    mad: quantile(dev, 0.5),
  };
  const bins = Math.ceil(summary.max) + 1;
  const counts = new Uint32Array(bins);
  for (let i = 0; i < n; i++) counts[Math.floor(values[i])]++;
  return { summary, counts };
}

function wasmStats(values) {
  const set = new wasm.SampleSet();
  try {
    const t0 = performance.now();
    set.push(values);
    const t1 = performance.now();
    const summary = set.summary();
    const t2 = performance.now();
    const h = set.histogram(1, 0, undefined);
    const phases = { push: t1 - t0, summary: t2 - t1, histogram: performance.now() - t2 };
    return { summary, counts: h.counts, phases };
  } finally {
    set.free();
  }
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

async function main() {
  await init();
  const result = { sizes: [] };
  for (const n of sizes) {
    const v = samples(n);
    const tw = [], tj = [];
    let w, j;
    for (let r = 0; r <= rounds; r++) {
      let t0 = performance.now();
      w = wasmStats(v);
      const dw = performance.now() - t0;
      t0 = performance.now();
      j = jsStats(v);
      const dj = performance.now() - t0;
      if (r > 0) { tw.push(dw); tj.push(dj); }
      const p = w.phases;
      log(`n=${n} round ${r}: wasm ${dw.toFixed(0)} ms (push ${p.push.toFixed(0)}, summary ${p.summary.toFixed(0)}, histogram ${p.histogram.toFixed(0)}), js ${dj.toFixed(0)} ms`);
    }
    // Same figures from both, or the comparison means nothing.
    const diff = Object.keys(j.summary).filter((k) => Math.abs(w.summary[k] - j.summary[k]) > 1e-6 * Math.max(1, Math.abs(j.summary[k])));
    const row = { n, wasm_ms: median(tw), js_ms: median(tj), wasm_rounds: tw, js_rounds: tj, mismatched: diff };
    row.ratio = row.js_ms / row.wasm_ms;
    result.sizes.push(row);
    log(`n=${n}: wasm ${row.wasm_ms.toFixed(0)} ms, js ${row.js_ms.toFixed(0)} ms, js/wasm ${row.ratio.toFixed(2)}${diff.length ? ` MISMATCH in ${diff.join(',')}` : ''}`);
  }
  window.benchResult = result;
}

main().catch((e) => { log(`FAILED: ${e.message}`); window.benchResult = { error: e.message }; });

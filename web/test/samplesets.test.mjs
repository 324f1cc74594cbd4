// The page's wasm sample sets (src/lib/samplesets.ts) against the real
// statistics module (web/src/lib/wasm-pkg, built by scripts/build.sh): an
// array of samples is pushed into wasm once and read by every view, and the
// sets together stay within their budget, the least recently used freed.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { held } from '../src/lib/samplesets.ts';

const pkg = new URL('../src/lib/wasm-pkg/', import.meta.url);
if (!existsSync(new URL('meshperf_stats_bg.wasm', pkg))) throw new Error('web/src/lib/wasm-pkg is missing: run scripts/build.sh first');
const wasm = await import(new URL('meshperf_stats.js', pkg).href);
wasm.initSync({ module: readFileSync(new URL('meshperf_stats_bg.wasm', pkg)) });

const samples = (n, f) => Float64Array.from({ length: n }, (_, i) => f(i));

test('one array, one set: every view reads the samples pushed once', () => {
  const v = samples(1001, (i) => (i * 7919) % 1001);
  const set = held(wasm, v);
  assert.equal(set.len(), 1001);
  assert.equal(held(wasm, v), set);
  // v is a permutation of 0..1000: its figures are known exactly.
  const s = set.summary();
  assert.deepEqual([s.n, s.min, s.max, s.mean, s.median], [1001, 0, 1000, 500, 500]);
  const h = set.histogram_bins(10, 0, 50);
  assert.deepEqual(Array.from(h.counts), new Array(50).fill(10));
  assert.deepEqual([h.underflow, h.overflow], [0, 501]);
  const c = set.cdf(100);
  assert.equal(c.x.at(-1), 1000);
  assert.equal(c.fraction.at(-1), 1);
  assert.ok(c.x.every((x, i) => i === 0 || x >= c.x[i - 1]), 'the CDF rises');
  // An equal but different array is another quantity: its own set.
  assert.notEqual(held(wasm, Float64Array.from(v)), set);
});

test('past the budget the least recently used sets are freed, and pushed again when wanted', () => {
  const max = 3000;
  const [a, b, c] = [1, 2, 3].map((k) => samples(1000, (i) => i * k));
  const sa = held(wasm, a, max);
  const sb = held(wasm, b, max);
  assert.equal(held(wasm, a, max), sa); // a is now the most recently used
  const sc = held(wasm, c, max);
  held(wasm, samples(2000, (i) => i), max); // 5000 > 3000: b goes first, then a
  assert.throws(() => sb.len(), 'a freed set cannot be read');
  assert.throws(() => sa.len(), 'a freed set cannot be read');
  assert.equal(sc.len(), 1000);
  const again = held(wasm, b, max);
  assert.notEqual(again, sb);
  assert.equal(again.summary().max, 1998);
  // The newest set stays whatever its size.
  const huge = samples(max * 2, (i) => i);
  assert.equal(held(wasm, huge, max).len(), max * 2);
  assert.equal(held(wasm, huge, max).summary().n, max * 2);
  assert.throws(() => sc.len());
});

test('samples wasm refuses (NaN) leave no set behind', () => {
  const bad = Float64Array.of(1, NaN, 3);
  assert.throws(() => held(wasm, bad), /NaN|finite/i);
  assert.throws(() => held(wasm, bad), /NaN|finite/i);
});

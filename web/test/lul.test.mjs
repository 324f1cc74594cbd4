// Latency under load through the real wasm codec module (what the page
// loads on demand): probes with a queue of 10 ms on the way up in phase 2 give that
// much added delay up, none down, and the whole of it in the round trip;
// with synchronised clocks the one-way delays are the timestamps' own.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import * as m from '../src/lib/wasm-pkg/meshperf_codec.js';

m.initSync({ module: fs.readFileSync(new URL('../src/lib/wasm-pkg/meshperf_codec_bg.wasm', import.meta.url)) });

/** 1200 probes 5 ms apart: idle (0), upload with `queue` ns more up (2), between (4). */
function probes(offset, queue) {
  const n = 1200;
  const [phase, t1, t2, t3, t4] = [new Uint8Array(n), ...Array.from({ length: 4 }, () => new Float64Array(n))];
  for (let k = 0; k < n; k++) {
    const a = 1e9 + k * 5e6;
    const loaded = k >= 400 && k < 800;
    const jitter = ((k * 7919) % 5) * 1000;
    const arrive = a + 20000 + jitter + (loaded ? queue : 0);
    phase[k] = k < 400 ? 0 : loaded ? 2 : 4;
    t1[k] = a;
    t2[k] = arrive + offset;
    t3[k] = arrive + 3000 + offset;
    t4[k] = arrive + 3000 + 20000 + (4000 - jitter);
  }
  return [phase, t1, t2, t3, t4];
}

test('a queue on the way up shows up only, with estimated clocks 5.5 ms apart', () => {
  const a = m.lul_analyze(...probes(5.5e6, 10e6), false);
  assert.equal(a.synced, false);
  assert.ok(Math.abs(a.offset_ns - 5.5e6) < a.uncertainty_us * 1e3, `${a.offset_ns}`);
  assert.equal(a.phases.length, 4);
  assert.equal(a.phases[1].rtt, null);
  assert.equal(a.phases[0].added_rtt, null);
  const p = a.phases[2];
  assert.ok(Math.abs(p.added_up.median - 10000) < 5, JSON.stringify(p.added_up));
  assert.ok(Math.abs(p.added_down.median) < 5, JSON.stringify(p.added_down));
  assert.ok(Math.abs(p.added_rtt.median - 10000) < 5, JSON.stringify(p.added_rtt));
  assert.equal(p.rtt.n, 400);
});

test('synced clocks: one-way delays are the timestamps\' differences', () => {
  const a = m.lul_analyze(...probes(0, 0), true);
  assert.deepEqual([a.synced, a.offset_ns, a.uncertainty_us], [true, 0, 0]);
  assert.equal(a.phases[0].up.min, 20);
  assert.equal(a.phases[0].down.min, 20);
  assert.throws(() => m.lul_analyze(new Uint8Array(1), new Float64Array(2), new Float64Array(2), new Float64Array(2), new Float64Array(2), true), /different lengths/);
});

test('lanes probe by probe: the same one-way delays as the per-phase statistics, lost probes marked', () => {
  const [phase, t1, t2, t3, t4] = probes(5.5e6, 10e6);
  // Probes 10 and 11 never answered: drop them, 1202 were sent.
  const keep = (a) => a.filter((_, i) => i !== 10 && i !== 11);
  const seq = keep(Float64Array.from(phase, (_, i) => i));
  const args = [keep(phase), keep(t1), keep(t2), keep(t3), keep(t4)];
  const l = m.lul_lanes(args[0], seq, ...args.slice(1), false, 1202, 5);
  const a = m.lul_analyze(...args, false);
  assert.equal(l.t_s.length, 1198);
  assert.equal(l.t_s[0], 1);
  // The lanes' medians in the upload phase are the analysis' (us vs ms).
  const median = (v) => {
    const s = Float64Array.from(v).sort();
    return (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2;
  };
  const up = l.up_ms.filter((_, i) => args[0][i] === 2);
  assert.ok(Math.abs(median(up) * 1e3 - a.phases[2].up.median) < 1e-6, `${median(up)} ${a.phases[2].up.median}`);
  assert.deepEqual(Array.from(l.lost_t_s, (t) => Math.round(t * 1e3)), [1050, 1055, 7000, 7005]);
  assert.equal(l.start_s[2], 1 + 400 * 0.005);
  assert.ok(Number.isNaN(l.start_s[1]));
});

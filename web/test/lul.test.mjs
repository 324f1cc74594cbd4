// Latency under load's lanes through the real wasm view module (what the
// page loads to show a result): probes with a queue of 10 ms on the way up
// in phase 2 give that much added delay up, none down, and the whole of it
// in the round trip; with synchronised clocks the one-way delays are the
// timestamps' own. (That the lanes' medians are the analysis' medians is
// stats/src/lul_lanes.rs's test: the page draws lanes, the agents' summaries
// carry the analysis.)
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import * as m from '../src/lib/wasm-pkg/meshperf_view.js';

m.initSync({ module: fs.readFileSync(new URL('../src/lib/wasm-pkg/meshperf_view_bg.wasm', import.meta.url)) });

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

/** The median of `v`'s values where `phase` is `code`. */
function median(v, phase, code) {
  const s = Float64Array.from(v.filter((_, i) => phase[i] === code)).sort();
  return (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2;
}

/** Lanes of every probe (none lost). */
const lanes = ([phase, t1, t2, t3, t4], synced) =>
  m.lul_lanes(phase, Float64Array.from(phase, (_, i) => i), t1, t2, t3, t4, synced, phase.length, 5);

test('a queue on the way up shows up only, with estimated clocks 5.5 ms apart', () => {
  const p = probes(5.5e6, 10e6);
  const l = lanes(p, false);
  const phase = p[0];
  const added = (v) => median(v, phase, 2) - median(v, phase, 0);
  assert.ok(Math.abs(added(l.up_ms) - 10) < 0.005, `${added(l.up_ms)}`);
  assert.ok(Math.abs(added(l.down_ms)) < 0.005, `${added(l.down_ms)}`);
  assert.ok(Math.abs(added(l.rtt_ms) - 10) < 0.005, `${added(l.rtt_ms)}`);
  // The 5.5 ms between the clocks is fitted out: idle one-way delays are
  // the 20 to 24 us the probes took, not 5.5 ms.
  assert.ok(Math.abs(median(l.up_ms, phase, 0) - 0.022) < 0.005, `${median(l.up_ms, phase, 0)}`);
  assert.equal(l.up_ms.length, 1200);
  assert.ok(Number.isNaN(l.start_s[1]));
});

test("synced clocks: one-way delays are the timestamps' differences", () => {
  const p = probes(0, 0);
  const l = lanes(p, true);
  assert.equal(Math.min(...l.up_ms.filter((_, i) => p[0][i] === 0)), 0.02);
  assert.equal(Math.min(...l.down_ms.filter((_, i) => p[0][i] === 0)), 0.02);
  // Synced clocks take an offset as it is: 5.5 ms more up, 5.5 ms less down.
  const o = lanes(probes(5.5e6, 0), true);
  assert.ok(Math.abs(median(o.up_ms, p[0], 0) - median(l.up_ms, p[0], 0) - 5.5) < 1e-9);
  assert.throws(
    () => m.lul_lanes(new Uint8Array(1), new Float64Array(2), new Float64Array(2), new Float64Array(2), new Float64Array(2), new Float64Array(2), true, 2, 5),
    /different lengths/,
  );
});

test('lanes probe by probe: lost probes marked, phases spanned', () => {
  const [phase, t1, t2, t3, t4] = probes(5.5e6, 10e6);
  // Probes 10 and 11 never answered: drop them, 1202 were sent.
  const keep = (a) => a.filter((_, i) => i !== 10 && i !== 11);
  const seq = keep(Float64Array.from(phase, (_, i) => i));
  const args = [keep(phase), keep(t1), keep(t2), keep(t3), keep(t4)];
  const l = m.lul_lanes(args[0], seq, ...args.slice(1), false, 1202, 5);
  assert.equal(l.t_s.length, 1198);
  assert.equal(l.t_s[0], 1);
  // The two lost probes change no phase's delays.
  const all = lanes([phase, t1, t2, t3, t4], false);
  assert.ok(Math.abs(median(l.up_ms, args[0], 2) - median(all.up_ms, phase, 2)) < 0.005);
  assert.deepEqual(Array.from(l.lost_t_s, (t) => Math.round(t * 1e3)), [1050, 1055, 7000, 7005]);
  assert.equal(l.start_s[2], 1 + 400 * 0.005);
  assert.ok(Number.isNaN(l.start_s[1]));
});

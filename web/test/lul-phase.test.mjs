// Latency under load one phase at a time (web/src/lib/lul/phase.svelte.ts):
// the probe series keep the chosen phase's probes, in order, and the load
// streams of that phase; other kinds and 'all' are left as they are. And the
// summary card (protocol/src/lul_card.rs through the real view module).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import * as m from '../src/lib/wasm-pkg/meshperf_view.js';
import { cardOf } from '../src/lib/lul/card.ts';

// phase.svelte.ts holds the chosen phase in a Svelte rune; outside Svelte it is plain data.
globalThis.$state = Object.assign((v) => v, { raw: (v) => v });
const { atPhase, streamsOf } = await import('../src/lib/lul/phase.svelte.ts');

m.initSync({ module: fs.readFileSync(new URL('../src/lib/wasm-pkg/meshperf_view_bg.wasm', import.meta.url)) });
// The page has the statistics module beside the view (web/src/lib/wasm.ts
// loadView): the view build leaves the statistics out.
const stats = await import('../src/lib/wasm-pkg/meshperf_stats.js');
stats.initSync({ module: fs.readFileSync(new URL('../src/lib/wasm-pkg/meshperf_stats_bg.wasm', import.meta.url)) });
const both = { ...stats, ...m };

const series = (kind, values, role = 'client', stream = 0) => ({ role, kind, stream, values: Float64Array.from(values) });

function step() {
  const phase = [0, 0, 4, 1, 1, 4, 2, 3, 3];
  return {
    kind: 'latency_under_load',
    params: { streams: 2 },
    summary: { streams_per_direction: 2 },
    samples: [
      series('probe_phase', phase),
      series('rtt_ns', phase.map((p, i) => 1000 * i + p)),
      series('sequence', phase.map((_, i) => i)),
      // up streams 0..3 (upload 0,1; both 2,3), down 4..7 (download 4,5; both 6,7)
      ...[0, 1, 2, 3].map((i) => series('interval_bytes', [i], 'server', i)),
      ...[4, 5, 6, 7].map((i) => series('interval_bytes', [i], 'client', i)),
    ],
  };
}

test('a phase keeps its probes in order and its load streams', () => {
  const s = step();
  const d = atPhase(s, 'download');
  const get = (x, k) => Array.from(x.samples.find((y) => y.kind === k).values);
  assert.deepEqual(get(d, 'rtt_ns'), [3001, 4001]);
  assert.deepEqual(get(d, 'sequence'), [3, 4]);
  assert.deepEqual(d.samples.filter((x) => x.kind === 'interval_bytes').map((x) => x.stream), [4, 5]);
  const b = atPhase(s, 'both');
  assert.deepEqual(get(b, 'rtt_ns'), [7003, 8003]);
  assert.deepEqual(b.samples.filter((x) => x.kind === 'interval_bytes').map((x) => x.stream), [2, 3, 6, 7]);
  assert.deepEqual(atPhase(s, 'idle').samples.filter((x) => x.kind === 'interval_bytes'), []);
  // The same object for the same phase (views cache wasm sets by array); whole steps as they are.
  assert.equal(atPhase(s, 'download'), d);
  assert.equal(atPhase(s, 'all'), s);
  const rr = { ...s, kind: 'udp_rr' };
  assert.equal(atPhase(rr, 'download'), rr);
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 7].filter(streamsOf(2, 2)), [0, 1]);
});

test('the card comes from the view module and refuses another summary', () => {
  const flow = { sent: 10, received: 9, lost: 1, duplicates: 0, reordered: 0 };
  const st = (m) => ({ n: 9, min: m, max: m, mean: m, sigma: 0, skew: 0, kurtosis: 0, median: m, iq25: m, iq75: m, p90: m, p99: m, p999: m, p9999: m, mad: 0 });
  const phase = (name) => ({ phase: name, seconds: 1, down_bytes: 0, down_bits_per_second: 1.5e6, up_bytes: 0, up_bits_per_second: 0,
    rtt_us: st(80), up_us: st(10), down_us: st(70), added_rtt_us: null, added_up_us: null, added_down_us: null,
    probes_up: flow, probes_down: flow, probes_skipped: 0 });
  const summary = { phases: [phase('idle'), phase('download')], clock: { basis: 'estimated', offset_us: 3, drift_ppm: 1, uncertainty_us: 40,
    min_rtt_us: 80, residual_us: 1, probes_used: 3 }, probes_up: flow, probes_down: flow, probes_skipped: 0, probe_ms: 5, probe_bytes: 64,
    streams_per_direction: 1, seconds: 2, foreign: 0, peer: 'x', complete: false, note: 'peer stopped answering', rate_capped_us: 0, base_ns: 1, peer_base_ns: 2 };
  const c = cardOf(m, summary);
  const fig = (k) => c.sections.flatMap((s) => s.figures).find((f) => f.key === k);
  assert.deepEqual([fig('idle.up.median').text, fig('idle.up.median').uncertain], ['<±0.040', true]);
  assert.deepEqual([fig('idle.down.median').text, fig('idle.down.median').value], ['0.070', 0.07]);
  assert.deepEqual([fig('download.down').text, fig('download.down').from], ['1.5', ['/phases/1/down_bits_per_second']]);
  // Phases that did not run are left out of the card.
  assert.equal(fig('both.sum'), undefined);
  assert.ok(!c.sections.some((s) => s.title === 'Added round trip, both'));
  assert.equal(fig('loss.up').text, '1 of 10 (10.00%)');
  assert.equal(c.note, 'peer stopped answering');
  assert.throws(() => cardOf(m, { bytes: 1 }), /not a latency_under_load summary/);
});

// The load's phases ran one after another and each stream counts from its
// own phase's start: the statistics and the plot keep every interval at its
// own time (stats/src/lul_load.rs through the real module) and never add
// the phases by interval number (issue 29: the whole test read download +
// upload + both).
const { lulThroughput, quantities } = await import('../src/lib/result/result.ts');
const { stepCsv } = await import('../src/lib/result/stepcsv.ts');

test('each phase\'s load stays at its own time: never added across phases', () => {
  const iv = (role, stream, mbit) => series('interval_bytes', Array(5).fill((mbit * 1e6) / 8 / 10), role, stream);
  const ran = (phase, seconds) => ({ phase, seconds, down_bytes: 0, down_bits_per_second: 0, up_bytes: 0, up_bits_per_second: 0 });
  const s = {
    kind: 'latency_under_load',
    index: 0,
    params: { streams: 1, gap_s: 0.25, interval_ms: 100 },
    summary: { streams_per_direction: 1, phases: [ran('idle', 1), ran('download', 0.5), ran('upload', 0.5), ran('both', 0.5)] },
    sides: {},
    // One stream a direction: up 0 (upload) and 1 (both) received by the
    // serving agent, down 2 (download) and 3 (both) by the driving one,
    // which also counted what it sent on 0 and 1.
    samples: [iv('server', 0, 20), iv('server', 1, 5), iv('client', 0, 20), iv('client', 1, 5), iv('client', 2, 40), iv('client', 3, 10)],
  };
  const qs = quantities(s, both);
  const q = (id) => Array.from(qs.find((x) => x.id === id).values, (v) => Math.round(v * 1e6) / 1e6);
  // Each phase's last interval is left out, as for a stream test; in the
  // unit the largest reads best in (40 Mbit/s, not 0.04 Gbit/s).
  assert.deepEqual(q('tput-down'), [40, 40, 40, 40, 10, 10, 10, 10]);
  assert.deepEqual(q('tput-up'), [20, 20, 20, 20, 5, 5, 5, 5]);
  assert.deepEqual(['tput-down', 'tput-up'].map((id) => [qs.find((x) => x.id === id).unit, qs.find((x) => x.id === id).div]), [['Mbit/s', 1e6], ['Mbit/s', 1e6]]);
  assert.ok(!qs.some((x) => x.id.startsWith('tput-client')), 'no sum of sent and received streams');
  // On the test's time axis: download from 1.25 s, upload from 2 s, both from 2.75 s.
  const [x, down, up, sum] = lulThroughput(s, both);
  const r = (v) => (v == null ? v : Math.round(v * 1e6) / 1e6);
  assert.deepEqual(x.slice(0, 5).map(r), [1.35, 1.45, 1.55, 1.65, 1.75]);
  assert.deepEqual([down[0], up[0], down[5]], [40, null, null]);
  assert.equal(r(x[6]), 2.1);
  assert.deepEqual([down[6], up[6]], [null, 20]);
  assert.equal(r(x[12]), 2.85);
  assert.deepEqual([down[12], up[12], sum[12]], [10, 5, 15]);
  assert.equal(Math.max(...sum.filter((v) => v != null)), 40);

  // The step's CSV: every series' column as before, then when each stream's
  // intervals ended on the test's axis (its phase's start + 0.1 s a row).
  const rows = stepCsv(s, both).trim().split('\n').map((l) => l.split(';'));
  const head = rows[0];
  const raw = ['n', 'server_interval_bytes_0', 'server_interval_bytes_1', 'client_interval_bytes_0', 'client_interval_bytes_1', 'client_interval_bytes_2', 'client_interval_bytes_3'];
  assert.deepEqual(head.slice(0, raw.length), raw);
  const t = (role, stream) => rows.slice(1).map((r) => Number(r[head.indexOf(`${role}_interval_end_s_${stream}`)]));
  // Download (stream 2) from 1.25 s, upload (up 0) from 2 s, both (3; up 1) from 2.75 s.
  assert.deepEqual(t('client', 2), [1.35, 1.45, 1.55, 1.65, 1.75]);
  assert.deepEqual(t('server', 0), [2.1, 2.2, 2.3, 2.4, 2.5]);
  assert.deepEqual(t('server', 1), [2.85, 2.95, 3.05, 3.15, 3.25]);
  assert.deepEqual(t('client', 3), t('server', 1));
  assert.equal(head.length, raw.length + 6);
});

// A fleet's matrix (src/lib/matrix/fleet.ts, fleetfigure.ts): the figures
// read in JavaScript equal the real view module's (protocol/src/matrix.rs through
// the wasm module) for every kind and figure; the pixel bucketing (k agents
// per pixel row), the worst of a bucket, the agents' worst-first order, the
// host search and one agent's pairs both ways.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import * as view from '../src/lib/wasm-pkg/meshperf_view.js';

globalThis.$state = Object.assign((v) => v, { raw: (v) => v });
view.initSync({ module: fs.readFileSync(new URL('../src/lib/wasm-pkg/meshperf_view_bg.wasm', import.meta.url)) });
const { defaultMetric, figuresIn, fleetFills, METRICS: NAMES } = await import('../src/lib/matrix/fleetfigure.ts');
const F = await import('../src/lib/matrix/fleet.ts');
const { DONE, FAILED, NONE, SELF } = F;

const METRICS = JSON.parse(view.matrix_metrics()).map((m) => m.name);
const KINDS = ['tcp_stream', 'tcp_rr', 'tcp_crr', 'udp_stream', 'udp_rr', 'unix_stream', 'unix_rr', 'latency_under_load', 'path'];
const mark = (verdict) => ({ dscp: 46, ecn: 2, sent: 4, received: verdict === 'lost' ? 0 : 4, verdict });
const way = (peer_hop, bytes, marks) => ({ from: 'a', to: 'b', hops: [], end: peer_hop ? 'peer' : 'silence', peer_hop, mtu: bytes ? { bytes, local: 1500, probes: 3 } : undefined, marks });

/** A step as the page holds it (every field the view module's StepResult needs). */
const step = (kind, pair, summary, extra = {}) => ({ index: 0, kind, params: {}, point: [], repeat: 0, transport: 'tcp', summary, sides: {}, samples: [], ...extra, pair });

const STEPS = [
  step('udp_rr', { client: 0, server: 1 }, { rtt_us: { median: 23.5, p99: 126.25 }, count: 50 }),
  step('tcp_rr', { client: 2, server: 0 }, { rtt_us: { median: 40, p99: 90 } }, { error: 'refused' }),
  step('tcp_rr', { client: 1, server: 2 }, null),
  step('tcp_stream', { client: 1, server: 0 }, { bits_per_second: 9.4e9 }),
  step('tcp_stream', { client: 1, server: 0 }, { recv_bits_per_second: 2.5e9 }),
  step('tcp_stream', { client: 0, server: 2 }, { bits_per_second: 8e9, rtt_us: { median: 80 } }, {
    params: { direction: 'both' },
    sides: { client: { received_bytes: 1e9, recv_seconds: 2 }, server: { received_bytes: 3e9, recv_seconds: 4 } },
  }),
  step('tcp_stream', { client: 2, server: 1 }, { bits_per_second: 8e9 }, { params: { direction: 'both' }, sides: { client: { received_bytes: 1e9, recv_seconds: 0 }, server: null } }),
  step('udp_stream', { client: 0, server: 1 }, { sent: 400, lost: 3 }),
  step('udp_stream', { client: 1, server: 0 }, { sent: 0, lost: 0 }),
  step('udp_stream', { client: 2, server: 0 }, { sent: 100 }),
  step('tcp_crr', { client: 0, server: 2 }, { transactions_per_second: 5120.5 }),
  step('latency_under_load', { client: 1, server: 2 }, {
    phases: [
      { phase: 'idle', rtt_us: { median: 31, p99: 70 } },
      { phase: 'upload', up_bits_per_second: 9e8, added_rtt_us: { median: 12.5 } },
      { phase: 'download', down_bits_per_second: 4e8, added_rtt_us: { median: 3.25 } },
    ],
    probes_up: { sent: 200, lost: 2 },
    probes_down: { sent: 200 },
  }),
  step('latency_under_load', { client: 2, server: 0 }, { phases: [{ phase: 'idle', rtt_us: { median: 31 } }] }, { error: 'cancelled' }),
  step('path', { client: 0, server: 1 }, {
    forth: way(4, 1400, [mark('kept'), mark('rewritten'), mark('ce_marked'), mark('lost')]),
    back: way(5, 1500, [mark('kept')]),
    asymmetric: true,
    rtt_us: { median: 210, p99: 400 },
  }),
  step('path', { client: 1, server: 0 }, { forth: way(null, null, []), back: way(1, 9000, []), asymmetric: false }),
  step('path', { client: 2, server: 1 }, { forth: way(2, 1500, [mark('kept')]), back: way(2, 1500, []) }, { error: 'agent C left' }),
];

test('the figures read here are the view module\'s, for every kind, figure and a failed, empty or both-ways step', () => {
  for (const s of STEPS) {
    for (const m of METRICS) {
      const want = JSON.parse(view.matrix_cells(JSON.stringify(s), m));
      assert.deepEqual(fleetFills(s, m), want, `${s.kind} ${JSON.stringify(s.params)} ${m}`);
    }
  }
  for (const k of KINDS) assert.equal(defaultMetric(k), view.matrix_default_metric(k), k);
  assert.deepEqual(fleetFills({ kind: 'tcp_rr', summary: {} }, 'rtt_p50'), []);
});

test('a fleet offers only the figures its file has (issue 45 item 24)', () => {
  assert.deepEqual([...NAMES], METRICS, 'the figure names are the codec\'s, in its order');
  const of = (kind) => STEPS.filter((s) => s.kind === kind);
  // Each kind's figures: those some of its steps that did not fail fill, as the codec reads them.
  for (const k of KINDS) {
    const want = METRICS.filter((m) => of(k).some((s) => s.error == null && JSON.parse(view.matrix_cells(JSON.stringify(s), m)).some((c) => c[2] != null)));
    assert.deepEqual(figuresIn(of(k)), want, k);
  }
  assert.deepEqual(figuresIn(of('udp_rr')), ['rtt_p50', 'rtt_p99']);
  assert.deepEqual(figuresIn(of('path')), ['rtt_p50', 'rtt_p99', 'hops', 'path_mtu', 'marks_changed']);
  // A failed step's summary is not looked at; nothing measured, nothing offered.
  assert.deepEqual(figuresIn([step('tcp_rr', { client: 0, server: 1 }, { rtt_us: { median: 1, p99: 2 } }, { error: 'refused' })]), []);
  assert.deepEqual(figuresIn([]), []);
});

/** A grid of n agents from {`r>c`: value | 'x' (failed)}; the rest not measured. */
function grid(n, cells) {
  const steps = Object.entries(cells).map(([k, v]) => {
    const [client, server] = k.split('>').map(Number);
    return { pair: { client, server }, error: v === 'x' ? 'failed' : undefined, v: v === 'x' ? null : v };
  });
  return F.gridOf(n, steps, (s) => [[s.pair.client, s.pair.server, s.v]]);
}

test('pixels: k agents per pixel row once n cells would be under a pixel', () => {
  assert.equal(F.agentsPerPixel(1000, 640), 2);
  assert.equal(F.agentsPerPixel(1000, 1000), 1);
  assert.equal(F.agentsPerPixel(1000, 333), 4);
  assert.equal(F.agentsPerPixel(64, 640), 1);
  assert.equal(F.agentsPerPixel(65, 64.9), 2);
});

test('a bucket shows its worst cell: the largest delay or the smallest rate, a failed pair above all, the diagonal alone as itself', () => {
  // 5 agents, 2 per bucket: buckets {0,1} {2,3} {4}.
  const g = grid(5, { '0>1': 10, '1>0': 30, '0>2': 5, '1>3': 'x', '2>0': 7, '3>0': 9, '3>1': 8, '2>4': 50, '3>4': 2, '4>3': 1 });
  assert.deepEqual([g.state[0], g.state[1], g.state[6], g.state[8]], [SELF, DONE, SELF, FAILED]);
  // The scale starts at zero; 9 pairs measured, 1 failed.
  assert.deepEqual(F.extent(g), { lo: 0, hi: 50, done: 9, failed: 1 });
  const up = F.bucketed(g, [0, 1, 2, 3, 4], 2, true);
  assert.equal(up.b, 3);
  // (0..1 x 0..1): 10 and 30 beside the diagonal: 30.
  assert.deepEqual([up.state[0], up.value[0]], [DONE, 30]);
  // (0..1 x 2..3): 0>2 = 5 and 1>3 failed: failed.
  assert.equal(up.state[1], FAILED);
  // (2..3 x 0..1): 7, 9, 8: 9 when higher is worse, 7 when lower is.
  assert.equal(up.value[3], 9);
  assert.equal(F.bucketed(g, [0, 1, 2, 3, 4], 2, false).value[3], 7);
  // (2..3 x 4): 50 and 2; (4 x 4): the diagonal only; (4 x 0..1): nothing measured.
  assert.equal(up.value[5], 50);
  assert.equal(F.bucketed(g, [0, 1, 2, 3, 4], 2, false).value[5], 2);
  assert.equal(up.state[8], SELF);
  assert.equal(up.state[6], NONE);
  // One agent per bucket is the grid itself.
  const one = F.bucketed(g, [0, 1, 2, 3, 4], 1, true);
  assert.deepEqual(Array.from(one.state), Array.from(g.state));
  // Another order moves the cells with their agents: rows and columns 4, 3, ... .
  const rev = F.bucketed(g, [4, 3, 2, 1, 0], 1, true);
  assert.equal(rev.value[0 * 5 + 1], 1); // 4 > 3
  assert.equal(rev.state[3 * 5 + 1], FAILED); // 1 > 3
  assert.equal(rev.value[1 * 5 + 3], 8); // 3 > 1
});

test('worst first: most failed pairs, then the worst figure either way, agents without a figure last', () => {
  const g = grid(5, { '0>1': 10, '1>0': 30, '2>3': 12, '3>2': 6, '4>0': 'x', '2>1': 29 });
  const w = F.nodeWorst(g, true);
  assert.deepEqual(Array.from(w.failed), [1, 0, 0, 0, 1]);
  // Either way: 1 drove 1>0 = 30 and served 2>1 = 29; 0 served 1>0 = 30.
  assert.deepEqual(Array.from(w.value).map((v) => (Number.isNaN(v) ? null : v)), [30, 30, 29, 12, null]);
  assert.deepEqual(Array.from(F.sortOrder(w, 'worst')), [0, 4, 1, 2, 3]);
  assert.deepEqual(Array.from(F.sortOrder(w, 'agent')), [0, 1, 2, 3, 4]);
  // Lower is worse (a rate): 2's and 3's worst is 3>2 = 6, a tie kept in list order.
  const r = F.nodeWorst(g, false);
  assert.deepEqual(Array.from(r.value).map((v) => (Number.isNaN(v) ? null : v)), [10, 10, 6, 6, null]);
  assert.deepEqual(Array.from(F.sortOrder(r, 'worst')), [0, 4, 2, 3, 1]);
});

test('a host is found by a part of its name or address, an exact name first', () => {
  const hosts = ['node-0001', 'node-0010', 'node-0100', 'db-1'];
  const eps = ['127.1.0.1:7800', '127.1.0.10:7800', '127.1.0.100:7800', '10.0.0.9:7800'];
  assert.deepEqual(F.findHosts(hosts, eps, 'NODE-0010'), [1]);
  assert.deepEqual(F.findHosts(hosts, eps, '0010'), [1]);
  assert.deepEqual(F.findHosts(hosts, eps, 'node-0'), [0, 1, 2]);
  assert.deepEqual(F.findHosts(hosts, eps, '127.1.0.1:7800'), [0]);
  assert.deepEqual(F.findHosts(hosts, eps, 'node', 2), [0, 1]);
  assert.deepEqual(F.findHosts(hosts, eps, '  '), []);
});

test('one agent\'s pairs both ways, worst first; a pixel maps to its bucket and names its worst pair', () => {
  const g = grid(4, { '1>0': 5, '1>2': 'x', '1>3': 9, '0>1': 3, '3>1': 7, '2>1': 4 });
  const p = F.pairsOf(g, 1, true);
  assert.deepEqual(p.out.map((c) => [c.peer, c.state === FAILED ? 'x' : c.value]), [[2, 'x'], [3, 9], [0, 5]]);
  assert.deepEqual(p.in.map((c) => [c.peer, c.value]), [[3, 7], [2, 4], [0, 3]]);
  assert.equal(p.out[1].step, 2);
  // Lower is worse: the smallest first, a failed pair still first.
  assert.deepEqual(F.pairsOf(g, 1, false).out.map((c) => c.peer), [2, 0, 3]);
  assert.deepEqual(F.bucketAt(2, 3, 44, 18, 44 + 3, 18 + 2.9), [0, 1]);
  assert.equal(F.bucketAt(2, 3, 44, 18, 43, 20), null);
  assert.equal(F.bucketAt(2, 3, 44, 18, 44 + 6, 20), null);
  // Bucket (0, 0) of 2 per bucket: cells 0>1 = 3 and 1>0 = 5: 1>0, of 2 pairs.
  assert.deepEqual(F.worstIn(g, [0, 1, 2, 3], 2, 0, 0, true), { row: 1, col: 0, cells: 2 });
  // Bucket (0, 1): 1>2 failed.
  assert.deepEqual(F.worstIn(g, [0, 1, 2, 3], 2, 0, 1, true), { row: 1, col: 2, cells: 4 });
  assert.equal(F.worstIn(grid(2, {}), [0, 1], 1, 0, 0, true), null);
});

test('a monitor\'s compact matrix: its cells as the grid, each figure from its column, failed cells, bad cells left out, a newer version refused', () => {
  const doc = {
    format: 'meshperf-cells',
    version: 1,
    kind: 'udp_rr',
    metrics: ['rtt_p50', 'rtt_p99'],
    agents: [{ hostname: 'a', endpoint: '10.0.0.1:7800' }, { hostname: 'b', endpoint: '10.0.0.2:7800' }, { hostname: 'c', endpoint: '10.0.0.3:7800' }],
    cells: [
      [0, 1, 0.5, 23.5, 126.25],
      [1, 0, 2, 'no answer within 500 ms'],
      [2, 0, 1, 40, null],
      [2, 2, 0, 1, 1],
      [7, 0, 0, 1, 1],
    ],
  };
  assert.ok(F.isCells(doc));
  assert.ok(!F.isCells({ format: 'meshperf-result', version: 1 }));
  assert.throws(() => F.isCells({ ...doc, version: 2 }), /version 2: written by a newer meshperf/);
  assert.ok(F.looksLikeCells(' {\n  "format": "meshperf-cells", "version": 1'));
  assert.ok(!F.looksLikeCells('{"format":"meshperf-result"'));
  assert.equal(F.cellsMetric(doc, 'rtt_p50'), 'rtt_p50');
  assert.equal(F.cellsMetric(doc, 'gbps'), 'rtt_p50');
  const g = F.cellsGrid(doc, 'rtt_p99');
  assert.equal(g.n, 3);
  assert.deepEqual([...g.state], [SELF, DONE, NONE, FAILED, SELF, NONE, DONE, NONE, SELF]);
  assert.deepEqual([...g.value].map((v) => (Number.isNaN(v) ? null : v)), [null, 126.25, null, null, null, null, null, null, null]);
  assert.deepEqual([...g.step], [-1, 0, -1, 1, -1, -1, 2, -1, -1]);
  assert.equal(F.cellsGrid(doc, 'rtt_p50').value[6], 40);
  // A figure the file lacks: measured cells without a value.
  const none = F.cellsGrid(doc, 'gbps');
  assert.equal(none.state[1], DONE);
  assert.ok(Number.isNaN(none.value[1]));
});

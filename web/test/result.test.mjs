// A step's samples stay Float64Arrays from decoding to every statistic, and
// the result file the page writes is byte for byte what it wrote when they
// were plain arrays.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseResult, partialFigures, quantities, resultJson, runLabel, typedSamples } from '../src/lib/result/result.ts';

/** A result as the page held it before: plain arrays, keys in the driver's order, an unknown key kept. */
function plainResult() {
  return {
    format: 'meshperf-result',
    version: 1,
    created_unix: 1763800000.125,
    plan: { kind: 'tcp_rr', params: { count: 4 }, sweep: {}, repeat: 1 },
    agents: [{ hostname: 'a' }, { hostname: 'b' }],
    steps: [
      {
        index: 0, kind: 'tcp_rr', params: { count: 4 }, point: [], repeat: 0, transport: 'tcp',
        summary: { count: 4, rtt_us: { n: 4, median: 15.5 } },
        sides: { client: { count: 4, rtt_us: { n: 4, median: 15.5 } }, server: null },
        samples: [
          { role: 'client', kind: 'rtt_ns', stream: 0, values: [15000, 16000, 14500, 9007199254740991] },
          { role: 'server', kind: 'read_bytes', stream: 0, values: [64, 64, 0, 128] },
          { role: 'server', kind: 'arrival_ns', stream: 0, values: [] },
        ],
        started_unix: 1763800000.25,
        wall_seconds: 0.5,
        future_key: 'kept',
      },
    ],
  };
}

test('a result with typed samples writes the same JSON bytes as with plain arrays', () => {
  const before = JSON.stringify(plainResult());
  const typed = typedSamples(plainResult());
  for (const s of typed.steps[0].samples) assert.ok(s.values instanceof Float64Array, s.kind);
  assert.equal(resultJson(typed), before);
  // Plain JSON.stringify would not: that is why resultJson exists.
  assert.notEqual(JSON.stringify(typed), before);
});

test('a result file read back holds Float64Arrays and writes the very same text', () => {
  const text = JSON.stringify(plainResult());
  const r = parseResult(text);
  const rtt = r.steps[0].samples[0].values;
  assert.ok(rtt instanceof Float64Array);
  assert.deepEqual(Array.from(rtt), [15000, 16000, 14500, 9007199254740991]);
  assert.equal(resultJson(r), text);
  // Reading it again keeps the arrays it already has.
  assert.equal(typedSamples(r).steps[0].samples[0].values, rtt);
});

test('quantities read the samples without copying them and are worked out once per step', () => {
  const r = parseResult(JSON.stringify(plainResult()));
  const step = r.steps[0];
  const qs = quantities(step);
  assert.deepEqual(qs.map((q) => q.id), ['rtt', 'reads']);
  // Read sizes need no conversion: the quantity is the series' own array.
  assert.equal(qs[1].values, step.samples[1].values);
  // Round-trip times become microseconds, once.
  assert.ok(qs[0].values instanceof Float64Array);
  assert.deepEqual(Array.from(qs[0].values).slice(0, 3), [15, 16, 14.5]);
  // Every view of the step gets the same arrays (and so the same wasm sample set).
  assert.equal(quantities(step), qs);
});

test('several series of a kind are joined in stream order, inter-arrival gaps from arrival times', () => {
  const r = plainResult();
  r.steps[0].kind = 'udp_stream';
  r.steps[0].samples = [
    { role: 'client', kind: 'rtt_ns', stream: 1, values: [3000] },
    { role: 'client', kind: 'rtt_ns', stream: 0, values: [1000, 2000] },
    { role: 'server', kind: 'arrival_ns', stream: 0, values: [1000, 3000, 3500] },
  ];
  const qs = quantities(typedSamples(r).steps[0]);
  assert.deepEqual(Array.from(qs.find((q) => q.id === 'rtt').values), [1, 2, 3]);
  assert.deepEqual(Array.from(qs.find((q) => q.id === 'gap-recv').values), [2, 0.5]);
});

/** A 2-stream tcp_stream's receiving side at 10 Gbit/s a stream (1.25e7 bytes per 10 ms), as the agent reports it: stream 1 started 5.1 ms late, stream 0 stopped 10 ms early; each one's last interval holds a sliver. */
function twoStreams(omitted = 0) {
  const full = 1.25e7;
  const side = {
    seconds: 0.0602 - omitted,
    interval_ms: 10,
    ...(omitted ? { omitted_s: omitted } : {}),
    streams: [
      { index: 0, dir: 'recv', bytes: 0, seconds: 0.0501 - omitted, first_seconds: Math.max(0, 0.0002 - omitted) },
      { index: 1, dir: 'recv', bytes: 0, seconds: 0.0602 - omitted, first_seconds: Math.max(0, 0.0051 - omitted) },
    ],
  };
  const r = plainResult();
  r.steps[0] = {
    ...r.steps[0], kind: 'tcp_stream', params: { duration_s: 0.06, streams: 2, interval_ms: 10 },
    summary: side, sides: { server: side, client: null },
    samples: [
      { role: 'server', kind: 'interval_bytes', stream: 0, values: [full, full, full, full, full, full / 100] },
      { role: 'server', kind: 'interval_bytes', stream: 1, values: [full / 2, full, full, full, full, full, full / 50] },
    ],
  };
  return typedSamples(r).steps[0];
}

test('throughput statistics count only intervals every stream spent whole: min is the path, not a partial interval', async () => {
  const { readFileSync } = await import('node:fs');
  const pkg = new URL('../src/lib/wasm-pkg/', import.meta.url);
  const wasm = await import(new URL('meshperf_stats.js', pkg).href);
  wasm.initSync({ module: readFileSync(new URL('meshperf_stats_bg.wasm', pkg)) });
  const { held } = await import('../src/lib/samplesets.ts');
  const step = twoStreams();
  const q = quantities(step, wasm).find((x) => x.id === 'tput-server');
  assert.equal(q.unit, 'Gbit/s');
  // Both streams ran whole in intervals 1 to 4 only: 20 Gbit/s each. The
  // old rule (only the summed series' last interval left out) kept interval
  // 0 (stream 1 starting, 15 Gbit/s) and 5 (stream 0's sliver, 10.1 Gbit/s).
  assert.deepEqual(Array.from(q.values), [20, 20, 20, 20]);
  const s = held(wasm, q.values).summary();
  assert.equal(s.min, 20);
  // The warm-up (omit_s) is out of the figures' seconds, not out of the
  // samples: its intervals are left out of the statistics too.
  const warm = quantities(twoStreams(0.02), wasm).find((x) => x.id === 'tput-server');
  assert.deepEqual(Array.from(warm.values), [20, 20, 20]);
  // An older result without per-stream times: the last interval left out, as before.
  const old = twoStreams();
  old.sides.server = { ...old.sides.server, streams: undefined };
  old.summary = old.sides.server;
  assert.equal(quantities(old, wasm).find((x) => x.id === 'tput-server').values.length, 6);
});

test("a step's CSV keeps its columns and adds when each stream's intervals ended", async () => {
  const { stepCsv } = await import('../src/lib/result/stepcsv.ts');
  const rows = stepCsv(twoStreams(), {}).trim().split('\n').map((l) => l.split(';'));
  assert.deepEqual(rows[0], ['n', 'server_interval_bytes_0', 'server_interval_bytes_1', 'server_interval_end_s_0', 'server_interval_end_s_1']);
  assert.deepEqual(rows.slice(1).map((r) => r[4]), ['0.01', '0.02', '0.03', '0.04', '0.05', '0.06', '0.07']);
  // Stream 0 has 6 intervals: its columns end there.
  assert.deepEqual([rows[6][1], rows[6][3], rows[7][1], rows[7][3]], ['125000', '0.06', '', '']);
});

test("a link's histogram of bytes per interval counts the intervals the live statistics count (issue 29 item 9)", async () => {
  const { readFileSync } = await import('node:fs');
  const pkg = new URL('../src/lib/wasm-pkg/', import.meta.url);
  const view = await import(new URL('meshperf_view.js', pkg).href);
  view.initSync({ module: readFileSync(new URL('meshperf_view_bg.wasm', pkg)) });
  const { seriesOf, wholeIntervals } = await import('../src/lib/result/result.ts');
  // Two 10 ms streams long enough that the link carries histograms: stream
  // 1 starts 5.1 ms late, stream 0 stops in tick N - 1, each one's first
  // and last tick a sliver or a half (xorshift32 jitter: no link compresses it).
  const N = 20000;
  const full = 1.25e7;
  let x = 2463534242;
  const jitter = () => {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    return x % 100000;
  };
  const v0 = Array.from({ length: N }, () => full - jitter());
  const v1 = Array.from({ length: N + 1 }, () => full - jitter());
  v0[N - 1] = full / 100;
  v1[0] = full / 2;
  v1[N] = full / 50;
  const side = {
    seconds: N * 0.01 + 0.0002,
    interval_ms: 10,
    streams: [
      { index: 0, dir: 'recv', bytes: 0, reads: 0, seconds: (N - 1) * 0.01 + 0.0001, first_seconds: 0.0002 },
      { index: 1, dir: 'recv', bytes: 0, reads: 0, seconds: N * 0.01 + 0.0002, first_seconds: 0.0051 },
    ],
  };
  const r = plainResult();
  r.plan = { kind: 'tcp_stream', params: { duration_s: N / 100, streams: 2 }, sweep: {}, repeat: 1 };
  r.steps[0] = {
    index: 0, kind: 'tcp_stream', params: { duration_s: N / 100, streams: 2 }, point: [], repeat: 0, transport: 'tcp',
    summary: side, sides: { server: side, client: null },
    samples: [
      { role: 'server', kind: 'interval_bytes', stream: 0, values: v0 },
      { role: 'server', kind: 'interval_bytes', stream: 1, values: v1 },
    ],
  };
  const step = typedSamples(r).steps[0];
  const stats = await import(new URL('meshperf_stats.js', pkg).href);
  stats.initSync({ module: readFileSync(new URL('meshperf_stats_bg.wasm', pkg)) });
  const [from, to] = wholeIntervals(step, 'server', seriesOf(step, 'interval_bytes', 'server'), N + 1, stats);
  assert.deepEqual([from, to], [1, N - 1]);
  const back = JSON.parse(view.permalink_decode(view.permalink_encode(resultJson(typedSamples(r)))));
  assert.equal(back.samples_replaced, true);
  const hs = back.steps[0].histograms;
  assert.equal(hs.length, 2);
  for (const h of hs) {
    // The live statistics' intervals, each stream's: no more, no fewer.
    assert.equal(h.n, to - from, `stream ${h.stream}`);
    assert.equal(h.left_out, (h.stream === 0 ? N : N + 1) - (to - from));
    assert.equal(h.counts.reduce((a, b) => a + b, 0), to - from);
    // No partial interval: the lowest bin is a whole one's.
    assert.ok(h.low > full - 200000, `stream ${h.stream}: low ${h.low}`);
  }
});

test('a step kept as partial (Cancel, Ctrl-C) says the figures its samples gave, and its run is labelled partial', () => {
  // The summaries protocol/src/partial.rs gives a stream step and a request/response step.
  const stream = { summary: { partial: true, bytes: 123456789, seconds: 0.43, bits_per_second: 123456789 * 8 / 0.43, streams: [] } };
  assert.equal(partialFigures(stream), '123,456,789 bytes in 0.43 s, 2.297 Gbit/s');
  const rr = { summary: { partial: true, count: 1500, rtt_us: { median: 41.25, p99: 12345, max: 20000 } } };
  assert.equal(partialFigures(rr), '1,500 transactions, round trip median 41.25 µs, p99 12.35 ms, max 20 ms');
  const crr = { summary: { partial: true, transactions: 7, txn_us: { median: 90, p99: 120, max: 130 }, connect_us: null } };
  assert.equal(partialFigures(crr), '7 transactions, transaction median 90 µs, p99 120 µs, max 130 µs');
  // A whole step, or none.
  assert.equal(partialFigures({ summary: { bytes: 5, seconds: 1, bits_per_second: 40 } }), null);
  assert.equal(partialFigures({ summary: null }), null);
  const r = parseResult(JSON.stringify({ ...plainResult(), steps: [] }));
  assert.doesNotMatch(runLabel(r), /partial/);
  r.steps = [{ ...stream, index: 0, kind: 'tcp_stream', params: {}, point: [], repeat: 0, sides: { client: null, server: null }, samples: [] }];
  assert.match(runLabel(r), / · partial$/);
});
